"""The audio floor's probe requests (:mod:`harness.gate.audio_floor`) and how each answer is read.

The plan (:func:`probe_plan`) draws ``probe_requests_per_task`` recordings of the run's first corpus, each with a
replacement recording: another speaker's, saying other words. Each recording is asked four times, with itself
(``original``), with itself again (``replicate``: a request of its own, replicate 1 in its cache key,
:attr:`~harness.core.requests.GenerationRequest.replicate`, so a nondeterministic backend is asked twice), with
silence of its length and with the replacement (``other recording``), in two forms:

* the **task probe** (VIBE-type cases): each probed VIBE task's self-report prompt (:data:`SELF_REPORT`), whose
  answers the field reader reads without a model; an answer is read as its extracted values
  (:func:`read_task_answer`);
* the **transcription probe** (WER-type cases): the request the WER checks send the model's transcriber
  (:meth:`~harness.checks.context.CheckContext.transcriber`; a cascade's ASR stage, prompt ``""``), so the transcript of
  every recording is the one those checks cache, and a cascade's stage transcribed the silence and the other
  recording when it answered the task probe; a transcript is read after Whisper's English normaliser
  (:func:`read_transcript`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

import numpy as np
import pandas as pd

from harness.core.requests import Audio, GenerationRequest
from harness.data.corpus import Corpus, read_utterance_audio
from harness.extraction.fields import extract_fields
from harness.metrics.audio_dependence import ORIGINAL, OTHER_RECORDING, REPLICATE, SILENCE
from harness.metrics.wer import normalise_text
from harness.tasks.base import SELF_REPORT, Task

EMPTY_ANSWER = "<empty>"
"""The token of a transcript with no words, so that an empty answer is a token of its own."""


@dataclasses.dataclass(frozen=True)
class ProbeRequests:
    """The requests of one probe and their ``rows`` (``request`` = ``<stratum>/<utterance>``, ``stratum``: the task
    or ``transcription``, ``utterance``, ``audio``: original, replicate, silence or other recording), in the same
    order."""

    rows: pd.DataFrame
    requests: list[GenerationRequest]


def probe_plan(corpus: Corpus, per_task: int, seed: int) -> pd.DataFrame:
    """``per_task`` recordings drawn without replacement (seeded), each with a replacement recording: another
    speaker's, saying other words where the corpus has them (its ``content_id``), so that an answer that survives
    the replacement cannot be explained by the words alone. Columns ``utterance_id``, ``other_utterance_id``."""
    table = corpus.table
    order = np.random.default_rng(seed).permutation(len(table))[: min(per_task, len(table))]
    speakers = table["speaker_id"].to_numpy()
    contents = table["content_id"].to_numpy() if "content_id" in table.columns else np.arange(len(table))
    everyone = np.arange(len(table))
    others = []
    for position, chosen in enumerate(order):
        # the first of the other chosen recordings (from the next one on), then of the whole corpus, by another
        # speaker, saying other words where one does
        pool = np.concatenate([np.roll(order, -position - 1), everyone])
        other_speaker = pool[speakers[pool] != speakers[chosen]]
        if len(other_speaker) == 0:
            raise ValueError(f"{corpus.manifest_path}: the audio floor's probe needs two speakers; it has one")
        other_words = other_speaker[contents[other_speaker] != contents[chosen]]
        others.append((other_words if len(other_words) else other_speaker)[0])
    return pd.DataFrame({"utterance_id": list(table.index[order]), "other_utterance_id": list(table.index[others])})


def silence_like(audio: Audio) -> Audio:
    return Audio(np.zeros_like(audio.samples), audio.sample_rate)


def probe_audio(corpus: Corpus, per_task: int, seed: int) -> list[tuple[str, dict[str, Audio]]]:
    """Per planned recording: its utterance id and its audio per arm (the replicate's is the original's)."""
    plan = probe_plan(corpus, per_task, seed)
    variants = []
    for utterance, other in zip(plan["utterance_id"], plan["other_utterance_id"]):
        recording = read_utterance_audio(corpus, utterance)
        variants.append(
            (
                str(utterance),
                {
                    ORIGINAL: recording,
                    REPLICATE: recording,
                    SILENCE: silence_like(recording),
                    OTHER_RECORDING: read_utterance_audio(corpus, other),
                },
            )
        )
    return variants


def task_probe_requests(corpus: Corpus, tasks: Mapping[str, Task], per_task: int, *, seed: int = 0) -> ProbeRequests:
    """The task probe: each planned recording's four arms asked by each task's self-report prompt."""
    rows, requests = [], []
    audio = probe_audio(corpus, per_task, seed)
    for name, task in tasks.items():
        for utterance, variants in audio:
            for variant, clip in variants.items():
                rows.append((f"{name}/{utterance}", name, utterance, variant))
                request = task.request("", clip, protocol=SELF_REPORT)
                requests.append(dataclasses.replace(request, replicate=int(variant == REPLICATE)))
    return ProbeRequests(pd.DataFrame(rows, columns=["request", "stratum", "utterance", "audio"]), requests)


def transcription_probe_requests(corpus: Corpus, prompt: str, per_task: int, *, seed: int = 0) -> ProbeRequests:
    """The transcription probe: each planned recording, itself again (replicate), another speaker's recording of
    other words and silence of its length, asked with the transcriber's ``prompt``, the WER checks' request form
    (:func:`harness.checks.semantic_aware.tables.spoken_replies`; a right transcript of silence is empty, the cache
    stores it as such, :mod:`harness.cache`)."""
    rows, requests = [], []
    for utterance, variants in probe_audio(corpus, per_task, seed):
        for variant, clip in variants.items():
            rows.append((f"transcription/{utterance}", "transcription", utterance, variant))
            requests.append(GenerationRequest(prompt=prompt, audio=clip, replicate=int(variant == REPLICATE)))
    return ProbeRequests(pd.DataFrame(rows, columns=["request", "stratum", "utterance", "audio"]), requests)


def read_task_answer(answer: str | None, task: Task) -> tuple[str, tuple[str, ...]]:
    """A task answer as the nTVD check reads it: its extraction status and extracted values
    (:func:`harness.extraction.fields.extract_fields`), as one comparable ``value`` and as ``tokens``
    (``status=<status>`` and one ``<attribute>=<value>`` per value)."""
    extraction = extract_fields(answer, task)
    pairs = [
        f"{attribute}={value}" for attribute in sorted(extraction.values) for value in extraction.values[attribute]
    ]
    tokens = (f"status={extraction.status}", *pairs)
    return "; ".join(tokens), tokens


def read_transcript(answer: str | None) -> tuple[str, tuple[str, ...]]:
    """A transcript as the WER checks read it: after Whisper's English normaliser; its words are its tokens."""
    words = normalise_text(answer or "").split()
    return " ".join(words), tuple(words) or (EMPTY_ANSWER,)
