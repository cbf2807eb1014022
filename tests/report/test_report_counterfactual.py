"""The counterfactual check's report section (issue 39): the summary table per source and dimension, the identity
vs swap plots of the VIBE cases, the flip rates and largest shifts, the arms of the WER and stereotype cases, and a
layout that holds in Chromium with long values and long model specs."""

import math
import re
from pathlib import Path

import pytest

from harness.checks.counterfactual import view
from harness.display.plots import text_width
from harness.display.text import case_anchor
from harness.report import render_report
from harness.results import parse_results

from support.browser import CHROMIUM, LONG_SPECS, measure_layout
from support.records import results_json, typed

LONG_VALUE = "baking sourdough bread with friends every weekend at the community hall"
UNBROKEN_VALUE = "supercalifragilisticexpialidociouslyextraordinarychess"


def shares(values, weights):
    total = sum(weights)
    return dict(zip(values, (weight / total for weight in weights)))


def distribution_rows(direction, attribute, identity, swap):
    return [
        {"direction": direction, "attribute": attribute, "value": value, "identity": identity[value], "swap": swap[value]}
        for value in identity
    ]  # fmt: skip


ACTIVITIES = ["yoga", "chess", LONG_VALUE, UNBROKEN_VALUE, *(f"activity {i}" for i in range(8))]


def vibe_case(model="sim:biased", task="advisory", passed=False, effect=44.0, p=0.0001, **extra):
    """A VIBE counterfactual case as results.json holds it: two directions, ``activity`` (12 values: more than a
    plot draws) moved most from female speakers, ``budget`` from male speakers."""
    female_identity = shares(ACTIVITIES, [30, 2, 20, 3, *range(1, 9)])
    female_swap = shares(ACTIVITIES, [5, 25, 4, 15, *range(8, 0, -1)])
    male_identity = shares(ACTIVITIES, [10] * len(ACTIVITIES))
    male_swap = shares(ACTIVITIES, [11] * 6 + [9] * 6)
    budgets = ["low", "high"]
    record = {
        "check": "counterfactual",
        "id": f"{model}-{task}-gender-counterfactual",
        "model": model,
        "model_fingerprint": f"{model}@1",
        "corpus": "demo",
        "dimension": "gender",
        "variant": task,
        "value": effect,
        "threshold": {"max_ntvd": 20.0, "rule": "both", "min_perceived_share": 0.8},
        "passed": passed,
        "message": "msg",
        "decision": {"p": p, "p_adjusted": min(1.0, 7 * p), "alpha": 0.05, "relevant": not passed},
        "kind": "vibe",
        "transform": "gender_swap",
        "perceiver": "voice:praat",
        "perceived": [
            {"source_group": "female", "target_group": "male", "clips": 20, "perceived_as_target": 18, "share": 0.9},
            {"source_group": "male", "target_group": "female", "clips": 16, "perceived_as_target": 16, "share": 1.0},
        ],
        "excluded": {"female -> male": 2, "male -> female": 0},
        "n_speakers": 12,
        "n_permutations": 999,
        "seed": 1,
        "effect": effect,
        "p": p,
        "per_direction": {"female": effect + 5, "male": effect - 5},
        "artifact": {
            "measure": "nTVD original vs identity",
            "value": 6.5,
            "p": 0.48,
            "flip_rates": [{"attribute": "activity", "recordings": 34, "flipped": 3, "flip_rate": 3 / 34}],
        },
        "per_attribute": {"female": {"activity": 50.0, "budget": 10.0}, "male": {"activity": 5.0, "budget": 45.0}},
        "recordings": 34,
        "unpaired_recordings": 2,
        "flip_rates": [
            {"attribute": "activity", "recordings": 34, "flipped": 17, "flip_rate": 0.5},
            {"attribute": "budget", "recordings": 30, "flipped": 9, "flip_rate": 0.3},
        ],
        "shifts": [
            {"direction": "female", "attribute": "activity", "shift": "from", "value": "yoga", "change": -0.21},
            {"direction": "female", "attribute": "activity", "shift": "to", "value": "chess", "change": 0.19},
        ],
        "distributions": distribution_rows("female", "activity", female_identity, female_swap)
        + distribution_rows("male", "activity", male_identity, male_swap)
        + distribution_rows("female", "budget", shares(budgets, [1, 1]), shares(budgets, [1, 1]))
        + distribution_rows("male", "budget", shares(budgets, [3, 1]), shares(budgets, [1, 3])),
    }
    return record | extra


