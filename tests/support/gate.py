"""Helpers shared by the tests that run the gate through pytest (pytester) or against loopback HTTP servers."""

from __future__ import annotations

import re
import shutil
import threading
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from harness.core.progress import Progress
from harness.models.base import Backend

REPO = Path(__file__).resolve().parents[2]


def gate_project(pytester: pytest.Pytester, *gate_modules: str) -> pytest.Pytester:
    """A pytester folder with the plugin, the named gate modules (``test_vibe.py``, ... from ``fairness_tests/``)
    and the repository's thresholds.yaml with every check that those modules do not collect turned off
    (:func:`thresholds_for_modules`): the full gate is every enabled check (harness.gate.scope), so a project of
    fewer modules says so in its thresholds, as a team that gates on fewer checks does."""
    pytester.makeconftest('pytest_plugins = ["harness.plugin"]\n')
    for name in gate_modules:
        shutil.copy(REPO / "fairness_tests" / name, pytester.path / name)
    (pytester.path / "thresholds.yaml").write_text(thresholds_for_modules(gate_modules))
    return pytester


def uncollected_checks(gate_modules: Sequence[str]) -> list[str]:
    """The registered checks that no module of ``gate_modules`` (``test_<module>.py``) collects."""
    from harness.checks import all_checks
    from harness.gate_tests import gate_functions

    collected = {
        name.removeprefix("test_")
        for module in gate_modules
        for name in gate_functions(Path(module).stem.removeprefix("test_"))
    }
    return [check.name for check in all_checks() if check.name not in collected]


def checks_off(gate_modules: Sequence[str]) -> str:
    """Thresholds YAML that turns off every check no module of ``gate_modules`` collects, to append to a small
    thresholds file of a test's own that has no section of those checks."""
    return "".join(f"\n{check}:\n  defaults:\n    enabled: false\n" for check in uncollected_checks(gate_modules))


def thresholds_for_modules(gate_modules: Sequence[str]) -> str:
    """The repository's thresholds.yaml, with ``<check>.defaults.enabled: false`` for every registered check that no
    module of ``gate_modules`` (``test_<module>.py``) collects (:func:`harness.gate_tests.gate_functions`). The
    text is kept as it is (tests edit it by string replacement); a section that has no ``defaults`` block gets one
    appended."""
    text = (REPO / "thresholds.yaml").read_text()
    for check in uncollected_checks(gate_modules):
        section = re.search(rf"^{check}:\n  defaults:\n", text, flags=re.MULTILINE)
        if section:
            text = text[: section.end()] + "    enabled: false\n" + text[section.end() :]
        else:
            text += f"\n{check}:\n  defaults:\n    enabled: false\n"
    return text


class EchoBackend(Backend):
    """A test backend (register it as ``echo``): answers echo the prompt, with the backend's own progress around
    each batch, as the hf backend's."""

    def __init__(self, spec, target, options):
        self.spec = spec

    def fingerprint(self):
        return "echo:1"

    def load(self):
        return self

    def generate(self, requests, params):
        with Progress(len(requests), f"{self.spec} generate") as bar:
            bar.update(len(requests))
        return [f"echo {request.prompt}" for request in requests]


class LoopbackServer:
    """``handler`` served on 127.0.0.1 at a free port in a daemon thread; ``url`` ends in ``/v1``.
    ``close()`` stops it (the tests call it; nothing else ever does)."""

    def __init__(self, handler: type[BaseHTTPRequestHandler]):
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(5)


def decided_record(outcome):
    """The record a gate outcome decided: a verdict's, or that of a case measured and unmeasured by design (its design
    could not have failed it, issue 57: the error keeps the record); None for a case that was never measured."""
    from harness.checks.base import Verdict

    if isinstance(outcome, Verdict):
        return outcome.record
    return getattr(getattr(outcome, "error", None), "record", None)


def decided_cases(results: dict) -> list[dict]:
    """A results.json's cases as decided: a case unmeasured by design (its design could not have failed it, issue 57)
    as the record it measured and kept (``measured``), with ``by_design`` True; every other case as it is."""
    return [
        case["measured"] | {"by_design": True} if case.get("measured") else case | {"by_design": False}
        for case in results["cases"]
    ]
