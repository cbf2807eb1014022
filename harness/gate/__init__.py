"""The gate: the cases of every check, their verdicts, the baseline comparison and the run metadata.

A :class:`Gate` is built from a :class:`GateConfig` (what the pytest options say). It validates the
configuration, hands the checks its :class:`~harness.gate.context.RunContext` (the settings, data, cached
models and memo every check shares), keeps each check's family of selected cases (e.g. for a multiple-testing
correction), and turns a check's verdict into a release verdict against a baseline. The pytest plugin
only wires cases to it; this module knows nothing of pytest.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import pandas as pd

from harness.checks import all_checks, get_check
from harness.checks.base import Verdict
from harness.checks.case import Case
from harness.checks.release import unsupported, with_floor_changes
from harness.core.errors import DesignCannotFail, ModelError, RequestsPlanned
from harness.core.files import portable_path, portable_source
from harness.data.provenance import provenance_summary
from harness.display.text import without_case_id
from harness.extraction.validation import annotation_sample, export_annotation_sample
from harness.gate.audio_floor import AUDIO_FLOOR_SCHEMA, AUDIO_FLOOR_SECTION, AudioFloorRule, AudioFloorSettings
from harness.gate.baseline import (
    Baseline,
    baseline_key,
    candidate_case_id,
    load_baseline,
    record_case,
    refuse_other_extraction,
)
from harness.gate.config import (
    BUNDLED_EXPORTS,
    DEFAULT_CACHE_DIR,
    DEFAULT_MODELS,
    DEMO_OUTPUTS_DIR,
    DEMO_RELEASE_RESULTS,
    VOICE_BLIND_OUTPUTS_DIR,
    GateConfig,
    model_settings,
)
from harness.gate.context import RunContext, semantic_setups
from harness.gate.outcomes import cause_of
from harness.gate.release_thresholds import ReleaseThresholds, recorded_layers
from harness.gate.roles import blamed_role, run_roles
from harness.models.base import Backend
from harness.models.cascade import DEMO_LLM
from harness.models.numerics import compute_environment
from harness.models.residency import check_backend_placement
from harness.records import UNMEASURED, BaselineComparison, CaseRecord, Cause, Comparison, Record, UnmeasuredRecord
from harness.results import RunMetadata
from harness.results.metadata import (
    BaselineEntry,
    BasisSuiteEntry,
    BundledExport,
    CorpusEntry,
    ItemSetEntry,
    ModelLoad,
    OutputCounts,
    SemanticEntry,
    SuiteProvenance,
    ThresholdsEntry,
    ThresholdsLayer,
    VibeEntry,
)

__all__ = [
    "BUNDLED_EXPORTS",
    "DEFAULT_CACHE_DIR",
    "DEFAULT_JUDGE",
    "DEFAULT_MODELS",
    "DEMO_OUTPUTS_DIR",
    "DEMO_RELEASE_RESULTS",
    "Gate",
    "GateConfig",
    "Unmeasured",
    "VOICE_BLIND_OUTPUTS_DIR",
]
from harness.extraction.vibe_protocol import RULES, VIBE_SCHEMA, VIBE_SECTION
from harness.perception import MODEL_FREE_PERCEIVERS
from harness.tasks import TASKS
from harness.thresholds import GATE_SCHEMA, GATE_SECTION, load_thresholds

# The judge of the embedded default (the cascade's own LLM): used when the models are the default ones and no
# judge is named; a gate run on other models judges only with --judge.
DEFAULT_JUDGE = DEMO_LLM


class Gate:
    def __init__(self, config: GateConfig):
        self.config = config
        unknown_tasks = sorted(set(config.tasks) - set(TASKS))
        if unknown_tasks:
            raise ValueError(f"unknown task(s) {unknown_tasks}; known tasks: {sorted(TASKS)}")
        validate_run_settings(config)
        self.baseline: Baseline | None = (
            load_baseline(config.baseline_path, config.baseline_model, config.models) if config.baseline_path else None
        )
        own_thresholds = load_thresholds(config.thresholds_path)
        self.thresholds = (
            ReleaseThresholds.of(own_thresholds, self.baseline.thresholds)
            if self.baseline is not None and self.baseline.thresholds is not None
            else own_thresholds
        )
        self._families: dict[str, tuple[Case, ...]] = {}
        self.context = RunContext(config, self.thresholds, FamilySizes(self))
        checks = all_checks()
        self.thresholds.validate(
            {check.name: check.gate_schema() for check in checks}
            | {GATE_SECTION: GATE_SCHEMA, VIBE_SECTION: VIBE_SCHEMA, AUDIO_FLOOR_SECTION: AUDIO_FLOOR_SCHEMA},
            {check.name: check.variants(self.context) for check in checks},
            {dimension for corpus in self.context.corpora.values() for dimension in corpus.dimensions}
            | set(self.context.basis.dimensions()),
        )
        validate_models(config, self.context.pool.backend)
        self.audio_floor = AudioFloorRule(
            self.context,
            AudioFloorSettings.from_thresholds(self.thresholds),
            self.floor_may_load,
        )
        vibe = self.context.vibe
        self._causes: dict[tuple[str, str], str] = {}
        if self.baseline is not None and any(case.check == "ntvd" for case in self.baseline.records.values()):
            refuse_other_extraction(config.baseline_path, self.baseline.vibe, vibe)

    def threshold_deviations(self) -> list[str]:
        """The keys this release is judged at other than its own thresholds file's (issue 57), in words."""
        return self.thresholds.deviations() if isinstance(self.thresholds, ReleaseThresholds) else []

    def floor_may_load(self, model: str) -> bool:
        """Whether the audio floor may generate a missing probe answer of ``model``: never in an offline run; for a
        model served from shipped outputs only when the probe's corpus (the run's first) is one those outputs never
        heard (their provenance's corpus hash differs), where the run's own cases load the model anyway. So the
        default run on the demo corpus never loads a model for the floor, and a probe its exports cannot answer is
        unmeasured, not generated."""
        if self.config.offline:
            return False
        if not self.config.bundled_exports.get(model):
            return True
        corpus = next(iter(self.context.corpora.values()), None)
        _ = self.context.cache  # opening the cache imports the shipped exports and reads their provenance
        heard = {
            ((entry.get("provenance") or {}).get("corpus") or {}).get("hash")
            for entry in self.context.pool.bundled_outputs
            if entry["model"] == model
        }
        return corpus is not None and corpus.content_hash not in heard

    def open_cache(self) -> None:
        """Open the output cache now (else the first case opens it), so that a cache that cannot be used stops
        the run before any case and a damaged one is set aside once (:class:`~harness.cache.OutputCache`)."""
        _ = self.context.cache

    def outcome(self, case: Case) -> Verdict | Unmeasured:
        """The case's :meth:`verdict`, or :class:`Unmeasured` when it could not be measured: any exception but
        an interrupt, with its :class:`~harness.records.Cause`. The first case of each cause gives it in full;
        later cases with the same cause (:attr:`Cause.key`) name that first case instead."""
        try:
            return self.verdict(case)
        except Exception as error:
            cause = cause_of(error, case.model, blamed_role(error, case.model, run_roles(self.context)))
            first = self._causes.setdefault(cause.key, case.id)
            return Unmeasured(case, cause, None if first == case.id else first, error)

    def cases(self, check: str) -> list[Case]:
        """The check's cases for the run's models and corpora; none for a check the thresholds turn off."""
        return [] if check in self.off_checks() else get_check(check).cases(self.context)

    def off_checks(self) -> list[str]:
        """The checks the thresholds file turns off (:meth:`~harness.checks.base.Check.is_off`)."""
        return [check.name for check in all_checks() if check.is_off(self.thresholds)]

    def no_cases_reason(self, check: str) -> str:
        if check in self.off_checks():
            return f"{check} is turned off in {self.thresholds.source} ({check}.defaults.enabled: false)"
        return get_check(check).no_cases_reason(self.context)

    def set_family(self, check: str, cases: Sequence[Case]) -> None:
        """The selected cases of a check in this session (e.g. the family of a multiple-testing correction)."""
        self._families[check] = tuple(dict.fromkeys(cases))

    def family(self, check: str) -> tuple[Case, ...]:
        if check not in self._families:
            self._families[check] = tuple(self.cases(check))
        return self._families[check]

    def baseline_gaps(self) -> list[UnmeasuredRecord]:
        """The baseline's cases that this run's full gate lacks, for each model of the run: each an unmeasured
        record of the candidate model, with the reason (README "Release gating"). A release against a baseline must
        run every case the baseline ran (measured or not): a checkpoint cannot pass its ratchet by switching off, or
        not configuring, the check or corpus whose case it would fail. None without a baseline."""
        if self.baseline is None:
            return []
        off = set(self.off_checks())
        gate_cases = [case for check in all_checks() for case in self.cases(check.name)]
        held_keys = dict.fromkeys([*self.baseline.records, *self.baseline.unmeasured])  # both keyed by baseline_key
        ids = {key: record.id for key, record in self.baseline.records.items()} | self.baseline.unmeasured_ids
        gaps = []
        for model in self.config.models:
            covered = {baseline_key(case) for case in gate_cases if case.model == model}
            for key in held_keys:
                if key in covered:
                    continue
                check, source, variant, dimension = key
                baseline_id = ids.get(key, "-".join(str(part) for part in key if part))
                case = Case(
                    check=check,
                    model=model,
                    corpus=source,
                    dimension=dimension,
                    variant=variant,
                    id=candidate_case_id(baseline_id, self.baseline.model, model),
                )
                why = self.missing_reason(check, source, off)
                message = (
                    f"not measured (config): case {baseline_id} of the baseline {portable_source(self.baseline.source)} "
                    f"is not in this run's gate ({why}); a release against a baseline must run every case the baseline "
                    "ran: run its configuration, or gate against a baseline made with this one"
                )
                gaps.append(unmeasured_record(case, message, Cause("config", self.baseline.source, message)))
        return gaps

    def missing_reason(self, check: str, source: str | None, off: set[str]) -> str:
        """Why this run's gate has no case of ``check`` on ``source`` that the baseline has, in words."""
        if check in off:
            return f"{check} is turned off in {self.thresholds.source}"
        if check not in {registered.name for registered in all_checks()}:
            return f"no check {check!r} is registered in this installation"
        sources = {*self.context.corpora, *(item_set.name for item_set in self.context.basis.sets)}
        if source is not None and source not in sources:
            return f"this run has no corpus or BASIS item set {source!r}"
        return f"this run's configuration gives {check} no such case"

    def probe_tasks(self) -> tuple[str, ...]:
        """The VIBE tasks the audio floor's task probe asks: those of the selected nTVD and counterfactual cases, in
        the run's order."""
        selected = {case.variant for check in ("ntvd", "counterfactual") for case in self.family(check)}
        return tuple(task for task in self.context.tasks if task in selected)

    def verdict(self, case: Case) -> Verdict:
        """The check's verdict; with a baseline, the release ratchet of :func:`release_outcome`."""
        check = get_check(case.check)
        try:
            self.audio_floor.require_hearing(case, self.probe_tasks())
            floor_planned = None
        except RequestsPlanned as planned:  # --plan: the probe's requests are planned; the case plans its own too
            floor_planned = planned
        try:
            verdict = check.verdict(self.context, case, self.family(case.check))
        except DesignCannotFail as error:
            # Unmeasured by design: where a baseline is set, its comparison is still made and kept beside it.
            if self.baseline is None or not isinstance(error.record, CaseRecord):
                raise
            comparison = self.comparison(check, case, error.record)[0]
            baseline = BaselineComparison.of(comparison, portable_source(self.baseline.source), self.baseline.model)
            raise DesignCannotFail(str(error), dataclasses.replace(error.record, baseline=baseline)) from None
        if floor_planned is not None:
            raise floor_planned
        record = verdict.record
        # a pass of a partly hearing model is judged at full hearing (issue 58); a regression still fails
        diluted = self.audio_floor.full_hearing_message(case, record, self.probe_tasks())
        if self.baseline is None:
            if diluted is not None:
                raise DesignCannotFail(diluted, record)
            return Verdict(verdict.passed, verdict.message, record)
        comparison, baseline_record = self.comparison(check, case, record)
        outcome = release_decision(
            verdict.passed,
            comparison,
            None if baseline_record is None else baseline_absolute_passed(baseline_record),
        )
        if outcome == UNMEASURED:
            baseline = BaselineComparison.of(comparison, portable_source(self.baseline.source), self.baseline.model)
            absolute = verdict.message.removesuffix(" -> pass")  # the case is unmeasured: no "pass" in its cause
            raise DesignCannotFail(
                f"{absolute}; {comparison.message}; release: passed its absolute threshold, but its comparison "
                f"with the baseline ({comparison.status}) could not have found a regression: unmeasured",
                dataclasses.replace(record, absolute_passed=True, baseline=baseline),
            )
        passed = outcome in RELEASE_PASSES
        if passed and diluted is not None:
            baseline = BaselineComparison.of(comparison, portable_source(self.baseline.source), self.baseline.model)
            raise DesignCannotFail(
                f"{diluted}; {comparison.message}",
                dataclasses.replace(record, absolute_passed=True, baseline=baseline),
            )
        why = (
            f"; not compared with the baseline (status {comparison.status}): a case failing its absolute threshold "
            "is a known failure only when compared"
            if outcome == "new failure" and baseline_record is not None and not comparison.judged
            else ""
        )
        if outcome == "new failure" and comparison.judged:
            why += (
                "; crossed the bar and worsened significantly"
                if comparison.decision is not None and comparison.decision.significant
                else "; crossed the bar with no significant change"
            )
        message = f"{verdict.message}; {comparison.message}{why}; release: {outcome} -> {'PASS' if passed else 'FAIL'}"
        record = dataclasses.replace(
            record,
            passed=passed,
            message=message,
            absolute_passed=verdict.passed,
            release=outcome,
            baseline=BaselineComparison.of(comparison, portable_source(self.baseline.source), self.baseline.model),
        )
        return Verdict(passed, message, record)

    def comparison(self, check, case: Case, record: CaseRecord) -> tuple[Comparison, CaseRecord | None]:
        """The release comparison of a decided ``record`` with the baseline's case, and that case (None when absent):
        unsupported where its corpus or stimuli changed, new where the baseline lacks or did not measure it."""
        baseline_record = self.baseline.records.get(baseline_key(record))
        unmeasured = self.baseline.unmeasured.get(baseline_key(record))
        changed_corpus = self.baseline.changed_corpus(
            record.corpus, self.context.corpora
        ) or self.baseline.changed_stimuli(record, self.context.basis)
        if baseline_record is not None and changed_corpus is not None:
            return unsupported(baseline_record, changed_corpus), baseline_record
        if baseline_record is None and unmeasured is not None:
            message = (
                f"unmeasured in the baseline ({unmeasured}): nothing to compare with, judged by its absolute threshold"
            )
            return Comparison(status="new", message=message), None
        if baseline_record is None:
            message = "new check, absent from the baseline: judged by its absolute threshold"
            return Comparison(status="new", message=message), None
        compared = check.compare(self.context, case, record, baseline_record)
        return with_floor_changes(compared, record, baseline_record), baseline_record

    def annotation_sample(
        self, records: Sequence[Record], path: str | Path, per_task: int = 12, seed: int = 0
    ) -> pd.DataFrame:
        """Draw a human-validation sample of this run's VIBE answers (VIBE §II-D, Table I) and write it to ``path``
        as CSV: ``per_task`` responses per model and task of the nTVD ``records`` (the results.json records of the
        cases that ran, those whose answers could not be compared included), drawn with ``seed`` among the responses
        with an extracted value; one row per extracted value, with an empty ``annotator_agrees`` column for the
        annotator
        (:func:`harness.extraction.validation.annotation_sample`). Answers and extractions are the run's own, read
        back from its cache; ``lalm-fairness-report results.json --human-validation FILE`` makes Table I of the
        filled file."""
        cases = [
            record_case(record)
            for record in records
            if record.check == "ntvd" and (isinstance(record, CaseRecord) or answered_but_unmeasured(record))
        ]
        if not cases:
            raise ValueError("no nTVD case was measured in this run: there are no VIBE answers to sample")
        responses, values = get_check("ntvd").annotation_tables(self.context, cases)
        sample = annotation_sample(responses, values, n_per_stratum=per_task, seed=seed, strata=("model", "task"))
        export_annotation_sample(sample, path)
        return sample

    def served_keys(self) -> set[str]:
        """The cache keys of every output this process used (for --export-cache)."""
        return set().union(*(model.served_keys for model in self.context.pool.all_models()))

    def run_metadata(self) -> RunMetadata:
        """What this process ran; :meth:`RunMetadata.merge` combines the parts of several processes."""
        context, pool = self.context, self.context.pool
        models = pool.all_models()
        return RunMetadata(
            offline=self.config.offline,
            models=pool.fingerprints(),
            stage_models=pool.fingerprints(stages=True),
            resolved_settings={model.spec: model.backend.resolved_settings() for model in models},
            model_calls=sum(model.calls for model in models),
            cache_hits=sum(model.hits for model in models),
            outputs={model.spec: OutputCounts(**model.output_counts()) for model in models},
            models_loaded=sorted(model.spec for model in models if model.loaded),
            residency=[ModelLoad(**load) for load in pool.residency.to_json()],
            corpora={
                name: CorpusEntry(
                    path=portable_path(corpus.manifest_path),
                    hash=corpus.content_hash,
                    utterances=len(corpus.table),
                    audio_warnings=list(corpus.audio_warnings),
                    provenance=suite_provenance(corpus.root),
                )
                for name, corpus in context.corpora.items()
            },
            basis_suite=BasisSuiteEntry(
                path=portable_path(context.basis.path),
                audio_warnings=list(context.basis.audio_warnings),
                provenance=suite_provenance(context.basis.path),
                sets={
                    item_set.name: ItemSetEntry(hash=item_set.content_hash, recordings=item_set.recording_hashes())
                    for item_set in context.basis.sets
                },
            ),
            thresholds=ThresholdsEntry(
                source=portable_source(self.thresholds.source),
                hash=self.thresholds.digest,
                notes=list(self.thresholds.notes),
                layers=[ThresholdsLayer(**layer) for layer in recorded_layers(self.thresholds)] or None,
            ),
            permutations=self.config.permutations,
            seed=self.config.seed,
            decoding=self.config.decoding.as_dict(),
            extractor=context.extractor_name,
            vibe=VibeEntry(**context.vibe.as_dict(context.extractor_name)),
            embedder=context.embedder_name,
            semantic={model: SemanticEntry(**setup.as_dict()) for model, setup in semantic_setups(context).items()},
            judge=None if self.config.judge is None else context.fingerprint(self.config.judge),
            basis_judge=context.basis_judge_name,
            cache_dir=portable_path(self.config.cache_dir),
            baseline=None
            if self.baseline is None
            else BaselineEntry(
                source=portable_source(self.baseline.source),
                model=self.baseline.model,
                notes=self.baseline.corpus_notes(
                    {name: corpus.content_hash for name, corpus in context.corpora.items()}
                )
                + [note for note in [self.baseline.thresholds_note] if note]
                + self.threshold_deviations(),
                threshold_deviations=self.threshold_deviations() or None,
            ),
            bundled_outputs=[BundledExport(**entry) for entry in pool.bundled_outputs],
            cache_set_aside=pool.cache_set_aside,
            compute_environment=compute_environment(),
            audio_dependence=self.audio_floor.probed(),
        )


