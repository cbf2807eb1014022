"""Helpers shared by the tests that run the gate through pytest (pytester) or against loopback HTTP servers."""

from __future__ import annotations

import shutil
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from harness.models.base import Backend
from harness.models.progress import Progress

REPO = Path(__file__).resolve().parents[2]


def gate_project(pytester: pytest.Pytester, *gate_modules: str) -> pytest.Pytester:
    """A pytester folder with the plugin, the repository's thresholds.yaml and the named gate modules
    (``test_vibe.py``, ... from ``fairness_tests/``)."""
    pytester.makeconftest('pytest_plugins = ["harness.plugin"]\n')
    for name in gate_modules:
        shutil.copy(REPO / "fairness_tests" / name, pytester.path / name)
    shutil.copy(REPO / "thresholds.yaml", pytester.path / "thresholds.yaml")
    return pytester


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
