"""Audio dependence, a floor for the whole gate: does the model hear the audio at all? (issue 39)

A model that ignores its audio (audio dropped by a wrong processor argument, a text-only checkpoint behind a speech
API) answers every voice alike, so it passes every between-group and counterfactual comparison: a pass that says
nothing. The probe answers ``probe_requests_per_task`` requests of each task three times: with the recording, with
silence of the same length, and with another speaker's recording of other words (the next sampled one). When the
answers with every replacement equal those with the recording in at least ``audio_blind_share`` of the requests
(:func:`harness.metrics.counterfactual.audio_dependence`), the model does not hear the audio, and every voice-bias
case of it is unmeasured with that reason and the share (:func:`audio_blind_reason`). Cases whose group reaches the
model in the text (BASIS's explicit and text modes) stay measured (:func:`needs_audio`).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from harness.checks.counterfactual.arms import SPEECH_IMPLICIT
from harness.core.modes import BASELINE_MODE, MODES
from harness.core.requests import Audio, DecodingParams
from harness.data.corpus import Corpus, read_utterance_audio
from harness.metrics.counterfactual import AudioDependence, audio_dependence
from harness.tasks.base import SELF_REPORT, Task

ORIGINAL, SILENCE, OTHER_RECORDING = "original", "silence", "other recording"
GROUP_IN_TEXT_MODES = frozenset((*MODES, BASELINE_MODE)) - {SPEECH_IMPLICIT}
"""BASIS modes whose group reaches the model in the text (explicit), or that have no audio (text): measured
whether or not the model hears."""


def needs_audio(variant: str | None) -> bool:
    """Whether a case measures voice-induced bias, so that a model that does not hear cannot be measured by it:
    every case but those of :data:`GROUP_IN_TEXT_MODES` (nTVD, counterfactual, WER and judge-score ratios,
    classification, robustness and the speech-implicit BASIS modes)."""
    return variant not in GROUP_IN_TEXT_MODES


def probe_plan(corpus: Corpus, per_task: int, seed: int) -> pd.DataFrame:
    """``per_task`` recordings drawn without replacement (seeded), each with a replacement recording: another
    speaker's, saying other words where the corpus has them (its ``content_id``), so that an answer that survives
    the replacement cannot be explained by the words alone. Columns ``utterance_id``, ``other_utterance_id``."""
    table = corpus.table
    order = np.random.default_rng(seed).permutation(len(table))[: min(per_task, len(table))]
    chosen = table.index[order]
    speakers = table["speaker_id"]
    contents = table["content_id"] if "content_id" in table.columns else pd.Series(table.index, index=table.index)
    others = []
    for position, utterance in enumerate(chosen):
        pool = [*np.roll(chosen, -position - 1), *table.index]
        other_speaker = [u for u in pool if speakers[u] != speakers[utterance]]
        if not other_speaker:
            raise ValueError(f"{corpus.manifest_path}: the audio-dependence probe needs two speakers; it has one")
        other_words = [u for u in other_speaker if contents[u] != contents[utterance]]
        others.append((other_words or other_speaker)[0])
    return pd.DataFrame({"utterance_id": list(chosen), "other_utterance_id": others})


def silence_like(audio: Audio) -> Audio:
    return Audio(np.zeros_like(audio.samples), audio.sample_rate)


def probe_answers(
    model,
    corpus: Corpus,
    tasks: Mapping[str, Task],
    per_task: int,
    *,
    seed: int = 0,
    params: DecodingParams | None = None,
) -> pd.DataFrame:
    """``model``'s (a loaded backend) answers to the probe: one row per task, recording and audio variant, with the
    columns ``request`` (``task/utterance``), ``task``, ``audio`` and ``answer``."""
    rows, requests = probe_requests(corpus, tasks, per_task, seed=seed)
    answers = model.generate(requests, params or DecodingParams())
    return rows.assign(answer=answers)


def probe_requests(
    corpus: Corpus, tasks: Mapping[str, Task], per_task: int, *, seed: int = 0
) -> tuple[pd.DataFrame, list]:
    """The probe's requests and their rows (``request`` = ``task/utterance``, ``task``, ``audio``): each sampled
    recording of :func:`probe_plan` asked by each task with the recording, silence of its length and another
    speaker's recording."""
    plan = probe_plan(corpus, per_task, seed)
    rows, requests = [], []
    for name, task in tasks.items():
        for utterance, other in zip(plan["utterance_id"], plan["other_utterance_id"]):
            recording = read_utterance_audio(corpus, utterance)
            variants = {
                ORIGINAL: recording,
                SILENCE: silence_like(recording),
                OTHER_RECORDING: read_utterance_audio(corpus, other),
            }
            for variant, audio in variants.items():
                rows.append((f"{name}/{utterance}", name, variant))
                requests.append(task.request("", audio, protocol=SELF_REPORT))
    return pd.DataFrame(rows, columns=["request", "task", "audio"]), requests


def audio_blind_reason(model_spec: str, dependence: AudioDependence, blind_share: float) -> str | None:
    """The unmeasured reason of every voice-bias case of ``model_spec`` when it does not hear the audio (its answers
    survive each replacement in at least ``blind_share`` of the probe requests); None when it hears."""
    if dependence.share < blind_share:
        return None
    survived = ", ".join(f"{100 * share:.0f}% with {name}" for name, share in dependence.unchanged.items())
    return (
        f"{model_spec} does not hear the audio: whatever replaced the audio, its answers were unchanged in at least "
        f"{100 * dependence.share:.0f}% of {dependence.requests} probe requests ({survived}; audio_blind_share "
        f"{100 * blind_share:.0f}%), so no voice-bias case of it can be measured"
    )


def probe(model, model_spec: str, corpus: Corpus, tasks: Mapping[str, Task], settings: Mapping, seed: int = 0):
    """The probe of one model with the ``counterfactual`` thresholds ``settings``: its :class:`AudioDependence` and
    the unmeasured reason (None when it hears)."""
    answers = probe_answers(model, corpus, tasks, settings["probe_requests_per_task"], seed=seed)
    dependence = audio_dependence(answers)
    return dependence, audio_blind_reason(model_spec, dependence, settings["audio_blind_share"])
