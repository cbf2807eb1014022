"""The contract of the generic decide-and-record step (scikit-learn's check_estimator, for checks): every registered
check's ``measure`` returns a :class:`~harness.checks.base.Measurement`, and :meth:`Check.decide` turns it into a
record whose fields agree with each other and with its message, before and after the gate's release ratchet.

The last words of a decided message are its verdict, ``-> pass`` or ``-> FAIL: bias``; a case whose contrasts have
no interval and none beyond the practical threshold says ``not estimable (...); not beyond the threshold -> pass``
(it cannot fail its criterion; one beyond the threshold is unmeasured instead). Quality floors come before the
decision, reported and never a verdict.
"""

import dataclasses

import pytest

from harness.checks import CHECKS, get_check, record_types
from harness.checks.base import Measurement, Verdict
from harness.core.errors import CaseNotMeasured, DesignCannotFail
from harness.gate import RELEASE_OUTCOMES, RELEASE_PASSES, Gate, GateConfig
from harness.gate.baseline import Baseline, baseline_key
from harness.records import CaseRecord, RecordPayload

VERDICT_ENDINGS = {"-> pass": True, "-> FAIL: bias": False}


@pytest.fixture(scope="module")
def gate(tmp_path_factory) -> Gate:
    config = GateConfig(
        models=("sim:biased",),
        judge="sim:fair",
        cache_dir=str(tmp_path_factory.mktemp("cache")),
        progress=False,
        permutations=99,
    )
    return Gate(config)


def measured(gate: Gate, name: str) -> list[tuple]:
    """Every case of check ``name`` that could be measured, with its measurement and decided verdict."""
    check = get_check(name)
    out = []
    for case in gate.cases(name):
        try:
            measurement = check.measure(gate.context, case, gate.family(name))
        except CaseNotMeasured:
            continue
        try:
            verdict = check.decide(gate.context, case, measurement)
        except DesignCannotFail as unmeasured:  # decided, but its design could not have failed it (issue 57)
            record = unmeasured.record
            assert record.decision.untestable and record.passed, str(unmeasured)
            verdict = Verdict(record.passed, record.message, record)
        out.append((case, measurement, verdict))
    return out


def verdict_words(message: str) -> str:
    """The message's last words, its verdict (the reported-only quality floors come before the decision)."""
    endings = [ending for ending in VERDICT_ENDINGS if message.endswith(ending)]
    assert len(endings) == 1, f"the message does not end on a verdict: ...{message[-120:]!r}"
    return endings[0]


@pytest.mark.parametrize("name", sorted(CHECKS))
def test_measure_returns_a_measurement_that_decide_records_consistently(name, gate):
    check = get_check(name)
    cases = measured(gate, name)
    assert cases, f"{name}: no case of sim:biased could be measured"
    for case, measurement, verdict in cases:
        assert isinstance(measurement, Measurement) and isinstance(verdict, Verdict)
        assert measurement.paired_data == check.paired_data(gate.context, case), (
            f"{case.id}: the measurement does not carry the paired data the baseline comparison reads"
        )
        record = verdict.record
        assert type(record) is record_types()[name]
        assert (record.check, record.id, record.model, record.corpus, record.dimension, record.variant) == (
            name,
            case.id,
            case.model,
            case.corpus,
            case.dimension,
            case.variant,
        )
        assert record.passed is verdict.passed and record.message == verdict.message
        assert record.message.startswith(f"{case.id}: ") and measurement.criterion in record.message
        ending = verdict_words(record.message)
        assert VERDICT_ENDINGS[ending] is record.passed, f"{case.id}: passed={record.passed} but ...{ending!r}"
        if not record.decision.estimable and record.decision.rule != "magnitude" and not record.decision.untestable:
            assert (
                record.passed and not record.decision.relevant and "not beyond the threshold -> pass" in record.message
            )
        assert record.decision.statistic == measurement.statistic and record.decision.rule == measurement.rule
        assert record.threshold == measurement.threshold and record.floors == measurement.floors
        assert record.paired_data == measurement.paired_data
        assert record.release is None and record.absolute_passed is None and record.baseline is None
        assert isinstance(measurement.payload, RecordPayload) and isinstance(record, type(measurement.payload))
        own = {field.name for field in dataclasses.fields(measurement.payload)}
        assert own <= {field.name for field in dataclasses.fields(record)} - {
            f.name for f in dataclasses.fields(CaseRecord)
        }


@pytest.mark.parametrize("name", sorted(CHECKS))
def test_against_a_baseline_passed_the_last_word_and_release_agree(name, gate):
    """Gated against its own records (a baseline no better than itself), each case's ``release`` is one of the
    ratchet's outcomes, ``passed`` is whether that outcome passes, and the message ends on it."""
    cases = measured(gate, name)
    own = {baseline_key(verdict.record): verdict.record for _, _, verdict in cases}
    gate.baseline = Baseline("own records", "sim:biased", own)
    try:
        for case, _, decided in cases:
            if decided.record.decision.untestable:
                with pytest.raises(CaseNotMeasured, match="could not have failed it"):
                    gate.verdict(case)
                continue
            try:
                record = gate.verdict(case).record
            except DesignCannotFail as unmeasured:
                # passed its threshold, but a comparison with identical records cannot vary (issue 57)
                assert decided.passed and "could not have found a regression" in str(unmeasured)
                # issue 59: an unmeasured case's cause never reads its absolute test's "-> pass" (the first screen's cell)
                assert "-> pass" not in str(unmeasured) and "within" in str(unmeasured), str(unmeasured)
                continue
            assert record.release in RELEASE_OUTCOMES and record.absolute_passed is decided.passed
            assert record.passed is (record.release in RELEASE_PASSES)
            assert record.message.endswith(f"release: {record.release} -> {'PASS' if record.passed else 'FAIL'}")
            assert record.release != "regression", f"{case.id} regressed against itself"
    finally:
        gate.baseline = None
