"""The release compare's contract over generated pathological inputs (issue 57, item 6).

Three properties, each over what hypothesis generates:

- every ordered threshold key of every check, the gate and the audio floor: a release is judged at the stricter of
  the candidate's and the baseline's values, never a looser one (:class:`~harness.gate.release_thresholds.
  ReleaseThresholds`);
- the paired regression test (:func:`harness.checks.release.regression_comparison`) on NaN or infinite estimates,
  standard errors, degrees of freedom and p-values, not-estimable contrasts, zero and huge margins: a comparison is
  ``compared`` only where its estimate and p are finite and it is powered or regressed, and it regresses only beyond
  its margin and significantly;
- the release decision (:func:`harness.gate.release_decision`): no known failure and no "no regression" from an
  unsupported, new, not-estimable or underpowered comparison, and no passing case from an undecided one.
"""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from harness.checks import all_checks
from harness.checks.case import Case
from harness.checks.release import DETECTABLE_MARGINS, regression_comparison
from harness.gate import RELEASE_PASSES, release_decision
from harness.gate.audio_floor import AUDIO_FLOOR_SCHEMA
from harness.gate.release_thresholds import ReleaseThresholds
from harness.metrics.multitest import DecisionRule
from harness.metrics.paired import PairedTest
from harness.records import RELEASE_JUDGED, UNDECIDED_COMPARISONS, UNMEASURED, Comparison, RegressionDecision
from harness.thresholds import GATE_SCHEMA, HIGHER, LOWER, Thresholds, value_type_problem
from tests.checks.test_testability import RuleOnly

CANDIDATE_NUMBERS = (0.0001, 0.001, 0.01, 0.05, 0.1, 0.2, 0.5, 0.8, 0.9, 1.0, 1.05, 1.11, 2.0, 5.0, 10.0, 20.0, 100.0)

SECTIONS = [(check.name, check.schema) for check in all_checks() if getattr(check, "schema", None) is not None]
SECTIONS += [("gate", GATE_SCHEMA), ("audio_floor", AUDIO_FLOOR_SCHEMA)]


def _valid(key, value) -> bool:
    return value_type_problem(key, value) is None and key.problem(value) is None


ORDERED = [
    (section, schema, name, key, valid)
    for section, schema in SECTIONS
    for name, key in schema.keys.items()
    if key.stricter is not None
    for valid in [
        [value for value in key.stricter if _valid(key, value)]
        if isinstance(key.stricter, tuple)
        else [value for value in CANDIDATE_NUMBERS if _valid(key, value)]
    ]
    if len(valid) >= 2
]


def test_every_ordered_key_is_covered():
    """The property below sees the keys that decide: bars, margins, alpha, the correction, the audio floor."""
    names = {(section, name) for section, _, name, _, _ in ORDERED}
    for expected in [("ntvd", "max_ntvd"), ("ntvd", "max_increase"), ("gate", "alpha"), ("gate", "correction")]:
        assert expected in names, sorted(names)
    assert any(section == "audio_floor" for section, _ in names)
    assert len(ORDERED) >= 15, len(ORDERED)


def _document(section: str, name: str, value) -> dict:
    return {section: {"defaults": {name: value}}}


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_no_release_is_judged_by_looser_thresholds_than_its_baseline_s(data):
    section, schema, name, key, valid = data.draw(st.sampled_from(ORDERED), label="key")
    candidate_value = data.draw(st.sampled_from(valid), label="candidate")
    baseline_value = data.draw(st.sampled_from(valid), label="baseline")
    variant = None if schema.variant_axis is None else "story"
    release = ReleaseThresholds.of(
        Thresholds("candidate.yaml", _document(section, name, candidate_value), "c"),
        Thresholds("baseline.yaml", _document(section, name, baseline_value), "b"),
    )
    used = release.values(section, schema, variant, "gender")[name]
    if key.stricter == LOWER:
        assert used == min(candidate_value, baseline_value)
    elif key.stricter == HIGHER:
        assert used == max(candidate_value, baseline_value)
    else:
        order = list(key.stricter)
        assert used == order[min(order.index(candidate_value), order.index(baseline_value))]
    assert bool(release.deviations()) == (candidate_value != baseline_value)


