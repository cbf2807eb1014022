"""Word error counts per utterance, after Whisper's English text normaliser.

``WER = 100 · (S + D + I) / N`` (percent), N the number of reference words, with S, D, I the substitutions,
deletions and insertions of jiwer's minimum-edit word alignment. Both sides are normalised with
``whisper_normalizer``'s ``EnglishTextNormalizer`` (the normaliser of the Whisper paper: case, punctuation,
spelling variants, numbers, contractions), as BASIS-Bench §3.1 and the semantic-aware WER study (§III) do.
"""

from __future__ import annotations

import dataclasses
import functools

import jiwer
import numpy as np
import pandas as pd


@functools.cache
def _normaliser():
    from whisper_normalizer.english import EnglishTextNormalizer

    return EnglishTextNormalizer()


@functools.lru_cache(maxsize=1 << 16)
def _normalised(text: str) -> str:
    return _normaliser()(text)


def normalise_text(text: str) -> str:
    """Whisper's English normalisation of ``text``, memoised: the normaliser compiles its patterns anew on
    every call once they overflow ``re``'s cache, and references and frequent hypotheses recur."""
    return _normalised(str(text))


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
    """S, D, I of jiwer's minimum-edit alignment of the hypothesis words to the reference words."""
    ref = (normalise_text(reference) if normalise else str(reference)).split()
    hyp = (normalise_text(hypothesis) if normalise else str(hypothesis)).split()
    if not ref:
        return WordErrors(0, 0, len(hyp), 0)
    if not hyp:
        return WordErrors(0, len(ref), 0, len(ref))
    alignment = jiwer.process_words(" ".join(ref), " ".join(hyp))
    return WordErrors(alignment.substitutions, alignment.deletions, alignment.insertions, len(ref))


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
