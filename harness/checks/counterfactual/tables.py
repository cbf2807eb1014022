"""The counterfactual check's tables in a gate run: the arms of a corpus or BASIS item set (built once per run),
the perceiver's label of every swapped clip, and a model's answers on the arms through the run's output cache.

Every table has one row per recording (or extracted value) and arm, with ``speaker``, ``recording``, ``arm`` and
``source_group``: what :mod:`harness.metrics.counterfactual` reads. The ``original`` arm asks exactly what the
between-speaker checks ask (the nTVD check's requests, the WER checks' transcriptions, BASIS's speech-implicit
choices), so its answers are theirs, from the same cache entries.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from harness.cache import cache_keys
from harness.checks.context import CheckContext, per_run_table
from harness.checks.counterfactual.arms import (
    CorpusArms,
    build_arms,
    choice_arm_table,
    item_set_arms,
    vibe_arm_table,
    wer_arm_table,
)
from harness.checks.counterfactual.manipulation import (
    ManipulationChecks,
    has_manipulation_checks,
    manipulation_checks,
)
from harness.checks.counterfactual.settings import (
    ARMS,
    COUNTERFACTUAL_SCHEMA,
    ORIGINAL,
    SECTION,
    SHAM,
    SWAP,
    CounterfactualThresholds,
)
from harness.checks.counterfactual.speaker_distance import NONE as SPEAKER_ENCODER_OFF
from harness.checks.counterfactual.speaker_distance import SpeakerDistanceChecks, speaker_distance_checks
from harness.checks.ntvd.tables import extraction
from harness.core.requests import Audio, GenerationRequest
from harness.data.voice_transforms import get_transform
from harness.data.voice_transforms.arm_audio import ArmStore, arm_folder, store_for
from harness.extraction.memo import field_attribute_table
from harness.metrics.perceiver_fit import (
    FEATURES,
    GroupDiscriminant,
    PerceiverCalibration,
    calibrate,
    labelled_calibration,
)
from harness.perception import (
    MODEL_FREE_PERCEIVERS,
    NO_LABEL,
    PERCEIVE_NAMESPACE,
    VOICE_FORMANTS,
    VOICE_PRAAT,
    PerceivedFilter,
    features_of_text,
    label_clips,
    perceived_filter,
    voice_features_labeller,
    voice_praat_labeller,
)
from harness.tasks import TASKS
from harness.tasks.base import PAPER

PERCEIVER_PROMPT = (
    "Listen to the speaker's voice. Does it sound like a {groups} voice? Answer with one word: {choices}."
)
"""What a backend perceiver (``--perceiver SPEC``) is asked of each swapped clip; its answer names the group."""


def settings_for(context: CheckContext, dimension: str) -> CounterfactualThresholds:
    """The ``counterfactual`` thresholds of ``dimension`` (defaults layered with its ``dimensions`` entry)."""
    return context.thresholds.settings(SECTION, COUNTERFACTUAL_SCHEMA, None, dimension)


def transform_settings(context: CheckContext, dimension: str) -> tuple[str, Any]:
    """The transform ``dimension``'s cases use and its settings (:meth:`CounterfactualThresholds.transform_settings`:
    :class:`~harness.data.voice_transforms.ChangeGenderSettings` for Praat's transforms)."""
    settings = settings_for(context, dimension)
    return settings.transform, settings.transform_settings()


def arm_store(context: CheckContext) -> ArmStore:
    """The run's arm store: the ``arms/`` folder of its output cache, or the one ``$LALM_ARM_STORE`` names
    (:func:`~harness.data.voice_transforms.arm_audio.arm_folder`), shared by every run of the process that uses it."""
    return store_for(str(arm_folder(context.cache.directory)))


@per_run_table
def corpus_arms(context: CheckContext, corpus_name: str, dimension: str) -> CorpusArms:
    """Every recording of the corpus in its ``original`` audio and resynthesised by ``identity`` and the swap (made
    when a missing answer or label needs them, kept in the run's :func:`arm_store`)."""
    transform, settings = transform_settings(context, dimension)
    return build_arms(
        context.corpora[corpus_name],
        settings,
        transform=transform,
        store=arm_store(context),
        sham_settings=settings_for(context, dimension).sham_settings(),
    )


