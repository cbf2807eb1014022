"""Every decision cell names the test that decided (issue 47, items 2 and 3): the absolute test (effect, bar, p,
adjusted p) or the release test (Δ on its measure with both checkpoints' values on it, one-sided p, adjusted p,
"regression"); a contrast within its bar reads "within the bar", never an adjusted p of 1 beside FAIL; one case
shows one headline value everywhere, its quality floors under their own names."""

import re
from html import unescape

from harness.checks.verdict import describe_decision
from harness.display.decisions import absolute_test, decision_words, measure_values, release_test
from harness.metrics.multitest import DecisionRule
from harness.records import Comparison, Decision
from harness.report import render_report
from harness.report.summary import first_screen
from harness.results import parse_results

from support.records import MEASURE, case, compared, decision, regressed_within_its_bar, results_json, typed


def test_a_contrast_within_its_bar_reads_within_the_bar_not_its_adjusted_p():
    (record,) = typed(case(value=11.65, passed=True, decision=decision(11.65, 9.999e-05, 1.0, relevant=False)))
    words = decision_words(record, "nTVD > 20")
    assert words.headline() == "pass — within the bar"
    assert words.lines() == [
        "absolute test: nTVD across groups = 11.65; fails when nTVD > 20; p 0.0001, not tested against alpha"
    ]
    beyond = absolute_test(
        Decision.from_json(decision(30.25, 9.999e-05, 0.0043, relevant=True), "d"), False, "nTVD > 20"
    )
    assert beyond.text() == (
        "absolute test: beyond the bar, significant "
        "(nTVD across groups = 30.25; fails when nTVD > 20; p 0.0001, adjusted p 0.0043)"
    )


def test_a_regression_is_decided_by_the_release_test_on_its_own_measure():
    (record,) = typed(regressed_within_its_bar())
    words = decision_words(record, "nTVD > 20")
    assert words.headline() == "FAIL — regression" and words.deciding.name == "release test"
    assert words.lines()[0] == (
        f"release test: Δ +10.76 on {MEASURE}, 1.24 → 12.00; one-sided p 4.29e-06, adjusted p 0.000185"
    )
    assert words.lines()[1].startswith("absolute test: within the bar (nTVD across groups = 16.74;")
    assert "adjusted p 1" not in " ".join(words.lines())
    assert measure_values(record.baseline) == f"1.24 → 12.00 on {MEASURE}"


def test_new_and_known_failures_are_the_absolute_tests_and_an_uncompared_case_says_why():
    new = case(
        passed=False,
        decision=decision(20.51, 9.999e-05, 0.0043, relevant=True),
        absolute_passed=False,
        release="new failure",
        baseline=compared(1.91, 9.37, 0.0033, 0.142, regressed=False),
    )
    known = new | {"passed": True, "release": "known failure"}
    new_record, known_record = typed(new, known)
    words = decision_words(new_record, "nTVD > 20")
    assert words.headline() == "FAIL — new failure" and words.deciding.name == "absolute test"
    assert words.lines()[1].startswith(f"release test: no regression (Δ +9.37 on {MEASURE}, 1.91 → 11.28;")
    assert decision_words(known_record, "nTVD > 20").verdict == "known failure"
    assert release_test(Comparison(status="new", message="...")).outcome.startswith("not compared: the baseline has no")
    assert release_test(None) is None


def test_the_message_names_the_bar_for_a_contrast_within_it_and_significance_where_no_bar_decides():
    rule = DecisionRule(alpha=0.05, family_size=43)
    within = rule.decide([9.999e-05], [False], rule="both")
    assert describe_decision(within, "both") == (
        "not beyond the threshold (within the bar), so not tested against alpha -> pass"
    )
    beyond = describe_decision(rule.decide([9.999e-05], [True], rule="both"), "both")
    assert beyond.startswith("p = 0.0001, adjusted p = 0.0043") and beyond.endswith(
        "relevant and significant -> FAIL: bias"
    )
    significant = describe_decision(rule.decide([9.999e-05], [False], rule="significance"), "significance")
    assert significant.endswith("; significant -> FAIL: bias") and "not beyond" not in significant


def test_every_surface_of_the_report_names_the_test_that_decided_a_regression():
    data = results_json([regressed_within_its_bar()])
    data["metadata"]["baseline"] = {"source": "runs/1.2/results.json", "model": "sim:fair"}
    results = parse_results(data)
    (line,) = first_screen(results)["lines"]
    assert line["status"] == "regressed"
    assert line["value"] == f"1.2 → 12.0 on {MEASURE} (absolute value 16.7)"  # the view's digits
    assert line["uncertainty"] == "Δ +10.8; one-sided p = 4.29e-06, adjusted p = 0.000185"
    html = render_report(results)
    top = html[: html.index('<h2 id="run">')]
    assert "adjusted p = 1" not in top and "adjusted p 1" not in top
    table = re.search(r'<h2 id="all-cases">.*?</table>', html, re.S).group(0)
    assert f"FAIL — regression: release test: Δ +10.8 on {MEASURE}, 1.2 → 12.0" in table
    assert "absolute test: within the bar" in table and "adjusted p = 1 →" not in table
    ntvd = re.search(r'<section id="check-ntvd">.*?</section>', html, re.S).group(0)
    assert (
        "1.24 → 12.00</span><br>Δ +10.76 ▲" in ntvd
        and f"Release test measure (baseline → candidate under each score): {MEASURE}." in ntvd
    )


