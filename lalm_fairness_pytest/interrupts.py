"""Ctrl-C (SIGINT) and SIGTERM at any moment of a gate run end it with exit 2, "incomplete", never with
Python's 130 (or 143) and a traceback (README, "A run that did not finish never says PASS"; issue 59, item 2).

The entry point is among the first plugins pytest imports, so its handler is installed about 0.2 s into a run,
before pytest parses the command line and long before the plugin's imports. What a signal does depends on the
phase of the run:

- ``starting``, from this module's import to the entry point's first ``pytest_configure``: pytest's ``main``
  does not catch ``KeyboardInterrupt`` there, so the handler raises ``SystemExit(2)``: no test ran, nothing is
  written.
- ``running``, from ``pytest_configure`` (inside pytest's session) to ``pytest_sessionfinish``:
  ``KeyboardInterrupt``, which pytest turns into exit 2 and the plugin into INCOMPLETE outputs.
- ``finishing``, while the session's outputs are written: the signal is remembered, the outputs are completed
  (they are this run's), and the exit status is 2.

A run found not to be a gate run by its first ``pytest_configure`` gets the handlers it had back (pays nothing);
a handler someone else installed before this module's import is left alone.
"""

from __future__ import annotations

import _thread
import atexit
import signal
import sys
import threading
import time
from types import FrameType
from typing import Any

EXIT_INCOMPLETE = 2
STARTING, RUNNING, FINISHING = "starting", "running", "finishing"
SIGNALS = ((signal.SIGINT, signal.default_int_handler), (signal.SIGTERM, signal.SIG_DFL))
IMPORT_POLL_SECONDS = 0.02


class Interrupts:
    """The process's handler of SIGINT and SIGTERM, and the signals it received in this run (``received``, read by
    the plugin to raise an interrupt lost in a finaliser again as the next case starts)."""

    def __init__(self) -> None:
        self.phase = STARTING
        self.received: list[str] = []
        self.received_while_finishing: list[str] = []
        self.installed: dict[int, Any] = {}
        self.deferred = False

    def install(self) -> None:
        """Handle both signals (where their handlers are Python's defaults), in the main thread only."""
        if threading.current_thread() is not threading.main_thread():
            return
        for signum, default in SIGNALS:
            if signal.getsignal(signum) is default:
                signal.signal(signum, self.handle)
                self.installed[signum] = default

    def restore(self) -> None:
        """Give each signal the handler it had before :meth:`install`."""
        for signum, default in list(self.installed.items()):
            if signal.getsignal(signum) == self.handle:
                signal.signal(signum, default)
            del self.installed[signum]

    def begin_run(self) -> None:
        """The gate run's session has begun: a signal is a ``KeyboardInterrupt`` from now on."""
        self.phase = RUNNING
        self.received.clear()
        self.received_while_finishing.clear()
        self.install()

    def finishing(self) -> None:
        if self.phase == RUNNING:
            self.phase = FINISHING

    def handle(self, signum: int, frame: FrameType | None) -> None:
        name = signal.Signals(signum).name
        if not self.received:
            atexit.register(forget_a_caught_interrupt)
        if not self.deferred:
            self.received.append(name)
        self.deferred = False
        if self.phase == RUNNING:
            if inside_an_import(frame):
                self.defer(signum)
                return
            raise KeyboardInterrupt(name)
        if self.phase == FINISHING:
            self.received_while_finishing.append(name)
            return
        sys.stderr.write(f"\n{name} while pytest was starting: no test ran, nothing was written (exit 2)\n")
        raise SystemExit(EXIT_INCOMPLETE)

    def defer(self, signum: int) -> None:
        """Deliver the signal again once the main thread has left the import it landed in: a C extension
        interrupted halfway through its import (torch's, as the default model's fingerprint imports it) cannot be
        imported again, and the outputs written as the session ends crashed in it (a segmentation fault, exit 1)."""
        self.deferred = True
        main = threading.main_thread().ident

        def deliver() -> None:
            while inside_an_import(sys._current_frames().get(main)):
                time.sleep(IMPORT_POLL_SECONDS)
            _thread.interrupt_main(signum)

        threading.Thread(target=deliver, name="lalm-fairness-interrupt", daemon=True).start()


def inside_an_import(frame: FrameType | None) -> bool:
    """A frame of Python's import machinery on the stack: a module is being imported."""
    while frame is not None:
        if frame.f_code.co_filename.startswith("<frozen importlib"):
            return True
        frame = frame.f_back
    return False


def forget_a_caught_interrupt() -> None:
    """Clear CPython's flag that makes the process kill itself with SIGINT as it exits (status 130), set when a
    ``KeyboardInterrupt`` leaves code run by ``PyRun_String`` (pybind11's ``exec`` in an extension module being
    imported, for one) even though pytest caught it further up: a run stopped by Ctrl-C while its modules were
    imported reported "KeyboardInterrupt", then exited 130 one time in three. Any later ``PyRun_String`` that
    completes clears the flag (CPython's ``run_eval_code_obj``); this is one, run at exit."""
    import ctypes  # here: importing the entry point imports nothing beyond pytest's own modules

    ctypes.pythonapi.PyRun_SimpleString(b"pass")


INTERRUPTS = Interrupts()
