"""``sim:`` — a SIMULATED speech LLM for calibrating the gate against known truth. Not a real model.

The simulator hears only the waveform: it measures acoustic features (median F0 by autocorrelation,
spectral centroid, duration) and never sees the manifest's labels. For every attribute of a task it
draws a value from a fixed pool with probabilities

    P(v | audio) ∝ exp(strength_task * z_pitch(audio) * loading_v)

where ``z_pitch = clip(log2(F0 / 140 Hz) / 0.5, -2, 2)`` and ``loading_v`` ∈ {-1, 0, +1} is fixed per
value. ``strength_task = 0`` gives a voice-blind model. Draws are deterministic: the random stream is
seeded by the audio's content hash, the prompt and the attribute, so equal inputs give equal answers.
The answer is free-form prose followed by the ``Label: value`` lines the task prompts ask for; a small,
voice-independent fraction of answers are refusals, as real models produce.

Presets (spec ``sim:<preset>``; the per-model YAML block may override ``strengths`` and
``refusal_rate``):

- ``sim:fair``   — strength 0 on every task: no voice-induced bias.
- ``sim:biased`` — pitch-driven bias on Advisory, Story, Personal Shopper and Hollywood Casting;
  none on Candidate Review. Gender is expressed through pitch, so it is the gender checks of the biased
  tasks that should fail; accent groups, balanced in gender, serve as a control. For the BASIS-Bench
  prompts (responders in :mod:`harness.models.sim_basis`) it stereotypes by pitch (``basis_stereotype``),
  personalizes and classifies by pitch (``basis_personalization``, ``basis_classification``); its ASR and
  spoken QA: its recogniser makes more word errors for higher voices (``asr``), its spoken QA (``basis_sqa``) is unbiased.
  In spoken chat (:mod:`harness.models.sim_chat`) it is less helpful to higher voices (``chat``); its
  rule-based judge scores helpfulness alike for every voice.
- ``sim:vibe-<model>`` — replays one row of VIBE's Table II(a) (gender, CREMA-D): one preset per model of
  ``harness/data/vibe_table2.csv`` (``sim:vibe-desta``, ``sim:vibe-phi-4-mm``, ...). Its VIBE answers
  (:class:`ReplayResponder`) draw each attribute from one of two distributions, chosen by ``z_pitch > 0``, built
  so that the nTVD measured on a CREMA-D-sized design is the published one; the distributions, the calibration
  and the cells it cannot reach are in :mod:`harness.models.sim_replay`. Every other prompt family it answers
  voice-blind, as ``sim:fair`` does, from a random stream of its own (the replayed model is part of the seed).
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from harness.core.errors import ModelError
from harness.core.files import atomic_write_text
from harness.core.requests import SAMPLE_RATE, Audio, DecodingParams, GenerationRequest
from harness.core.values import stable_hash
from harness.models.base import Backend, HearsCorpora, PreparesRequests
from harness.models.sim_known_content import KnownContent
from harness.models.sim_replay import replay_fields, replay_presets, voice_effect
from harness.registry import Registry

SIMULATOR_VERSION = "4"
REFERENCE_F0_HZ = 140.0

PRESETS: dict[str, dict[str, Any]] = {
    "fair": {"strengths": {}, "refusal_rate": 0.02},
    "biased": {
        "strengths": {
            "advisory": 0.7,
            "story": 0.6,
            "personal_shopper": 0.6,
            "hollywood_casting": 0.5,
            "basis_stereotype": 0.8,
            "basis_personalization": 1.0,
            "basis_classification": 1.0,
            "asr": 1.0,
            "chat": 0.8,
        },
        "refusal_rate": 0.02,
    },
}
PRESETS.update(replay_presets())

# Value pools, written by the team: (value, loading). Positive loadings are drawn more often for
# higher-pitched voices under a biased preset, negative ones for lower-pitched voices.
POOLS: dict[str, dict[str, list[tuple[str, int]]]] = {
    "story": {
        "Occupation": [
            ("nurse", 1),
            ("teacher", 1),
            ("librarian", 1),
            ("florist", 1),
            ("mechanic", -1),
            ("engineer", -1),
            ("electrician", -1),
            ("firefighter", -1),
            ("journalist", 0),
            ("chef", 0),
        ],
        "Economic situation": [("modest", 1), ("comfortable", 0), ("struggling", 1), ("wealthy", -1), ("well-off", -1)],
        "Education": [
            ("high school diploma", 0),
            ("bachelor's degree", 1),
            ("master's degree", -1),
            ("trade school", -1),
            ("associate degree", 1),
        ],
        "Field of study": [
            ("nursing", 1),
            ("literature", 1),
            ("psychology", 1),
            ("engineering", -1),
            ("computer science", -1),
            ("business", 0),
        ],
        "Family status": [
            ("married with children", 1),
            ("single", -1),
            ("divorced", 0),
            ("recently engaged", 1),
            ("living alone", -1),
        ],
        "Personality": [
            ("caring", 1),
            ("gentle", 1),
            ("ambitious", -1),
            ("stubborn", -1),
            ("curious", 0),
            ("cheerful", 1),
            ("confident", -1),
        ],
    },
    "advisory": {
        "Activities": [
            ("yoga", 1),
            ("baking", 1),
            ("painting", 1),
            ("journaling", 1),
            ("knitting", 1),
            ("dancing", 1),
            ("hiking", -1),
            ("rock climbing", -1),
            ("woodworking", -1),
            ("chess", -1),
            ("martial arts", -1),
            ("cycling", -1),
            ("photography", 0),
            ("gardening", 0),
        ],
    },
    "candidate_review": {
        "Competency": [("low", 0), ("medium", 0), ("high", 0)],
        "Interaction style": [
            ("collaborative", 1),
            ("reserved", 0),
            ("assertive", -1),
            ("friendly", 1),
            ("direct", -1),
        ],
        "Cultural fit": [("fair", 0), ("good", 0), ("excellent", 0)],
        "Compensation": [("below market", 1), ("at market", 0), ("above market", -1)],
    },
    "hollywood_casting": {
        "Billing": [("lead", -1), ("supporting", 1), ("background", 0)],
        "Character function": [
            ("love interest", 1),
            ("comic relief", 0),
            ("mentor", -1),
            ("villain", -1),
            ("sidekick", 1),
            ("hero", -1),
        ],
        "Romantic appeal": [("low", -1), ("medium", 0), ("high", 1)],
        "Survival": [("survives", -1), ("dies", 1)],
    },
    "personal_shopper": {
        "Department": [
            ("cosmetics", 1),
            ("handbags", 1),
            ("jewelry", 1),
            ("womenswear", 1),
            ("electronics", -1),
            ("menswear", -1),
            ("watches", -1),
            ("sporting goods", -1),
            ("home goods", 0),
        ],
        "Budget": [("low", 0), ("moderate", 1), ("high", -1), ("luxury", 0)],
        "Buying trigger": [
            ("discounts", 1),
            ("brand prestige", -1),
            ("quality", -1),
            ("personal recommendation", 1),
            ("novelty", 0),
        ],
        "Vibe": [("elegant", 1), ("trendy", 1), ("practical", -1), ("sporty", -1), ("classic", 0)],
    },
}
MULTI_VALUED_DRAWS = {"Activities": 3}

TASK_BY_PROMPT_MARKER = {
    "fictional story": "story",
    "hobbies or activities": "advisory",
    "HR manager": "candidate_review",
    "casting director": "hollywood_casting",
    "luxury department store": "personal_shopper",
}

REFUSAL_TEXT = "I'm sorry, but I can't make assumptions about a person based on their voice."


def median_f0_hz(audio: Audio) -> float:
    """Median F0 (Hz) of the voiced frames, NaN where none is voiced. Frames of 40 ms every 10 ms, mean removed; a
    frame is loud when its energy exceeds a tenth of the median nonzero frame energy, and voiced when loud and the
    peak of its normalised autocorrelation (Hann window, zero-padded FFT) between 60 and 400 Hz exceeds 0.5; its F0
    is the rate over that peak's lag. Only loud frames are transformed: each frame's transform is its own, so the
    result is the one transforming every frame gives, bit for bit."""
    samples = np.asarray(audio.samples, dtype=np.float64)
    rate = audio.sample_rate
    frame, hop = int(0.04 * rate), int(0.01 * rate)
    if len(samples) < frame:
        samples = np.pad(samples, (0, frame - len(samples)))
    starts = np.arange(0, len(samples) - frame + 1, hop)
    frames = samples[starts[:, None] + np.arange(frame)]
    frames = frames - frames.mean(axis=1, keepdims=True)
    energy = (frames**2).sum(axis=1)
    if not np.any(energy > 0):
        return float("nan")
    loud_frames = frames[energy > 0.1 * np.median(energy[energy > 0])]
    spectrum = np.fft.rfft(loud_frames * np.hanning(frame), n=2 * frame, axis=1)
    autocorrelation = np.fft.irfft(np.abs(spectrum) ** 2, axis=1)[:, :frame]
    min_lag, max_lag = int(rate / 400), int(rate / 60)
    normalised = autocorrelation[:, min_lag:max_lag] / np.maximum(autocorrelation[:, :1], 1e-12)
    best = normalised.argmax(axis=1)
    voiced = normalised[np.arange(len(best)), best] > 0.5
    return float(np.median(rate / (best[voiced] + min_lag))) if voiced.any() else float("nan")


def acoustic_features(audio: Audio) -> dict[str, float]:
    """Median F0 (Hz) of voiced frames (:func:`median_f0_hz`), spectral centroid (Hz), duration (s)."""
    samples = np.asarray(audio.samples, dtype=np.float64)
    rate = audio.sample_rate
    magnitudes = np.abs(np.fft.rfft(samples))
    frequencies = np.fft.rfftfreq(len(samples), 1.0 / rate)
    centroid = float((magnitudes * frequencies).sum() / max(magnitudes.sum(), 1e-12))
    return {"f0_hz": median_f0_hz(audio), "spectral_centroid_hz": centroid, "duration_s": len(audio.samples) / rate}


def pitch_score(f0_hz: float) -> float:
    """z_pitch = clip(log2(F0 / 140 Hz) / 0.5, -2, 2); 0 when no voiced frame was found."""
    if not np.isfinite(f0_hz):
        return 0.0
    return float(np.clip(np.log2(f0_hz / REFERENCE_F0_HZ) / 0.5, -2.0, 2.0))


@dataclasses.dataclass
class Listening:
    """What a responder may use to answer one request: the voice's pitch score, the configured bias
    strength of the request's task, the refusal rate and a deterministic random stream."""

    pitch_z: float
    strength: float
    refusal_rate: float
    stream: _UniformStream
    seed: int = 0
    """The decoding seed (a replay's voice effect is drawn per seed)."""


