"""The run's decision, made once: the verdict of the run and of each model under test (issue 47, item 1).

:func:`decide_run` is the one place a verdict is derived. The gate calls it once, from the case records and the
run's scope (:meth:`harness.gate.run.RunAssembly.results`); results.json stores what it returns (its ``decision``,
:class:`RunDecision`), and every surface (the terminal's summary, the report, the CI summary of ``--summary-md``
and the trend section) reads that stored decision from :class:`harness.results.RunResults`: none derives a verdict
of its own. A results.json written before the field existed gets its decision derived once, at load, by the same
function (:func:`harness.results.parse_results`).

A case is passed, failed or unmeasured (:func:`case_outcome`). The run and each model get a verdict by one rule
(:func:`verdict_of`): ``incomplete`` when cases selected for it did not run (the run was stopped: Ctrl-C, SIGTERM,
``-x``), else ``spot-check`` when cases of the full gate were left out of the run (``-k``, ``-m``, a skip), else
``fail`` when a case failed, else ``unmeasured`` when one was unmeasured, else ``pass``. A model is judged on its
own cases: in a stopped run a model whose every case finished keeps its own verdict, one with cases that did not
run is ``incomplete``; where the cases that did not run cannot be told apart by model (a file of an older
version), every model is.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence

from harness.core.json_records import JsonRecord
from harness.records import SPOT_CHECK, Record, UnmeasuredRecord

PASS, FAIL, UNMEASURED, INCOMPLETE = "pass", "fail", "unmeasured", "incomplete"
VERDICTS = (PASS, FAIL, UNMEASURED, INCOMPLETE, SPOT_CHECK)
"""The verdicts a run or a model can have."""

CASE_PASSED, CASE_FAILED, CASE_UNMEASURED = "passed", "failed", "unmeasured"


def case_outcome(record: Record) -> str:
    """A case's outcome: ``unmeasured`` (an :class:`~harness.records.UnmeasuredRecord`), else ``passed`` or
    ``failed`` by its check's verdict."""
    if isinstance(record, UnmeasuredRecord):
        return CASE_UNMEASURED
    return CASE_PASSED if record.passed else CASE_FAILED


def verdict_of(*, failed: int, unmeasured: int, stopped: bool, spot_check: bool) -> str:
    """The verdict of a run or of one model (module docstring): ``incomplete`` when it was ``stopped`` before
    every case selected for it ran, else ``spot-check`` when cases of its full gate were left out of the run, else
    ``fail`` when ``failed`` cases, ``unmeasured`` when ``unmeasured`` ones, else ``pass``."""
    if stopped:
        return INCOMPLETE
    if spot_check:
        return SPOT_CHECK
    return FAIL if failed else UNMEASURED if unmeasured else PASS


@dataclasses.dataclass(frozen=True)
class ModelDecision(JsonRecord):
    """One model's verdict and the counts it rests on: its cases that ran (``passed``, ``failed``,
    ``unmeasured``), those selected that did not run (``not_run``: the run was stopped first) and those of the full
    gate the run left out (``left_out``: a spot check)."""

    model: str
    verdict: str
    passed: int = 0
    failed: int = 0
    unmeasured: int = 0
    not_run: int = 0
    left_out: int = 0

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise ValueError(f"key 'verdict' must be one of {list(VERDICTS)}, got {self.verdict!r}")
        for key in ("passed", "failed", "unmeasured", "not_run", "left_out"):
            if getattr(self, key) < 0:
                raise ValueError(f"key {key!r} must be a whole number >= 0, got {getattr(self, key)}")

    @property
    def ran(self) -> int:
        """The model's cases that ran (passed, failed or unmeasured)."""
        return self.passed + self.failed + self.unmeasured

    def counts_text(self) -> str:
        """ "12 cases: 10 passed, 2 failed, 0 unmeasured; 5 did not run": the counts every surface shows beside the
        model's verdict."""
        text = f"{self.ran} case{'' if self.ran == 1 else 's'}: {self.passed} passed, {self.failed} failed, {self.unmeasured} unmeasured"
        if self.not_run:
            text += f"; {self.not_run} did not run"
        if self.left_out:
            text += f"; {self.left_out} left out of the spot check"
        return text


@dataclasses.dataclass(frozen=True)
class RunDecision(JsonRecord):
    """The run's verdict and each model's (:class:`ModelDecision`, in the order the run met them): results.json's
    ``decision``, which every surface reads."""

    verdict: str
    models: tuple[ModelDecision, ...] = ()

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise ValueError(f"key 'verdict' must be one of {list(VERDICTS)}, got {self.verdict!r}")


def decide_run(
    cases: Iterable[Record],
    *,
    stopped: bool = False,
    spot_check: bool = False,
    not_run: Mapping[str | None, int] | None = None,
    left_out: Mapping[str | None, int] | None = None,
    models: Sequence[str] = (),
) -> RunDecision:
    """The run's decision (module docstring) from its case records.

    ``stopped``: the run was stopped before every selected case ran; ``spot_check``: it ran fewer than every case
    of its gate. ``not_run`` and ``left_out`` count, per model, the selected cases that did not run and the gate's
    cases left out of the run; the key None counts those of no known model, which make every model ``incomplete``
    (or ``spot-check``), as does a stopped run (or a spot check) that cannot say which cases it lacks. ``models``
    puts models first in that order (the others follow in the order their cases come); a model of no case and
    nothing not run is left out."""
    cases = list(cases)
    not_run, left_out = dict(not_run or {}), dict(left_out or {})
    outcomes = [case_outcome(case) for case in cases]
    stopped = stopped or any(not_run.values())
    spot_check = spot_check or any(left_out.values())
    run_verdict = verdict_of(
        failed=outcomes.count(CASE_FAILED),
        unmeasured=outcomes.count(CASE_UNMEASURED),
        stopped=stopped,
        spot_check=spot_check,
    )
    stopped_anywhere = stopped and (not_run.get(None, 0) > 0 or not any(not_run.values()))
    left_out_anywhere = spot_check and (left_out.get(None, 0) > 0 or not any(left_out.values()))
    order = [*models, *(case.model for case in cases), *not_run, *left_out]
    decisions = []
    for model in (model for model in dict.fromkeys(order) if model):
        own = [outcome for case, outcome in zip(cases, outcomes) if case.model == model]
        counts = {
            "passed": own.count(CASE_PASSED),
            "failed": own.count(CASE_FAILED),
            "unmeasured": own.count(CASE_UNMEASURED),
            "not_run": not_run.get(model, 0),
            "left_out": left_out.get(model, 0),
        }
        if not own and not counts["not_run"] and not counts["left_out"]:
            continue
        verdict = verdict_of(
            failed=counts["failed"],
            unmeasured=counts["unmeasured"],
            stopped=stopped_anywhere or counts["not_run"] > 0,
            spot_check=left_out_anywhere or counts["left_out"] > 0,
        )
        decisions.append(ModelDecision(model, verdict, **counts))
    return RunDecision(run_verdict, tuple(decisions))


__all__ = [
    "FAIL",
    "INCOMPLETE",
    "PASS",
    "UNMEASURED",
    "VERDICTS",
    "ModelDecision",
    "RunDecision",
    "case_outcome",
    "decide_run",
    "verdict_of",
]