CASE = Case(check="ntvd", model="m", corpus="demo", dimension="gender", variant="story", id="m-story-gender")
PATHOLOGICAL = st.one_of(
    st.floats(-50, 50, allow_nan=False),
    st.sampled_from([math.nan, math.inf, -math.inf, 0.0, 1e-300, 1e300]),
)


@st.composite
def paired_tests(draw) -> PairedTest:
    difference = draw(PATHOLOGICAL)
    estimable = draw(st.booleans())
    return PairedTest(
        candidate=draw(PATHOLOGICAL),
        baseline=draw(PATHOLOGICAL),
        difference=difference,
        worsening=draw(st.sampled_from([difference, -difference, math.nan])),
        ci_low=draw(PATHOLOGICAL),
        ci_high=draw(PATHOLOGICAL),
        se=draw(st.one_of(st.floats(0, 40), st.sampled_from([math.nan, math.inf, 0.0]))),
        df=draw(st.one_of(st.floats(0.5, 500), st.sampled_from([math.nan, math.inf, 0.0, 1.0]))),
        p_worse=draw(st.one_of(st.floats(0, 1), st.sampled_from([math.nan, 0.0, 1e-12]))),
        estimable=estimable,
        reason=None if estimable else "every replicate gives the same contrast",
        resampled="speakers",
    )


@settings(max_examples=400, deadline=None)
@given(
    test=paired_tests(),
    margin=st.sampled_from([0.0, 0.01, 2.0, 5.0, 10.0, 1e6]),
    family_size=st.integers(1, 90),
)
def test_a_comparison_is_judged_only_where_it_could_have_found_a_regression(test, margin, family_size):
    context = RuleOnly(DecisionRule(alpha=0.05, family_size=family_size))
    comparison = regression_comparison(
        context, CASE, test, measure="nTVD excess", margin=margin, margin_key="max_increase"
    )
    if not test.estimable:
        assert comparison.status == "not estimable" and not comparison.regressed
        return
    if comparison.regressed:
        assert comparison.status == "compared"
        assert math.isfinite(test.worsening) and test.worsening > margin
        assert math.isfinite(test.p_worse) and comparison.decision.significant
    if comparison.status == "compared":
        assert comparison.regressed or _powered(comparison.decision, margin)
        assert math.isfinite(test.worsening) and math.isfinite(test.p_worse), comparison.message
    else:
        assert comparison.status in UNDECIDED_COMPARISONS and not comparison.regressed


def _powered(decision: RegressionDecision, margin: float) -> bool:
    return decision.detectable is not None and decision.detectable <= DETECTABLE_MARGINS * margin


STATUSES = ("compared", "backbone", "new", "unsupported", "not estimable", "underpowered")


@settings(max_examples=300, deadline=None)
@given(
    absolute_passed=st.booleans(),
    status=st.sampled_from(STATUSES),
    regressed=st.booleans(),
    baseline_passed=st.sampled_from([True, False, None]),
)
def test_no_known_failure_or_release_pass_from_an_undecided_comparison(
    absolute_passed, status, regressed, baseline_passed
):
    comparison = Comparison(status=status, regressed=regressed, message="generated")
    outcome = release_decision(absolute_passed, comparison, baseline_passed)
    if outcome == "known failure":
        assert status in RELEASE_JUDGED and baseline_passed is False and not absolute_passed
    if outcome == "no regression":
        assert status in RELEASE_JUDGED and absolute_passed
    if outcome == "regression":
        assert status == "compared" and regressed
    if status in UNDECIDED_COMPARISONS:
        assert outcome not in RELEASE_PASSES
        assert outcome == (UNMEASURED if absolute_passed else "new failure")
    if not absolute_passed:
        assert outcome in ("regression", "new failure", "known failure")
