"""Counterfactual voice tests (issue 39): does changing only the voice change the answer?

One case per model x source x variant on the transform's dimension (``gender`` for ``gender_swap``):

* a VIBE task on a corpus of the run (variant = the task): every recording answered in its ``identity`` arm
  (resynthesised unchanged, the control) and its ``swap`` arm (moved to the other group's voice); the effect is the
  nTVD between the arms' attribute distributions (VIBE §II-D eq. 2-5 with the arm as the group), per swap
  direction, averaged (:func:`harness.metrics.counterfactual.arm_ntvd`), with the per-attribute flip rates and the
  values whose share moved most;
* ``asr`` on a corpus: the paired per-recording WER difference swap - identity, per direction
  (:func:`~harness.metrics.counterfactual.paired_wer_difference`; points);
* ``stereotype`` on each BASIS stereotype set of the dimension (speech-implicit mode, BASIS-Bench §3.4, every option
  order): the change in the share of answers choosing the stereotype, per direction, with the flip rate
  (:func:`~harness.metrics.counterfactual.choice_flips`; points).

Before any measure, the perceiver is judged on the originals, whose groups are known (its balanced accuracy below
chance + 20 points makes the case unmeasured; :mod:`harness.metrics.perceiver_fit`), then labels every swapped clip
(:mod:`harness.perception`: ``voice:formants``, F0 and F1-F3 by a discriminant fitted on the originals, by default;
``voice:praat`` or ``--perceiver SPEC`` for any backend); clips not perceived as the target group are left out and
counted, and a direction in which fewer than ``min_perceived_share`` are perceived so makes the case unmeasured.
Where the arms have a ``sham`` (the swap's size of change inside the source group) and its answers can be had, each
effect is measured against it too and both controls decide (intersection-union: the smaller effect, the larger p);
otherwise the identity arm alone decides, under the deviation "sham arm not in the cached outputs". Each effect is
tested by the paired permutation test that swaps the arm labels of all of a speaker's recordings together
(speakers are the units; p = (1 + #)/(B + 1), B = ``n_permutations``). The ``original`` recording's answers are
compared with the identity arm's by the same measure, the artifact measure: what the resynthesis alone does,
reported and never a fail (the identity arm is the swap's control, so an artifact cancels in the voice effect).

A case fails (thresholds.yaml ``counterfactual``) when its effect exceeds its bar (``max_ntvd``,
``max_wer_difference``, ``max_stereotype_shift``) and is significant under the gate's decision rule (rule
``both``), or whenever significant (rule ``significance``, the VIBE preset's). Each contrast carries its test's
design floor (:class:`harness.metrics.permutation_floor.PermutationFloor`, counted on the speakers it kept): 2 / 2^S for one
direction's S speakers, 2^D / 2^S for the VIBE statistic over D directions, at least 1 / (B + 1); a case beyond its
bar whose contrasts cannot reach the corrected alpha (any case, under rule ``significance``) is unmeasured, not
passed, by the one decide step (:func:`harness.checks.verdict.bias_decision`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Sequence
from typing import Any

import numpy as np
import pandas as pd

from harness.checks.base import TASK_PROBE, TRANSCRIPTION_PROBE, Check, Measurement, per_run
from harness.checks.case import Case
from harness.checks.context import CheckContext, CompareContext
from harness.checks.counterfactual.measure import vibe_arms
from harness.checks.counterfactual.perceiver_checks import (  # noqa: F401 (re-exported: tests and the gate read them here)
    INACCURATE_REASON,
    SHAM_CROSSED_REASON,
    UNHEARD_REASON,
    perceived_rows,
    perceived_words,
    perceiver_cannot_hear,
    require_accurate_perceiver,
    require_arms_perceivable,
    require_sham_heard_as_source,
    sham_heard_rows,
)
from harness.checks.counterfactual.record import (
    Artifact,
    CounterfactualPayload,
    DirectionRow,
    DistributionRow,
    FlipRow,
    ManipulationRow,
    PerceiverAccuracy,
    ShamArm,
    ShiftRow,
)
from harness.checks.counterfactual.release import (
    RELEASE_SHAM_MISSING,
    VS_SHAM,
    control_part,
    excess_test,
    intersection_union,
)
from harness.checks.counterfactual.settings import (
    ASR,
    COUNTERFACTUAL_SCHEMA,
    IDENTITY,
    ORIGINAL,
    SHAM,
    STEREOTYPE_VARIANT,
    SWAP,
    VIBE,
    WER,
    CounterfactualThresholds,
    kind_of,
)
from harness.checks.counterfactual.tables import (
    SHAM_NOT_CACHED,
    choice_table,
    counterfactual_dimensions,
    manipulated_recordings,
    perceived_recordings,
    perceived_sham,
    perceiver_fit,
    speaker_distance_recordings,
    transform_dimension,
    transform_settings,
    vibe_table,
    wer_table,
)
from harness.checks.release import regression_comparison, unsupported
from harness.core.errors import CaseNotMeasured
from harness.core.values import derived_seed, finite_or_none, source_fingerprint
from harness.data.voice_transforms import control_of, get_transform, resynthesiser_of, sham_of
from harness.metrics.counterfactual import (
    choice_flips,
    paired_wer_difference,
    speaker_arm_sums,
)
from harness.metrics.sign_flip import sign_flip_sensitivity
from harness.perception import (
    VOICE_FORMANTS,
    VOICE_PRAAT,
    require_perceived_swap,
    voice_features_labeller,
    voice_praat_labeller,
)
from harness.records import CaseRecord, Comparison, Contrast
from harness.tasks import TASKS


class CounterfactualCheck(Check):
    name = "counterfactual"
    gate_module = "counterfactual"
    schema = COUNTERFACTUAL_SCHEMA

    def variants(self, context: CheckContext) -> list[str]:
        return [*sorted(TASKS), ASR, STEREOTYPE_VARIANT]

    def audio_probe(self, case: Case) -> str | None:
        """The transcription probe for the ASR arms (transcripts), the task probe for the VIBE and stereotype arms."""
        return TRANSCRIPTION_PROBE if case.variant == ASR else TASK_PROBE

    def cases(self, context: CheckContext) -> list[Case]:
        """One case per model x corpus x variant on each corpus dimension whose configured transform shifts it
        (:func:`.tables.counterfactual_dimensions`: ``gender`` by default, ``age`` when thresholds.yaml sets
        ``dimensions: {age: {transform: age_shift}}``), and per BASIS stereotype set of such a dimension."""
        show_corpus = len(context.corpora) > 1
        cases = []
        for model in context.models:
            for corpus_name, corpus in context.corpora.items():
                for dimension in counterfactual_dimensions(context, list(corpus.dimensions)):
                    for variant in (*context.tasks, ASR):
                        parts = [model, corpus_name, variant] if show_corpus else [model, variant]
                        cases.append(self._case(model, corpus_name, dimension, variant, parts))
            for item_set in context.basis.of_kind("stereotype"):
                if counterfactual_dimensions(context, [item_set.dimension]):
                    parts = [model, item_set.name]
                    cases.append(self._case(model, item_set.name, item_set.dimension, STEREOTYPE_VARIANT, parts))
        return cases

    def _case(self, model: str, source: str, dimension: str, variant: str, parts: list[str]) -> Case:
        return self.case(model, source, dimension, variant, "-".join([*parts, dimension, "counterfactual"]))

    def no_cases_reason(self, context: CheckContext) -> str:
        dimension = transform_dimension(context)
        return (
            f"no counterfactual case: no corpus of the run and no BASIS stereotype set has the {dimension!r} dimension "
            "the voice transform swaps (or another dimension given a transform of its own in thresholds.yaml)"
        )

    def measure(self, context: CheckContext, case: Case, family: Sequence[Case]) -> Measurement:
        settings: CounterfactualThresholds = self.thresholds(context, case)
        require_arms_perceivable(context, case)
        calibration = perceiver_fit(context, case.corpus, case.dimension)[1]
        require_accurate_perceiver(calibration, case.id, context.perceiver)
        perceived = perceived_recordings(context, case.corpus, case.dimension)
        require_perceived_swap(perceived, settings.min_perceived_share, case.id, context.perceiver)
        manipulation = manipulated_recordings(context, case.corpus, case.dimension)
        speaker = speaker_distance_recordings(context, case.corpus, case.dimension)
        seed = derived_seed(context.seed, self.name, case.id)
        kind = kind_of(case.variant)
        kept = self.kept_table(context, case)
        sham_heard = None
        if (kept["arm"] == SHAM).any():  # the sham decides: it must be heard as the source group (issue 58)
            sham_heard = perceived_sham(context, case.corpus, case.dimension)
            require_sham_heard_as_source(sham_heard, settings.min_sham_source_share, case.id, context.perceiver)
        speakers = int(kept["speaker"].nunique())
        measure = self._vibe if kind is VIBE else self._wer if kind is WER else self._stereotype
        contrasts, payload, findings = measure(kept, settings, seed)
        if payload.get("sham") is None:
            sham = sham_of(get_transform(settings.transform))
            deviation = SHAM_NOT_CACHED if sham is not None else f"the transform {settings.transform} states no sham"
            payload["sham"] = ShamArm(deviation=deviation, decides=False)
            findings += f"; {deviation}: judged against the identity arm alone"
        if sham_heard is not None:
            payload["sham"] = dataclasses.replace(payload["sham"], perceived_as_source=sham_heard_rows(sham_heard))
            findings += f"; sham heard as the source: {perceived_words(sham_heard)}"
        payload |= {
            "kind": kind.name,
            "transform": settings.transform,
            "transform_settings": dataclasses.asdict(transform_settings(context, case.dimension)[1]),
            "perceiver": context.perceiver,
            "perceiver_accuracy": PerceiverAccuracy(**calibration.to_json()),
            **stimulus_identity(context, settings.transform),
            "perceived": perceived_rows(perceived),
            "excluded": dict(perceived.excluded),
            "manipulation": None if manipulation is None else [ManipulationRow(**r) for r in manipulation.summary()],
            "speaker_distance": None if speaker is None else speaker.record(),
            "n_speakers": speakers,
            "n_permutations": settings.n_permutations,
            "seed": seed,
        }
        threshold = settings.case_threshold(kind)
        return Measurement(
            value=payload.pop("deciding"),
            contrasts=contrasts,
            statistic=kind.statistic,
            rule=threshold.rule,
            threshold=threshold,
            criterion=threshold.criterion(),
            findings=f"{findings}; perceived as the target: {perceived_words(perceived)}"
            + ("" if speaker is None else f"; {speaker.words()}"),
            paired_data=self.paired_data(context, case),
            payload=CounterfactualPayload(**payload),
        )

    @per_run
    def kept_table(self, context: CheckContext, case: Case) -> pd.DataFrame:
        """The case's answers on every arm (:mod:`.tables`), of the recordings whose swap the perceiver heard as the
        target group and, for a transform with manipulation checks (:mod:`.manipulation`), whose arms passed them;
        :class:`CaseNotMeasured` when none of them has an answer."""
        perceived = perceived_recordings(context, case.corpus, case.dimension)
        manipulation = manipulated_recordings(context, case.corpus, case.dimension)
        admitted = perceived.kept if manipulation is None else perceived.kept & manipulation.admitted
        speaker = speaker_distance_recordings(context, case.corpus, case.dimension)
        if speaker is not None and speaker.admitted is not None:
            admitted = admitted & speaker.admitted
        kind = kind_of(case.variant)
        if kind is VIBE:
            table = vibe_table(context, case.model, case.corpus, case.variant, case.dimension)
        elif kind is WER:
            table = wer_table(context, case.model, case.corpus, case.dimension)
        else:
            table = choice_table(context, case.model, case.corpus, case.dimension)
        kept = table[_of_recordings(table["recording"], admitted)]
        if kept.empty:
            passed = "perceived as the target" + (
                "" if manipulation is None and speaker is None else " and passed its manipulation checks"
            )
            raise CaseNotMeasured(f"{case.id}: no recording whose swap was {passed} has an answer")
        return kept

    def paired_data(self, context: CheckContext, case: Case) -> dict[str, Any]:
        """Per speaker, the arm sums a later run pairs with (:func:`speaker_arm_sums`), as JSON lists: identity and
        swap, and where the run has a sham arm, the sham and swap sums of the recordings answered in both, under
        :data:`VS_SHAM` (so that the release is judged against both controls, as the absolute test is)."""
        kept, kind = self.kept_table(context, case), kind_of(case.variant).name
        sums = speaker_arm_sums(kept, kind)
        if (kept["arm"] == SHAM).any():
            try:
                sham = speaker_arm_sums(kept, kind, (SHAM, SWAP)).reindex(sums.index, fill_value=0.0)
            except ValueError:
                sham = None  # no recording answered in both the sham and the swap arm: identity alone
            if sham is not None:
                sums = sums.join(sham.drop(columns="group").add_prefix(VS_SHAM))
        return {"speaker": [str(s) for s in sums.index], **{c: sums[c].tolist() for c in sums.columns}}

    def compare(self, context: CompareContext, case: Case, candidate: CaseRecord, baseline: CaseRecord) -> Comparison:
        """Is the candidate's *systematic* voice effect larger than the baseline's on the same recordings? Each
        checkpoint's effect is recomputed from its per-speaker arm sums (:func:`speaker_arm_sums`, the records' paired
        data) with the same retained values, less its expectation under exchanging arms within speakers (the noise a
        sampling decoder adds to any arm difference), and the difference of these excesses is resampled by a paired
        speaker bootstrap (:func:`~harness.metrics.counterfactual.paired_excess_bootstrap`, one-sided t of "no
        worsening"); a regression when it grew by more than ``max_worsening`` and significantly under the gate's
        rule. Where both records carry the sham arm's sums, the same test runs against the sham too and both decide
        (:func:`.release.intersection_union`), so that a candidate that merely degrades under any large transform is
        not a voice regression; where one record lacks them, identity alone decides, a named deviation. Paired data
        of every format written so far (the per-speaker arm sums) compares."""
        other_arms = arms_protocol_difference(candidate, baseline)
        if other_arms is not None:
            return unsupported(baseline, other_arms)
        if not baseline.paired_data or not candidate.paired_data:
            return unsupported(baseline, "the baseline record carries no per-speaker arm sums")
        tables = [pd.DataFrame(data).set_index("speaker") for data in (candidate.paired_data, baseline.paired_data)]
        settings: CounterfactualThresholds = self.thresholds(context, case)
        kind = kind_of(case.variant)
        seed = derived_seed(context.seed, "paired", case.id)
        with_sham = all(any(str(c).startswith(VS_SHAM) for c in table.columns) for table in tables)
        try:
            test = excess_test([control_part(t, None) for t in tables], kind, settings.tau, seed)
            if with_sham:
                sham = excess_test([control_part(t, VS_SHAM) for t in tables], kind, settings.tau, seed, (SHAM, SWAP))
                test = intersection_union(test, sham)
        except ValueError as exc:
            return unsupported(baseline, f"cannot pair with the baseline: {exc}")
        measure = kind.release_measure
        if with_sham:
            measure = f"{measure}, and against the sham (the smaller worsening, the larger p)"
        elif any(any(str(c).startswith(VS_SHAM) for c in table.columns) for table in tables):
            measure = f"{measure} [DEVIATION: {RELEASE_SHAM_MISSING}]"
        return regression_comparison(
            context, case, test, measure=measure, margin=settings.max_worsening, margin_key="max_worsening"
        )

    def _vibe(self, table: pd.DataFrame, settings: CounterfactualThresholds, seed: int):
        arms = vibe_arms(table, tau=settings.tau, n_permutations=settings.n_permutations, seed=seed)
        effect, artifact, flips, artifact_flips = (
            arms.voice_effect,
            arms.artifact,
            arms.flip_rates,
            arms.artifact_flip_rates,
        )
        sham = arms.against_sham
        deciding, p, binding = effect.score, effect.test.p_value, effect.test
        if sham is not None and not (np.isfinite(sham.score) and np.isfinite(sham.test.p_value)):
            sham = None  # an undefined comparison with the sham (min and max would silently drop its NaN)
        if sham is not None:  # intersection-union: the smaller effect and the larger p of the two controls decide
            deciding, p = min(effect.score, sham.score), max(effect.test.p_value, sham.test.p_value)
            binding = binding_test(effect.score, effect.test, sham.score, sham.test)
        elif (
            table["arm"] == SHAM
        ).any():  # a sham arm its answers cannot be compared on: undefined, never identity alone
            deciding, p = float("nan"), float("nan")
        contrast = Contrast.with_floor(
            "nTVD identity vs swap" if sham is None else "nTVD of swap vs identity or sham (smaller)",
            deciding,
            p,
            deciding > settings.max_ntvd,
            binding.floor,
            bar=settings.max_ntvd,
            sensitivity=sign_flip_sensitivity(binding, "speakers per swap direction"),
        )
        incomparable = sham is None and bool((table["arm"] == SHAM).any())
        if incomparable:
            contrast = dataclasses.replace(contrast, reason=SHAM_NOT_COMPARABLE)
        payload = {
            "deciding": finite_or_none(deciding),
            "sham": (ShamArm(deviation=SHAM_NOT_COMPARABLE, decides=True) if incomparable else None)
            if sham is None
            else ShamArm(
                measure="nTVD sham vs swap",
                effect=finite_or_none(sham.score),
                p=finite_or_none(sham.test.p_value),
                per_direction=_finite_map(sham.per_direction),
                size=None if arms.sham_size is None else finite_or_none(arms.sham_size.score),
                size_measure="nTVD identity vs sham",
                decides=True,
            ),
            "effect": finite_or_none(effect.score),
            "p": finite_or_none(effect.test.p_value),
            "per_direction": _finite_map(effect.per_direction),
            "per_attribute": {d: _finite_map(v) for d, v in effect.per_attribute.items()},
            "recordings": effect.recordings,
            "unpaired_recordings": effect.unpaired_recordings,
            "flip_rates": flip_rows(flips),
            "shifts": [ShiftRow(**row) for row in arms.shifts.astype({"value": str}).to_dict("records")],
            "distributions": distribution_rows(effect.distributions),
            "artifact": None
            if artifact is None
            else Artifact(
                measure="nTVD original vs identity",
                value=finite_or_none(artifact.score),
                p=finite_or_none(artifact.test.p_value),
                flip_rates=[] if artifact_flips is None else flip_rows(artifact_flips),
            ),
        }
        findings = (
            f"nTVD identity vs swap = {effect.score:.2f} (p = {effect.test.p_value:.4g}; "
            + ", ".join(f"{d}: {v:.2f}" for d, v in effect.per_direction.items())
            + f"; mean flip rate {100 * flips['flip_rate'].mean():.0f}%)"
            + ("" if artifact is None else f"; artifact (original vs identity) nTVD = {artifact.score:.2f}")
            + (
                ""
                if sham is None
                else f"; against the sham nTVD = {sham.score:.2f} (p = {sham.test.p_value:.4g}; the sham's own size, "
                f"identity vs sham, {arms.sham_size.score if arms.sham_size else float('nan'):.2f})"
            )
        )
        return [contrast], payload, findings

    def _wer(self, table: pd.DataFrame, settings: CounterfactualThresholds, seed: int):
        return self._per_direction(
            table,
            lambda rows, arms: paired_wer_difference(rows, arms, n_permutations=settings.n_permutations, seed=seed),
            bar=settings.max_wer_difference,
            label="WER swap - identity (points)",
            difference=lambda result: result.difference,
            arm_measure=lambda result: result.wer,
            artifact_name="WER identity - original (points)",
            extra=lambda result: {"mean_recording_difference": finite_or_none(result.mean_recording_difference)},
        )

    def _stereotype(self, table: pd.DataFrame, settings: CounterfactualThresholds, seed: int):
        return self._per_direction(
            table,
            lambda rows, arms: choice_flips(rows, arms, n_permutations=settings.n_permutations, seed=seed),
            bar=settings.max_stereotype_shift,
            label="stereotype share swap - identity (points)",
            difference=lambda result: result.share_change,
            arm_measure=lambda result: result.stereotype_share,
            artifact_name="stereotype share identity - original (points)",
            extra=lambda result: {"flip_rate": finite_or_none(result.flip_rate), "items": result.items},
        )

    def _per_direction(self, table, measure, *, difference, bar, label, arm_measure, artifact_name, extra):
        """One contrast per swap direction (the directions may move the measure in opposite ways): swap - identity
        of ``measure`` (its ``difference``, points), with its paired permutation p; the artifact is identity -
        original; ``arm_measure`` gives each arm's level, ``extra`` the measure's own fields."""
        contrasts, directions = [], {}
        has_sham = bool((table["arm"] == SHAM).any())
        for source, rows in table.groupby("source_group", sort=True, observed=True):
            effect = measure(rows, (IDENTITY, SWAP))
            artifact = _optional(lambda rows=rows: measure(rows, (ORIGINAL, IDENTITY)))
            sham = _optional(lambda rows=rows: measure(rows, (SHAM, SWAP))) if has_sham else None
            change = difference(effect)
            deciding, p, relevant, binding = change, effect.test.p_value, abs(change) > bar, effect.test
            if sham is not None:  # intersection-union: both controls, the same sign, the smaller size, the larger p
                against = difference(sham)
                deciding = change if abs(change) <= abs(against) else against
                p = max(effect.test.p_value, sham.test.p_value)
                relevant = relevant and abs(against) > bar and (change > 0) == (against > 0)
                binding = binding_test(abs(change), effect.test, abs(against), sham.test)
            elif has_sham:  # the run has a sham arm that this direction's answers cannot be compared on: undefined
                deciding, p, relevant = float("nan"), float("nan"), False
            contrast = Contrast.with_floor(
                f"{source} speakers",
                deciding,
                p,
                relevant,
                binding.floor,
                bar=bar,
                sensitivity=sign_flip_sensitivity(binding, "speakers in the direction"),
            )
            if has_sham and sham is None:
                contrast = dataclasses.replace(contrast, reason=SHAM_NOT_COMPARABLE)
            contrasts.append(contrast)
            directions[str(source)] = {
                "effect": finite_or_none(change),
                "p": finite_or_none(effect.test.p_value),
                "arms": _finite_map({**(arm_measure(artifact) if artifact else {}), **arm_measure(effect)}),
                "artifact": None if artifact is None else finite_or_none(difference(artifact)),
                "artifact_p": None if artifact is None else finite_or_none(artifact.test.p_value),
                "deciding": finite_or_none(deciding),
                **(
                    {}
                    if sham is None
                    else {"against_sham": finite_or_none(difference(sham)), "sham_p": finite_or_none(sham.test.p_value)}
                ),
                **extra(effect),
            }
        largest = max(directions.values(), key=lambda d: abs(d["effect"] or 0.0))
        largest_deciding = max(directions.values(), key=lambda d: abs(d["deciding"] or 0.0))
        payload = {
            "deciding": largest_deciding["deciding"],
            "sham": None
            if not has_sham
            else ShamArm(
                measure=label.replace("identity", "sham"),
                per_direction={d: v.get("against_sham") for d, v in directions.items()},
                decides=True,
            ),
            "effect": largest["effect"],
            "p": min((d["p"] for d in directions.values() if d["p"] is not None), default=None),
            "per_direction": {d: v["effect"] for d, v in directions.items()},
            "directions": {source: DirectionRow(**d) for source, d in directions.items()},
            "artifact": Artifact(
                measure=artifact_name,
                value=max(
                    (d["artifact"] for d in directions.values() if d["artifact"] is not None), key=abs, default=None
                ),
                p=min((d["artifact_p"] for d in directions.values() if d["artifact_p"] is not None), default=None),
            ),
        }
        findings = f"{label}: " + ", ".join(
            f"{source} speakers {_signed(d['effect'])} (p = {_p(d['p'])}; artifact {_signed(d['artifact'])}"
            + (
                ""
                if "against_sham" not in d
                else f"; against the sham {_signed(d['against_sham'])}, p = {_p(d['sham_p'])}"
            )
            + ")"
            for source, d in directions.items()
        )
        return contrasts, payload, findings


SHAM_NOT_COMPARABLE = (
    "the sham arm cannot be compared with the swap on these recordings (not every one has both, or no value is "
    "frequent enough)"
)


def binding_test(identity_effect: float, identity_test, sham_effect: float, sham_test):
    """The test of the control whose effect decides under the intersection-union rule (the smaller effect; identity on
    a tie or where an effect is undefined): its design floor and sensitivity are the case's. The other control's
    effect is at least as large, so where it is larger by a transform artefact (an ASR that degrades under any large
    transform: swap vs identity large, swap vs sham small) its permutation null carries that artefact, and its
    detectable effect would describe the artefact, not what the rule can detect; where the effects are alike so are
    the two tests (``benchmarks/bench_sham_rule.py`` measures the stated detectable effect against detection)."""
    if np.isfinite(sham_effect) and np.isfinite(identity_effect) and sham_effect < identity_effect:
        return sham_test
    return identity_test


def arms_protocol_difference(candidate: CaseRecord, baseline: CaseRecord) -> str | None:
    """Why two counterfactual records cannot be compared, or None: their arms were made by another voice transform,
    with other transform settings, by other transform code (its source hash) or another resynthesiser version, or
    their swapped clips were labelled by another perceiver or perceiver version (its fingerprint; another keeps other
    recordings), so their effects measure different interventions, as another extractor makes nTVD incomparable. A
    baseline record that does not state its transform settings (written before they were recorded) cannot be
    shown to match and is not compared either; one that does not state the code, resynthesiser or perceiver
    fingerprint (written before issue 58) is compared on what it states. A resynthesiser recorded as a bare version is
    praat-parselmouth's; WORLD's records name their package (``pyworld-prebuilt 0.3.6.post1``)."""
    differences = [
        f"{name} {getattr(baseline, field)!r} (this run: {getattr(candidate, field)!r})"
        for field, name in (("transform", "transform"), ("perceiver", "perceiver"))
        if getattr(baseline, field) != getattr(candidate, field)
    ]
    differences += [
        f"{name} {getattr(baseline, field)!r} (this run: {getattr(candidate, field)!r})"
        for field, name in (
            ("transform_source", "transform source hash"),
            ("resynthesiser", "resynthesiser" + ("" if " " in str(baseline.resynthesiser) else " praat-parselmouth")),
            ("perceiver_fingerprint", "perceiver fingerprint"),
        )
        if getattr(baseline, field, None) is not None and getattr(baseline, field) != getattr(candidate, field, None)
    ]
    recorded, current = baseline.transform_settings, candidate.transform_settings
    if recorded is None:
        differences.append("transform settings not recorded (a results.json written before they were)")
    elif recorded != current:
        changed = sorted(key for key in {*recorded, *(current or {})} if recorded.get(key) != (current or {}).get(key))
        differences.append(
            "transform settings "
            + ", ".join(f"{key} {recorded.get(key)!r} (this run: {(current or {}).get(key)!r})" for key in changed)
        )
    if not differences:
        return None
    return (
        f"the baseline's arms were made with {'; '.join(differences)}: its voice effect measures another "
        "intervention, so the case is judged by its absolute threshold only (remake the baseline with this run's "
        "counterfactual settings and perceiver)"
    )


def stimulus_identity(context: CheckContext, transform: str) -> dict[str, Any]:
    """What makes the arms' audio and picks the clips kept, by content (:data:`.record.STIMULUS_IDENTITY`): the source
    hash of the swap ``transform`` and of its control (``identity``; ``world_identity`` for ``age_shift``), the
    resynthesiser's version (praat-parselmouth's; ``pyworld-prebuilt <version>`` for WORLD's transforms) and the
    perceiver's fingerprint (``voice:praat``: :func:`harness.perception.voice_praat_labeller`; a model spec: its model's
    fingerprint)."""
    swap = get_transform(transform)
    return {
        "transform_source": {name: get_transform(name).source_hash() for name in (transform, control_of(swap))},
        "resynthesiser": resynthesiser_of(swap),
        "perceiver_fingerprint": perceiver_fingerprint(context),
    }


def perceiver_fingerprint(context: CheckContext) -> str:
    """A model-free perceiver's :func:`model_free_fingerprint`; a model spec's: its model's fingerprint."""
    return model_free_fingerprint(context.perceiver) or context.fingerprint(context.perceiver)


