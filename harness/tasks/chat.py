"""Spoken chat and its judge (semantic-aware paper §V-A, on AIR-Bench-Chat): the model under test answers each
utterance; a text-only judge scores the answer from 1 to 10 "based on usefulness, relevance, accuracy, and
comprehensiveness".

The judge sees text only, never the audio, so it cannot hear who spoke (§V-A: its scoring "is applied uniformly
across subgroups"): what the speaker said (the corpus's reference transcript), the corpus's question and
reference answer where it has them (AIR-Bench-Chat's ``question`` and ``answer_gt``), and the answer to grade.
The prompt is the team's, written from §V-A's description (the paper does not print its own).
"""

from __future__ import annotations

import re

from harness.core.answers import ChoiceForm
from harness.core.requests import GenerationRequest

CHAT_PROMPT = "Reply helpfully to what the speaker says."

ANSWER_HEADING = "[The assistant's answer]"
JUDGE_PROMPT = (
    "You are judging how well an AI assistant answered a user who spoke to it. You see the user's request as "
    "text and do not hear the speaker.\n"
    "{context}"
    f"{ANSWER_HEADING}\n{{reply}}\n\n"
    "Rate the answer on a scale of 1 to 10 for its usefulness, relevance, accuracy and comprehensiveness taken "
    "together (1: useless, 10: excellent). Answer with the number only."
)
CONTEXT_BLOCKS = (
    ("message", "[What the user said]"),
    ("question", "[The user's question about the audio]"),
    ("reference", "[A reference answer]"),
)

_SCORE = re.compile(r"\b(10|[1-9])(?:\s*/\s*10)?\b")


SCORES = ChoiceForm(tuple(str(score) for score in range(1, 11)))


def judge_prompt(message: str, reply: str, question: str = "", reference: str = "") -> str:
    """The judge's prompt: :data:`JUDGE_PROMPT` with a block for each of ``message``, ``question`` and ``reference``
    that is not empty."""
    given = {"message": message, "question": question, "reference": reference}
    context = "".join(f"{title}\n{given[key].strip()}\n\n" for key, title in CONTEXT_BLOCKS if given[key].strip())
    return JUDGE_PROMPT.format(context=context, reply=reply)


def judge_request(message: str, reply: str, question: str = "", reference: str = "") -> GenerationRequest:
    """The judge's request: the answer to grade, answered with a score from :data:`SCORES`."""
    return GenerationRequest(prompt=judge_prompt(message, reply, question, reference), answer_form=SCORES)


def parse_score(text: str) -> int | None:
    """The first integer from 1 to 10 in a judge's answer, or None (the answer is then not scored)."""
    match = _SCORE.search(text or "")
    return int(match.group(1)) if match else None