class Responder(Protocol):
    """Answers one family of prompts. ``claims`` returns the task key (for ``strengths``) or None."""

    def claims(self, request: GenerationRequest) -> str | None: ...

    def respond(self, request: GenerationRequest, listening: Listening) -> str: ...


class VibeResponder:
    """The five VIBE tasks: each attribute drawn with P(v) ∝ exp(strength * z_pitch * loading_v)."""

    def claims(self, request: GenerationRequest) -> str | None:
        prompt = request.prompt.lower()
        return next((task for marker, task in TASK_BY_PROMPT_MARKER.items() if marker.lower() in prompt), None)

    def respond(self, request: GenerationRequest, listening: Listening) -> str:
        task = self.claims(request)
        if listening.stream.next() < listening.refusal_rate:
            return REFUSAL_TEXT
        fields = {}
        for label, pool in POOLS[task].items():
            loadings = np.array([loading for _, loading in pool], dtype=float)
            weights = np.exp(listening.strength * listening.pitch_z * loadings)
            chosen = _weighted_sample_without_replacement(weights, MULTI_VALUED_DRAWS.get(label, 1), listening.stream)
            fields[label] = [pool[index][0] for index in chosen]
        return _render_answer(task, fields)


class ReplayResponder:
    """The five VIBE tasks for a replay preset (``sim:vibe-<model>``): each attribute drawn from the high- or the
    low-pitch distribution of :func:`harness.models.sim_replay.replay_fields` at the task's calibrated distance
    ``tv``, shifted by the voice's random effect (:func:`harness.models.sim_replay.voice_effect`). Not in :data:`RESPONDERS`: a replay simulator puts one, bound to its preset, before them, so that it
    claims the VIBE prompts of that preset only; ``sim:fair`` and ``sim:biased`` never meet it."""

    def __init__(self, replay: Mapping[str, Any]):
        self.tv: dict[str, float] = dict(replay["tv"])
        self.model = str(replay["model"])

    def claims(self, request: GenerationRequest) -> str | None:
        return VibeResponder().claims(request)

    def respond(self, request: GenerationRequest, listening: Listening) -> str:
        task = self.claims(request)
        if listening.stream.next() < listening.refusal_rate:
            return REFUSAL_TEXT
        voice = float(voice_effect(listening.pitch_z, self.model, task, listening.seed))
        return _render_answer(
            task, replay_fields(task, self.tv[task], listening.pitch_z > 0, listening.stream.next, voice)
        )


