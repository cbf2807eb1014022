"""Word errors after Whisper's English normaliser (BASIS-Bench §3.1; the semantic-aware study §III): spelling
variants, contractions, numbers and punctuation are not errors; real word changes are, counted by hand."""

import pandas as pd
import pytest

from harness.metrics.wer import wer_table, word_errors


@pytest.mark.parametrize(
    ("reference", "hypothesis"),
    [
        ("The colour of the sky.", "the color of the sky"),
        ("It is twenty past seven.", "it's 20 past 7"),
        ("Hello, world!", "hello world"),
        ("The bus leaves at half past seven.", "The bus leaves at half-past seven"),
    ],
)
def test_what_the_normaliser_equates_is_no_error(reference, hypothesis):
    assert word_errors(reference, hypothesis).wer == 0.0
    assert word_errors(reference, hypothesis, normalise=False).wer > 0.0


def test_real_errors_are_counted_as_the_alignment_gives_them():
    counts = word_errors("The bus leaves at seven.", "the car at seven sharp")
    assert (counts.substitutions, counts.deletions, counts.insertions, counts.n_ref_words) == (1, 1, 1, 5)
    assert counts.wer == pytest.approx(100 * 3 / 5)


def test_the_robustness_score_reads_the_normalised_wer():
    table = wer_table(
        pd.DataFrame({"reference": ["It is twenty past seven."], "answer": ["it's 20 past 7"]}), hypothesis="answer"
    )
    assert table["wer"].tolist() == [0.0]
