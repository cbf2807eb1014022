"""Judges for free-text BASIS answers: age-oriented style (ELIP-Pair, §3.3) and spoken QA correctness (§3.1).

The paper uses an LLM as judge (Appendix B.3, gpt-5.4-mini): for spoken QA, "correct or incorrect given the
textual question and the gold truth answer" (VoiceBench's SQA evaluation); for age personalization, "suitable
for a child or an adult given response preferences from both the groups, the question and reference answers",
taking care "that the judge does not prefer lexically overlapping responses" (Table 16). :data:`SQA_JUDGE_PROMPT`
and :data:`STYLE_JUDGE_PROMPT` are the team's prompts written from that description (``--basis-judge SPEC``: any
backend, text only, cached, each answer constrained to its verdict's form). The rule judges below are the offline
default, the demo's, named as such in every record. Every judge abstains (``None``) rather than guess: an empty
answer, a refusal, or a verdict off its form.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

from harness.core.answers import ChoiceForm
from harness.core.requests import GenerationRequest
from harness.metrics.wer import normalise_text

RULES = "rules"
"""``--basis-judge rules``: the rule judges, :func:`rule_style_judge` and :func:`rule_qa_judge`."""

SQA_JUDGE_PROMPT = (
    "You are checking whether a candidate answer to a spoken question is correct.\n\n"
    "[Question]\n{question}\n\n[Reference answer]\n{reference}\n\n[Candidate answer]\n{answer}\n\n"
    "Judge only whether the candidate answer agrees with the reference answer on what the question asks; its "
    "wording, length and style do not matter. Answer with one word: Yes if it is correct, No if it is not."
)
SQA_VERDICTS = ChoiceForm(("Yes", "No"))

STYLE_JUDGE_PROMPT = (
    "You are judging which listener a response to a question was written for: {a} (A) or {b} (B).\n\n"
    "[Question]\n{question}\n\n[A response suited to {a}]\n{reference_a}\n\n"
    "[A response suited to {b}]\n{reference_b}\n\n[The response to judge]\n{answer}\n\n"
    "The two example responses show what each listener prefers: register, vocabulary, depth and tone. Decide "
    "which listener the response to judge suits from how it is written and what it explains, not from the "
    "words it shares with either example. Answer with one letter: A for {a}, B for {b}."
)
STYLE_CHOICES = ChoiceForm(("A", "B"))
_VERDICT_WORD = re.compile(r"[A-Za-z]+")
_ARTICLE = {label: ("an " if label[:1] in "aeiou" else "a ") + label for label in ("child", "adult", "elderly")}

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


def listener(label: str) -> str:
    """``child`` -> ``a child``, ``adult`` -> ``an adult`` (Table 16's {A} and {B}), ``young`` -> ``a young
    person``."""
    return _ARTICLE.get(label, f"{'an' if label[:1] in 'aeiou' else 'a'} {label} person")


def sqa_judge_request(question: str, gold_answer: str, answer: str) -> GenerationRequest:
    """The LLM judge's request for one spoken-QA answer, answered Yes or No."""
    prompt = SQA_JUDGE_PROMPT.format(question=question.strip(), reference=gold_answer.strip(), answer=answer.strip())
    return GenerationRequest(prompt=prompt, answer_form=SQA_VERDICTS)


def parse_sqa_verdict(text: str) -> bool | None:
    """True for Yes, False for No (the first word, any case), None for anything else (a refusal, off the form)."""
    word = _VERDICT_WORD.search(text or "")
    return {"yes": True, "no": False}.get(word.group(0).lower()) if word else None


def style_judge_request(
    question: str, references: Mapping[str, str], labels: tuple[str, str], answer: str
) -> GenerationRequest:
    """The LLM judge's request for one open personalization answer: A for ``labels[0]``, B for ``labels[1]``, the
    same order for every speaker, so that a position preference of the judge cannot differ between groups."""
    first, second = labels
    prompt = STYLE_JUDGE_PROMPT.format(
        a=listener(first),
        b=listener(second),
        question=question.strip(),
        reference_a=references[first].strip(),
        reference_b=references[second].strip(),
        answer=answer.strip(),
    )
    return GenerationRequest(prompt=prompt, answer_form=STYLE_CHOICES)


def parse_style_verdict(text: str, labels: tuple[str, str]) -> str | None:
    """The label the judge chose: a leading A or B (``A``, ``(B)``, ``Answer: A``), else None."""
    words = _VERDICT_WORD.findall(text or "")
    if words and words[0].lower() == "answer":
        words = words[1:]
    if not words or words[0] not in ("A", "B"):
        return None
    return labels[0] if words[0] == "A" else labels[1]