RESPONDERS = Registry(
    "simulator responder",
    "responders",
    {
        name.rsplit(":", 1)[1]: name
        for name in [
            "harness.models.sim:VibeResponder",
            "harness.models.sim_basis:StereotypeChoiceResponder",
            "harness.models.sim_basis:PersonalizationChoiceResponder",
            "harness.models.sim_basis:PersonalizationStyleResponder",
            "harness.models.sim_basis:DefaultStyleResponder",
            "harness.models.sim_basis:ClassificationResponder",
            "harness.models.sim_basis:TranscriptionResponder",
            "harness.models.sim_basis:SpokenQAResponder",
            "harness.models.sim_chat:ChatResponder",
            "harness.models.sim_chat:JudgeResponder",
        ]
    },
)
"""Responders tried in order (class name -> ``module:Class``); a new prompt family is one class and one entry, or,
from another package (a check whose requests the simulators should answer), an entry point of group
``lalm_fairness.responders``. Such an extension's target is part of the simulator's fingerprint."""
BUILTIN_RESPONDERS = tuple(RESPONDERS)


_F0_HZ: dict[str, float] = {}
_F0_KEPT = 100_000
F0_STORE_ENV = "LALM_SIM_F0_STORE"
"""A folder where the simulators keep each clip's :func:`median_f0_hz` across processes, one file per content hash
(unset: per process only). The harness's own test suite sets it for every gate run it starts, as it shares the
counterfactual arms: the F0 of the demo's arms was a fifth of a warm simulator gate run's CPU."""


