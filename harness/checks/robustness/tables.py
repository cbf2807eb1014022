"""The robustness check's tables: transcripts with their word errors, and judged spoken-QA answers."""

from __future__ import annotations

import pandas as pd

from harness.checks.basis_common.judges import parse_sqa_verdict, rule_qa_judge, sqa_judge_request
from harness.checks.basis_common.requests import QA_PROMPT, speech_requests
from harness.checks.basis_common.tables import basis_outputs, cells
from harness.checks.context import CheckContext, per_run_table
from harness.metrics.wer import wer_table


@per_run_table
def transcription_table(context: CheckContext, model: str, set_name: str) -> pd.DataFrame:
    """Transcripts of every recording of a set (by the model's transcriber) with their word errors against
    the set's text (``wer`` in %)."""
    item_set = context.basis.item_set(set_name)
    transcriber, prompt = context.transcriber(model)
    table = speech_requests(item_set, prompt)
    frame = table.rows.assign(answer=transcriber.generate(list(table.requests), label=f"basis/{set_name}/asr"))
    references = item_set.table.set_index("row")["transcript"]
    return wer_table(frame.assign(reference=frame["row"].map(references)), hypothesis="answer")


@per_run_table
def qa_table(context: CheckContext, model: str, set_name: str) -> pd.DataFrame:
    """Spoken QA answers judged against the gold answer, by the rule judge or the ``--basis-judge`` LLM; an
    abstention (an empty answer, a verdict off the judge's form) counts as wrong."""
    item_set = context.basis.item_set(set_name)
    frame = basis_outputs(context, model, speech_requests(item_set, QA_PROMPT), f"basis/{set_name}/sqa")
    gold = cells(item_set.table, ("question", "answer"))
    items = [(gold["question"][row], gold["answer"][row], answer) for row, answer in zip(frame["row"], frame["answer"])]
    if context.basis_judge is None:
        verdicts = [rule_qa_judge(*item) for item in items]
    else:
        asked = [index for index, item in enumerate(items) if str(item[2]).strip()]
        texts = context.model(context.basis_judge).generate(
            [sqa_judge_request(*items[index]) for index in asked], label=f"basis/{set_name}/sqa/judge"
        )
        verdicts = [None] * len(items)
        for index, text in zip(asked, texts):
            verdicts[index] = parse_sqa_verdict(text)
    return frame.assign(judged=[v is not None for v in verdicts], correct=[bool(v) for v in verdicts])
