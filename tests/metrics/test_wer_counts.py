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


def test_the_normaliser_compiles_its_patterns_once_even_when_scipy_shrinks_res_cache(monkeypatch):
    """Importing scipy sets ``re._MAXCACHE`` to 50 (numpy.f2py.crackfortran); the normaliser's ~70 patterns were
    then evicted by whatever else the run compiled, and each call compiled them all again. Now a new text compiles
    none of the normaliser's patterns, and its normal form is the one Whisper's rules give."""
    import re._compiler

    from harness.metrics import wer

    monkeypatch.setattr(re, "_MAXCACHE", 50)
    wer.normalise_text("Warm-up: Dr. Smith can't pay $5.")
    compiled = []
    original = re._compiler.compile
    monkeypatch.setattr(re._compiler, "compile", lambda *a: compiled.append(a) or original(*a))
    texts = [f"Mr. Jones won't colour {n} tyres, i'ma say (really)." for n in range(1, 40)]
    normal = []
    for n, text in enumerate(texts):
        normal.append(wer.normalise_text(text))
        for other in range(60):  # the rest of a run compiles patterns of its own between two texts
            re.match(f"other-{n}-{other}", "")
    assert not [args for args in compiled if not str(args[0]).startswith("other-")]
    assert normal[0] == "mister jones will not color one tires i am going to say"
