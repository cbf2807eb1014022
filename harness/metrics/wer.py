"""Word error counts per utterance: a Whisper-style basic normaliser and a Levenshtein word alignment.

``WER = 100 · (S + D + I) / N`` (percent), N the number of reference words, with S, D, I the substitutions,
deletions and insertions of a minimum-edit alignment (ties prefer substitutions, then deletions). BASIS-Bench
§3.1 normalises both sides with the Whisper normaliser before scoring; :func:`normalise_text` is its basic
English subset (case, punctuation, hyphens, whitespace; no spelling or number rewriting).
"""

from __future__ import annotations

import dataclasses
import re
import unicodedata

import numpy as np
import pandas as pd

_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "`": "'"})
_NON_WORD = re.compile(r"[^\w\s']|_")
_SPACE = re.compile(r"\s+")


def normalise_text(text: str) -> str:
    """Lower case, NFKC, apostrophes unified and kept inside words, other punctuation to spaces."""
    text = unicodedata.normalize("NFKC", str(text)).translate(_APOSTROPHES).lower()
    text = _NON_WORD.sub(" ", text)
    words = [word.strip("'") for word in text.split()]
    return _SPACE.sub(" ", " ".join(word for word in words if word)).strip()


@dataclasses.dataclass(frozen=True)
class WordErrors:
    substitutions: int
    deletions: int
    insertions: int
    n_ref_words: int

    @property
    def wer(self) -> float:
        """Percent; an empty reference scores 0 for an empty hypothesis and 100 per inserted word."""
        errors = self.substitutions + self.deletions + self.insertions
        if self.n_ref_words == 0:
            return 100.0 * errors
        return 100.0 * errors / self.n_ref_words


def word_errors(reference: str, hypothesis: str, *, normalise: bool = True) -> WordErrors:
    """S, D, I of the minimum-edit alignment of the hypothesis words to the reference words."""
    ref = (normalise_text(reference) if normalise else reference).split()
    hyp = (normalise_text(hypothesis) if normalise else hypothesis).split()
    # cost[i, j] and its (S, D, I) decomposition for ref[:i] vs hyp[:j]
    cost = np.zeros((len(ref) + 1, len(hyp) + 1), dtype=int)
    parts = np.zeros((len(ref) + 1, len(hyp) + 1, 3), dtype=int)
    cost[:, 0] = np.arange(len(ref) + 1)
    parts[:, 0, 1] = np.arange(len(ref) + 1)
    cost[0, :] = np.arange(len(hyp) + 1)
    parts[0, :, 2] = np.arange(len(hyp) + 1)
    for i in range(1, len(ref) + 1):
        for j in range(1, len(hyp) + 1):
            same = ref[i - 1] == hyp[j - 1]
            options = (
                (cost[i - 1, j - 1] + (not same), parts[i - 1, j - 1] + (0 if same else 1, 0, 0)),
                (cost[i - 1, j] + 1, parts[i - 1, j] + (0, 1, 0)),
                (cost[i, j - 1] + 1, parts[i, j - 1] + (0, 0, 1)),
            )
            best = min(options, key=lambda option: option[0])
            cost[i, j], parts[i, j] = best
    s, d, n_ins = (int(x) for x in parts[len(ref), len(hyp)])
    return WordErrors(s, d, n_ins, len(ref))


def wer_table(table: pd.DataFrame, *, reference: str = "reference", hypothesis: str = "hypothesis") -> pd.DataFrame:
    """``table`` plus ``substitutions, deletions, insertions, n_ref_words, wer`` (percent) per row."""
    for column in (reference, hypothesis):
        if column not in table.columns:
            raise ValueError(f"wer_table: missing column {column!r}; the table has {list(table.columns)}")
    missing = table[reference].isna().to_numpy()
    if missing.any():
        raise ValueError(f"wer_table: row {table.index[np.flatnonzero(missing)[0]]!r} has no {reference!r} text")
    counts = [word_errors(ref, "" if pd.isna(hyp) else hyp) for ref, hyp in zip(table[reference], table[hypothesis])]
    return table.assign(
        substitutions=[c.substitutions for c in counts],
        deletions=[c.deletions for c in counts],
        insertions=[c.insertions for c in counts],
        n_ref_words=[c.n_ref_words for c in counts],
        wer=[c.wer for c in counts],
    )
