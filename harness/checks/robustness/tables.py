"""The robustness check's tables: transcripts with their word errors, and judged spoken-QA answers."""

from __future__ import annotations

import pandas as pd

from harness.checks.base import CheckContext, per_run_table
from harness.checks.basis_common.judges import rule_qa_judge
from harness.checks.basis_common.requests import QA_PROMPT, speech_requests
from harness.checks.basis_common.tables import basis_outputs
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
    """Spoken QA answers judged against the gold answer; an abstention (empty answer) counts as wrong."""
    item_set = context.basis.item_set(set_name)
    frame = basis_outputs(context, model, speech_requests(item_set, QA_PROMPT), f"basis/{set_name}/sqa")
    gold = item_set.table.set_index("row")
    verdicts = [
        rule_qa_judge(gold.at[row, "question"], gold.at[row, "answer"], answer)
        for row, answer in zip(frame["row"], frame["answer"])
    ]
    return frame.assign(judged=[v is not None for v in verdicts], correct=[bool(v) for v in verdicts])