@per_run_table
def basis_arms(context: CheckContext, set_name: str, dimension: str) -> CorpusArms:
    """Every recording of a BASIS item set in its three versions, keyed by the set's CSV ``row``."""
    transform, settings = transform_settings(context, dimension)
    return item_set_arms(
        context.basis.item_set(set_name),
        settings,
        transform=transform,
        store=arm_store(context),
        sham_settings=settings_for(context, dimension).sham_settings(),
    )


def arms_of(context: CheckContext, source: str, dimension: str) -> CorpusArms:
    """The arms of a corpus of the run, or of the BASIS item set ``source``."""
    if source in context.corpora:
        return corpus_arms(context, source, dimension)
    return basis_arms(context, source, dimension)


@per_run_table
def perceiver_fit(
    context: CheckContext, source: str, dimension: str
) -> tuple[GroupDiscriminant | None, PerceiverCalibration]:
    """The run's perceiver on ``source``'s original recordings, whose groups are known: for ``voice:formants`` the
    discriminant fitted on their F0 and F1-F3 and its leave-one-speaker-out accuracy
    (:func:`harness.metrics.perceiver_fit.calibrate`); for ``voice:praat`` or a model spec no fit (None) and the
    accuracy of its labels of the originals (:func:`~harness.metrics.perceiver_fit.labelled_calibration`). The
    features and labels are cached as the swaps' are, so a re-score measures nothing."""
    arms = arms_of(context, source, dimension)
    keys = list(arms.audio[ORIGINAL])
    originals = [arms.audio[ORIGINAL][key] for key in keys]
    truth = arms.recordings.loc[keys, "source_group"].astype(str).to_numpy()
    speakers = arms.recordings.loc[keys, "speaker"].astype(str).to_numpy()
    if context.perceiver == VOICE_FORMANTS:
        features = [
            features_of_text(text or NO_LABEL) for text in model_free_labels(context, originals, VOICE_FORMANTS)
        ]
        table = pd.DataFrame(
            [(speaker, group, *(feature or (float("nan"),) * len(FEATURES))) for speaker, group, feature in zip(speakers, truth, features)],
            columns=["speaker", "group", *FEATURES],
        )  # fmt: skip
        try:
            return calibrate(table)
        except ValueError:
            method = "linear discriminant on log F0 and log F1-F3: fewer than two groups have features"
            return None, labelled_calibration(truth, [None] * len(truth), speakers, method)
    groups = sorted(set(arms.recordings["source_group"]) | set(arms.recordings["target_group"]))
    labels = perceive(context, originals, groups, f"{source}/perceiver on the originals")
    method = "median F0 by voice:praat's pitch classes" if context.perceiver == VOICE_PRAAT else "the model's answers"
    return None, labelled_calibration(truth, labels, speakers, method)


@per_run_table
def perceived_clips(context: CheckContext, source: str, dimension: str, arm: str = SWAP) -> pd.DataFrame:
    """One row per swapped recording: ``recording, source_group, target_group, perceived_group`` (the perceiver's
    label of the swap arm's audio; None when it could not tell), :func:`harness.perception.perceived_filter`'s input.
    ``voice:formants`` labels by the discriminant fitted on the originals (:func:`perceiver_fit`). ``arm`` ``sham``
    labels the sham arm's audio instead, whose target is its source group (:func:`perceived_sham`)."""
    arms = arms_of(context, source, dimension)
    keys = list(arms.audio[arm])
    clips = [arms.audio[arm][key] for key in keys]
    groups = sorted(set(arms.recordings["source_group"]) | set(arms.recordings["target_group"]))
    if context.perceiver == VOICE_FORMANTS:
        discriminant, _ = perceiver_fit(context, source, dimension)
        features = [features_of_text(text or NO_LABEL) for text in model_free_labels(context, clips, VOICE_FORMANTS)]
        labels = [
            None if discriminant is None or feature is None else discriminant.predict(np.array([feature]))[0]
            for feature in features
        ]
    else:
        labels = perceive(context, clips, groups, f"{source}/perceived group")
    target = "source_group" if arm == SHAM else "target_group"
    return pd.DataFrame(
        {
            "recording": [str(key) for key in keys],
            "source_group": arms.recordings.loc[keys, "source_group"].to_numpy(),
            "target_group": arms.recordings.loc[keys, target].to_numpy(),
            "perceived_group": labels,
        }
    )


