"""The builder's one error: bad input (an item file, a voice spec, a group label), reported as one ``ERROR:`` line."""

from __future__ import annotations


class SuiteError(ValueError):
    """The build cannot start or go on; the message names the file and row, or the voice spec, at fault."""
