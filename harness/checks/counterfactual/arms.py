"""The arms of a corpus or BASIS item set and the answers to them, as the plain tables
:mod:`harness.metrics.counterfactual` reads: one builder per kind of answer, over an :data:`Ask` (how the model is
asked), serving the check (through a gate run's output cache, :mod:`.tables`), the benchmark and the tests (a loaded
backend, :func:`ask_loaded`).

:func:`build_arms` resynthesises every recording of a corpus once per arm (``identity`` and the configured swap);
:func:`vibe_arm_table` asks one VIBE task on every arm's audio and reads the values of its answers;
:func:`wer_arm_table` asks for a transcript of every arm's audio and counts its word errors against the reference;
:func:`choice_arm_table` asks a BASIS stereotype set's items and reads the option chosen.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from harness.checks.basis_common.requests import choice_requests
from harness.checks.counterfactual.settings import IDENTITY, ORIGINAL, SHAM, SWAP
from harness.core.requests import Audio, DecodingParams, GenerationRequest
from harness.data.basis_suite import CHOICE_OF_OPTION, ItemSet
from harness.data.corpus import Corpus, read_utterance_audio
from harness.data.voice_transforms import ChangeGenderSettings, control_of, get_transform, sham_of
from harness.data.voice_transforms.arm_audio import ArmStore, lazy_arm
from harness.extraction.choice import UNKNOWN, choice_for_letter, match_answer
from harness.extraction.fields import attribute_table
from harness.metrics.wer import word_errors
from harness.tasks.asr import TRANSCRIPTION_PROMPT
from harness.tasks.base import SELF_REPORT, Task

SPEECH_IMPLICIT = "speech-implicit"
"""The BASIS mode whose only cue to the speaker's group is the voice: the mode of the counterfactual arms."""


@dataclasses.dataclass(frozen=True)
class CorpusArms:
    """Every recording's audio per arm (``audio[arm][key]``: a corpus's utterance id, an item set's CSV row), with its
    speaker, source and target group."""

    audio: Mapping[str, Mapping[str, Audio]]
    recordings: pd.DataFrame
    """Index: the recordings' keys; columns ``speaker``, ``source_group``, ``target_group``."""

    @functools.cached_property
    def coded(self) -> dict[str, tuple[np.ndarray, pd.Index]]:
        """``speaker``, ``source_group`` and the keys (``recording``) as text, each as integer codes (in the
        recordings' order) into its sorted distinct texts (``pd.factorize(..., sort=True)``): what the long tables of
        every arm repeat, and the categories of :func:`arm_rows`' columns."""
        texts = {
            "speaker": self.recordings["speaker"].astype(str).to_numpy(),
            "source_group": self.recordings["source_group"].astype(str).to_numpy(),
            "recording": self.recordings.index.astype(str).to_numpy(),
        }
        return {name: pd.factorize(values, sort=True) for name, values in texts.items()}


def build_arms(
    corpus: Corpus,
    settings: ChangeGenderSettings,
    *,
    transform: str = "gender_swap",
    utterances: Iterable[str] | None = None,
    store: ArmStore | None = None,
    sham_settings: Any = None,
) -> CorpusArms:
    """The ``identity`` and ``swap`` (``transform``) arms of ``utterances`` (default: every recording of ``corpus``)
    on the transform's dimension; the ``original`` audio is kept beside them, as the artifact measure's reference.
    The arms are made when their samples are first read, and kept in ``store`` (default: in memory); with
    ``sham_settings`` the ``sham`` arm too (the transform's :func:`~harness.data.voice_transforms.sham_of`)."""
    dimension = get_transform(transform).dimension
    if dimension not in corpus.dimensions:
        raise ValueError(f"{corpus.manifest_path}: the {transform} transform needs dimension {dimension!r}; "
                         f"the corpus has {list(corpus.dimensions)}")  # fmt: skip
    selected = list(corpus.table.index if utterances is None else utterances)
    recordings = pd.DataFrame(
        {
            "speaker": corpus.table.loc[selected, "speaker_id"].astype(str).to_numpy(),
            "source_group": corpus.table.loc[selected, dimension].astype(str).to_numpy(),
        },
        index=pd.Index(selected, name="utterance_id"),
    )
    return transformed_arms(
        recordings, lambda utterance: read_utterance_audio(corpus, utterance), settings, transform, store, sham_settings
    )


def item_set_arms(
    item_set: ItemSet,
    settings: ChangeGenderSettings,
    *,
    transform: str = "gender_swap",
    store: ArmStore | None = None,
    sham_settings: Any = None,
) -> CorpusArms:
    """The arms of every recording of a BASIS item set, keyed by its CSV ``row``; the set's dimension must be the
    transform's."""
    dimension = get_transform(transform).dimension
    if item_set.dimension != dimension:
        raise ValueError(f"{item_set.metadata_path}: the {transform} transform needs dimension {dimension!r}; the set "
                         f"{item_set.name!r} is of {item_set.dimension!r}")  # fmt: skip
    recordings = pd.DataFrame(
        {"speaker": item_set.table["speaker"].astype(str).to_numpy(), "source_group": item_set.table["label"].astype(str).to_numpy()},
        index=pd.Index(item_set.table["row"].to_numpy(), name="row"),
    )  # fmt: skip
    return transformed_arms(recordings, item_set.audio, settings, transform, store, sham_settings)


