"""The WER-ratio check's table: the transcript of every utterance, by the model's transcriber."""

from __future__ import annotations

import pandas as pd

from harness.checks.context import CheckContext, per_run_table
from harness.checks.semantic_aware.tables import spoken_replies


@per_run_table
def transcripts(context: CheckContext, model: str, corpus_name: str) -> pd.DataFrame:
    """The model's transcript of every utterance (column ``hypothesis``), asked as
    :meth:`~harness.checks.context.CheckContext.transcriber` says."""
    transcriber, prompt = context.transcriber(model)
    return spoken_replies(context, transcriber, corpus_name, prompt, "asr").rename(columns={"reply": "hypothesis"})
