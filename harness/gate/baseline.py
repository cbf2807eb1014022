"""The ``--baseline`` run: a previous run's results.json read as one model's records, and what it refuses.

:func:`load_baseline` reads the file (:func:`harness.results.read_results`) and keeps one model's records
(:class:`Baseline`), refusing an incomplete run or a spot check. :func:`check_baseline_cases` first refuses, in one
``ValueError`` that names the file and the first bad case (its position in ``cases`` and its ``id``), a measured case
without a string ``model``, or whose ``paired_data`` is not ``null`` or the column table every check writes: a
mapping of column name -> list, the lists of equal length, one of them ``speaker`` (the per-speaker data the paired
comparisons read, README "Release gating"). Unmeasured cases carry no data. :func:`refuse_other_extraction` stops a
run whose VIBE protocol or extractor differs from the baseline's.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from harness.checks.case import Case
from harness.core.files import portable_source
from harness.data.basis_suite import BasisSuite
from harness.data.basis_suite import ItemSet as BasisSuiteSet
from harness.extraction.vibe_protocol import VibeProtocol
from harness.gate.release_thresholds import baseline_thresholds
from harness.records import SPOT_CHECK, CaseRecord, Record, Scope
from harness.results import RunMetadata, read_results
from harness.results.metadata import ItemSetEntry, ThresholdsEntry
from harness.thresholds import Thresholds, packaged_thresholds


def check_baseline_cases(path: str | Path, cases: Sequence[Record]) -> None:
    """Raise ``ValueError`` ``"<path>: case <k> (<id>): <problem>"`` for the first malformed case (module docstring)."""
    for position, case in enumerate(cases):
        problem = _case_problem(case) if isinstance(case, CaseRecord) else None
        if problem:
            raise ValueError(f"{path}: not a usable baseline: case {position} ({case.id}): {problem}")


def _case_problem(case: CaseRecord) -> str | None:
    if not isinstance(case.model, str):
        return f"'model' is a {type(case.model).__name__}, not a string"
    data = case.paired_data
    if data is None:
        return None
    if not isinstance(data, Mapping):
        return f"'paired_data' is a {type(data).__name__}, expected a mapping of column -> list"
    columns = {name: values for name, values in data.items()}
    bad = next((name for name, values in columns.items() if not isinstance(values, list)), None)
    if bad is not None:
        return f"'paired_data.{bad}' is a {type(columns[bad]).__name__}, expected a list"
    if columns and "speaker" not in columns:
        return f"'paired_data' has no 'speaker' column (columns: {sorted(columns)})"
    lengths = {name: len(values) for name, values in columns.items()}
    if len(set(lengths.values())) > 1:
        return f"'paired_data' columns differ in length ({lengths})"
    return None


@dataclasses.dataclass(frozen=True)
class Baseline:
    """One model's records of a previous run; ``corpora``: the corpora that run measured (name -> content hash)."""

    source: str
    model: str
    records: Mapping[tuple, CaseRecord]
    corpora: Mapping[str, str | None] = dataclasses.field(default_factory=dict)
    vibe: Mapping[str, str | None] = dataclasses.field(default_factory=dict)
    """The VIBE protocol and extractor its nTVD cases were made with (:func:`baseline_vibe`)."""
    unmeasured: Mapping[tuple, str] = dataclasses.field(default_factory=dict)
    """The cases that run could not measure (:func:`baseline_key` -> why), so that a case now measured is said
    to have been unmeasured, not to be new."""

    unmeasured_ids: Mapping[tuple, str] = dataclasses.field(default_factory=dict)
    """The case id of each unmeasured case (:func:`baseline_key` -> id)."""
    thresholds: Thresholds | None = None
    """The thresholds that run was judged by (:func:`~harness.gate.release_thresholds.baseline_thresholds`); None
    where its results do not state them, with ``thresholds_note`` saying so."""
    thresholds_note: str | None = None

    basis_sets: Mapping[str, ItemSetEntry] | None = None
    """The stimuli of each BASIS item set that run read (``metadata.basis_suite.sets``); None for a results.json
    written before they were recorded."""

    def changed_stimuli(self, record: Record, suite: BasisSuite) -> str | None:
        """Why a BASIS case cannot be paired with the baseline's when the stimuli it reads changed, else None: the
        item sets of the case (its own set, for a case named after one; every set of its dimension, for a case on the
        whole suite) whose content hash differs from the baseline's, each with the recordings that differ, or that
        the baseline did not have. Answers to other audio or items measure other stimuli, so the case is judged by its
        absolute threshold only (:meth:`Gate.verdict`). A baseline that recorded no set hashes is not checked."""
        if self.basis_sets is None:
            return None
        if record.corpus == suite.name:
            sets = [item_set for item_set in suite.sets if item_set.dimension == record.dimension]
        else:
            sets = [item_set for item_set in suite.sets if item_set.name == record.corpus]
        changes = [change for change in map(self._set_change, sets) if change]
        if not changes:
            return None
        return (
            f"the BASIS stimuli differ from those in the baseline {portable_source(self.source)}: {'; '.join(changes)}; "
            "its answers are to other stimuli, so the case cannot be paired and is judged by its absolute threshold only"
        )

    def _set_change(self, item_set: BasisSuiteSet) -> str | None:
        """How ``item_set`` differs from the baseline's set of its name, in words, or None when it does not."""
        recorded = self.basis_sets.get(item_set.name)
        if recorded is None:
            return f"item set {item_set.name!r} is not in the baseline"
        if recorded.hash == item_set.content_hash:
            return None
        now = item_set.recording_hashes()
        changed = sorted(
            name for name in now.keys() & recorded.recordings.keys() if now[name] != recorded.recordings[name]
        )
        added = sorted(now.keys() - recorded.recordings.keys())
        removed = sorted(recorded.recordings.keys() - now.keys())
        parts = [
            f"{label} {', '.join(names[:5])}{f' and {len(names) - 5} more' if len(names) > 5 else ''}"
            for label, names in (("recordings changed:", changed), ("added:", added), ("removed:", removed))
            if names
        ]
        what = "; ".join(parts) if parts else "its metadata (items, labels or texts) changed, the recordings did not"
        return f"item set {item_set.name!r} (content hash {recorded.hash} there, {item_set.content_hash} here: {what})"

    def changed_corpus(self, name: str | None, corpora: Mapping[str, Any]) -> str | None:
        """Why cases on corpus ``name`` cannot be paired with the baseline's when that corpus's recordings changed
        (its content hash differs from the one the baseline measured), else None. Such cases are judged by their
        absolute thresholds only (:meth:`Gate.verdict`)."""
        corpus = corpora.get(name) if name is not None else None
        recorded = self.corpora.get(name) if name is not None else None
        if corpus is None or not recorded or recorded == corpus.content_hash:
            return None
        return (
            f"corpus {name!r} differs from the one in the baseline {portable_source(self.source)} (content hash "
            f"{recorded} there, {corpus.content_hash} here): its cases cannot be paired and are judged by their "
            "absolute thresholds only"
        )

    def corpus_notes(self, corpora: Mapping[str, str]) -> list[str]:
        """What a run on ``corpora`` (name -> content hash) cannot pair with this baseline, in words: a corpus the
        baseline did not measure, or measured with other recordings. Its cases are judged by their absolute thresholds."""
        if not self.corpora:
            return []
        notes = []
        for name, digest in corpora.items():
            if name not in self.corpora:
                notes.append(
                    f"corpus {name!r} is not in the baseline {self.source} (it measured {', '.join(sorted(self.corpora))}): "
                    "its cases are new, judged by their absolute thresholds"
                )
            elif self.corpora[name] and self.corpora[name] != digest:
                notes.append(
                    f"corpus {name!r} differs from the one in the baseline {self.source} (content hash {self.corpora[name]} "
                    f"there, {digest} here): its cases cannot be paired and are judged by their absolute thresholds"
                )
        return notes


