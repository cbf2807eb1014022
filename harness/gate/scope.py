"""A run's scope: which cases the full gate holds for the run's models and corpora, which of them ran, and why
the others did not.

The full gate of a run is every case (:meth:`harness.checks.base.Check.cases`) of every registered check that the
thresholds do not turn off, for the run's models, corpora and BASIS sets, whatever pytest collected (the plugin's
``pytest_collection_finish``). A case of it that did not run was *deselected* (``-k``, ``-m`` or a plugin's
deselection hook), *skipped* (a skip marker, e.g. a GPU case without a device) or *not collected* (the command line
named one gate module, other node ids, or a folder without every gate module). A team that gates on fewer checks
turns the others off in its thresholds file (``<check>: {defaults: {enabled: false}}``, recorded as ``off``). A run that ran fewer than every case is a **spot check**
(:data:`harness.records.SPOT_CHECK`): whatever its selected cases say, it is no release verdict on the model, and it is no
baseline for a later run (:func:`harness.gate.baseline.load_baseline` refuses it).

A case is named by ``(check, id)`` here: two checks may give their cases the same id (the WER ratio and the
judge-score ratio both have one case per model, corpus and dimension).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from harness.records import Omitted, Scope

NOT_COLLECTED = "not collected: the command line named other tests or node ids"


def run_scope(
    gate: Sequence[tuple[str, str]],
    ran: Iterable[tuple[str, str]],
    deselected: Mapping[tuple[str, str], str],
    skipped: Mapping[tuple[str, str], str],
    off: Sequence[str] = (),
    not_run: Iterable[tuple[str, str]] = (),
) -> Scope:
    """The scope of a run whose full gate is ``gate`` (``(check, id)`` of every case), of which ``ran`` were
    selected; ``deselected`` and ``skipped`` give the reason of each case that was; any other case of the gate that
    did not run was not collected; ``off`` names the checks the thresholds turn off. Deselection outranks a skip (a
    deselected case never reached its skip). ``not_run``: the selected cases a stopped run never finished, which
    ``Scope.ran`` does not count (the run's ``incomplete`` block names them)."""
    ran_set = set(ran) - set(skipped) - set(deselected)
    finished = ran_set - set(not_run)
    extra = ran_set - set(gate)

    def omitted(reasons: Mapping[tuple[str, str], str], exclude: set) -> tuple[Omitted, ...]:
        return tuple(Omitted(check, case_id, reasons[(check, case_id)]) for check, case_id in gate if
                     (check, case_id) in reasons and (check, case_id) not in exclude)  # fmt: skip

    deselected_entries = omitted(deselected, ran_set)
    skipped_entries = omitted(skipped, ran_set | set(deselected))
    accounted = ran_set | set(deselected) | set(skipped)
    not_collected = tuple(Omitted(check, case_id, NOT_COLLECTED) for check, case_id in dict.fromkeys(gate)
                          if (check, case_id) not in accounted)  # fmt: skip
    return Scope(
        gate_cases=len(dict.fromkeys(gate)) + len(extra),
        ran=len(finished),
        deselected=deselected_entries,
        skipped=skipped_entries,
        not_collected=not_collected,
        off=tuple(off),
    )


def deselection_reason(keyword: str | None, markexpr: str | None) -> str:
    """Why pytest deselected cases, from the run's ``-k`` and ``-m`` expressions."""
    given = [f"{flag} {expression!r}" for flag, expression in (("-k", keyword), ("-m", markexpr)) if expression]
    return f"deselected by {' and '.join(given)}" if given else "deselected by a plugin's deselection hook"


__all__ = ["NOT_COLLECTED", "deselection_reason", "run_scope"]