RELEASE_OUTCOMES = ("pass", "no regression", "known failure", "new failure", "regression")
"""A case's outcome against a baseline (:func:`release_outcome`), the record's ``release``."""
RELEASE_PASSES = ("pass", "no regression", "known failure")


def release_outcome(absolute_passed: bool, regressed: bool, compared: bool, baseline_passed: bool | None) -> str:
    """The release ratchet (README "Release gating"): a case against a baseline fails when it regressed
    significantly (``regression``), or when it fails its absolute criterion and the baseline's case did not
    (``new failure``; a baseline case that was unmeasured or absent, ``baseline_passed`` None, is judged as new).
    A case failing in both runs and ``compared`` without a regression is a ``known failure``: it does not fail the
    release and is listed. A failing case whose comparison could not be made (unsupported: speakers that do not
    pair, another corpus, transform or perceiver; or new) is a ``new failure`` whatever the baseline said, so that a
    known failure cannot grow unmeasured. A case passing its criterion is ``no regression`` when ``compared`` with
    the baseline, else ``pass``."""
    if regressed:
        return "regression"
    if not absolute_passed:
        return "known failure" if baseline_passed is False and compared else "new failure"
    return "no regression" if compared else "pass"


def release_decision(absolute_passed: bool, comparison: Comparison, baseline_passed: bool | None) -> str:
    """A case's release decision from its absolute verdict, its :class:`~harness.records.Comparison` with the
    baseline and whether the baseline's case met its criterion (None: unmeasured or absent): :data:`~harness.records.UNMEASURED`
    for a passing case whose comparison is undecided (not estimable or underpowered, issue 57), else the ratchet of
    :func:`release_outcome`, where only a comparison judged by the release rule (``compared``, ``backbone``) counts
    as compared and only a ``compared`` one can regress."""
    if absolute_passed and comparison.undecided:
        return UNMEASURED
    regressed = bool(comparison.regressed) and comparison.status == "compared"
    return release_outcome(absolute_passed, regressed, comparison.judged, baseline_passed)


