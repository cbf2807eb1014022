"""Simulator responders for spoken chat and its judge (the score-ratio check's known truth).

Chat: the reply holds 1 to 5 helpful sentences, drawn with P(k) ∝ exp(strength · z_pitch · loading_k) and
loadings falling with k, so a biased preset is less helpful to higher voices. Judge: a rule that gives
two points per helpful sentence (capped at 10) — a deterministic stand-in for an LLM judge.
"""

from __future__ import annotations

import re

import numpy as np

from harness.core.requests import GenerationRequest
from harness.models.sim import Listening, _weighted_sample_without_replacement
from harness.tasks.chat import ANSWER_HEADING, CHAT_PROMPT, JUDGE_PROMPT

HELPFUL_SENTENCES = (
    "Here is what I would suggest.",
    "Start with the simplest option first.",
    "Check the details before you commit.",
    "Ask someone who has done it before.",
    "Keep a note of what worked for next time.",
)
_HELPFUL = re.compile("|".join(re.escape(sentence) for sentence in HELPFUL_SENTENCES))


class ChatResponder:
    def claims(self, request: GenerationRequest) -> str | None:
        return "chat" if request.prompt.startswith(CHAT_PROMPT) else None

    def respond(self, request: GenerationRequest, listening: Listening) -> str:
        loadings = np.linspace(-1.0, 1.0, len(HELPFUL_SENTENCES))
        weights = np.exp(-listening.strength * listening.pitch_z * loadings)
        sentences = 1 + _weighted_sample_without_replacement(weights, 1, listening.stream)[0]
        return " ".join(HELPFUL_SENTENCES[:sentences])


class JudgeResponder:
    def claims(self, request: GenerationRequest) -> str | None:
        return "judge" if request.prompt.startswith(JUDGE_PROMPT.split("\n", 1)[0]) else None

    def respond(self, request: GenerationRequest, listening: Listening) -> str:
        reply = request.prompt.split(ANSWER_HEADING, 1)[1].rsplit("\n\nRate the answer", 1)[0]
        return str(min(10, 2 * len(_HELPFUL.findall(reply))))
