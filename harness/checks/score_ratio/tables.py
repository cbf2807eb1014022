"""The judge-score-ratio check's table: the model's answer to every utterance and the judge's score of it."""

from __future__ import annotations

import pandas as pd

from harness.checks.context import CheckContext, per_run_table
from harness.checks.semantic_aware.tables import spoken_replies
from harness.tasks.chat import CHAT_PROMPT, judge_request, parse_score

QUESTION_COLUMN = "question"
REFERENCE_COLUMN = "reference_answer"
"""Optional manifest columns (AIR-Bench-Chat's loader writes both): the text question asked with each recording,
and the reference answer the judge is shown."""


@per_run_table
def judge_scores(context: CheckContext, model: str, corpus_name: str) -> pd.DataFrame:
    """The model's answer to every utterance (asked the corpus's ``question`` where it has one, else
    :data:`CHAT_PROMPT`) and the judge's 1-10 score of it (None if unparsed). The judge reads text only: the
    corpus's reference transcript (what the speaker said, not what a cascade heard), the question and reference
    answer where the corpus has them, and the answer."""
    corpus = context.corpora[corpus_name].table.reset_index(drop=True)
    questions = _column(corpus, QUESTION_COLUMN)
    references = _column(corpus, REFERENCE_COLUMN)
    prompts = [question or CHAT_PROMPT for question in questions]
    frame = spoken_replies(context, model, corpus_name, prompts, "chat")
    judge_requests = [
        judge_request(message, reply, question, reference)
        for message, reply, question, reference in zip(frame["transcript"], frame["reply"], questions, references)
    ]
    judgements = context.model(context.judge).generate(judge_requests, label=f"{corpus_name}/judge")
    return frame.assign(score=[parse_score(text) for text in judgements])


def has_speaker_ids(table: pd.DataFrame) -> bool:
    """Whether some speaker has several utterances (a corpus without speaker ids gives each its own speaker_id)."""
    return bool(table["speaker"].duplicated().any())


def speaker_units(table: pd.DataFrame) -> str:
    """What a speaker-level resample or random intercept stands on: speakers, or utterances where the corpus has no
    speaker ids (every utterance its own speaker_id)."""
    if len(table) and not has_speaker_ids(table):
        return (
            f"utterances: no speaker ids (each of the {len(table)} utterances is its own speaker), so there is no "
            "speaker row and intervals treat utterances as independent (semantic-aware paper Table V)"
        )
    return f"speakers: {table['speaker'].nunique()}"


def _column(table: pd.DataFrame, name: str) -> list[str]:
    if name not in table.columns:
        return [""] * len(table)
    return ["" if pd.isna(value) else str(value) for value in table[name]]