def baseline_absolute_passed(record: CaseRecord) -> bool:
    """Whether a baseline's case met its absolute criterion: its ``absolute_passed`` where that run had a baseline
    of its own, else its ``passed``."""
    return record.passed if record.absolute_passed is None else record.absolute_passed


class FamilySizes(Mapping[str, int]):
    """Per model, its bias tests in the session (every check's family, :meth:`Gate.family`; twice each against a
    baseline, absolute and release): the across-case step's m, read by the run context when a case is decided
    (families are set at collection)."""

    def __init__(self, gate: Gate):
        self._gate = gate

    def _sizes(self) -> dict[str, int]:
        sizes: dict[str, int] = {}
        # Against a baseline each case is tested twice, absolute and release: the family counts both (issue 57),
        # so that the bound alpha holds over every test that can fail the run.
        for check in all_checks():
            for case in self._gate.family(check.name):
                sizes[case.model] = sizes.get(case.model, 0) + self.tests_per_case
        return sizes

    @property
    def tests_per_case(self) -> int:
        """2 against a baseline (each case tested absolute and release), else 1."""
        return 2 if self._gate.baseline is not None else 1

    def __getitem__(self, model: str) -> int:
        return self._sizes()[model]

    def __iter__(self):
        return iter(self._sizes())

    def __len__(self) -> int:
        return len(self._sizes())


