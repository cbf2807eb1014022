"""A plain-text progress bar on stderr for long generations, safe beside pytest's output.

No dependency and no cursor tricks beyond ``\\r`` on a terminal: on a TTY it redraws one line and ends
it with a newline; elsewhere (pytest capture, CI logs, xdist workers) it prints a line at most every
``interval_s`` seconds and at the end, so logs stay short. Shown only for more than ``min_items`` items;
``LALM_PROGRESS=0`` silences it, ``LALM_PROGRESS=1`` forces it.
"""

from __future__ import annotations

import os
import sys
import time
from typing import TextIO


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
        self.stream = stream if stream is not None else sys.stderr
        self.clock = clock
        self.start = clock()
        self.interval_s = interval_s
        self._last_emit = -float("inf")
        setting = os.environ.get("LALM_PROGRESS", "").strip().lower()
        if setting in ("0", "false", "no", "off"):
            self.enabled = False
        elif setting in ("1", "true", "yes", "on"):
            self.enabled = self.total > 0
        else:
            self.enabled = self.total > min_items
        try:
            self.tty = bool(self.stream.isatty())
        except (AttributeError, ValueError):
            self.tty = False
        self._closed = False

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
        self.done = min(self.total, self.done + n)
        if not self.enabled:
            return
        now = self.clock()
        final = self.done >= self.total
        if self.tty:
            self.stream.write("\r" + self.line())
            if final:
                self.stream.write("\n")
                self._closed = True
            self.stream.flush()
        elif final or now - self._last_emit >= self.interval_s:
            self._last_emit = now
            self.stream.write(self.line() + "\n")
            self.stream.flush()
            self._closed = final

    def close(self) -> None:
        """End the line (e.g. after an error) without claiming completion."""
        if self.enabled and not self._closed:
            if self.tty:
                self.stream.write("\n")
            else:
                self.stream.write(self.line() + " (stopped)\n")
            self.stream.flush()
            self._closed = True

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
