"""Test backends about what a model hears, registered on import:

* ``silenced:<preset>``: the simulator with every recording replaced by the same second of silence, as a wrong
  processor argument leaves a model (the audio floor's model that does not hear);
* ``sampling:<preset>``: the simulator as a sampling decoder: every request is answered with a fresh decoding seed,
  so equal inputs give different answers; it hears (its transcripts are the recordings' words with errors);
* ``deaf-sampling:<preset>``: the same sampler fed silence, the sampled model that does not hear; configured
  greedy, it is a backend nondeterministic at temperature 0 that ignores its audio (issue 58);
* ``unloadable:<preset>``: a model whose every load fails (a missing extra), counting its loads in
  :data:`LOAD_ATTEMPTS` (issue 59: the audio floor asks it once per run);
* ``pitch:<boundary Hz>``: a perceiver (``--perceiver``) that names the group of a clip by its median F0 (the
  simulator's :func:`~harness.models.sim.acoustic_features`): ``female`` at or above the boundary, else ``male``;
* ``mumble:<anything>``: a perceiver whose every answer names both groups, so it names none;
* ``oracle:<anything>``: a perceiver that names the group each arm was made toward (it reads the arm's transform
  and source group), so the perceived-group filter keeps every arm and the manipulation checks alone decide; an
  original BASIS age recording's group it reads from the file's speaker.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from harness.core.errors import ModelError
from harness.core.requests import Audio, DecodingParams, GenerationRequest
from harness.models import register_backend
from harness.models.base import Backend
from harness.models.sim import SimulatorBackend, acoustic_features


class SilencedSimulator:
    def __init__(self, model):
        self.model = model

    def generate(self, requests, params):
        silenced = [
            request if request.audio is None else
            dataclasses.replace(request, audio=Audio(np.zeros(request.audio.sample_rate), request.audio.sample_rate))
            for request in requests
        ]  # fmt: skip
        return self.model.generate(silenced, params)


class Sampler:
    """A sampling decoder over ``model``: each request gets the next decoding seed of its own stream (seeded by the
    run's ``params.seed``), so its answers differ call to call; ``deaf`` feeds it silence instead of the audio."""

    def __init__(self, model, deaf: bool):
        self.model = SilencedSimulator(model) if deaf else model
        self.calls = 0

    def generate(self, requests, params):
        answers = []
        for request in requests:
            self.calls += 1
            fresh = dataclasses.replace(params, seed=params.seed * 1_000_003 + self.calls)
            answers.extend(self.model.generate([request], fresh))
        return answers


class SamplingBackend(SimulatorBackend):
    deaf = False

    def fingerprint(self) -> str:
        return ("deaf-sampling/" if self.deaf else "sampling/") + super().fingerprint()

    def load(self):
        return Sampler(super().load(), self.deaf)


class DeafSamplingBackend(SamplingBackend):
    deaf = True


class SilencedBackend(SimulatorBackend):
    def fingerprint(self) -> str:
        return "silenced/" + super().fingerprint()

    def load(self):
        return SilencedSimulator(super().load())


LOAD_ATTEMPTS: dict[str, int] = {}
"""``unloadable:`` spec -> how many times its load was tried in this process."""


class UnloadableBackend(SimulatorBackend):
    def fingerprint(self) -> str:
        return "unloadable/" + super().fingerprint()

    def load(self):
        LOAD_ATTEMPTS[self.spec] = LOAD_ATTEMPTS.get(self.spec, 0) + 1
        raise ModelError(f"{self.spec} needs the [demo] extra (a test model that never loads)")


class PitchPerceiver(Backend):
    def __init__(self, spec: str, target: str, options):
        try:
            self.boundary_hz = float(target)
        except ValueError:
            raise ModelError(f"model spec {spec!r}: the pitch perceiver's target is a boundary in Hz") from None
        self.spec = spec

    def fingerprint(self) -> str:
        return f"pitch-perceiver:{self.boundary_hz:g}:1"

    def load(self):
        return self

    def generate(self, requests: Sequence[GenerationRequest], params: DecodingParams) -> list[str]:
        return [f"It sounds like a {self._group(request.audio)} voice." for request in requests]

    def _group(self, audio: Audio | None) -> str:
        if audio is None:
            raise ModelError(f"{self.spec}: a perceiver is asked about a clip; this request has no audio")
        return "female" if acoustic_features(audio)["f0_hz"] >= self.boundary_hz else "male"


class MumblingPerceiver(Backend):
    def __init__(self, spec: str, target: str, options):
        self.spec = spec

    def fingerprint(self) -> str:
        return "mumbling-perceiver:1"

    def load(self):
        return self

    def generate(self, requests: Sequence[GenerationRequest], params: DecodingParams) -> list[str]:
        return ["Hard to say: it could be a male or a female voice." for _ in requests]


class OraclePerceiver(Backend):
    def __init__(self, spec: str, target: str, options):
        self.spec = spec

    def fingerprint(self) -> str:
        return "oracle-perceiver:1"

    def load(self):
        return self

    def generate(self, requests: Sequence[GenerationRequest], params: DecodingParams) -> list[str]:
        from harness.data.voice_transforms import get_transform

        return [f"It sounds like a {self.group(request.audio, get_transform)} voice." for request in requests]

    @staticmethod
    def group(audio, get_transform) -> str:
        """An arm's target group; an original recording's group from a BASIS file's speaker (``00001_e01.flac``:
        ``e`` elderly, ``y`` young), the truth the perceiver's accuracy on the originals is measured against."""
        if hasattr(audio, "transform"):
            return get_transform(audio.transform).target_group(audio.source_group)
        speaker = str(getattr(audio, "path", "")).rsplit("_", 1)[-1][:1]
        return {"e": "elderly", "y": "young"}.get(speaker, "unknown")


register_backend("silenced", f"{__name__}:SilencedBackend")
register_backend("sampling", f"{__name__}:SamplingBackend")
register_backend("deaf-sampling", f"{__name__}:DeafSamplingBackend")
register_backend("unloadable", f"{__name__}:UnloadableBackend")
register_backend("pitch", f"{__name__}:PitchPerceiver")
register_backend("mumble", f"{__name__}:MumblingPerceiver")
register_backend("oracle", f"{__name__}:OraclePerceiver")
