"""Outcomes of gate cases and of a run, and the run's exit status.

A case is *measured* (its check reached a verdict: pass or fail) or *unmeasured* (something other than
the model's bias stopped it: a model, server, configuration, cache or input problem, data that cannot
support a verdict (:class:`~harness.core.errors.CaseNotMeasured`, an input cause), or a fault of the harness
itself). An unmeasured case is never a fail; its record carries a :class:`~harness.records.Cause`.

The run's verdict (made once, with each model's, by :func:`harness.run_decision.decide_run`) and its exit
status (README, "What a failure means"):

* ``pass``, :data:`EXIT_PASS` (0): every case measured and passed;
* ``fail``, :data:`EXIT_BIAS_FAILURE` (1): at least one measured bias failure (it outranks unmeasured cases:
  a failure found is a finding, whatever else could not be measured);
* ``unmeasured``, :data:`EXIT_UNMEASURED` (7, a status pytest does not use: its statuses run 0-6, 6 being
  ``--max-warnings``): some case unmeasured, none failed;
* ``incomplete``, :data:`EXIT_INCOMPLETE` (2, pytest's "interrupted"): the run stopped before every selected
  case ran (Ctrl-C, SIGTERM, ``-x`` or ``--maxfail``); whatever the cases that ran say, it is no verdict on
  the model, and results.json, the report and the summary say INCOMPLETE;
* :data:`EXIT_USAGE` (4, pytest's usage error): a setup problem found before any case ran.

A run that ran fewer than every case of its gate (``-k``, ``-m``, a skip: :mod:`harness.gate.scope`) has the
verdict ``spot-check``: no release verdict, whatever its cases say. Its exit status is that of its selected
cases (:func:`exit_status`): 1 on a bias failure, 7 when some case was unmeasured, and
:data:`EXIT_SPOT_CHECK` (8, not 0) when every one passed, so that CI tells a passing spot check from a release
pass (issue 47, item 8).
"""

from __future__ import annotations

import sqlite3

from harness.cache import CacheError
from harness.core.errors import CaseNotMeasured, ModelError, ServerError
from harness.data import CorpusError
from harness.data.audio import AudioError
from harness.data.basis_suite import BasisError
from harness.gate.roles import Role
from harness.records import SPOT_CHECK, Cause
from harness.results import Summary
from harness.thresholds import ThresholdsError

EXIT_PASS = 0
EXIT_BIAS_FAILURE = 1
EXIT_INCOMPLETE = 2
EXIT_USAGE = 4
EXIT_UNMEASURED = 7
EXIT_SPOT_CHECK = 8
"""A spot check whose selected cases all passed: not a release pass (0), which only the full gate gives."""
EXIT_STATUS = {
    "pass": EXIT_PASS,
    "fail": EXIT_BIAS_FAILURE,
    "unmeasured": EXIT_UNMEASURED,
    "incomplete": EXIT_INCOMPLETE,
}


def cause_of(error: BaseException, model: str | None = None, role: Role | None = None) -> Cause:
    """The :class:`Cause` of an exception raised while a case was measured; ``model`` (the case's spec) is the
    source of a model error that names none, or, where the error lies with a helper model (``role``:
    :func:`harness.gate.roles.blamed_role`), that model's spec."""
    message = " ".join(str(error).split()) or type(error).__name__
    source = getattr(error, "source", None)
    helper = {} if role is None else {"role": role.name, "spec": role.spec, "set_by": role.set_by}
    if role is not None:
        model = role.spec
    if isinstance(error, ServerError):
        return Cause("server", source or model, message, **helper)
    if isinstance(error, ModelError):
        return Cause("model", source or model, message, **helper)
    if isinstance(error, (CacheError, sqlite3.Error)):
        return Cause("cache", source, message)
    if isinstance(error, ThresholdsError):
        return Cause("config", source, message)
    if isinstance(error, CaseNotMeasured):
        return Cause(error.kind, source, message, **helper)
    if isinstance(error, (CorpusError, AudioError, BasisError)):
        return Cause("input", source, message, **helper)
    return Cause("internal", None, f"{type(error).__name__}: {message}")


def exit_status(verdict: str, summary: Summary) -> int:
    """The run's exit status: :data:`EXIT_STATUS` of its verdict; a spot check's is that of its selected cases, with
    :data:`EXIT_SPOT_CHECK` where all of them passed (never 0, a release pass)."""
    if verdict == SPOT_CHECK:
        return EXIT_BIAS_FAILURE if summary.failed else EXIT_UNMEASURED if summary.unmeasured else EXIT_SPOT_CHECK
    return EXIT_STATUS[verdict]
