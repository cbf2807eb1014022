"""The sham arm's intersection-union rule through the one decide step (issues 57 item 6, 58 item 6).

Known truth: a model that degrades under any large transform (sham and swap alike, no group effect) is judged by the
sham control's test, so it passes where its design is powered, instead of being unmeasured by the identity test's
null, which carries the artefact; a run whose sham arm cannot be compared on a direction's recordings leaves that
direction undefined (never judged against identity alone while claiming the sham decides). And a property over
generated pathological arm tables (zero word counts, missing arms, a partial sham, one or two speakers): no PASS
without finite, powered contrasts. ``benchmarks/bench_sham_rule.py`` measures the rule's error rates.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.checks.case import Case
from harness.checks.counterfactual.check import SHAM_NOT_COMPARABLE, CounterfactualCheck
from harness.checks.counterfactual.record import ShamArm
from harness.checks.counterfactual.settings import CounterfactualThresholds
from harness.checks.verdict import bias_decision
from harness.core.errors import CaseNotMeasured
from harness.metrics.multitest import DecisionRule
from tests.checks.test_testability import RuleOnly

CASE = Case(check="counterfactual", model="m", corpus="demo", dimension="gender", variant="asr", id="m-asr")
GATE = DecisionRule(alpha=0.05, family_size=43)
ARMS = ("original", "identity", "sham", "swap")


def noisy_arms(shift: dict[str, int], seed: int = 0, speakers: int = 14, recordings: int = 6) -> pd.DataFrame:
    """Per group, ``speakers`` speakers x ``recordings`` sentences of 20 words: a recording's own errors (1-3), the
    arm's ``shift`` and 0 or 1 error of noise per arm."""
    rng = np.random.default_rng(seed)
    rows = []
    for group in ("female", "male"):
        for s in range(speakers):
            for r in range(recordings):
                base = int(rng.integers(1, 4))
                for arm in ARMS:
                    errors = base + shift.get(arm, 0) + int(rng.integers(0, 2))
                    rows.append((f"{group}{s}", f"{group}{s}-{r}", arm, group, errors, 20))
    return pd.DataFrame(rows, columns=["speaker", "recording", "arm", "source_group", "errors", "words"])


def decide(table: pd.DataFrame, rule: DecisionRule = GATE):
    contrasts, payload, _ = CounterfactualCheck()._wer(table, CounterfactualThresholds(), seed=1)
    decision, block = bias_decision(RuleOnly(rule), CASE, contrasts, statistic="WER swap - identity")
    return decision, block, payload


def test_an_artefact_of_any_large_transform_is_judged_by_the_sham_test_and_passes():
    for seed in range(3):
        decision, block, payload = decide(noisy_arms({"sham": 4, "swap": 4}, seed))  # +20 points on both
        assert payload["effect"] > 15  # a "voice effect" against identity alone
        assert not decision.failed and not block.untestable  # powered: the sham control's null has no artefact
        assert all(c.powered and c.detectable < 10 for c in block.contrasts)


def test_a_group_cue_beyond_the_bar_fails_against_both_controls():
    decision, block, _ = decide(noisy_arms({"sham": 4, "swap": 8}))  # +20 points beyond the sham
    assert decision.failed


def test_a_sham_that_cannot_be_compared_on_a_direction_leaves_it_undefined():
    table = noisy_arms({"sham": 4, "swap": 4})
    half = sorted(table["recording"].unique())[::2]
    partial = table[(table["arm"] != "sham") | table["recording"].isin(half)]
    decision, block, _ = decide(partial)
    assert not decision.failed and set(block.untestable) == {"female speakers", "male speakers"}
    assert all(c.reason == SHAM_NOT_COMPARABLE and not math.isfinite(c.estimate) for c in block.contrasts)


arm_errors = st.one_of(st.integers(0, 20), st.none())  # None: the arm has no row for the recording


@settings(max_examples=150, deadline=None)
@given(
    speakers=st.integers(1, 4),
    recordings=st.integers(1, 3),
    errors=st.lists(st.tuples(arm_errors, arm_errors, arm_errors, arm_errors), min_size=1, max_size=24),
    words=st.sampled_from([0, 5, 20]),
    family=st.integers(1, 60),
)
def test_no_pass_through_the_sham_rule_without_finite_powered_contrasts(speakers, recordings, errors, words, family):
    """Generated pathological arm tables: zero word counts, arms missing on some recordings (a partial sham, one
    arm only), one or two speakers per direction. A PASS needs every contrast finite, with a p, and powered."""
    rows = []
    for group in ("female", "male"):
        for s in range(speakers):
            for r in range(recordings):
                per_arm = errors[(s * recordings + r) % len(errors)]
                rows += [(f"{group}{s}", f"{group}{s}-{r}", arm, group, count, words)
                         for arm, count in zip(ARMS, per_arm) if count is not None]  # fmt: skip
    table = pd.DataFrame(rows, columns=["speaker", "recording", "arm", "source_group", "errors", "words"])
    table["errors"] = np.minimum(table["errors"], words)
    try:
        decision, block, _ = decide(table, DecisionRule(alpha=0.05, family_size=family))
    except (CaseNotMeasured, ValueError, KeyError):
        return  # not measured: never a PASS
    if decision.failed or block.untestable:
        return
    for contrast in block.contrasts:
        assert contrast.estimate is not None and math.isfinite(contrast.estimate)
        assert contrast.p is not None and math.isfinite(contrast.p)
        assert contrast.powered is True and contrast.detectable <= contrast.bar