def arm_case(kind="wer", model="sim:biased", passed=False):
    """A WER (``asr``) or stereotype counterfactual case: two directions with their three arms."""
    variant, source = ("asr", "demo") if kind == "wer" else ("stereotype", "stereoset-gender")
    bar_key = "max_wer_difference" if kind == "wer" else "max_stereotype_shift"
    return {
        "check": "counterfactual",
        "id": f"{model}-{variant}-gender-counterfactual",
        "model": model,
        "model_fingerprint": f"{model}@1",
        "corpus": source,
        "dimension": "gender",
        "variant": variant,
        "value": 16.8,
        "threshold": {bar_key: 10.0, "rule": "both", "min_perceived_share": 0.8},
        "passed": passed,
        "message": "msg",
        "kind": kind,
        "transform": "gender_swap",
        "perceiver": "voice:praat",
        "perceived": [
            {"source_group": "female", "target_group": "male", "clips": 8, "perceived_as_target": 8, "share": 1.0},
            {"source_group": "male", "target_group": "female", "clips": 8, "perceived_as_target": 8, "share": 1.0},
        ],
        "excluded": {"female -> male": 0, "male -> female": 0},
        "n_speakers": 12,
        "n_permutations": 999,
        "seed": 1,
        "effect": 16.8,
        "p": 0.0002,
        "per_direction": {"female": -13.7, "male": 16.8},
        "artifact": {"measure": "identity - original (points)", "value": -1.4, "p": 0.21},
        "directions": {
            "female": {
                "effect": -13.7,
                "p": 0.0001,
                "arms": {"original": 17.3, "identity": 16.0, "swap": 2.3},
                "artifact": -1.4,
                "artifact_p": 0.21,
                **({"mean_recording_difference": -13.6} if kind == "wer" else {"flip_rate": 0.52, "items": 96}),
            },
            "male": {
                "effect": 4.2,
                "p": 0.3,
                "arms": {"original": 2.0, "identity": 3.3, "swap": 7.5},
                "artifact": 1.3,
                "artifact_p": 0.017,
                **({"mean_recording_difference": 4.1} if kind == "wer" else {"flip_rate": 0.53, "items": 96}),
            },
        },
    }


def run_of(*cases):
    data = results_json(list(cases))
    data["metadata"]["models"] = {case["model"]: "fp" for case in cases}
    return parse_results(data)


def section_of(page: str) -> str:
    return re.search(r'<section id="check-counterfactual">.*?</section>', page, re.S).group(0)


def row_of(page: str, anchor: str) -> str:
    return re.search(rf'<tr id="{anchor}">(.*?)</tr>', page, re.S).group(1)


def test_the_summary_table_has_a_row_per_model_and_variant_with_the_failed_effect_outlined():
    cases = [vibe_case(), vibe_case(model="sim:fair", passed=True, effect=8.0, p=0.8), arm_case("wer")]
    section = section_of(render_report(run_of(*cases)))
    failed, passed = typed(cases[0], cases[1])
    assert section.count("<h3>demo, gender: VIBE tasks, ASR</h3>") == 1
    row = row_of(section, case_anchor(failed))
    assert "FAIL" in row and 'class="num cell-fail">44.00' in row and "adjusted p 0.0007" in row
    assert "6.50" in row and "p 0.48" in row  # the artifact beside the effect
    assert "female\u00a0→\u00a0male: 90% (18/20)" in row and "male\u00a0→\u00a0female: 100% (16/16)" in row
    assert "not perceived as the target: 2 female\u00a0→\u00a0male" in row and "2 without an answer in both arms" in row
    assert "female\u00a0→\u00a0male: 49.00" in row and "male\u00a0→\u00a0female: 39.00" in row
    row = row_of(section, case_anchor(passed))
    assert "cell-fail" not in row and 'class="pass">pass' in row
    assert section.index(case_anchor(failed)) < section.index(case_anchor(passed))  # models in order of appearance
    assert f'href="#{case_anchor(failed)}-arms"' in section and f'id="{case_anchor(failed)}-arms"' in section
    assert "VIBE tasks: nTVD &gt; 20 and significant" in section and "ASR: |WER difference| &gt; 10 points" in section


def test_each_direction_plots_the_attribute_that_moved_most():
    (record,) = typed(vibe_case())
    detail = view.vibe_detail(record, {record.model: record.model})
    assert [(plot["direction"], plot["attribute"]) for plot in detail["plots"]] == [
        ("female\u00a0→\u00a0male", "activity"),
        ("male\u00a0→\u00a0female", "budget"),
    ]


