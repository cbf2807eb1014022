"""Word error counts per utterance, after Whisper's English text normaliser.

``WER = 100 · (S + D + I) / N`` (percent), N the number of reference words, with S, D, I the substitutions,
deletions and insertions of jiwer's minimum-edit word alignment. Both sides are normalised with
``whisper_normalizer``'s ``EnglishTextNormalizer`` (the normaliser of the Whisper paper: case, punctuation,
spelling variants, numbers, contractions), as BASIS-Bench §3.1 and the semantic-aware WER study (§III) do.
"""

from __future__ import annotations

import dataclasses
import functools
import re

import numpy as np
import pandas as pd
from rapidfuzz.distance import Levenshtein


class _CompiledOnce:
    """The ``re`` module as ``whisper_normalizer`` calls it (``re.sub(pattern, ...)`` with pattern strings),
    each pattern compiled once for the process.

    ``re`` keeps compiled patterns in a cache of ``re._MAXCACHE`` entries, and importing ``scipy`` imports
    ``numpy.f2py.crackfortran``, which sets that size to 50 for the whole process. The normaliser's ~70 patterns
    then evict one another and every call compiled all of them again (4.7 ms a text, 1.7 s of a 15 s sim gate
    run). Only the normaliser's own modules see this object; the results are those of ``re``."""

    def __getattr__(self, name: str):
        return getattr(re, name)

    @staticmethod
    @functools.cache
    def compile(pattern, flags=0) -> re.Pattern:
        return re.compile(pattern, flags)

    def sub(self, pattern, repl, string, count=0, flags=0):
        return self.compile(pattern, flags).sub(repl, string, count)

    def match(self, pattern, string, flags=0):
        return self.compile(pattern, flags).match(string)

    def search(self, pattern, string, flags=0):
        return self.compile(pattern, flags).search(string)

    def fullmatch(self, pattern, string, flags=0):
        return self.compile(pattern, flags).fullmatch(string)

    def split(self, pattern, string, maxsplit=0, flags=0):
        return self.compile(pattern, flags).split(string, maxsplit)

    def findall(self, pattern, string, flags=0):
        return self.compile(pattern, flags).findall(string)


@functools.cache
def _normaliser():
    from whisper_normalizer import basic, english

    english.re = basic.re = _CompiledOnce()
    return english.EnglishTextNormalizer()


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
    """S, D, I of jiwer's minimum-edit alignment of the hypothesis words to the reference words (module docstring),
    memoised per pair of texts: a reference recurs with every clip of its sentence, and a hypothesis often with it."""
    return _word_errors(str(reference), str(hypothesis), normalise)


@functools.lru_cache(maxsize=1 << 16)
def _words(text: str, normalise: bool) -> tuple[str, ...]:
    return tuple((normalise_text(text) if normalise else text).split())


@functools.lru_cache(maxsize=1 << 16)
def _word_errors(reference: str, hypothesis: str, normalise: bool) -> WordErrors:
    """``jiwer.process_words(" ".join(ref), " ".join(hyp))``'s counts, computed as it computes them without its
    per-call transforms and alignment objects: the words numbered in order of first appearance (reference first),
    ``rapidfuzz.distance.Levenshtein.opcodes`` of the two number lists, and per opcode ``(tag, i1, i2, j1, j2)``::

        S = sum(i2 - i1 : replace),   D = sum(i2 - i1 : delete),   I = sum(j2 - j1 : insert)

    An empty side is all deletions (empty hypothesis) or all insertions (empty reference)."""
    ref, hyp = _words(reference, normalise), _words(hypothesis, normalise)
    if not ref:
        return WordErrors(0, 0, len(hyp), 0)
    if not hyp:
        return WordErrors(0, len(ref), 0, len(ref))
    numbers: dict[str, int] = {}
    ref_numbers = [numbers.setdefault(word, len(numbers)) for word in ref]
    hyp_numbers = [numbers.setdefault(word, len(numbers)) for word in hyp]
    counts = {"replace": 0, "delete": 0, "insert": 0, "equal": 0}
    for tag, i1, i2, j1, j2 in Levenshtein.opcodes(ref_numbers, hyp_numbers).as_list():
        counts[tag] += j2 - j1 if tag == "insert" else i2 - i1
    return WordErrors(counts["replace"], counts["delete"], counts["insert"], len(ref))


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