def answered_but_unmeasured(record: UnmeasuredRecord) -> bool:
    """Whether an unmeasured case was answered by the model but its answers could not support the statistic
    (cause ``input``, e.g. nTVD undefined at tau): its outputs are in the cache."""
    return record.status == UNMEASURED and record.cause is not None and record.cause.kind in ("input", "design")


@dataclasses.dataclass(frozen=True)
class Unmeasured:
    """A case that could not be measured; ``first_case`` is the earlier case with the same cause, if any."""

    case: Case
    cause: Cause
    first_case: str | None
    error: Exception

    @property
    def message(self) -> str:
        """ "not measured (<where>): <why>", the case's own id left out of the why (the record and pytest's error
        header name the case)."""
        where = self.cause.where
        if self.first_case is not None:
            return f"not measured ({where}): same cause as case {self.first_case}"
        return f"not measured ({where}): {without_case_id(self.cause.message, self.case.id)}"

    def record(self, nodeid: str | None = None) -> UnmeasuredRecord:
        record = unmeasured_record(self.case, self.message, self.cause, nodeid)
        measured = getattr(self.error, "record", None) if self.cause.kind == "design" else None
        return dataclasses.replace(record, measured=measured) if isinstance(measured, CaseRecord) else record


def unmeasured_record(case: Case, message: str, cause: Cause, nodeid: str | None = None) -> UnmeasuredRecord:
    """The record of an unmeasured case: its check and identity, the ``message`` and its ``cause``."""
    return UnmeasuredRecord(check=case.check, id=case.id, model=case.model, corpus=case.corpus,
                            dimension=case.dimension, variant=case.variant, message=message, cause=cause,
                            nodeid=nodeid)  # fmt: skip


