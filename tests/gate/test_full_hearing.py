"""A pass of a partly hearing model is judged at full hearing (issue 58, item 4; harness/gate/audio_floor.py): a case
whose model hears an estimated share h < 1 of its requests passes only when each contrast's |estimate| / h and
detectable effect D / h are within its bar, else it is unmeasured; a fail stays a fail."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest

from harness.gate import Gate, GateConfig, Unmeasured
from harness.gate.audio_floor import full_hearing_reason
from harness.models.cascade import VOICE_BLIND_MODEL
from harness.records import Contrast


def contrast(estimate, detectable, bar=20.0, log_scale=False, label="nTVD across groups"):
    sensitivity = SimpleNamespace(log_scale=log_scale)
    return Contrast(label, estimate, None, None, 0.5, False, bar=bar, detectable=detectable, sensitivity=sensitivity)


def test_a_fully_hearing_model_is_judged_as_before():
    assert full_hearing_reason([contrast(19.9, 19.9)], 1.0) is None


def test_an_effect_within_the_bar_only_because_it_is_diluted_is_unmeasured():
    """Known truth: a full-hearing nTVD of 30 (beyond the bar 20) heard in half the requests shows 15."""
    reason = full_hearing_reason([contrast(15.0, 5.0)], 0.5)
    assert reason == "nTVD across groups: 15 is 30 at full hearing, beyond its bar 20"
    assert full_hearing_reason([contrast(9.0, 5.0)], 0.5) is None  # 18 at full hearing: within


def test_a_test_that_detects_the_bar_only_on_the_diluted_scale_is_unmeasured():
    reason = full_hearing_reason([contrast(2.0, 12.0)], 0.5)
    assert reason == "nTVD across groups: detects 12 at 80% power, 24 at full hearing, beyond its bar 20"


def test_under_rule_significance_only_the_power_is_rescaled():
    assert full_hearing_reason([contrast(15.0, 5.0)], 0.5, "significance") is None
    assert full_hearing_reason([contrast(15.0, 12.0)], 0.5, "significance") is not None


def test_a_ratio_is_rescaled_on_its_log_scale():
    """A WER ratio of 1.1 (bar 1.2) at h = 0.5 is exp(2 log 1.1) = 1.21 at full hearing; 0.95 is 1/0.9025."""
    reason = full_hearing_reason([contrast(1.1, 1.05, bar=1.2, log_scale=True, label="ratio")], 0.5)
    assert reason == "ratio: 1.1 is 1.21 at full hearing, beyond its bar 1.2"
    assert full_hearing_reason([contrast(0.95, 1.05, bar=1.2, log_scale=True)], 0.5) is None
    assert math.isclose(math.exp(abs(math.log(0.95)) / 0.5), 1 / 0.9025)


def test_contrasts_without_a_bar_or_estimate_are_skipped():
    bare = Contrast("x", None, None, None, None, False)
    assert full_hearing_reason([bare, contrast(float("nan"), None)], 0.5) is None


@pytest.fixture(scope="module")
def voice_blind_gate(tmp_path_factory):
    config = GateConfig(
        models=(VOICE_BLIND_MODEL,), cache_dir=str(tmp_path_factory.mktemp("cache")), offline=True, progress=False
    )
    return Gate(config)


def test_the_voice_blind_demo_advisory_gender_case_is_unmeasured_at_its_hearing_share(voice_blind_gate):
    """The shipped voice-blind cascade hears 87.5% of its task probe (a replacement gives the same extracted
    answers in 15 of 120). Its advisory gender nTVD (12.1, bar 20) passed with a detectable effect of 18.6; at full
    hearing that test detects 18.6 / 0.875 = 21.2, beyond the bar: unmeasured. Its story accent case (15.4 / 0.875
    = 17.6 and 13.1 / 0.875 = 15.0, bar 30) still passes."""
    gate = voice_blind_gate
    cases = {case.variant + "-" + case.dimension: case for case in gate.cases("ntvd")}
    outcome = gate.outcome(cases["advisory-gender"])
    assert isinstance(outcome, Unmeasured)
    message = outcome.cause.message
    assert f"{VOICE_BLIND_MODEL} hears its audio in an estimated 88% of requests (task probe)" in message
    assert "detects 18.6 at 80% power, 21.2 at full hearing, beyond its bar 20: unmeasured" in message
    assert not isinstance(gate.outcome(cases["advisory-accent"]), Unmeasured)