def transformed_arms(
    recordings: pd.DataFrame,
    read: Callable[[Any], Audio],
    settings: ChangeGenderSettings,
    transform: str,
    store: ArmStore | None = None,
    sham_settings: Any = None,
) -> CorpusArms:
    """Each recording (index: its key for ``read``; columns ``speaker``, ``source_group``) with its ``identity`` arm
    (made by the transform's control, :func:`~harness.data.voice_transforms.control_of`: Praat's ``identity`` for
    ``gender_swap``, ``world_identity`` for ``age_shift``) and its ``transform`` arm (:func:`~harness.data.voice_transforms.arm_audio.lazy_arm`: named by their recipes now,
    resynthesised when their samples are first read, kept in ``store``; default: a store in memory); with
    ``sham_settings`` (the settings of the transform's sham, :func:`~harness.data.voice_transforms.sham_of`) its
    ``sham`` arm as well."""
    swap = get_transform(transform)
    sham_name = sham_of(swap) if sham_settings is not None else None
    sham = None if sham_name is None else get_transform(sham_name)
    identity = get_transform(control_of(swap))
    store = store or ArmStore(None)
    targets = [swap.target_group(source) for source in recordings["source_group"]]
    fingerprints = {IDENTITY: identity.fingerprint(settings), SWAP: swap.fingerprint(settings)}
    audio: dict[str, dict[Any, Audio]] = {ORIGINAL: {}, IDENTITY: {}, SWAP: {}, **({SHAM: {}} if sham else {})}
    sham_fingerprint = None if sham is None else sham.fingerprint(sham_settings)
    for key, source in zip(recordings.index, recordings["source_group"]):
        original = read(key)
        audio[ORIGINAL][key] = original
        audio[IDENTITY][key] = lazy_arm(identity, original, source, settings, store, fingerprints[IDENTITY])
        audio[SWAP][key] = lazy_arm(swap, original, source, settings, store, fingerprints[SWAP])
        if sham is not None:
            audio[SHAM][key] = lazy_arm(sham, original, source, sham_settings, store, sham_fingerprint)
    return CorpusArms(audio, recordings.assign(target_group=targets))


Ask = Callable[[Sequence[GenerationRequest], str], Sequence[str]]
"""How an arm table asks a model: ``ask(requests, arm)`` gives one answer per request of the arm named. A gate run
asks through its output cache (:mod:`.tables`); :func:`ask_loaded` asks a loaded backend directly (benchmarks, tests)."""


def ask_loaded(model, params: DecodingParams | None = None) -> Ask:
    """An :data:`Ask` of a loaded backend (``generate(requests, params)``), decoding with ``params``."""
    params = params or DecodingParams()
    return lambda requests, arm: list(model.generate(list(requests), params))


def arm_rows(
    arms: CorpusArms, keys: Sequence[Any], arm: str, *, arm_names: Iterable[str] = (), **columns: Any
) -> pd.DataFrame:
    """One row per recording key of ``keys`` answered on ``arm``: ``speaker, recording, arm, source_group`` and
    ``columns`` (the answers' measures), the layout :mod:`harness.metrics.counterfactual` reads. The four text
    columns are categoricals whose categories are sorted (grouping and sorting then order them as their text) and
    shared by every arm of ``arm_names`` (so the arms' rows concatenate into one categorical column): the tables'
    metrics factorize codes instead of text, and the rows a filter keeps are taken as integers."""
    rows = arms.recordings.index.get_indexer(keys if isinstance(keys, pd.Series) else list(keys))
    if (rows < 0).any():
        raise KeyError(f"recording {list(keys)[int((rows < 0).argmax())]!r} has no arms")
    arm_categories = sorted({arm, *arm_names})

    def coded(name: str) -> pd.Categorical:
        codes, categories = arms.coded[name]
        return pd.Categorical.from_codes(codes[rows], categories=categories)

    return pd.DataFrame(
        {
            "speaker": coded("speaker"),
            "recording": coded("recording"),
            "arm": pd.Categorical.from_codes(np.full(len(rows), arm_categories.index(arm)), categories=arm_categories),
            "source_group": coded("source_group"),
            **columns,
        }
    )


