"""Which test decided a case, in words: what every decision cell of the report shows (issue 47, item 2).

A measured case is judged by up to two tests, and its record says which one decided:

- the **absolute test**: the deciding contrast's effect against the case's bar (its practical threshold, e.g.
  ``nTVD > 20``) and the gate's corrected p. Under the rule ``both`` a contrast within its bar is never tested
  against alpha (its adjusted p is 1 by construction), so it reads "within the bar", not "adjusted p 1";
- the **release test** (a run with ``--baseline``): the change of the case's bias measure against the baseline's
  case, on the measure the comparison was made on (e.g. "nTVD on common values beyond group exchange"), with both
  checkpoints' values on it, its one-sided p and adjusted p, and "regression" when it is one.

The record's ``release`` (:func:`harness.gate.release_outcome`) names the deciding test: a ``regression`` is the
release test's verdict; a ``new failure`` or ``known failure`` the absolute test's; a passing case passed both.
Everything here reads a record (:class:`harness.records.CaseRecord`) and the words of its check's view.
"""

from __future__ import annotations

import dataclasses
import math

from harness.display.text import decision_line, p_text
from harness.records import CaseRecord, Comparison, Contrast, Decision

ABSOLUTE_TEST = "absolute test"
RELEASE_TEST = "release test"
WITHIN_THE_BAR = "within the bar"
COULD_NOT_FAIL = "its design could not have failed it"
COULD_NOT_REGRESS = "its comparison with the baseline could not have found a regression"


@dataclasses.dataclass(frozen=True)
class TestWords:
    """One test of a case in words: ``name`` (:data:`ABSOLUTE_TEST` or :data:`RELEASE_TEST`), ``outcome`` (what it
    found: "beyond the bar, significant", "within the bar", "regression", ...) and ``detail`` (its numbers)."""

    name: str
    outcome: str
    detail: str

    def text(self) -> str:
        """ "absolute test: within the bar (nTVD identity vs swap = 11.65; fails when nTVD > 20; p 0.0001)"."""
        return f"{self.name}: {self.outcome}" + (f" ({self.detail})" if self.detail else "")


@dataclasses.dataclass(frozen=True)
class DecisionWords:
    """A case's verdict and the test that reached it: ``verdict`` ("pass", "FAIL", "known failure" or "unmeasured":
    what a case unmeasured by design measured), ``reason``
    (the deciding test's finding, or the release outcome that names it: "regression", "new failure"), the
    ``deciding`` test and the ``other`` one (None in a run without a baseline)."""

    verdict: str
    reason: str
    deciding: TestWords | None
    other: TestWords | None = None

    @property
    def failed(self) -> bool:
        return self.verdict == "FAIL"

    def headline(self) -> str:
        """ "FAIL — regression", "pass — within the bar"."""
        return f"{self.verdict} — {self.reason}" if self.reason else self.verdict

    def lines(self) -> list[str]:
        """The deciding test first (its outcome left out where the headline gives it), then the other, each as
        :meth:`TestWords.text`."""
        lines = []
        if self.deciding is not None:
            shown = self.deciding.outcome == self.reason and self.deciding.detail
            lines.append(f"{self.deciding.name}: {self.deciding.detail}" if shown else self.deciding.text())
        if self.other is not None:
            lines.append(self.other.text())
        return lines


def deciding_contrast(decision: Decision) -> Contrast | None:
    """The decision's deciding contrast (the contrast whose label the decision names), else None."""
    return next((contrast for contrast in decision.contrasts if contrast.label == decision.label), None)


def detectable_text(decision: Decision) -> str | None:
    """Beside the bar, what the deciding contrast's design could detect (issue 57): "detects 11.9 at 80% power",
    "cannot reach alpha", or None where the record states no detectable effect."""
    contrast = deciding_contrast(decision)
    if contrast is None or contrast.powered is None:
        return None
    if contrast.detectable is None:
        return "its design cannot reach alpha"
    return f"detects {contrast.detectable:.3g} at 80% power" + ("" if contrast.powered else ", beyond the bar")