def stored_f0_hz(audio: Audio) -> float:
    """:func:`median_f0_hz` of ``audio``, kept per content hash for the process and, where ``$LALM_SIM_F0_STORE``
    names a folder, in that folder (written atomically: processes may share it; an unreadable entry is measured
    again). A pure function of the samples, so a kept value is the value."""
    key = audio.content_hash
    if key in _F0_HZ:
        return _F0_HZ[key]
    value = _read_stored_f0(key)
    if value is None:
        value = median_f0_hz(audio)
        _store_f0(key, value)
    _keep_f0(key, value)
    return value


def _f0_store_path(key: str) -> Path | None:
    folder = os.environ.get(F0_STORE_ENV, "").strip()
    return Path(folder) / f"{key}.f0" if folder else None


def _read_stored_f0(key: str) -> float | None:
    """The value ``$LALM_SIM_F0_STORE`` keeps for ``key``; None when there is none or it cannot be read."""
    path = _f0_store_path(key)
    if path is not None:
        with contextlib.suppress(OSError, ValueError):
            return float(path.read_text())
    return None


def _store_f0(key: str, value: float) -> None:
    path = _f0_store_path(key)
    if path is not None:
        with contextlib.suppress(OSError):
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_text(path, repr(value), durable=False)


def _keep_f0(key: str, value: float) -> None:
    if len(_F0_HZ) >= _F0_KEPT:
        _F0_HZ.clear()
    _F0_HZ[key] = value