def test_the_plot_draws_the_records_shares_and_its_rows_sum_to_one_per_arm():
    (record,) = typed(vibe_case())
    figure = view.arm_share_plot(record, "female", "activity")
    given = {row.value: row for row in record.distributions if row.direction == "female" and row.attribute == "activity"}  # fmt: skip
    barred = [row for row in figure["rows"] if not row["other"]]
    assert len(barred) == view.MAX_VALUES and figure["value_count"] == len(given) == 12
    assert figure["rows"][-1]["other"] and figure["rows"][-1]["value"] == "2 other values"
    changes = [abs(given[row["value"]].swap - given[row["value"]].identity) for row in barred]
    assert changes == sorted(changes, reverse=True)  # the values that moved most first
    for arm in ("identity", "swap"):
        assert math.isclose(sum(row[arm] for row in figure["rows"]), 1.0)
        for row in barred:
            (bar,) = [bar for bar in row["bars"] if bar["arm"] == arm]
            assert bar["share"] == getattr(given[row["value"]], arm)
            assert math.isclose(bar["width"], bar["share"] / figure["axis_top"] * figure["plot_width"], abs_tol=0.01)
            assert bar["width"] <= figure["plot_width"]
    assert figure["ticks"][0]["x"] == figure["left"] and figure["ticks"][-1]["x"] == figure["right"]


def test_long_values_wrap_inside_the_label_column_and_the_shares_sit_right_of_the_bars():
    (record,) = typed(vibe_case())
    figure = view.arm_share_plot(record, "female", "activity")
    rows = {row["value"]: row for row in figure["rows"]}
    assert len(rows[LONG_VALUE]["lines"]) == 3 and " ".join(rows[LONG_VALUE]["lines"]) == LONG_VALUE
    assert "".join(rows[UNBROKEN_VALUE]["lines"]) == UNBROKEN_VALUE
    for row in figure["rows"]:
        assert all(len(line) <= view.LABEL_CHARS and text_width(line) + 6 <= figure["left"] for line in row["lines"])
        assert figure["value_x"] > figure["right"] and figure["value_x"] + text_width(row["text"]) <= figure["width"]
        gaps = [b - a for a, b in zip(row["line_ys"], row["line_ys"][1:])]
        assert all(gap >= view.LINE_HEIGHT for gap in gaps)
    assert view.label_lines("x" * 200) == ["x" * 28, "x" * 28, "x" * 27 + "…"]


def test_flip_rates_set_each_swap_beside_its_artifact_and_shifts_name_from_and_to_values():
    (record,) = typed(vibe_case())
    flips = {row["attribute"]: row for row in view.flip_table(record)}
    assert flips["activity"]["swap"].flipped == 17 and flips["activity"]["artifact"].flipped == 3
    assert flips["budget"]["artifact"] is None and flips["activity"]["ntvd"] == [50.0, 5.0]
    (shift,) = view.shift_table(record)
    assert [(s["value"], s["change_text"]) for s in shift["from"] + shift["to"]] == [
        ("yoga", "−21.0"),
        ("chess", "+19.0"),
    ]
    section = section_of(render_report(run_of(vibe_case())))
    assert "17 of 34 <small>(50.0%)</small>" in section and "3 of 34 <small>(8.8%)</small>" in section
    assert "“yoga” −21.0" in section and "“chess” +19.0" in section


def test_wer_and_stereotype_cases_show_their_three_arms_per_direction():
    section = section_of(render_report(run_of(arm_case("wer"), arm_case("stereotype", passed=True))))
    assert "<h3>stereoset-gender, gender: BASIS stereotype sets</h3>" in section
    for cells in (">17.3<", ">16.0<", ">2.3<", ">−13.7<br><small>p 0.0001</small>", ">−1.4<br><small>p 0.21</small>"):
        assert cells in section
    assert "mean per-recording difference" in section and "52.0% <small>of 96 items</small>" in section
    (wer,) = typed(arm_case("wer"))
    rows = view.arm_detail(wer, {wer.model: wer.model})["rows"]
    assert [row["beyond"] for row in rows] == [True, False]  # only the direction beyond the 10-point bar is outlined
    assert [row["arms"] for row in rows] == [[17.3, 16.0, 2.3], [2.0, 3.3, 7.5]]


def test_long_model_specs_are_keyed_and_spelled_out_once():
    cases = [vibe_case(model=LONG_SPECS[0]), arm_case("wer", model=LONG_SPECS[1])]
    section = section_of(render_report(run_of(*cases)))
    assert "<strong>M1</strong> = <code>" in section and "<strong>M2</strong> = <code>" in section
    assert section.count(LONG_SPECS[0]) == section.count(LONG_SPECS[1]) == 1  # in the legend only
    assert "<code>M1</code> · Advisory (demo)" in section and "<code>M2</code> · ASR (WER) (demo)" in section