def absolute_test(
    decision: Decision | None,
    passed: bool,
    magnitude_rule: str | None,
    digits: int = 2,
    unit: str = "",
) -> TestWords | None:
    """The absolute test of a case's ``decision`` (a :class:`harness.records.Decision`), whose outcome was
    ``passed``; ``magnitude_rule`` words the bar ("nTVD > 20"), ``digits`` and ``unit`` print the estimate.
    None without a decision."""
    if decision is None:
        return None
    rule = decision.rule or "both"
    estimate = decision.estimate
    value = (
        f"{decision.label or 'effect'} = {estimate:.{digits}f}{unit}"
        if estimate is not None and math.isfinite(estimate)
        else None
    )
    bar = "; ".join(part for part in (f"fails when {magnitude_rule}" if magnitude_rule else None,
                                       detectable_text(decision)) if part) or None  # fmt: skip
    deciding = deciding_contrast(decision)
    raw_p = decision.p if deciding is None or deciding.p is None else deciding.p
    adjusted_name = "BH q" if rule == "q-value" else "adjusted p"
    tested = ", ".join(
        part
        for part in (
            None if raw_p is None else f"p {p_text(raw_p)}",
            None if decision.p_adjusted is None else f"{adjusted_name} {p_text(decision.p_adjusted)}",
        )
        if part
    )
    if rule == "both" and not decision.relevant:
        # Under "both" a contrast within its bar is never tested against alpha: its adjusted p (1) says nothing,
        # and whether its p could be computed does not matter either.
        untested = None if raw_p is None else f"p {p_text(raw_p)}, not tested against alpha"
        return TestWords(ABSOLUTE_TEST, WITHIN_THE_BAR, "; ".join(p for p in (value, bar, untested) if p))
    if not decision.estimable:
        return TestWords(ABSOLUTE_TEST, "not estimable", "; ".join(p for p in (value, decision.reason) if p))
    if rule in ("magnitude", "bounds"):
        outcome = "beyond the bar" if not passed else WITHIN_THE_BAR
        return TestWords(ABSOLUTE_TEST, outcome, "; ".join(p for p in (value, bar) if p))
    if rule in ("significance", "ci", "q-value"):
        outcome = "significant" if not passed else "not significant"
        return TestWords(ABSOLUTE_TEST, outcome, "; ".join(p for p in (value, tested) if p))
    outcome = "beyond the bar, significant" if decision.significant else "beyond the bar, not significant"
    return TestWords(ABSOLUTE_TEST, outcome, "; ".join(p for p in (value, bar, tested) if p))


def measure_values(baseline: Comparison | None, digits: int = 2) -> str | None:
    """Both checkpoints' values on the release test's measure of a record's ``baseline`` (a
    :class:`harness.records.Comparison`), labelled by it: "1.37 → 8.60 on nTVD identity vs swap beyond arm
    exchange". None without a baseline or where the case was not compared."""
    candidate = None if baseline is None else baseline.candidate_value
    if baseline is None or candidate is None:
        return None
    measure = baseline.measure
    return f"{baseline.baseline_value:.{digits}f} → {candidate:.{digits}f}" + (f" on {measure}" if measure else "")


def change_text(baseline: Comparison, digits: int = 2) -> str | None:
    """The change on the release test's measure with both checkpoints' values: "Δ +7.22 on nTVD identity vs swap
    beyond arm exchange, 1.37 → 8.60". None where the case was not compared."""
    candidate = baseline.candidate_value
    if candidate is None:
        return None
    measure = baseline.measure
    return (
        f"Δ {baseline.delta:+.{digits}f}"
        + (f" on {measure}" if measure else "")
        + f", {baseline.baseline_value:.{digits}f} → {candidate:.{digits}f}"
    )