def vibe_arm_table(
    ask: Ask,
    task: Task,
    arms: CorpusArms,
    *,
    read_values: Callable[[pd.DataFrame], pd.DataFrame] | None = None,
    transcripts: Mapping[Any, str] | None = None,
    protocol: str = SELF_REPORT,
    prompts_dir: Path | None = None,
    arm_names: Iterable[str] = (IDENTITY, SWAP),
    read_arms: Mapping[str, pd.DataFrame] | None = None,
) -> pd.DataFrame:
    """One row per value extracted from the answers to ``task`` on each arm of ``arm_names``: ``speaker, recording,
    arm, source_group, attribute, value``. Each recording is asked with its transcript (``transcripts``; none: the
    self-report form, which needs none) under ``protocol``; ``read_values`` maps the answers (``utterance_id,
    answer``) to their values (``utterance_id, attribute, value``; default the self-report form's field reader).
    ``read_arms``: the values of an arm another check already read (the gate's ``original`` arm is the nTVD check's),
    taken as they are."""
    read_values = read_values or (lambda answers: attribute_table(answers, task)[0])
    read_arms = read_arms or {}
    arm_names = list(arm_names)
    frames = []
    for arm in arm_names:
        values = read_arms.get(arm)
        if values is None:
            keys = list(arms.audio[arm])
            requests = task.requests(
                ["" if transcripts is None else transcripts[key] for key in keys],
                [arms.audio[arm][key] for key in keys],
                prompts_dir,
                protocol,
            )
            values = read_values(pd.DataFrame({"utterance_id": keys, "answer": list(ask(requests, arm))}))
        frames.append(
            arm_rows(
                arms,
                values["utterance_id"],
                arm,
                arm_names=arm_names,
                attribute=values["attribute"].array,  # as they are: no round trip through Python objects
                value=values["value"].array,
            )
        )
    # the values as categoricals too, once for the table (each arm's frame has values of its own)
    return pd.concat(frames, ignore_index=True).astype({"attribute": "category", "value": "category"})


def wer_arm_table(
    ask: Ask,
    references: Mapping[Any, str],
    arms: CorpusArms,
    *,
    prompt: str = TRANSCRIPTION_PROMPT,
    arm_names: Iterable[str] = (IDENTITY, SWAP),
) -> pd.DataFrame:
    """One row per recording and arm of ``arm_names`` of the transcript asked with ``prompt``, scored against the
    recording's reference (``references``, its transcript): ``speaker, recording, arm, source_group, errors``
    (S + D + I) and ``words`` (reference words), what :func:`harness.metrics.counterfactual.paired_wer_difference`
    reads."""
    arm_names = list(arm_names)
    frames = []
    for arm in arm_names:
        keys = list(arms.audio[arm])
        hypotheses = ask([GenerationRequest(prompt, arms.audio[arm][key]) for key in keys], arm)
        scored = [word_errors(references[key], str(hypothesis)) for key, hypothesis in zip(keys, hypotheses)]
        frames.append(
            arm_rows(
                arms,
                keys,
                arm,
                arm_names=arm_names,
                errors=[e.substitutions + e.deletions + e.insertions for e in scored],
                words=[e.n_ref_words for e in scored],
            )
        )
    return pd.concat(frames, ignore_index=True)


def choice_arm_table(
    ask: Ask, item_set: ItemSet, arms: CorpusArms, *, arm_names: Iterable[str] = (IDENTITY, SWAP)
) -> pd.DataFrame:
    """The choices on a BASIS stereotype set in the speech-implicit mode, every option order asked on every
    arm's audio: one row per (recording, option order) and arm with ``speaker, recording`` (``row|order``, the
    unit paired across arms), ``arm, source_group`` and ``choice`` (:data:`harness.metrics.basis.CHOICES`)."""
    if item_set.kind != "stereotype":
        raise ValueError(f"{item_set.metadata_path}: choice_arm_table reads stereotype sets; {item_set.name!r} is "
                         f"{item_set.kind!r}")  # fmt: skip
    table = choice_requests(item_set, SPEECH_IMPLICIT)
    texts = item_set.table.set_index("row")
    frames = []
    for arm in arm_names:
        requests = [dataclasses.replace(request, audio=arms.audio[arm][row]) for request, row in zip(table.requests, table.rows["row"])]  # fmt: skip
        choices = []
        for row, order_code, answer in zip(table.rows["row"], table.rows["order"], ask(requests, arm)):
            order = order_code.split("|")
            options = {chr(ord("A") + i): " ".join(texts.at[row, key].split()) for i, key in enumerate(order)}
            key = choice_for_letter(match_answer(answer, options).letter, order)
            choices.append(CHOICE_OF_OPTION.get(key, UNKNOWN))
        frames.append(
            pd.DataFrame(
                {
                    "speaker": arms.recordings.loc[table.rows["row"], "speaker"].to_numpy(),
                    "recording": [f"{row}|{order}" for row, order in zip(table.rows["row"], table.rows["order"])],
                    "arm": arm,
                    "source_group": arms.recordings.loc[table.rows["row"], "source_group"].to_numpy(),
                    "choice": choices,
                }
            )
        )
    return pd.concat(frames, ignore_index=True)