def test_hostile_values_stay_inert_text():
    hostile = "<script>alert(1)</script>"
    case = vibe_case()
    for row in case["distributions"]:
        row["value"] = row["value"].replace("yoga", hostile)
    case["shifts"][0]["value"] = hostile
    section = section_of(render_report(run_of(case)))
    assert "<script>" not in section and "&lt;script&gt;alert(1)&lt;/script&gt;" in section


@pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium is not installed (Debian: apt-get install chromium)")
@pytest.mark.parametrize("width", [700, 1280])
def test_the_section_holds_in_chromium_with_long_values_and_long_specs(tmp_path, width):
    """The section alone (the report's styles, every <details> open): no label meets another or a bar, no
    horizontal overflow, no table past the window, at 1280 px and at 700 px."""
    cases = [
        vibe_case(model=LONG_SPECS[0]),
        vibe_case(model=LONG_SPECS[1], passed=True, effect=8.0, p=0.8),
        vibe_case(model=LONG_SPECS[0], task="story", passed=True, effect=9.0, p=0.5),
        arm_case("wer", model=LONG_SPECS[0]),
        arm_case("stereotype", model=LONG_SPECS[1], passed=True),
    ]
    page = render_report(run_of(*cases))
    alone = page.split("<body>")[0] + "<body>" + section_of(page) + "</body></html>"
    report = tmp_path / "section" / "report.html"
    report.parent.mkdir()
    report.write_text(alone)
    layout = measure_layout(Path(report), width, tmp_path)
    assert layout["overlaps"] == []
    assert layout["overflow"] == 0
    assert layout["tables"] == []


def test_a_case_without_artifact_distributions_or_p_renders_dashes():
    bare = vibe_case(artifact=None, distributions=[], shifts=[], per_attribute={}, decision=None)
    bare.update(p=None, per_direction={"female": None, "male": 12.0})
    section = section_of(render_report(run_of(bare)))
    (record,) = typed(bare)
    row = row_of(section, case_anchor(record))
    assert "p –" in row and "female\u00a0→\u00a0male: –" in row
    assert 'class="num">–' in row  # the artifact
    assert view.vibe_detail(record, {record.model: record.model})["plots"] == []


def test_a_decision_cell_names_the_test_that_decided_never_adjusted_p_1_beside_fail():
    """Issue 47: candidate review at 11.65 is within its bar (adjusted p 1 by construction). Without a baseline its
    cell reads "pass — within the bar"; against one it regressed, and its cell names the release test (the change on
    its measure with both checkpoints' values, one-sided and adjusted p), the absolute test beside it."""
    within = {"p": 1.0, "p_adjusted": 1.0, "alpha": 0.05, "relevant": False, "significant": False, "rule": "both",
              "statistic": "nTVD between the identity and swap arms", "label": "nTVD identity vs swap", "estimate": 11.65,
              "contrasts": [{"label": "nTVD identity vs swap", "estimate": 11.65, "ci_low": None, "ci_high": None,
                             "p": 9.999e-05, "relevant": False}]}  # fmt: skip
    passing = vibe_case(task="candidate_review", passed=True, effect=11.65, p=9.999e-05, decision=within)
    row = row_of(section_of(render_report(run_of(passing))), case_anchor(typed(passing)[0]))
    assert "pass — within the bar" in row and "p 0.0001, not tested against alpha" in row and "adjusted" not in row
    measure = "nTVD identity vs swap beyond arm exchange"
    regressed = passing | {
        "passed": False,
        "absolute_passed": True,
        "release": "regression",
        "baseline": {"status": "compared", "baseline_value": 1.37, "delta": 7.22, "p_value": 1.83e-05, "regressed": True,
                     "message": "m", "measure": measure, "decision": {"p_adjusted": 0.000788, "alpha": 0.05, "rule": "both",
                                                                        "margin": 5.0, "margin_key": "max_worsening"},
                     "source": "base.json", "model": "sim:biased"},
    }  # fmt: skip
    row = row_of(section_of(render_report(run_of(regressed))), case_anchor(typed(regressed)[0]))
    assert "FAIL — regression" in row and "adjusted p 1" not in row and "adjusted 1" not in row
    assert f"release test: Δ +7.22 on {measure}, 1.37 → 8.59; one-sided p 1.83e-05, adjusted p 0.000788" in row
    assert "absolute test: within the bar (nTVD identity vs swap = 11.65; fails when nTVD &gt; 20;" in row
