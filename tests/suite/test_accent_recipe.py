"""Issue 61: the accent recipe (docs/examples/accent-suite/) is what its README says: 3 accents x 2 genders x 4 voices,
each accent x gender cell on at least 2 banks, no engine confound, no group short of voices, 12 sentences."""

from __future__ import annotations

from pathlib import Path

from harness.suite.items import read_sentences
from harness.suite.spread import check_engine_confound, dimension_spreads, voice_warnings
from harness.suite.voices import read_voices

RECIPE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "accent-suite"


def test_the_accent_recipe_has_3_accents_by_2_genders_by_4_voices_on_shared_banks():
    voices = read_voices(str(RECIPE / "voices.yaml"))
    cells: dict[tuple[str, str], set[str]] = {}
    for voice in voices:
        cells.setdefault((voice.label["accent"], voice.label["gender"]), set()).add(voice.bank)
    assert sorted(cells) == [(a, g) for a in ("british", "german", "us") for g in ("female", "male")]
    assert all(sum(1 for v in voices if (v.label["accent"], v.label["gender"]) == cell) == 4 for cell in cells)
    assert all(len(banks) >= 2 for banks in cells.values()), cells
    spreads = dimension_spreads(voices)
    assert check_engine_confound(spreads, allowed=False) == [] and voice_warnings(spreads, 0.05) == []
    assert len(read_sentences(RECIPE / "sentences.csv")) == 12
