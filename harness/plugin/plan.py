"""``--plan PATH [--shard i/N]``: the selected cases' requests written as a plan (:mod:`harness.generation.request_plan`) instead of a
run. No model is loaded and no test body runs: each case is taken as far as the cache allows, its first miss is
planned, and the session ends with exit 0 and the counts (requests planned, in all, already in the cache)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from harness.checks.case import Case
from harness.generation.request_plan import Planner, audio_folder_for, parse_shard, shard, write_plan


class PlanSession:
    """Replaces the run loop of a ``--plan`` session; ``gate_of(config)`` is the session's gate."""

    def __init__(self, config: pytest.Config, gate_of: Callable[[pytest.Config], Any]):
        self.config = config
        self.gate_of = gate_of
        self.path = Path(config.getoption("--plan"))
        shard_option = config.getoption("--shard")
        try:
            self.shard = parse_shard(shard_option) if shard_option else None
        except ValueError as exc:
            raise pytest.UsageError(f"lalm-fairness: {exc}") from None
        if config.getoption("numprocesses", None):
            raise pytest.UsageError("lalm-fairness: --plan runs in one process: drop -n / --numprocesses")
        self.lines: list[str] = []

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> bool:
        if session.config.option.collectonly:
            return False
        gate = self.gate_of(self.config)
        planner = Planner(audio_folder_for(self.path))
        gate.context.pool.planner = planner  # the models made while the cases were collected plan with it too
        cases = list(
            dict.fromkeys(
                value
                for item in session.items
                for value in getattr(getattr(item, "callspec", None), "params", {}).values()
                if isinstance(value, Case)
            )
        )
        complete = 0
        for case in cases:
            before = len(planner.rows)
            gate.outcome(case)
            complete += len(planner.rows) == before
        rows = sorted(planner.rows.values(), key=lambda row: row.key)
        part = rows if self.shard is None else shard(rows, *self.shard)
        write_plan(self.path, part)
        where = "" if self.shard is None else f" (shard {self.shard[0]}/{self.shard[1]} of {len(rows)})"
        self.lines = [
            f"lalm-fairness: plan {self.path}: {len(part)} requests to generate{where}; {planner.total} requests "
            f"asked so far, {len(planner.cached)} already in the cache; {complete} of {len(cases)} cases need "
            "nothing more",
            "lalm-fairness: fill it (lalm-fairness-generate --plan PLAN --out FILE), then run again with "
            "--import-cache FILE: another round plans what the new outputs feed (extraction, judging)"
            if rows
            else "lalm-fairness: nothing left to generate: run the gate with --offline",
        ]
        return True

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        for line in self.lines:
            terminalreporter.write_line(line)
