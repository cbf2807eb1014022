"""Progress of long generations on stderr: a tqdm bar on a terminal, plain lines elsewhere.

On a terminal (the stream is a TTY, or the pytest plugin attached its terminal with :func:`attach_terminal`)
a tqdm bar shows the count, rate and ETA. Elsewhere (CI logs, pytest's captured output) and always in a
pytest-xdist worker (``PYTEST_XDIST_WORKER`` set: several workers drawing bars on one terminal would
interleave) it prints a plain line at most every ``interval_s`` seconds and at the end. Shown only for more
than ``min_items`` items; ``LALM_PROGRESS=0`` silences it, ``LALM_PROGRESS=1`` forces it.

A :class:`Progress` opened while another is open in the same thread (a backend's bar, or a cascade stage's,
inside the cached model's bar of one model x task) shows nothing: one bar per model x task, never nested.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import TextIO

from tqdm import tqdm

_open = threading.local()
_terminal: tuple[TextIO, Callable[[], AbstractContextManager]] | None = None


def attach_terminal(stream: TextIO, uncaptured: Callable[[], AbstractContextManager] = contextlib.nullcontext) -> None:
    """Draw bars on ``stream`` (a terminal), each write inside ``uncaptured()`` (pytest: capture suspended)."""
    global _terminal
    _terminal = (stream, uncaptured)


def detach_terminal() -> None:
    global _terminal
    _terminal = None


class _UncapturedWriter:
    """A file for tqdm whose writes reach the terminal while pytest captures the test's output."""

    def __init__(self, stream: TextIO, uncaptured: Callable[[], AbstractContextManager]):
        self.stream, self.uncaptured = stream, uncaptured

    def write(self, text: str) -> int:
        with self.uncaptured():
            written = self.stream.write(text)
            self.stream.flush()
        return written

    def flush(self) -> None:
        with self.uncaptured():
            self.stream.flush()


def in_xdist_worker() -> bool:
    return bool(os.environ.get("PYTEST_XDIST_WORKER"))


class Progress:
    def __init__(
        self,
        total: int,
        label: str,
        *,
        min_items: int = 8,
        interval_s: float = 10.0,
        stream: TextIO | None = None,
        clock=time.monotonic,
    ) -> None:
        self.total = max(0, int(total))
        self.label = label
        self.done = 0
        self.clock = clock
        self.start = clock()
        self.interval_s = interval_s
        self._last_emit = -float("inf")
        self._lock = threading.Lock()
        self._closed = False
        self._bar: tqdm | None = None
        nested = bool(getattr(_open, "stack", None))
        setting = os.environ.get("LALM_PROGRESS", "").strip().lower()
        if setting in ("0", "false", "no", "off") or nested:
            self.enabled = False
        elif setting in ("1", "true", "yes", "on"):
            self.enabled = self.total > 0
        else:
            self.enabled = self.total > min_items
        self.stream, bar_file = self._streams(stream)
        if self.enabled and bar_file is not None:
            self._bar = tqdm(
                total=self.total,
                desc=f"[lalm] {label}",
                unit="item",
                file=bar_file,
                mininterval=0.5,
                dynamic_ncols=True,
                leave=True,
            )

    @staticmethod
    def _streams(stream: TextIO | None) -> tuple[TextIO, object | None]:
        """(stream for plain lines, file for a tqdm bar or None)."""
        if stream is None and _terminal is not None and not in_xdist_worker():
            return _terminal[0], _UncapturedWriter(*_terminal)
        stream = stream if stream is not None else sys.stderr
        try:
            tty = bool(stream.isatty())
        except (AttributeError, ValueError):
            tty = False
        return stream, stream if tty and not in_xdist_worker() else None

    @property
    def tty(self) -> bool:
        return self._bar is not None

    def line(self) -> str:
        elapsed = max(self.clock() - self.start, 1e-9)
        frac = self.done / self.total if self.total else 1.0
        width = 24
        filled = int(round(frac * width))
        rate = self.done / elapsed
        eta = (self.total - self.done) / rate if rate > 0 else float("nan")
        eta_s = f"{eta:.0f}s" if eta == eta else "?"
        return (
            f"[lalm] {self.label} [{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total} "
            f"({frac:.0%}) {rate:.2f} it/s elapsed {elapsed:.0f}s eta {eta_s}"
        )

    def update(self, n: int = 1) -> None:
        self.advance_to(self.done + n)

    def advance_to(self, done: int) -> None:
        """Set the count of finished items to ``done`` (never backwards)."""
        with self._lock:
            step = max(0, min(self.total, done) - self.done)
            self.done += step
        if not self.enabled or step == 0:
            return
        if self._bar is not None:
            self._bar.update(step)
            if self.done >= self.total:
                self._close_bar()
            return
        now = self.clock()
        final = self.done >= self.total
        if final or now - self._last_emit >= self.interval_s:
            self._last_emit = now
            self.stream.write(self.line() + "\n")
            self.stream.flush()
            self._closed = final

    def _close_bar(self) -> None:
        if self._bar is not None and not self._closed:
            self._bar.close()
            self._closed = True

    def close(self) -> None:
        """End the line (e.g. after an error) without claiming completion."""
        if not self.enabled or self._closed:
            return
        if self._bar is not None:
            self._close_bar()
        else:
            self.stream.write(self.line() + " (stopped)\n")
            self.stream.flush()
            self._closed = True

    def __enter__(self) -> Progress:
        if not hasattr(_open, "stack"):
            _open.stack = []
        _open.stack.append(self)
        return self

    def __exit__(self, *exc: object) -> None:
        _open.stack.remove(self)
        self.close()