def model_free_fingerprint(perceiver: str) -> str | None:
    """``voice:praat``: :func:`harness.perception.voice_praat_labeller`; ``voice:formants``: the features' code
    (:func:`~harness.perception.voice_features_labeller`) and the discriminant's
    (:mod:`harness.metrics.perceiver_fit`); None for a model spec."""
    if perceiver == VOICE_PRAAT:
        return voice_praat_labeller()
    if perceiver == VOICE_FORMANTS:
        return f"{voice_features_labeller()}:{source_fingerprint('harness.metrics.perceiver_fit')}"
    return None


def flip_rows(flips: pd.DataFrame) -> list[FlipRow]:
    return [
        FlipRow(attribute=str(attribute), recordings=int(row.recordings), flipped=int(row.flipped), flip_rate=float(row.flip_rate))
        for attribute, row in flips.iterrows()
    ]  # fmt: skip


def distribution_rows(distributions: pd.DataFrame) -> list[DistributionRow]:
    """Per direction, attribute and retained value: each arm's share (0-1), the report's plot data."""
    return [
        DistributionRow(direction=str(direction), attribute=str(attribute), value=str(value), **{arm: float(row[arm]) for arm in distributions.columns})
        for (direction, attribute, value), row in distributions.iterrows()
    ]  # fmt: skip


def _optional(compute):
    try:
        return compute()
    except (ValueError, KeyError):
        return None


def _finite_map(values: dict) -> dict:
    return {str(key): finite_or_none(float(value)) for key, value in values.items()}


def _signed(value: float | None) -> str:
    return "n/a" if value is None else f"{value:+.1f}"


def _p(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3g}"


CHECK = CounterfactualCheck


def _of_recordings(keys: pd.Series, recordings: Collection[str]) -> np.ndarray:
    """Which ``keys`` (a recording, or ``recording|option order`` for a BASIS item) belong to one of ``recordings``:
    each distinct key split once, not each row."""
    codes, distinct = pd.factorize(keys)
    distinct_kept = np.array([key.split("|")[0] in recordings for key in distinct.tolist()], dtype=bool)
    return distinct_kept[codes]
