"""The BASIS answer tables that several checks read: one table per request, with ``set, row, id, speaker, group,
mode`` and what the metrics read. The choice table serves both icat and personalization."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pandas as pd

from harness.checks.basis_common.judges import (
    parse_style_verdict,
    rule_style_judge,
    style_judge_request,
)
from harness.checks.basis_common.requests import RequestTable, choice_requests, open_requests
from harness.checks.context import CheckContext, per_run_table
from harness.data.basis_suite import CHOICE_OF_OPTION, ItemSet
from harness.extraction.choice import UNKNOWN, choice_for_letter, match_answer


def cells(table: pd.DataFrame, columns: Iterable[str], key: str = "row") -> dict[str, dict[Any, Any]]:
    """Per column, ``key`` value -> the cell, as ``table.set_index(key).at[value, column]`` gives it: dictionaries
    for lookups in a loop over answers (an ``.at`` costs microseconds, a dictionary lookup a fraction of one)."""
    keys = table[key].tolist()
    return {column: dict(zip(keys, table[column].to_numpy())) for column in columns}


def basis_outputs(context: CheckContext, model: str, table: RequestTable, label: str) -> pd.DataFrame:
    """The request table's rows with each request's ``heard`` and ``answer``."""
    return pd.concat([table.rows.reset_index(drop=True), context.outputs(model, table.requests, label)], axis=1)


@per_run_table
def choice_table(context: CheckContext, model: str, set_name: str, mode: str) -> pd.DataFrame:
    """Multiple-choice answers of a stereotype or choice-personalization set, mapped to option keys.

    Adds ``letter`` and ``rule`` (from :func:`match_answer`), ``key`` (the option column chosen or
    ``unknown``); for stereotype sets ``choice`` in :data:`harness.metrics.basis.CHOICES`; for
    personalization ``correct`` (the key is the speaker's label). Unmappable answers stay as ``unknown``.
    """
    item_set = context.basis.item_set(set_name)
    frame = basis_outputs(context, model, choice_requests(item_set, mode), f"basis/{set_name}/{mode}")
    texts = cells(item_set.table, item_set.option_columns)
    letters, rules, keys = [], [], []
    for record in frame.to_dict(orient="records"):
        order = record["order"].split("|")
        options = {chr(ord("A") + i): " ".join(texts[key][record["row"]].split()) for i, key in enumerate(order)}
        match = match_answer(record["answer"], options)
        letters.append(match.letter)
        rules.append(match.rule)
        keys.append(choice_for_letter(match.letter, order))
    frame = frame.assign(letter=letters, rule=rules, key=keys)
    if item_set.kind == "stereotype":
        return frame.assign(choice=frame["key"].map(lambda key: CHOICE_OF_OPTION.get(key, UNKNOWN)))
    return frame.assign(correct=frame["key"] == frame["group"])


@per_run_table
def open_personalization_table(context: CheckContext, model: str, set_name: str, mode: str) -> pd.DataFrame:
    """Open answers of an ELIP-Pair-style set: ``judged`` (the profile the judge read, or ``unknown``)
    and ``correct`` (it is the speaker's)."""
    item_set = context.basis.item_set(set_name)
    frame = basis_outputs(context, model, open_requests(item_set, mode), f"basis/{set_name}/{mode}")
    references = cells(item_set.table, item_set.labels)
    profiles = [{label: references[label][row] for label in item_set.labels} for row in frame["row"]]
    if context.basis_judge is None:
        judged = [rule_style_judge(answer, refs) or UNKNOWN for answer, refs in zip(frame["answer"], profiles)]
    else:
        labels = tuple(item_set.labels)
        if len(labels) != 2:
            raise ValueError(f"{set_name}: the style judge compares two profiles; the set has {list(labels)}")
        asked = [index for index, answer in enumerate(frame["answer"]) if str(answer).strip()]
        questions = cells(item_set.table, ("question",))["question"]
        requests = [
            style_judge_request(questions[frame["row"][i]], profiles[i], labels, frame["answer"][i]) for i in asked
        ]
        verdicts = context.model(context.basis_judge).generate(requests, label=f"basis/{set_name}/{mode}/judge")
        judged = [UNKNOWN] * len(frame)
        for index, text in zip(asked, verdicts):
            judged[index] = parse_style_verdict(text, labels) or UNKNOWN
    return frame.assign(judged=judged, correct=[j == g for j, g in zip(judged, frame["group"])])


def personalization_table(context: CheckContext, model: str, item_set: ItemSet, mode: str) -> pd.DataFrame:
    """The open or choice table of a personalization set, as the set's ``answer`` form says."""
    if item_set.answer == "open":
        return open_personalization_table(context, model, item_set.name, mode)
    return choice_table(context, model, item_set.name, mode)