def prepare_f0(audios: Sequence[Audio | None], progress: bool = False) -> int:
    """Measure :func:`median_f0_hz` of the distinct clips of ``audios`` that neither this process nor
    ``$LALM_SIM_F0_STORE`` knows yet over the cores (:func:`harness.core.parallel.map_in_processes`), and keep
    them as :func:`stored_f0_hz` does; return how many were measured. Each worker reads a stored counterfactual arm
    or a recording from its file and is sent any other clip's samples as they are, so a value is the one this
    process would measure, bit for bit. Fewer clips than :data:`~harness.core.parallel.MIN_POOLED_JOBS` are left
    to :func:`stored_f0_hz` (a pool costs more than they do). A simulator answers one request at a time, so without
    this every clip's F0 would be measured in the gate's own process, one core (a CREMA-D-sized cold run asks 26,208
    clips: original, identity, swap and sham)."""
    from harness.core.parallel import MIN_POOLED_JOBS, map_in_processes

    unknown: dict[str, Audio] = {}
    for audio in audios:
        if audio is not None and audio.content_hash not in _F0_HZ and audio.content_hash not in unknown:
            unknown[audio.content_hash] = audio
    for key in list(unknown):
        value = _read_stored_f0(key)
        if value is not None:
            _keep_f0(key, value)
            del unknown[key]
    if len(unknown) < MIN_POOLED_JOBS:
        return 0
    values = map_in_processes(f0_of_job, [f0_job(audio) for audio in unknown.values()], "sim: F0 of the voices",
                              progress=progress)  # fmt: skip
    measured = 0
    for key, value in zip(unknown, values):
        if value is not None:  # None: a stored arm that could not be read, left to stored_f0_hz (which remakes it)
            _store_f0(key, value)
            _keep_f0(key, value)
            measured += 1
    return measured


def f0_job(audio: Audio) -> tuple:
    """What a worker of :func:`prepare_f0` reads ``audio`` from: ``("arm", its .npy file, rate)`` for a stored
    counterfactual arm, ``("file", its path, rate)`` for a recording, else ``("samples", the samples, rate)``."""
    from harness.data.audio import FileAudio
    from harness.data.voice_transforms.arm_audio import ArmAudio

    path = audio.store.path(audio) if isinstance(audio, ArmAudio) else None
    if path is not None and path.is_file():
        return ("arm", str(path), audio.sample_rate)
    if isinstance(audio, FileAudio):
        return ("file", str(audio.path), audio.sample_rate)
    return ("samples", audio.samples, audio.sample_rate)


def f0_of_job(job: tuple) -> float | None:
    """:func:`median_f0_hz` of one :func:`f0_job`'s clip, its samples read as the gate's process reads them; None
    for an arm file that is not a stored arm's (cut short, overwritten)."""
    from harness.data.audio import read_audio

    kind, where, rate = job
    if kind == "arm":
        try:
            samples = np.load(where, allow_pickle=False)
        except (OSError, ValueError, EOFError):
            return None
        if samples.dtype != np.float32 or samples.ndim != 1:
            return None
    elif kind == "file":
        samples = read_audio(where, rate).samples
    else:
        samples = where
    return median_f0_hz(Audio(samples, rate))


class Simulator(PreparesRequests):
    """The loaded simulator (cheap); see the module docstring."""

    def __init__(self, strengths: Mapping[str, float], refusal_rate: float, replay: Mapping[str, Any] | None = None):
        self.strengths = dict(strengths)
        self.refusal_rate = float(refusal_rate)
        self.responders: list[Responder] = [RESPONDERS.load(name)() for name in RESPONDERS]
        # A replay preset answers the VIBE prompts itself and draws from a stream of its own (the preset's model in
        # the seed), so that two replay presets' sampling noise is independent; other presets' seeds are unchanged.
        self.salt = ""
        if replay is not None:
            self.responders.insert(0, ReplayResponder(replay))
            self.salt = f"|replay:{replay['model']}"

    def f0_hz(self, audio: Audio) -> float:
        """:func:`median_f0_hz` of ``audio`` (all the simulator hears of a voice), kept per content hash for the
        process (a pure function of the samples: every gate run of a process, e.g. a benchmark's, reuses it)."""
        return stored_f0_hz(audio)

    def prepare_requests(self, requests: Sequence[GenerationRequest], progress: bool = False) -> None:
        """Before ``requests`` are answered one at a time: the F0 of their clips over the cores (:func:`prepare_f0`)."""
        prepare_f0([request.audio for request in requests], progress)

    def generate(self, requests: Sequence[GenerationRequest], params: DecodingParams) -> list[str]:
        return [self._answer(request, params) for request in requests]

    def _answer(self, request: GenerationRequest, params: DecodingParams) -> str:
        for responder in self.responders:
            task = responder.claims(request)
            if task is not None:
                break
        else:
            raise ModelError("sim: the simulator answers only the prompt families it knows; this prompt matches none")
        seed_material = (
            f"{request.audio.content_hash if request.audio else 'text'}|{request.system}|{request.prompt}|{params.seed}"
            + self.salt
        )
        listening = Listening(
            pitch_z=pitch_score(self.f0_hz(request.audio)) if request.audio is not None else 0.0,
            strength=self.strengths.get(task, 0.0),
            refusal_rate=self.refusal_rate,
            stream=_UniformStream(seed_material),
            seed=params.seed,
        )
        return responder.respond(request, listening)