def perceive(context: CheckContext, clips: Sequence[Audio], groups: Sequence[str], label: str) -> list[str | None]:
    """Each clip's perceived group by a perceiver that needs no fit: ``voice:praat`` (Praat's pitch classes, no
    model) or any backend, asked :data:`PERCEIVER_PROMPT` through the output cache, its answer read as the group it
    names (``voice:formants`` labels through :func:`perceiver_fit`)."""
    if context.perceiver in MODEL_FREE_PERCEIVERS:
        return voice_praat_labels(context, clips)
    prompt = PERCEIVER_PROMPT.format(groups=" or a ".join(groups), choices=" or ".join(groups))
    answers = context.outputs(context.perceiver, [GenerationRequest(prompt, clip) for clip in clips], label)
    return [named_group(answer, groups) for answer in answers["answer"]]


def voice_praat_labels(context: CheckContext, clips: Sequence[Audio]) -> list[str | None]:
    """``voice:praat``'s label of each clip (:func:`model_free_labels`)."""
    return model_free_labels(context, clips, VOICE_PRAAT)


def model_free_labels(context: CheckContext, clips: Sequence[Audio], measure: str) -> list[str | None]:
    """``voice:praat``'s label or ``voice:formants``'s features (as text) of each clip (``measure``), kept in the
    output cache by the clip's content hash and the code that measures it
    (:func:`harness.perception.voice_praat_labeller`, :func:`~harness.perception.voice_features_labeller`), so that a
    re-score reads them instead of analysing audio, and beside each arm in the run's arm store
    (:meth:`ArmStore.labels`), so that another cache sharing the store (another checkpoint's) reads them too; the
    clips measured in neither are measured over the cores (:func:`harness.perception.label_clips`)."""
    fingerprint = voice_praat_labeller() if measure == VOICE_PRAAT else voice_features_labeller()
    keys = cache_keys(PERCEIVE_NAMESPACE, fingerprint, {}, [{"audio": clip.content_hash} for clip in clips])
    found = context.cache.get_many(list(dict.fromkeys(keys)))
    missing = {key: clip for key, clip in zip(keys, clips) if key not in found}
    if missing:
        store = arm_store(context)
        stored = store.labels(list(missing.values()), fingerprint)
        unlabelled = {key: clip for key, clip in missing.items() if clip.content_hash not in stored}
        labels = label_clips(list(unlabelled.values()), context.progress, measure) if unlabelled else []
        made = {key: label or NO_LABEL for key, label in zip(unlabelled, labels)}
        found.update((key, made.get(key) or stored[clip.content_hash]) for key, clip in missing.items())
        context.cache.put_many([(key, PERCEIVE_NAMESPACE, fingerprint, found[key], {}) for key in missing])
        store.keep_labels([(clip, made[key]) for key, clip in unlabelled.items()], fingerprint)
    return [None if found[key] == NO_LABEL else found[key] for key in keys]


def named_group(answer: str, groups: Sequence[str]) -> str | None:
    """The one group ``answer`` names as a whole word (None when it names none or several)."""
    named = [group for group in groups if re.search(rf"\b{re.escape(group)}\b", str(answer), re.IGNORECASE)]
    return named[0] if len(named) == 1 else None


@per_run_table
def perceived_recordings(context: CheckContext, source: str, dimension: str) -> PerceivedFilter:
    """The recordings of ``source`` whose swap the perceiver heard as the target group, and the share per direction
    (:func:`harness.perception.perceived_filter` of :func:`perceived_clips`): once per source and dimension, for every case
    of it."""
    return perceived_filter(perceived_clips(context, source, dimension))


@per_run_table
def perceived_sham(context: CheckContext, source: str, dimension: str) -> PerceivedFilter:
    """The sham's manipulation check (issue 58, item 6): the recordings of ``source`` whose sham the perceiver heard
    as their own source group, and the share per direction (source -> source), by the same perceiver and filter as
    the swap's (:func:`perceived_recordings`). A sham heard as the other group crossed the boundary it is to stay
    within (a male voice near 85 Hz, whose sham pitch is clipped, moves by its formants alone)."""
    return perceived_filter(perceived_clips(context, source, dimension, SHAM))


