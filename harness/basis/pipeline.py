"""BASIS answers -> extracted outcome tables, one per (model, item set, mode); computed once per process.

Each function asks the model through the gate's cache (``gate.model(spec).generate``) and returns a
table with one row per request: ``set, row, id, speaker, group, mode`` and the answer, plus what the
metrics read: ``choice`` (StereoSet type or ``unknown``), ``correct`` (bool), ``prediction`` or ``wer``.
Unmappable answers stay in the table as ``unknown``/incorrect, with the mapping ``rule``, never dropped.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

import pandas as pd

from harness.basis.judges import rule_qa_judge, rule_style_judge
from harness.basis.requests import (
    QA_PROMPT, RequestTable, choice_requests, classification_prompt, open_requests, speech_requests,
)
from harness.basis.suite import CHOICE_OF_OPTION, ItemSet
from harness.extraction.choice import UNKNOWN, choice_for_letter, match_answer
from harness.metrics.wer import wer_table
from harness.models.cascade import split_output

if TYPE_CHECKING:
    from harness.gate import Gate


def _answers(gate: Gate, model: str, table: RequestTable, label: str) -> pd.DataFrame:
    """The model's answers; a cascade's ``[transcript]`` line goes to ``heard``, the rest is the ``answer``."""
    outputs = [split_output(text) for text in gate.model(model).generate(list(table.requests), label=label)]
    return table.rows.assign(heard=[heard for heard, _ in outputs], answer=[answer for _, answer in outputs])


@functools.cache
def choice_table(gate: Gate, model: str, set_name: str, mode: str) -> pd.DataFrame:
    """Multiple-choice answers of a stereotype or choice-personalization set, mapped to option keys.

    Adds ``letter`` and ``rule`` (from :func:`match_answer`), ``key`` (the option column chosen or
    ``unknown``); for stereotype sets ``choice`` in :data:`harness.metrics.basis.CHOICES`; for
    personalization ``correct`` (the key is the speaker's label).
    """
    item_set = gate.basis.item_set(set_name)
    frame = _answers(gate, model, choice_requests(item_set, mode), f"basis/{set_name}/{mode}")
    texts = item_set.table.set_index("row")
    letters, rules, keys = [], [], []
    for record in frame.to_dict(orient="records"):
        order = record["order"].split("|")
        options = {chr(ord("A") + i): " ".join(texts.at[record["row"], key].split()) for i, key in enumerate(order)}
        match = match_answer(record["answer"], options)
        letters.append(match.letter)
        rules.append(match.rule)
        keys.append(choice_for_letter(match.letter, order))
    frame = frame.assign(letter=letters, rule=rules, key=keys)
    if item_set.kind == "stereotype":
        return frame.assign(choice=frame["key"].map(lambda key: CHOICE_OF_OPTION.get(key, UNKNOWN)))
    return frame.assign(correct=frame["key"] == frame["group"])


@functools.cache
def open_personalization_table(gate: Gate, model: str, set_name: str, mode: str) -> pd.DataFrame:
    """Open answers of an ELIP-Pair-style set: ``judged`` (the profile the judge read, or ``unknown``)
    and ``correct`` (it is the speaker's)."""
    item_set = gate.basis.item_set(set_name)
    frame = _answers(gate, model, open_requests(item_set, mode), f"basis/{set_name}/{mode}")
    references = item_set.table.set_index("row")
    judged = [
        rule_style_judge(answer, {label: references.at[row, label] for label in item_set.labels}) or UNKNOWN
        for row, answer in zip(frame["row"], frame["answer"])
    ]
    return frame.assign(judged=judged, correct=[j == g for j, g in zip(judged, frame["group"])])


def personalization_table(gate: Gate, model: str, item_set: ItemSet, mode: str) -> pd.DataFrame:
    if item_set.answer == "open":
        return open_personalization_table(gate, model, item_set.name, mode)
    return choice_table(gate, model, item_set.name, mode)


@functools.cache
def classification_table(gate: Gate, model: str, set_name: str) -> pd.DataFrame:
    """The speaker's label asked of every recording of a set, the set's labels listed in the prompt;
    ``prediction`` is the answer's first line, trimmed (exact match is scored by the metric)."""
    item_set = gate.basis.item_set(set_name)
    frame = _answers(gate, model, speech_requests(item_set, classification_prompt(item_set)), f"basis/{set_name}/classify")
    return frame.assign(prediction=frame["answer"].map(_first_line))


@functools.cache
def transcription_table(gate: Gate, model: str, set_name: str) -> pd.DataFrame:
    """Transcripts of every recording of a set (by :meth:`Gate.transcriber <harness.gate.Gate.transcriber>`)
    with their word errors against the set's text (``wer`` in %)."""
    item_set = gate.basis.item_set(set_name)
    transcriber, prompt = gate.transcriber(model)
    table = speech_requests(item_set, prompt)
    frame = table.rows.assign(answer=transcriber.generate(list(table.requests), label=f"basis/{set_name}/asr"))
    references = item_set.table.set_index("row")["transcript"]
    return wer_table(frame.assign(reference=frame["row"].map(references)), hypothesis="answer")


@functools.cache
def qa_table(gate: Gate, model: str, set_name: str) -> pd.DataFrame:
    """Spoken QA answers judged against the gold answer; an abstention (empty answer) counts as wrong."""
    item_set = gate.basis.item_set(set_name)
    frame = _answers(gate, model, speech_requests(item_set, QA_PROMPT), f"basis/{set_name}/sqa")
    gold = item_set.table.set_index("row")
    verdicts = [
        rule_qa_judge(gold.at[row, "question"], gold.at[row, "answer"], answer)
        for row, answer in zip(frame["row"], frame["answer"])
    ]
    return frame.assign(judged=[v is not None for v in verdicts], correct=[bool(v) for v in verdicts])


def _first_line(text: str) -> str:
    lines = [line.strip().strip(".").strip() for line in str(text).splitlines() if line.strip()]
    return lines[0] if lines else ""