NOT_COMPARED = {
    "new": "not compared: the baseline has no measured case to compare with",
    "unsupported": "not compared: the runs cannot be compared on this case",
    "not estimable": "not compared: the change cannot be estimated",
}
"""The release test's outcome where the case was not compared, by the baseline block's ``status``."""


def release_test(baseline: Comparison | None, digits: int = 2) -> TestWords | None:
    """The release test of a case's ``baseline`` (:class:`~harness.records.Comparison`): the change on its measure
    with both checkpoints' values, one-sided p, adjusted p and the outcome ("regression", "no regression", or a mode
    without audio's backbone change). None without a baseline."""
    if baseline is None:
        return None
    status = baseline.status
    values = change_text(baseline, digits)
    if status not in ("compared", "backbone") or values is None:
        return TestWords(RELEASE_TEST, NOT_COMPARED.get(str(status), f"not compared ({status})"), "")
    adjusted = baseline.p_adjusted
    tested = ", ".join(
        part
        for part in (
            None if baseline.p_value is None else f"one-sided p {p_text(baseline.p_value)}",
            None if adjusted is None else f"adjusted p {p_text(adjusted)}",
        )
        if part
    )
    if status == "backbone":
        outcome = "the text backbone's change (a mode without audio), not gated"
    else:
        outcome = "regression" if baseline.regressed else "no regression"
    return TestWords(RELEASE_TEST, outcome, "; ".join(p for p in (values, tested) if p))


def decision_words(record: CaseRecord, magnitude_rule: str | None, digits: int = 2, unit: str = "") -> DecisionWords:
    """The verdict of a measured case and the test that reached it (see the module docstring): in a run without a
    baseline, the absolute test; with one, the release test for a ``regression``, else the absolute test, the
    other test beside it."""
    release = record.release
    absolute_passed = record.absolute_passed
    absolute = absolute_test(
        record.decision,
        record.passed if absolute_passed is None else absolute_passed,
        magnitude_rule,
        digits,
        unit,
    )
    comparison = release_test(record.baseline, digits)
    if record.unmeasured_by_design:
        # What a case unmeasured by design measured: told as unmeasured, never "pass" (issue 57).
        untestable = () if record.decision is None else record.decision.untestable
        why = COULD_NOT_FAIL if untestable else COULD_NOT_REGRESS
        return DecisionWords("unmeasured", why, absolute, comparison)
    if release == "regression" and comparison is not None:
        return DecisionWords("FAIL", "regression", comparison, absolute)
    if release == "known failure":
        # Failing the absolute test in the baseline too, without a regression: listed, not failing the release.
        return DecisionWords("known failure", "", absolute, comparison)
    verdict = "pass" if record.passed else "FAIL"
    reason = "new failure" if release == "new failure" else absolute.outcome if absolute is not None else ""
    return DecisionWords(verdict, reason, absolute, comparison)


def one_line(record: CaseRecord, magnitude_rule: str | None, digits: int = 2, unit: str = "") -> str | None:
    """A case's decision in one line: without a baseline, its absolute test
    (:func:`harness.display.text.decision_line`: "fails when nTVD > 20 and adjusted p < 0.05: adjusted p = 0.0036 →
    FAIL"); with one, the verdict and the test that decided it ("FAIL — regression: release test: Δ +7.22 on ...").
    None without a decision."""
    decision = record.decision
    if decision is None:
        return None
    if record.release is None:
        return decision_line(decision, record.passed, magnitude_rule)
    words = decision_words(record, magnitude_rule, digits, unit)
    lines = words.lines()
    return f"{words.headline()}: {lines[0]}" if lines else words.headline()


def other_test(record: CaseRecord, magnitude_rule: str | None, digits: int = 2, unit: str = "") -> str | None:
    """In a run with a baseline, the test that did not decide the case, in words (shown under :func:`one_line`)."""
    if record.release is None:
        return None
    lines = decision_words(record, magnitude_rule, digits, unit).lines()
    return lines[1] if len(lines) > 1 else None