class _UniformStream:
    """Deterministic uniforms from SHA-256 of a seed string and a counter."""

    def __init__(self, seed_material: str):
        self._seed = seed_material.encode()
        self._counter = 0

    def next(self) -> float:
        digest = hashlib.sha256(self._seed + self._counter.to_bytes(8, "little")).digest()
        self._counter += 1
        return (int.from_bytes(digest[:8], "little") >> 11) / float(1 << 53)


def _weighted_sample_without_replacement(weights: np.ndarray, count: int, stream: _UniformStream) -> list[int]:
    remaining = weights.astype(float).copy()
    chosen = []
    for _ in range(count):
        cumulative = np.cumsum(remaining)
        index = int(np.searchsorted(cumulative, stream.next() * cumulative[-1], side="right"))
        index = min(index, len(remaining) - 1)
        chosen.append(index)
        remaining[index] = 0.0
    return chosen


def _render_answer(task: str, fields: dict[str, list[str]]) -> str:
    first = {label: values[0] for label, values in fields.items()}
    if task == "story":
        prose = (
            f"Meet Sam, a {first['Personality']} {first['Occupation']} whose finances are {first['Economic situation']}. "
            f"Sam studied {first['Field of study']} and is {first['Family status']}."
        )
    elif task == "advisory":
        prose = "Here are three activities you might enjoy:\n" + "\n".join(
            f"{number}. {value.capitalize()} - a rewarding way to spend free time."
            for number, value in enumerate(fields["Activities"], 1)
        )
    elif task == "candidate_review":
        prose = f"The candidate answered with a {first['Interaction style']} manner. Overall competency looks {first['Competency']}."
    elif task == "hollywood_casting":
        prose = (
            f"MEMO: This actor reads as {first['Billing']} material, best used as the {first['Character function']}."
        )
    else:
        prose = f"This customer has a {first['Vibe']} vibe; I would walk them straight to {first['Department']}."
    lines = [f"{label}: {', '.join(values)}" for label, values in fields.items()]
    return prose + "\n\n" + "\n".join(lines)


class SimulatorBackend(Backend, HearsCorpora):
    """Backend for ``sim:<preset>``; building, fingerprinting and loading are all cheap."""

    def __init__(self, spec: str, target: str, options: Mapping[str, Any]):
        if target not in PRESETS:
            raise ModelError(f"model spec {spec!r}: unknown simulator preset {target!r}; presets: {sorted(PRESETS)}")
        unknown = sorted(set(options) - {"strengths", "refusal_rate"})
        if unknown:
            raise ModelError(
                f"model {spec!r}: unknown option(s) {unknown}; the simulator takes strengths, refusal_rate"
            )
        self.spec = spec
        self.settings = {**PRESETS[target], **dict(options)}

    def vibe_variant(self) -> dict[str, str]:
        return {
            "protocol": "self-report",
            "extractor": "rules",
            "why": "a simulator, not a model: it states its draws as the form's Label lines",
        }

    def fingerprint(self) -> str:
        extensions = {name: RESPONDERS[name] for name in RESPONDERS if name not in BUILTIN_RESPONDERS}
        return f"{self.spec}@v{SIMULATOR_VERSION}:{stable_hash(self.settings if not extensions else [self.settings, extensions])[:16]}"

    def load(self) -> Simulator:
        return Simulator(self.settings["strengths"], self.settings["refusal_rate"], self.settings.get("replay"))

    def hear_corpus(self, corpus: Any) -> None:
        """The simulator's 'ears' for words: it transcribes (and answers questions about) the recordings it knows
        the text of, the shipped demo sets' and the session's corpora's (their ``transcript`` column)."""
        KnownContent.shared().learn(corpus)


__all__ = [
    "SAMPLE_RATE",
    "Simulator",
    "SimulatorBackend",
    "acoustic_features",
    "median_f0_hz",
    "pitch_score",
    "prepare_f0",
]
