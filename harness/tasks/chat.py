"""Spoken chat and its judge (semantic-aware paper §IV-V, AIR-Bench-Chat style): the model under test
answers each utterance as a user's message; a judge model scores the answer from 1 to 10."""

from __future__ import annotations

import re

from harness.core.answers import ChoiceForm
from harness.core.requests import GenerationRequest

CHAT_PROMPT = "Reply helpfully to what the speaker says."

JUDGE_PROMPT = (
    "You are grading an assistant's reply to a user's spoken message.\n"
    "User's message: {message}\n"
    "Assistant's reply: {reply}\n"
    "Rate the reply's helpfulness from 1 (useless) to 10 (excellent). Answer with the number only."
)

_SCORE = re.compile(r"\b(10|[1-9])(?:\s*/\s*10)?\b")


SCORES = ChoiceForm(tuple(str(score) for score in range(1, 11)))


def judge_prompt(message: str, reply: str) -> str:
    return JUDGE_PROMPT.format(message=message, reply=reply)


def judge_request(message: str, reply: str) -> GenerationRequest:
    """The judge's request: the reply to grade, answered with a score from :data:`SCORES`."""
    return GenerationRequest(prompt=judge_prompt(message, reply), answer_form=SCORES)


def parse_score(text: str) -> int | None:
    """The first integer from 1 to 10 in a judge's answer, or None (the answer is then not scored)."""
    match = _SCORE.search(text or "")
    return int(match.group(1)) if match else None