def vibe_arms(rng: np.random.Generator, contents: np.ndarray, artefact: float) -> pd.DataFrame:
    """One checkpoint's answers (14 speakers per direction x 6 recordings, one attribute of 6 values, each arm drawn
    from the recording's distribution); ``artefact``: the share of sham and swap answers moved to ``v3`` (a model
    that degrades under any large transform, no group effect)."""
    rows = []
    for index in range(contents.shape[0]):
        group = "female" if index % 2 else "male"
        for r in range(contents.shape[1]):
            for arm in ARMS:
                value = f"v{rng.choice(6, p=contents[index, r])}"
                if arm in ("sham", "swap") and rng.random() < artefact:
                    value = "v3"
                rows.append((f"s{index:02d}", f"s{index:02d}-{r}", arm, group, "job", value))
    return pd.DataFrame(rows, columns=["speaker", "recording", "arm", "source_group", "attribute", "value"])


def test_a_release_that_gained_a_transform_artefact_is_no_voice_regression_against_both_controls():
    from harness.checks.counterfactual.release import VS_SHAM, control_part, excess_test, intersection_union
    from harness.checks.counterfactual.settings import SHAM, SWAP, VIBE
    from harness.checks.release import regression_comparison
    from harness.metrics.counterfactual import speaker_arm_sums

    rng = np.random.default_rng(3)
    contents = rng.dirichlet(np.ones(6), size=(28, 6))
    tables = [vibe_arms(rng, contents, artefact) for artefact in (0.6, 0.0)]  # candidate, baseline
    records = []
    for table in tables:  # as CounterfactualCheck.paired_data keeps them
        sums = speaker_arm_sums(table, "vibe")
        sham = speaker_arm_sums(table, "vibe", (SHAM, SWAP))
        records.append(sums.join(sham.drop(columns="group").add_prefix(VS_SHAM)))
    identity = excess_test([control_part(t, None) for t in records], VIBE, 10, seed=1)
    sham = excess_test([control_part(t, VS_SHAM) for t in records], VIBE, 10, seed=1, arms=(SHAM, SWAP))
    both = intersection_union(identity, sham)
    assert both.worsening == min(identity.worsening, sham.worsening) and both.p_worse == max(
        identity.p_worse, sham.p_worse
    )
    rule = RuleOnly(DecisionRule(alpha=0.05, family_size=86, tests_per_case=2))
    judged = {
        name: regression_comparison(rule, CASE, test, measure="m", margin=5.0, margin_key="max_worsening")
        for name, test in (("identity", identity), ("both", both))
    }
    assert identity.worsening > 20 and judged["identity"].regressed  # against identity alone: a "regression"
    assert not judged["both"].regressed and abs(sham.worsening) < 5


def test_a_vibe_sham_that_cannot_be_compared_is_undefined_not_judged_against_identity_alone():
    rng = np.random.default_rng(0)
    rows = []
    for speaker in range(12):
        for r in range(6):
            key = f"s{speaker}-{r}"
            rows += [(f"s{speaker}", key, arm, "male", "job", f"v{rng.integers(3)}") for arm in ("identity", "swap")]
            rows.append((f"s{speaker}", key, "sham", "male", "mood", "calm"))  # no attribute the swap states
    table = pd.DataFrame(rows, columns=["speaker", "recording", "arm", "source_group", "attribute", "value"])
    contrasts, payload, _ = CounterfactualCheck()._vibe(table, CounterfactualThresholds(n_permutations=999), seed=1)
    assert payload["sham"] == ShamArm(deviation=SHAM_NOT_COMPARABLE, decides=True)
    decision, block = bias_decision(RuleOnly(GATE), CASE, contrasts, statistic="nTVD")
    assert not decision.failed and block.untestable and contrasts[0].reason == SHAM_NOT_COMPARABLE
    from types import SimpleNamespace

    from harness.results import counterfactual_sham_deviations

    record = SimpleNamespace(check="counterfactual", model="m", sham=payload["sham"])
    assert counterfactual_sham_deviations([record]) == [
        f"counterfactual (1 case of m): {SHAM_NOT_COMPARABLE}; the case is undefined (unmeasured), not judged "
        "against identity alone"
    ]