def validate_run_settings(config: GateConfig) -> None:
    """The run's own numbers, before anything is loaded: ``--permutations`` at least 1, ``--fairness-seed`` at
    least 0 (numpy's generators take no negative seed), ``--baseline-model`` only with ``--baseline``."""
    if not isinstance(config.permutations, int) or config.permutations < 1:
        raise ValueError(
            f"--permutations {config.permutations}: the permutation tests need at least 1 permutation (default 10000)"
        )
    if not isinstance(config.seed, int) or config.seed < 0:
        raise ValueError(f"--fairness-seed {config.seed}: a seed is a whole number >= 0")
    if config.baseline_model and not config.baseline_path:
        raise ValueError(
            f"--baseline-model {config.baseline_model}: names a model of a --baseline file, and no --baseline was given"
        )


def validate_models(config: GateConfig, backend_of: Callable[[str], Backend]) -> None:
    """Build (without loading) the backend of every model the run names, with its option block (``backend_of``: the
    run's :meth:`~harness.gate.model_pool.ModelPool.backend`, which keeps it for the run): a bad spec, URL, option,
    decoding parameter or ``chunk_size``, or (unless ``--offline``) a model this machine cannot load
    (:meth:`~harness.models.base.Backend.unavailable`), stops the run before any case, naming the spec and the
    ``--model-config`` file."""
    for spec, option in named_models(config).items():
        try:
            options, _, _ = model_settings(config, spec)
            backend = backend_of(spec)
            reason = None if config.offline else backend.unavailable()
            if reason:
                raise ModelError(f"model {spec}: {reason}", source=spec)
            if not config.offline:
                check_backend_placement(backend, options)
        except ModelError as error:
            where = (
                f"{config.model_options_source}: "
                if config.model_options_source and spec in config.model_options
                else ""
            )
            named = "" if option == "--model" else f"{option} {spec}: "
            raise ModelError(f"{named}{where}{error}", source=error.source) from None


def named_models(config: GateConfig) -> dict[str, str]:
    """Every model spec the run names, with the option that named it (``--model`` first: a spec that is both a
    model under test and, say, the judge is the model's): the models under test, ``--judge``, ``--extractor``,
    ``--basis-judge`` and ``--perceiver`` (not the field reader ``rules`` nor the default perceiver)."""
    named = {spec: "--model" for spec in config.models}
    helpers = (
        (config.judge, "--judge"),
        (config.extractor, "--extractor"),
        (config.basis_judge, "--basis-judge"),
        (None if config.perceiver in MODEL_FREE_PERCEIVERS else config.perceiver, "--perceiver"),
    )
    for spec, option in helpers:
        if spec and spec != RULES:
            named.setdefault(spec, option)
    return named


def suite_provenance(folder) -> SuiteProvenance | None:
    """The run metadata's line on where a built corpus or suite came from (its ``provenance.json``), or None for a
    folder that ``lalm-fairness-suite build`` did not make."""
    summary = provenance_summary(folder)
    return None if summary is None else SuiteProvenance(**summary)