def baseline_key(record: Record) -> tuple:
    """Cases of two runs match on check, corpus, variant and dimension; the model is what differs."""
    return (record.check, record.corpus, record.variant, record.dimension)


def load_baseline(path: str | Path, model: str | None = None, candidates: Sequence[str] = ()) -> Baseline:
    """The records of one model from a previous run's results.json: ``model``, else the file's only model,
    else the one candidate model of this run that the file holds."""
    path = Path(path)
    results = read_results(path)
    if results.verdict == "incomplete":
        raise ValueError(
            f"{path}: an incomplete run (it was stopped before every case ran) is not a baseline; gate against a complete results.json"
        )
    if results.verdict == SPOT_CHECK:
        raise ValueError(f"{path}: {spot_check_refusal(results.scope)}")
    check_baseline_cases(path, results.cases)
    cases = results.decided  # a case unmeasured by design keeps what it measured: its data pair as any other's
    models = sorted({case.model for case in cases})
    if not models:
        raise ValueError(
            f"{path}: no measured case to compare with (every case of that run was unmeasured); gate against a run that measured its cases"
        )
    if model is None:
        held = [spec for spec in dict.fromkeys(candidates) if spec in models]
        if len(models) != 1 and len(held) != 1:
            raise ValueError(f"{path}: the baseline holds models {models}; choose one with --baseline-model")
        model = models[0] if len(models) == 1 else held[0]
    elif model not in models:
        raise ValueError(f"{path}: no model {model!r} in the baseline; it holds {models}")
    return Baseline(
        str(path),
        model,
        {baseline_key(case): case for case in cases if case.model == model},
        {name: entry.hash for name, entry in results.metadata.corpora.items()},
        baseline_vibe(results.metadata),
        {
            baseline_key(case): (case.cause.message if case.cause else case.message).removeprefix(f"{case.id}: ")
            for case in results.unmeasured
            if case.model == model and case.measured is None
        },
        {baseline_key(case): case.id for case in results.unmeasured if case.model == model and case.measured is None},
        *recorded_thresholds(results.metadata.thresholds),
        basis_sets=None if results.metadata.basis_suite is None else results.metadata.basis_suite.sets,
    )


