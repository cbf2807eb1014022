"""The arms of a corpus and a model's answers to them, as the plain tables :mod:`harness.metrics.counterfactual`
reads.

:func:`build_arms` resynthesises every recording of a corpus once per arm (``identity`` and the configured swap);
:func:`vibe_arm_table` asks a loaded model one VIBE task on every arm's audio and reads its answers with the field
reader (the self-report protocol's ``rules`` extractor), one row per extracted value; :func:`wer_arm_table` asks
it for a transcript of every arm's audio and counts its word errors against the corpus's transcript.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping

import pandas as pd

from harness.core.requests import Audio, DecodingParams, GenerationRequest
from harness.data.corpus import Corpus, read_utterance_audio
from harness.data.voice_transforms import ChangeGenderSettings, get_transform
from harness.extraction.fields import attribute_table
from harness.metrics.wer import word_errors
from harness.tasks.asr import TRANSCRIPTION_PROMPT
from harness.tasks.base import SELF_REPORT, Task

IDENTITY = "identity"
SWAP = "swap"


@dataclasses.dataclass(frozen=True)
class CorpusArms:
    """Every recording's audio per arm (``audio[arm][utterance_id]``), with its speaker, source and target group."""

    audio: Mapping[str, Mapping[str, Audio]]
    recordings: pd.DataFrame
    """Index ``utterance_id``; columns ``speaker``, ``source_group``, ``target_group``."""


def build_arms(
    corpus: Corpus,
    settings: ChangeGenderSettings,
    *,
    transform: str = "gender_swap",
    utterances: Iterable[str] | None = None,
) -> CorpusArms:
    """The ``identity`` and ``swap`` (``transform``) arms of ``utterances`` (default: every recording of ``corpus``)
    on the transform's dimension; the ``original`` audio is kept beside them, as the artifact measure's reference."""
    swap = get_transform(transform)
    identity = get_transform(IDENTITY)
    groups = corpus.table[swap.dimension] if swap.dimension in corpus.dimensions else None
    if groups is None:
        raise ValueError(f"{corpus.manifest_path}: the {transform} transform needs dimension {swap.dimension!r}; "
                         f"the corpus has {list(corpus.dimensions)}")  # fmt: skip
    selected = list(corpus.table.index if utterances is None else utterances)
    audio: dict[str, dict[str, Audio]] = {"original": {}, IDENTITY: {}, SWAP: {}}
    rows = []
    for utterance_id in selected:
        source = str(groups.loc[utterance_id])
        original = read_utterance_audio(corpus, utterance_id)
        audio["original"][utterance_id] = original
        audio[IDENTITY][utterance_id] = identity.apply(original, source, settings)
        audio[SWAP][utterance_id] = swap.apply(original, source, settings)
        rows.append(
            (utterance_id, str(corpus.table.loc[utterance_id, "speaker_id"]), source, swap.target_group(source))
        )
    recordings = pd.DataFrame(rows, columns=["utterance_id", "speaker", "source_group", "target_group"])
    return CorpusArms(audio, recordings.set_index("utterance_id"))


def vibe_arm_table(
    model,
    task: Task,
    arms: CorpusArms,
    *,
    arm_names: Iterable[str] = (IDENTITY, SWAP),
    params: DecodingParams | None = None,
) -> pd.DataFrame:
    """One row per extracted value of ``model``'s (a loaded backend: ``generate(requests, params)``) answers to
    ``task`` (self-report form) on each arm: ``speaker, recording, arm, source_group, attribute, value``."""
    params = params or DecodingParams()
    frames = []
    for arm in arm_names:
        utterances = list(arms.audio[arm])
        requests = [task.request("", arms.audio[arm][utterance], protocol=SELF_REPORT) for utterance in utterances]
        answers = pd.DataFrame({"utterance_id": utterances, "answer": model.generate(requests, params)})
        values, _ = attribute_table(answers, task)
        info = arms.recordings.loc[values["utterance_id"]]
        frames.append(
            pd.DataFrame(
                {
                    "speaker": info["speaker"].to_numpy(),
                    "recording": values["utterance_id"].to_numpy(),
                    "arm": arm,
                    "source_group": info["source_group"].to_numpy(),
                    "attribute": values["attribute"].to_numpy(),
                    "value": values["value"].to_numpy(),
                }
            )
        )
    return pd.concat(frames, ignore_index=True)


def wer_arm_table(
    model,
    corpus: Corpus,
    arms: CorpusArms,
    *,
    arm_names: Iterable[str] = (IDENTITY, SWAP),
    params: DecodingParams | None = None,
) -> pd.DataFrame:
    """One row per recording and arm of ``model``'s transcript scored against the corpus's ``transcript``:
    ``speaker, recording, arm, source_group, errors`` (S + D + I) and ``words`` (reference words), the table
    :func:`harness.metrics.counterfactual.paired_wer_difference` reads."""
    params = params or DecodingParams()
    frames = []
    for arm in arm_names:
        utterances = list(arms.audio[arm])
        requests = [GenerationRequest(TRANSCRIPTION_PROMPT, arms.audio[arm][utterance]) for utterance in utterances]
        scored = [
            word_errors(str(corpus.table.loc[utterance, "transcript"]), hypothesis)
            for utterance, hypothesis in zip(utterances, model.generate(requests, params))
        ]
        info = arms.recordings.loc[utterances]
        frames.append(
            pd.DataFrame(
                {
                    "speaker": info["speaker"].to_numpy(),
                    "recording": utterances,
                    "arm": arm,
                    "source_group": info["source_group"].to_numpy(),
                    "errors": [e.substitutions + e.deletions + e.insertions for e in scored],
                    "words": [e.n_ref_words for e in scored],
                }
            )
        )
    return pd.concat(frames, ignore_index=True)
