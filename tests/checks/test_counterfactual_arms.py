"""The counterfactual arms of the demo corpus answered by the simulators, which hear the pitch of each arm's audio:
``sim:biased`` (pitch-driven Story answers) changes its answers when the voice is swapped, beyond its identity arm,
and ``sim:fair`` does not."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.checks.counterfactual.arms import IDENTITY, SWAP, build_arms, vibe_arm_table
from harness.checks.counterfactual.settings import COUNTERFACTUAL_SCHEMA, SECTION
from harness.core.requests import DecodingParams
from harness.data.corpus import load_corpus
from harness.data.voice_transforms import ChangeGenderSettings
from harness.metrics.counterfactual import arm_ntvd, flip_rates
from harness.models import build_backend
from harness.tasks import TASKS
from harness.thresholds import packaged_thresholds

pytest.importorskip("parselmouth")

DEMO = Path(__file__).resolve().parents[2] / "harness" / "data" / "demo"
SENTENCES = ("s01", "s02", "s03")


@pytest.fixture(scope="module")
def arms():
    corpus = load_corpus(DEMO, check_audio=False)
    values = packaged_thresholds().values(SECTION, COUNTERFACTUAL_SCHEMA, None, "gender")
    chosen = corpus.table.index[corpus.table["content_id"].isin(SENTENCES)]
    return build_arms(corpus, ChangeGenderSettings.from_settings(values), utterances=chosen)


def test_arms_hold_every_chosen_recording_with_its_direction(arms):
    assert set(arms.audio) == {"original", IDENTITY, SWAP}
    assert len(arms.recordings) == 27 * len(SENTENCES)
    directions = arms.recordings.groupby("source_group")["target_group"].unique().map(list).to_dict()
    assert directions == {"female": ["male"], "male": ["female"]}
    some = arms.recordings.index[0]
    assert len(arms.audio[SWAP][some].samples) == len(arms.audio["original"][some].samples)


@pytest.mark.parametrize(("spec", "fails"), [("sim:biased", True), ("sim:fair", False)])
def test_simulators_hear_the_swap(arms, spec, fails):
    model = build_backend(spec).load()
    table = vibe_arm_table(model, TASKS["story"], arms, params=DecodingParams(seed=3))
    result = arm_ntvd(table, tau=5, n_permutations=999)
    assert set(result.per_direction) == {"female", "male"}
    assert (result.score > 20.0 and result.test.p_value <= 0.05) is fails
    assert flip_rates(table)["recordings"].min() > 0.9 * len(arms.recordings)