def recorded_thresholds(entry: ThresholdsEntry | None) -> tuple[Thresholds | None, str | None]:
    """The baseline's thresholds from its metadata and, where they cannot be read, why (the release is then judged
    by this run's thresholds alone, and says so)."""
    if entry is None:
        return packaged_thresholds(), None
    try:
        layers = [{"source": layer.source, "document": layer.document} for layer in entry.layers or []]
        return baseline_thresholds(entry.source, entry.hash, layers), None
    except ValueError as error:
        return None, f"{error}; this release is judged by this run's thresholds alone"


def record_case(record: Record) -> Case:
    """The case ``record`` is of: its check, model, corpus, dimension, variant and id."""
    return Case(
        check=record.check,
        model=record.model,
        corpus=record.corpus,
        dimension=record.dimension,
        variant=record.variant,
        id=record.id,
    )


def candidate_case_id(baseline_id: str, baseline_model: str, model: str) -> str:
    """The id the candidate ``model``'s case would have: a case id starts with its model's spec
    (:meth:`~harness.checks.base.Check.cases`), so the baseline model's is replaced by the candidate's."""
    if baseline_id.startswith(f"{baseline_model}-"):
        return f"{model}-{baseline_id.removeprefix(f'{baseline_model}-')}"
    return f"{model}-{baseline_id}"


def spot_check_refusal(scope: Scope | None) -> str:
    """Why a spot check is no baseline, naming the cases it lacks (its ``scope``, :mod:`harness.gate.scope`)."""
    if scope is None:
        return "a spot check (it did not run every case of its gate) is not a baseline; gate against a full run"
    omitted = scope.omitted
    named = "; ".join(f"{entry.check} {entry.id} ({entry.reason})" for entry in omitted[:3])
    more = f"; and {len(omitted) - 3} more" if len(omitted) > 3 else ""
    return (
        f"a spot check is not a baseline: it ran {scope.ran} of the {scope.gate_cases} cases of its gate "
        f"and lacks {len(omitted)}: {named}{more}; gate against a run of the full gate (no -k, -m or skipped case)"
    )


def baseline_vibe(metadata: RunMetadata) -> dict[str, str | None]:
    """A baseline's VIBE protocol and extractor from its metadata; a run made before they were recorded used the
    self-report form with the field reader (``extractor: rules``) or, with ``--extractor``, an LLM extractor
    known only by fingerprint."""
    vibe = metadata.vibe
    if vibe is not None:
        return {"protocol": vibe.protocol, "extractor": vibe.extractor}
    extractor = metadata.extractor
    if extractor == "rules" or extractor is None:
        return {"protocol": "self-report", "extractor": "rules"}
    return {"protocol": "self-report", "extractor": str(extractor)}


def refuse_other_extraction(path: str | Path, baseline: dict[str, str | None], run: VibeProtocol) -> None:
    """nTVD is measured through the extractor and the prompts: a baseline made under another VIBE protocol or
    extractor cannot be compared with, so the run stops naming both."""
    differs = [
        f"{key} {baseline.get(key)!r} (this run: {getattr(run, key)!r}, from {run.sources.get(key, 'default')})"
        for key in ("protocol", "extractor")
        if baseline.get(key) != getattr(run, key)
    ]
    if differs:
        raise ValueError(
            f"{path}: the baseline's nTVD cases were made with VIBE {' and '.join(differs)}; the extractor and "
            "protocol are fixed across checkpoints: run with the baseline's settings (vibe.defaults in a thresholds "
            "file, or --extractor) or remake the baseline with these"
        )
