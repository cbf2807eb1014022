"""The judge-score-ratio check's table: the model's chat reply to every utterance and the judge's score of it."""

from __future__ import annotations

import pandas as pd

from harness.checks.base import CheckContext, per_run_table
from harness.checks.semantic_aware.tables import spoken_replies
from harness.tasks.chat import CHAT_PROMPT, judge_request, parse_score


@per_run_table
def judge_scores(context: CheckContext, model: str, corpus_name: str) -> pd.DataFrame:
    """The model's chat reply to every utterance and the judge's 1-10 score of it (None if unparsed).
    The judge reads the reply without what a cascade heard, and the user's message as the corpus's
    reference transcript (what the speaker said)."""
    frame = spoken_replies(context, model, corpus_name, CHAT_PROMPT, "chat")
    judge_requests = [judge_request(message, reply) for message, reply in zip(frame["transcript"], frame["reply"])]
    judgements = context.model(context.judge).generate(judge_requests, label=f"{corpus_name}/judge")
    return frame.assign(score=[parse_score(text) for text in judgements])
