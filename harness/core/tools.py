"""The console scripts' one error contract (``[project.scripts]``: ``lalm-fairness-cache``, ``-report``,
``-generate``, ``-suite``; README, "What a failure means", holds the table once).

Exit status of every tool: 0 done; 1 done, with failures the tool names (``-generate``: rows failed or left;
``-suite``: a group left with fewer than 2 voices); 2 interrupted (Ctrl-C, as the gate); 4 bad input, a missing
extra or a missing model, found before any work: one line ``ERROR: <tool>: <what, naming the file, key or option>``
on stderr. :class:`ToolParser` gives argparse's own errors (an unknown option, a missing argument) that form, where
argparse would print its usage and exit 2.
"""

from __future__ import annotations

import argparse
import sys
from typing import NoReturn

EXIT_DONE = 0
EXIT_FAILURES = 1
EXIT_INTERRUPTED = 2
EXIT_SETUP = 4


def error_line(tool: str, message: object) -> str:
    """``ERROR: <tool>: <message>`` on one line (the message's own line breaks and runs of spaces folded)."""
    return f"ERROR: {tool}: {' '.join(str(message).split())}"


def report_error(tool: str, message: object) -> int:
    """Print :func:`error_line` to stderr; returns :data:`EXIT_SETUP` for ``return report_error(...)``."""
    print(error_line(tool, message), file=sys.stderr)
    return EXIT_SETUP


class ToolParser(argparse.ArgumentParser):
    """argparse's parser whose errors are one ``ERROR: <tool>:`` line and exit 4 (its subcommands' too: argparse
    makes them of the parser's class); ``--help`` is unchanged."""

    def error(self, message: str) -> NoReturn:
        tool = self.prog.split()[0]
        self.exit(EXIT_SETUP, error_line(tool, f"{message} (see {tool} --help)") + "\n")
