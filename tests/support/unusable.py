"""A test model that answers the voices of one group unusably: ``unusable:<share>`` answers like ``sim:fair``, except
that a request in a high voice (the simulator's pitch score above 0, F0 over 140 Hz: the demo's women) gets, with
probability ``share``, a reply that states nothing (no ``Label: value`` line, no option, no refusal). Registered by
the tests that use it (``register_backend("unusable", "support.unusable:UnusableBackend")``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from harness.core.requests import DecodingParams, GenerationRequest
from harness.models.sim import PRESETS, Simulator, SimulatorBackend, _UniformStream, pitch_score

UNUSABLE = "What a lovely question. Let me think about it for a while."


class UnusableForHighVoices:
    def __init__(self, share: float):
        self.share = share
        self.simulator = Simulator(PRESETS["fair"]["strengths"], PRESETS["fair"]["refusal_rate"])

    def generate(self, requests: Sequence[GenerationRequest], params: DecodingParams) -> list[str]:
        answers = self.simulator.generate(requests, params)
        return [UNUSABLE if self._unusable(request) else answer for request, answer in zip(requests, answers)]

    def _unusable(self, request: GenerationRequest) -> bool:
        if request.audio is None or pitch_score(self.simulator.f0_hz(request.audio)) <= 0:
            return False
        draw = _UniformStream(f"unusable|{request.audio.content_hash}|{request.prompt}").next()
        return draw < self.share


class UnusableBackend(SimulatorBackend):
    def __init__(self, spec: str, target: str, options: Mapping[str, Any]):
        self.spec = spec
        self.share = float(target)
        self.settings = {**PRESETS["fair"]}

    def fingerprint(self) -> str:
        return f"{self.spec}@1"

    def load(self) -> UnusableForHighVoices:
        return UnusableForHighVoices(self.share)