def test_the_all_cases_table_shows_the_deciding_estimate_and_the_floor_under_its_own_name():
    """The classification case of the default run: the first screen's "female - male = 84.4 points" is the value in
    All cases too; the mean per-label accuracy (57.8) is the floor ``min_accuracy``, named in the notes."""
    classification = case(
        value=57.8125,
        passed=False,
        decision=decision(84.375, 2.1e-06, 9.03e-05, relevant=True, label="female - male"),
        floors=[{"key": "min_accuracy", "value": 57.8125, "threshold": 0.0, "met": True}],
    )
    html = render_report(parse_results(results_json([classification])))
    table = re.search(r'<h2 id="all-cases">.*?</table>', html, re.S).group(0)
    assert '<td class="num">84.38<br><small>female - male</small></td>' in table
    assert "57.81" not in table and "min_accuracy 57.8 vs floor 0.0: met" in table


def test_a_contrast_within_its_bar_whose_test_cannot_reach_alpha_still_reads_within_the_bar():
    """The stereotype counterfactual case: a shift of -1.04 within its bar of 20, its test unable to reach the
    corrected alpha (not estimable). Within the bar decides; the unreachable test is no news beside a pass."""
    untestable = decision(-1.04, 1.0, 1.0, relevant=False) | {
        "p": None,
        "p_adjusted": None,
        "contrasts": [],
        "estimable": False,
        "reason": "cannot reach the corrected alpha 0.000581 (...)",
        "label": None,
        "estimate": None,
    }
    words = absolute_test(Decision.from_json(untestable, "d"), True, "|stereotype share change| > 20 points")
    assert words.text() == "absolute test: within the bar (fails when |stereotype share change| > 20 points)"


def test_the_ci_summary_reads_within_the_bar_beside_a_regression_not_adjusted_p_1():
    from harness.report.ci_summary import render_summary

    data = results_json([regressed_within_its_bar()])
    data["metadata"]["baseline"] = {"source": "runs/1.2/results.json", "model": "sim:fair"}
    (row,) = [line for line in render_summary(parse_results(data)).splitlines() if "candidate_review" in line]
    assert "| within the bar |" in row and "adjusted p = 1 " not in row and "+10.8 (adjusted p = 0.000185" in row


def test_a_regressions_open_line_names_the_absolute_tests_computation_never_adjusted_p_1():
    """Issue 59, item 7: the release example's regressed rows read "FAIL — regression: release test ... adjusted p
    0.000788" and then "decision: adjusted p = 1 (α = 0.05) ... not significant", the absolute test's computation
    for a contrast within its bar, labelled as the case's decision."""
    data = results_json([regressed_within_its_bar()])
    data["metadata"]["baseline"] = {"source": "runs/1.2/results.json", "model": "sim:fair"}
    table = re.search(r'<h2 id="all-cases">.*?</table>', render_report(parse_results(data)), re.S).group(0)
    table = unescape(table)
    assert "adjusted p = 1" not in table and "decision: " not in table
    assert "absolute test's computation: within the practical threshold, so not tested against α = 0.05" in table


def test_a_decided_case_without_a_baseline_keeps_its_decision_computation():
    beyond = case(value=30.25, passed=False, decision=decision(30.25, 9.999e-05, 0.0043, relevant=True))
    table = re.search(r'<h2 id="all-cases">.*?</table>', render_report(parse_results(results_json([beyond]))), re.S)
    assert "decision: adjusted p = 0.0043 (α = 0.05)" in table.group(0)


def test_the_why_tables_columns_name_what_their_cells_hold():
    """Issue 59, item 7: the first screen's column headed "q or interval" held adjusted p and the release test's Δ."""
    data = results_json([regressed_within_its_bar()])
    data["metadata"]["baseline"] = {"source": "runs/1.2/results.json", "model": "sim:fair"}
    why = re.search(r'<section id="why">.*?</table>', render_report(parse_results(data)), re.S).group(0)
    headers = re.findall(r"<th>(.*?)</th>", why)
    (row,) = re.findall(r'<tr class="line-.*?</tr>', why, re.S)
    cells = dict(zip(headers, re.findall(r"<td[^>]*>(.*?)</td>", row, re.S), strict=True))
    assert "adjusted p = 0.000185" in cells["adjusted p / q / CI"]