@per_run_table
def manipulated_recordings(context: CheckContext, source: str, dimension: str) -> ManipulationChecks | None:
    """The manipulation checks of ``source``'s arms (:func:`.manipulation.manipulation_checks`: F0 and F1-F3 of each
    arm against the recording, the recordings admitted), once per source and dimension; None for a transform that
    states no plan (``gender_swap``, judged by the perceived-group filter alone)."""
    name, settings = transform_settings(context, dimension)
    transform = get_transform(name)
    if not has_manipulation_checks(transform):
        return None
    bounds = settings_for(context, dimension)
    arms = arms_of(context, source, dimension)
    return manipulation_checks(
        arms.recordings,
        arms.audio,
        transform,
        settings,
        min_shift=bounds.min_manipulation_shift,
        max_identity_shift=bounds.max_identity_shift,
        progress=context.progress,
    )


@per_run_table
def speaker_distance_recordings(context: CheckContext, source: str, dimension: str) -> SpeakerDistanceChecks | None:
    """The speaker-embedding check of ``source``'s arms (:func:`.speaker_distance.speaker_distance_checks`: each arm's
    distance to its recording, the recordings admitted where it filters), once per source and dimension; None where
    ``speaker_encoder`` is ``none``. Where the encoder is not installed, a check that says so and admits all."""
    settings = settings_for(context, dimension)
    if settings.speaker_encoder == SPEAKER_ENCODER_OFF:
        return None
    arms = arms_of(context, source, dimension)
    return speaker_distance_checks(
        arms.recordings,
        arms.audio,
        encoder=settings.speaker_encoder,
        filters=settings.speaker_distance_filter,
        max_identity_speaker_distance=settings.max_identity_speaker_distance,
        min_swap_speaker_distance=settings.min_swap_speaker_distance,
    )


@per_run_table
def vibe_table(context: CheckContext, model: str, corpus_name: str, task_name: str, dimension: str) -> pd.DataFrame:
    """One row per extracted value of ``model``'s answers to the task on each arm (:func:`.arms.vibe_arm_table`),
    under the run's VIBE protocol and extractor: ``speaker, recording, arm, source_group, attribute, value``. The
    ``original`` arm's values are the nTVD check's (the same requests), the others are asked through the cache."""
    corpus, task = context.corpora[corpus_name], TASKS[task_name]
    budget = task.max_new_tokens if context.vibe.protocol == PAPER else None

    def ask(requests: Sequence[GenerationRequest], arm: str) -> list[str]:
        label = f"{corpus_name}/{task_name} {arm} arm"
        require_sham_answers(context, model, context.model(model), requests, arm, max_new_tokens=budget)
        return context.outputs(model, requests, label, max_new_tokens=budget)["answer"].tolist()

    def read_values(answers: pd.DataFrame) -> pd.DataFrame:
        if context.extractor is None:
            return field_attribute_table(answers, task, context.cache)[0]
        return context.extractor.attribute_table(answers, task)[0]

    original, _ = extraction(context, model, corpus_name, task_name)
    arms = corpus_arms(context, corpus_name, dimension)
    return with_sham(
        arms,
        lambda arm_names: vibe_arm_table(
            ask,
            task,
            arms,
            read_values=read_values,
            transcripts=corpus.transcripts,
            protocol=context.vibe.protocol,
            prompts_dir=context.prompts_dir,
            arm_names=arm_names,
            read_arms={ORIGINAL: original},
        ),
    )


@per_run_table
def wer_table(context: CheckContext, model: str, corpus_name: str, dimension: str) -> pd.DataFrame:
    """One row per recording and arm of the transcript ``model``'s transcriber (the WER checks',
    :meth:`~harness.checks.context.CheckContext.transcriber`) made of it, scored against the corpus's transcript
    (:func:`.arms.wer_arm_table`): ``speaker, recording, arm, source_group, errors`` (S + D + I) and ``words``."""
    transcriber, prompt = context.transcriber(model)

    def ask(requests: Sequence[GenerationRequest], arm: str) -> list[str]:
        require_sham_answers(context, model, transcriber, requests, arm)
        return context.outputs(transcriber, requests, f"{corpus_name}/transcription {arm} arm")["answer"].tolist()

    references = context.corpora[corpus_name].transcripts
    arms = corpus_arms(context, corpus_name, dimension)
    return with_sham(arms, lambda arm_names: wer_arm_table(ask, references, arms, prompt=prompt, arm_names=arm_names))


