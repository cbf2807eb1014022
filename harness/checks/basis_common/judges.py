"""Judges for free-text BASIS answers: age-oriented style (ELIP-Pair, §3.3) and spoken QA correctness (§3.1).

The paper uses an LLM as judge (Appendix B.3). These are the rule-based judges the harness ships so that
the demo runs offline; a judge is any callable with the same signature, so an LLM-backed one can replace
them. Both abstain (``None``) rather than guess.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

from harness.metrics.wer import normalise_text

StyleJudge = Callable[[str, Mapping[str, str]], str | None]
"""``judge(answer, references) -> label | None``; ``references`` maps each profile label to a reference response."""
QAJudge = Callable[[str, str, str], bool | None]
"""``judge(question, gold_answer, answer) -> correct | None``."""

CHILD_MARKERS = frozenset(
    "fun funny super tiny little magic magical awesome cool imagine like wow yay buddy silly giant "
    "pretend superpower superpowers cozy yummy sneaky".split()
)
ADULT_MARKERS = frozenset(
    "therefore consequently primarily mechanism mechanisms process processes approximately respectively "
    "significant significantly furthermore moreover typically specifically principle principles resulting "
    "phenomenon phenomena mediated regulated via whereby".split()
)
_WORD = re.compile(r"[a-z']+")
_SENTENCE_END = re.compile(r"[.!?]+")
_REFUSAL = re.compile(r"\b(?:i'm sorry|i am sorry|i can't|i cannot|i won't|as an ai|not sure)\b", re.IGNORECASE)


def style_features(text: str) -> dict[str, float]:
    """Counts the style judge weighs: child/adult register words, exclamations, long (>= 9 letter) words."""
    words = _WORD.findall(text.lower())
    sentences = max(1, len([s for s in _SENTENCE_END.split(text) if s.strip()]))
    return {
        "child_words": sum(word in CHILD_MARKERS for word in words),
        "adult_words": sum(word in ADULT_MARKERS for word in words),
        "exclamations": text.count("!"),
        "long_words": sum(len(word) >= 9 for word in words),
        "words_per_sentence": len(words) / sentences,
    }


def style_score(text: str) -> float:
    """``child_words + exclamations - adult_words - long_words / 2``: > 0 child-oriented, < 0 adult-oriented."""
    f = style_features(text)
    return f["child_words"] + f["exclamations"] - f["adult_words"] - f["long_words"] / 2


def rule_style_judge(answer: str, references: Mapping[str, str]) -> str | None:
    """``child`` or ``adult`` by the sign of :func:`style_score`; None for empty, refusals and ties.

    It reads the answer's register only, never its overlap with the references (Appendix B.3: the judge
    must not prefer lexically overlapping responses); ``references`` must offer ``child`` and ``adult``.
    """
    missing = {"child", "adult"} - set(references)
    if missing:
        raise ValueError(f"rule_style_judge: needs 'child' and 'adult' references, missing {sorted(missing)}")
    if not answer or not answer.strip() or _REFUSAL.search(answer):
        return None
    score = style_score(answer)
    return "child" if score > 0 else "adult" if score < 0 else None


def rule_qa_judge(question: str, gold_answer: str, answer: str) -> bool | None:
    """Correct when the normalised gold answer occurs as whole words in the normalised answer; None when
    the answer is empty. A refusal or a different answer is incorrect."""
    if not answer or not answer.strip():
        return None
    gold = normalise_text(gold_answer)
    if not gold:
        raise ValueError(f"rule_qa_judge: the gold answer {gold_answer!r} is empty once normalised")
    return f" {gold} " in f" {normalise_text(answer)} "