@per_run_table
def choice_table(context: CheckContext, model: str, set_name: str, dimension: str) -> pd.DataFrame:
    """``model``'s choices on a BASIS stereotype set in the speech-implicit mode, every option order asked on every
    arm (:func:`.arms.choice_arm_table`): ``speaker, recording`` (``row|order``), ``arm, source_group, choice``."""

    def ask(requests: Sequence[GenerationRequest], arm: str) -> list[str]:
        require_sham_answers(context, model, context.model(model), requests, arm)
        return context.outputs(model, requests, f"{set_name} speech-implicit arms")["answer"].tolist()

    arms = basis_arms(context, set_name, dimension)
    item_set = context.basis.item_set(set_name)
    return with_sham(arms, lambda arm_names: choice_arm_table(ask, item_set, arms, arm_names=arm_names))


SHAM_NOT_CACHED = "sham arm not in the cached outputs"
"""The deviation of a case whose model's answers come from outputs that lack the sham arm (the shipped demo exports,
made before it; an offline re-score of a cache without them): its effect is judged against the identity arm
alone, and every surface names it (:meth:`harness.results.RunResults.deviations`)."""


class ShamArmMissing(Exception):
    """The sham arm's answers are not cached and the model may not be asked for them (:func:`require_sham_answers`)."""


def with_sham(arms: CorpusArms, build: Callable[[Sequence[str]], pd.DataFrame]) -> pd.DataFrame:
    """``build(arm_names)``: with the ``sham`` arm first where the arms have one and its answers can be had, else
    with :data:`ARMS` alone (the table then has no sham rows: the case states :data:`SHAM_NOT_CACHED`)."""
    if SHAM not in arms.audio:
        return build(ARMS)
    try:
        return build((SHAM, *ARMS))
    except ShamArmMissing:
        return build(ARMS)


def require_sham_answers(
    context: CheckContext, model: str, asked: Any, requests: Sequence[GenerationRequest], arm: str, **options: Any
) -> None:
    """Raise :class:`ShamArmMissing` when ``arm`` is the sham, not every answer of ``asked`` (the model, or its
    transcriber) to ``requests`` is cached, and ``model`` may not be asked for them: its answers come from shipped
    outputs (``bundled_exports``) or the run is offline. A run that loads its model (a simulator, a model served
    for real) or plans its requests (``--plan``) asks the sham like any arm."""
    if arm != SHAM:
        return
    config = getattr(context, "config", None)
    pool = getattr(context, "pool", None)
    planning = pool is not None and getattr(pool, "planner", None) is not None
    if config is None or planning or not (config.offline or config.bundled_exports.get(model)):
        return
    decoding = asked.decoding
    budget = options.get("max_new_tokens")
    if budget is not None and budget > decoding.max_new_tokens:  # as the run's outputs key them
        decoding = dataclasses.replace(decoding, max_new_tokens=budget)
    keys = asked.keys(list(requests), decoding)
    if set(keys) <= set(context.cache.lookup(keys)):
        return
    raise ShamArmMissing(SHAM_NOT_CACHED)


def transform_dimension(context: CheckContext, dimension: str | None = None) -> str:
    """The dimension whose groups the transform configured for ``dimension`` (default: the ``defaults`` layer's)
    swaps (``gender`` for ``gender_swap``, ``age`` for ``age_shift``)."""
    return get_transform(settings_for(context, dimension or "").transform).dimension


def counterfactual_dimensions(context: CheckContext, dimensions: Sequence[str]) -> list[str]:
    """Those of ``dimensions`` (a corpus's or item set's) that have counterfactual cases: the ones whose configured
    transform (thresholds.yaml ``counterfactual``, layered by dimension) shifts that dimension. By default only
    ``gender`` (``gender_swap``); ``dimensions: {age: {transform: age_shift}}`` adds the age cases."""
    return [dimension for dimension in dimensions if transform_dimension(context, dimension) == dimension]
