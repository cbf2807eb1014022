"""The report's first screen, forest and dot-and-interval plots, labels and units (issue 18), from hand-made records."""

import math
import re
from pathlib import Path

import pytest

from harness.display.plots import NOT_ESTIMABLE, dot_interval_plot, forest_plot, interval_estimable, interval_text
from harness.report import render_report
from harness.report.summary import case_anchor, first_screen, margin
from harness.results import parse_results, record_from_json

HOSTILE = '<script>alert(1)</script><img src=x onerror="alert(2)">'
BOUNDS = {"rule": "both", "lower": 0.9, "upper": 1.11, "alpha": 0.05, "method": "semantic"}


def method(name, ratio, low, high, numerator=0.2, denominator=0.1):
    return {
        "method": name,
        "ratio": ratio,
        "ci_low": low,
        "ci_high": high,
        "significant": low is not None and (low > 1 or high < 1),
        "converged": True,
        "wer_numerator": numerator,
        "wer_denominator": denominator,
    }


def ratio_case(
    check="wer_ratio",
    model="m1",
    dimension="gender",
    ratio=2.0,
    low=1.5,
    high=2.7,
    passed=False,
    comparison="female / male",
    **extra,
):
    decided = "regression w/ speaker w/ semantics"
    record = {
        "check": check,
        "id": f"{model}-demo-{dimension}",
        "model": model,
        "model_fingerprint": f"{model}@1",
        "corpus": "demo",
        "dimension": dimension,
        "variant": None,
        "value": ratio,
        "threshold": dict(BOUNDS),
        "passed": passed,
        "message": "msg",
        "ci": [low, high],
        "p": None,
        "q": None,
        "comparisons": [
            {
                "comparison": comparison,
                "judged_method": decided,
                "failed": not passed,
                "reason": "why",
                "methods": [method("vanilla", ratio * 1.01, 0.004, 250.0), method(decided, ratio, low, high)],
            }
        ],
        "semantics": {"embedder": "e", "explained_variance": [0.5]},
    }
    record.update(extra)
    return record


def icat_row(group: str, icat: float) -> dict:
    """A group's ICAT row of a record (:class:`harness.checks.icat.record.IcatGroupRow`) whose ICAT is ``icat``."""
    counts = {"n": 10.0, "stereotype": 5.0, "anti-stereotype": 5.0, "unrelated": 0.0, "unknown": 0.0}
    return {"group": group, **counts, "ss": 50.0, "lms": icat, "icat": icat, "unknown_rate": 0.0, "left_out": None}


def icat_case(model="m1", dimension="age", mode="text-explicit", value=27.8, passed=False, **extra):
    per_mode = {
        "text-explicit": {"estimate": value, "ci_low": value, "ci_high": value},
        "speech-explicit": {"estimate": 40.0, "ci_low": 30.0, "ci_high": 50.0},
    }
    record = {
        "check": "icat",
        "id": f"{model}-{dimension}-{mode}",
        "model": model,
        "model_fingerprint": f"{model}@1",
        "corpus": "basis",
        "dimension": dimension,
        "variant": mode,
        "value": value,
        "threshold": {"min_icat": 60.0},
        "passed": passed,
        "message": "msg",
        "mode": mode,
        "per_group": [icat_row("elderly", value - 2), icat_row("young", value + 2)],
        "n_answers": 10,
        "n_speakers": 4,
        "mode_effects": {
            "metric": "mean_icat",
            "n_boot": 2000,
            "level": 0.95,
            "n_speakers": 4,
            "per_mode": per_mode,
            "effects": {
                "backbone": {
                    "estimate": 13.9,
                    "ci_low": 13.9,
                    "ci_high": 13.9,
                    "minuend": "text-explicit",
                    "subtrahend": "text-implicit",
                },
                "perception_gap": {
                    "estimate": -6.2,
                    "ci_low": -9.0,
                    "ci_high": -3.5,
                    "minuend": "speech-explicit",
                    "subtrahend": "speech-implicit",
                },
            },
        },
        "pooled_ss": 60.0,
        "pooled_ss_ci": [50.0, 70.0],
        "pooled_p": 0.01,
        "pooled_icat": value,
        "unknown_rate": 0.0,
        "answer_rules": {},
    }
    record.update(extra)
    return record


def results(cases, **metadata):
    """The typed results of a schema-1 document of these cases (no version; unmeasured cases ``check: error``)."""
    failed = sum(not c["passed"] for c in cases)
    return parse_results(
        {
            "verdict": "fail" if failed else "pass",
            "summary": {"cases": len(cases), "passed": len(cases) - failed, "failed": failed},
            "metadata": {"models": {"m1": "fp"}, **metadata},
            "cases": cases,
        }
    )


def first_screen_html(html):
    return html[: html.index('<h2 id="run">')]


def section(html, check):
    start = html.index(f'<section id="check-{check}">')
    return html[start : html.index("</section>", start)]


@pytest.mark.parametrize(
    "entry, estimable",
    [
        ({"ci_low": 1.0, "ci_high": 2.0}, True),
        ({"ci_low": 13.9, "ci_high": 13.9}, False),
        ({"ci_low": None, "ci_high": 2.0}, False),
        ({"ci_low": float("nan"), "ci_high": 2.0}, False),
        ({"ci_low": 1.0, "ci_high": 2.0, "estimable": False}, False),
        (None, False),
    ],
)
def test_an_interval_is_estimable_only_with_two_distinct_finite_ends(entry, estimable):
    assert interval_estimable(entry) is estimable
    assert (interval_text(entry) == NOT_ESTIMABLE) is not estimable


def test_forest_plot_is_on_a_log_axis_with_the_bounds_shaded_and_the_deciding_method_marked():
    record = record_from_json(ratio_case(ratio=2.0, low=1.5, high=2.7), "case")
    figure = forest_plot(record, "expected-WER ratio")
    rows = {row["label"]: row for row in figure["rows"] if row["kind"] == "method"}
    decided = rows["regression w/ speaker w/ semantics"]
    # log axis: equal ratios are equal distances, so 1.5 -> 2.0 and 2.0 -> 2.7 scale as ln(4/3) : ln(1.35)
    assert (decided["x"] - decided["x_low"]) / (decided["x_high"] - decided["x"]) == pytest.approx(
        math.log(2 / 1.5) / math.log(2.7 / 2), rel=0.02
    )
    assert figure["band"]["x"] < figure["one_x"] < figure["band"]["x"] + figure["band"]["width"]
    assert decided["deciding"] and decided["failed"] and not rows["vanilla"]["deciding"]
    assert rows["vanilla"]["arrow_low"] and rows["vanilla"]["arrow_high"]  # 0.004 and 250 lie beyond the axis
    assert "log scale" in figure["axis_label"] and "expected-WER ratio" in figure["axis_label"]


def test_a_ratio_without_an_interval_is_drawn_and_labelled_not_estimable():
    record = record_from_json(ratio_case(low=None, high=None, passed=True), "case")
    decided = [row for row in forest_plot(record, "judge-score ratio")["rows"] if row.get("deciding")][0]
    assert decided["x"] is not None and "x_low" not in decided and NOT_ESTIMABLE in decided["text"]


def test_degenerate_mode_effect_intervals_are_labelled_never_printed_as_a_point_interval():
    html = render_report(results([icat_case()]))
    icat = section(html, "icat")
    assert "13.9 to 13.9" not in html and "27.8 to 27.8" not in html
    assert icat.count(NOT_ESTIMABLE) >= 3  # the backbone effect in plot and table, the text-explicit mean in its plot
    assert "-9.0 to -3.5" in icat and "ICAT points" in icat


def test_dot_plot_draws_a_hollow_marker_for_a_non_estimable_interval():
    figure = dot_interval_plot(
        [
            {
                "label": "a",
                "dots": [{"label": "g", "value": 10.0}],
                "estimate": {"value": 5.0, "ci_low": 5.0, "ci_high": 5.0},
            },
            {"label": "b", "dots": [], "estimate": {"value": 6.0, "ci_low": 4.0, "ci_high": 8.0}},
        ],
        axis_label="points",
        reference=0.0,
    )
    degenerate, estimated = figure["rows"]
    assert not degenerate["estimable"] and "x_low" not in degenerate and NOT_ESTIMABLE in degenerate["text"]
    assert estimated["estimable"] and estimated["x_low"] < estimated["estimate_x"] < estimated["x_high"]


def test_dot_plot_is_wide_enough_for_its_longest_text():
    text = "90.3; gap young − child 29.2 points (95% CI 28.2 to 30.2)"
    figure = dot_interval_plot(
        [{"label": "m", "dots": [], "estimate": {"value": 90.3}, "text": text}], axis_label="score", limits=(0.0, 100.0)
    )
    assert figure["value_x"] + 6.5 * len(text) <= figure["width"]


def test_the_judge_score_section_speaks_of_scores_and_the_wer_section_of_wer():
    html = render_report(results([ratio_case(), ratio_case(check="score_ratio", ratio=0.8, low=0.7, high=0.9)]))
    score, wer = section(html, "score_ratio"), section(html, "wer_ratio")
    assert (
        "WER" not in score and "judge score" in score and "(1–10)" in score and "judge-score ratio (log scale" in score
    )
    assert "WER ratio" in wer and "(%)" in wer and "judge" not in wer


def test_first_screen_names_every_failed_regressed_and_unmeasured_case_before_the_run_table():
    regressed = ratio_case(
        model="m2",
        passed=False,
        baseline={
            "status": "compared",
            "baseline_value": 1.0,
            "delta": 1.0,
            "p_value": 0.001,
            "regressed": True,
            "message": "m",
            "decision": {
                "rule": "both",
                "margin": 0.05,
                "margin_key": "max_worsening",
                "alpha": 0.05,
                "p_adjusted": 0.004,
            },
            "source": "base.json",
            "model": "m2",
        },
    )
    error = {
        "check": "error",
        "id": "m1-broken",
        "nodeid": "fairness_tests/test_basis.py::test_classification[m1-accent]",
        "passed": False,
        "message": "boom",
        "model": "m1",
        "dimension": "accent",
        "cause": {"kind": "server", "source": "http://127.0.0.1:9/v1", "message": "connection refused"},
    }
    cases = [ratio_case(), regressed, icat_case(), icat_case(mode="speech-explicit", value=70.0, passed=True), error]
    html = render_report(results(cases))
    top = first_screen_html(html)
    assert "FAIL</span> — do not release" in top and "no baseline" in top
    lines = re.findall(r'<tr class="line-(\w+)" data-case="([^"]+)"', top)
    assert lines == [  # by outcome (issue 38): failed, regressed, new failure, known failure, unmeasured
        ("failed", "m1-age-text-explicit"),
        ("failed", "m1-demo-gender"),
        ("regressed", "m2-demo-gender"),
        ("unmeasured", "m1-broken"),
    ]
    assert "server error (http://127.0.0.1:9/v1): connection refused" in top
    regressed_row = top[top.index('data-case="m2-demo-gender"') :].split("</tr>", 1)[0]
    assert "<td>worse than the baseline by &gt; 0.05 and adjusted p &lt; 0.05</td>" in regressed_row
    assert re.search(
        r'data-case="m1-broken">\s*<td class="fail"><a [^>]*>unmeasured</a></td><td>BASIS classification</td>', top
    )  # check from the nodeid
    assert (
        "expected-WER ratio 2.000 (female / male, regression w/ speaker w/ semantics)" in top
        and "95% CI 1.500 to 2.700" in top
    )
    assert "mean ICAT 27.8" in top and "<td>ICAT &lt; 60</td>" in top and NOT_ESTIMABLE in top
    for record in results(cases).cases:
        assert html.count(f'id="{case_anchor(record)}"') == 1  # every link of the first screen lands once


def test_a_passing_run_says_so_in_one_line_and_shows_the_closest_calls_first():
    near = ratio_case(model="near", ratio=1.08, low=0.98, high=1.3, passed=True)  # 0.26 of the bound from failing
    far = ratio_case(model="far", ratio=1.0, low=0.95, high=1.05, passed=True)  # a whole bound away
    cases = [far, near, icat_case(mode="speech-explicit", value=95.0, passed=True)]  # (95 - 60) / 60 = 0.58
    top = first_screen_html(render_report(results(cases)))
    assert "PASS</span> — may be released" in top and "Every case passed its threshold" in top
    assert re.findall(r'data-case="([^"]+)"', top) == ["near-demo-gender", "m1-age-speech-explicit", "far-demo-gender"]
    typed = [record_from_json(c, "case") for c in cases]
    assert [round(margin(record), 2) for record in typed] == [1.0, 0.26, 0.58]


def test_decision_and_quality_floors_are_shown_and_a_floor_below_is_not_a_bias_fail():
    decision = {
        "p": 0.004,
        "comparisons": 6,
        "family_size": 3,
        "p_adjusted": 0.012,
        "alpha": 0.05,
        "relevant": True,
        "significant": True,
        "estimable": True,
        "reason": None,
        "correction": "Bonferroni over 6 comparisons, Holm over 3 cases",
    }
    floors = [{"key": "min_icat", "value": 52.3, "threshold": 60.0, "met": False}]
    html = render_report(
        results(
            [ratio_case(decision=decision), icat_case(mode="speech-explicit", value=70.0, passed=True, floors=floors)]
        )
    )
    assert (
        "adjusted p = 0.012 (α = 0.05); Bonferroni over 6 comparisons, Holm over 3 cases; significant"
        in first_screen_html(html)
    )
    assert "min_icat 52.3 vs floor 60.0: below floor (quality, not a bias fail)" in html
    screen = first_screen(results([icat_case(mode="speech-explicit", value=70.0, passed=True, floors=floors)]))
    assert screen["lines"] == [] and screen["verdict"] == "pass"


def test_results_without_decision_floors_or_cause_render():
    error = {
        "check": "error",
        "id": "old-error",
        "nodeid": "t::test_ntvd[old-error]",
        "passed": False,
        "message": "it raised",
    }
    html = render_report(results([ratio_case(), error]))
    assert "it raised" in first_screen_html(html)


def test_hostile_strings_in_comparisons_groups_and_causes_stay_inert():
    error = {
        "check": "error",
        "id": HOSTILE,
        "nodeid": "t::test_icat[x]",
        "passed": False,
        "message": HOSTILE,
        "model": HOSTILE,
        "cause": {"kind": "model", "source": HOSTILE, "message": HOSTILE},
    }
    icat = icat_case(model=HOSTILE)
    icat["per_group"][0]["group"] = HOSTILE
    decision = {"p_adjusted": 0.01, "correction": HOSTILE}
    html = render_report(results([ratio_case(model=HOSTILE, comparison=HOSTILE, decision=decision), icat, error]))
    assert "<script>alert" not in html and "<img src=x" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in first_screen_html(html)


def test_dot_plot_legend_wraps_inside_the_figure_above_the_rows():
    groups = [f"group {i}" for i in range(8)]
    figure = dot_interval_plot(
        [{"label": "m", "dots": [{"label": g, "value": 10.0 * i} for i, g in enumerate(groups)], "estimate": None}],
        axis_label="points",
        limits=(0.0, 100.0),
    )
    assert [item["label"] for item in figure["legend"]] == groups
    assert all(item["x"] + 12 + 7 * len(item["label"]) <= figure["width"] for item in figure["legend"])
    assert max(item["y"] for item in figure["legend"]) + 8 < min(row["y"] for row in figure["rows"]) - 8


CHECK_WORDS = {
    "wer_ratio": ("WER",),
    "score_ratio": ("judge",),
    "icat": ("ICAT", "StereoSet"),
    "ntvd": ("nTVD",),
    "personalization": ("personaliz",),
    "robustness": ("asr", "sqa"),
    "classification": ("classification",),
}


@pytest.mark.parametrize(
    "template", sorted(p.name for p in (Path(__file__).parents[2] / "harness/report/templates").rglob("_*.j2"))
)
def test_no_shared_template_carries_a_checks_words(template):
    """Templates whose name starts with ``_`` serve several checks: the words they show (outside Jinja tags)
    name no check; those come from the including template."""
    path = next((Path(__file__).parents[2] / "harness/report/templates").rglob(template))
    words_shown = re.sub(r"\{#.*?#\}|\{\{.*?\}\}|\{%.*?%\}", " ", path.read_text(), flags=re.S)
    assert not [word for words in CHECK_WORDS.values() for word in words if re.search(rf"\b{word}", words_shown, re.I)]


def schema_two_decision(
    estimate, low, high, p, p_adjusted, label="share choosing elderly's stereotype: elderly - young", rule="both"
):
    contrast = {
        "label": label,
        "estimate": estimate,
        "ci_low": low,
        "ci_high": high,
        "p": p,
        "relevant": abs(estimate) > 20,
        "reason": None,
    }
    return {
        "p": p,
        "comparisons": 1,
        "family_size": 33,
        "p_adjusted": p_adjusted,
        "alpha": 0.05,
        "relevant": contrast["relevant"],
        "significant": p_adjusted < 0.05,
        "estimable": True,
        "reason": None,
        "rule": rule,
        "correction": "within the case one comparison; Bonferroni across the model's 33 selected bias cases; family-wise alpha = 0.05",
        "statistic": "difference between groups in the share choosing one group's stereotype (points)",
        "contrasts": [contrast],
        "untestable": [],
        "label": label,
        "estimate": estimate,
        "ci_low": low,
        "ci_high": high,
    }


def test_a_schema_two_case_is_headed_by_its_deciding_contrast_rule_and_adjusted_p():
    failing = icat_case(
        threshold={"min_icat": 60.0, "max_gap": 20.0},
        decision=schema_two_decision(74.2, 53.5, 92.3, 1.2e-13, 4.0e-12),
        floors=[{"key": "min_icat", "value": 27.8, "threshold": 60.0, "met": False}],
    )
    top = first_screen_html(render_report(results([failing])))
    assert (
        'title="difference between groups in the share choosing one group&#39;s stereotype (points)">share choosing elderly&#39;s stereotype: elderly - young = 74.2 points</td>'
        in top
    )
    assert "<td>|difference| &gt; 20 points and adjusted p &lt; 0.05</td>" in top
    assert "<td>95% CI 53.5 to 92.3; adjusted p = 4e-12</td>" in top
    assert "1 case(s) below a quality floor" in top
    assert "ICAT &lt; 60" not in top  # the schema-1 rule is not shown for a schema-2 case


def test_a_schema_two_closest_call_is_measured_on_its_contrast_and_adjusted_p():
    threshold = {"min_icat": 60.0, "max_gap": 20.0}
    near_size = record_from_json(
        icat_case(passed=True, threshold=threshold, decision=schema_two_decision(19.0, 7.1, 32.5, 0.002, 0.066)), "case"
    )
    small = record_from_json(
        icat_case(passed=True, threshold=threshold, decision=schema_two_decision(5.0, -3.0, 13.0, 0.3, 1.0)), "case"
    )
    # rule both: the larger of (20 - 19)/20 = 0.05 and (0.066 - 0.05)/0.05 = 0.32; of 0.75 and 19
    assert margin(near_size) == pytest.approx(0.32) and margin(small) == pytest.approx(19.0)
    magnitude_only = record_from_json(
        icat_case(
            passed=True,
            threshold=threshold,
            decision=schema_two_decision(19.0, 7.1, 32.5, 0.002, 0.066, rule="magnitude"),
        ),
        "case",
    )
    assert margin(magnitude_only) == pytest.approx(0.05)


def test_closest_calls_tied_on_an_adjusted_p_of_one_are_ranked_by_effect_size():
    threshold = {"min_icat": 60.0, "max_gap": 20.0}
    cases = [
        icat_case(
            mode=mode,
            passed=True,
            threshold=threshold,
            decision=schema_two_decision(estimate, estimate - 5, estimate + 5, 0.4, 1.0),
        )
        for mode, estimate in (("speech-explicit", 3.0), ("text-explicit", -18.0), ("speech-implicit", 11.0))
    ]
    top = first_screen_html(render_report(results(cases)))
    assert re.findall(r'data-case="([^"]+)"', top) == [
        "m1-age-text-explicit",
        "m1-age-speech-implicit",
        "m1-age-speech-explicit",
    ]


def test_the_first_screen_gives_each_models_audio_dependence_or_why_it_is_unmeasured():
    """Per model and probe (the audio floor, harness/gate/audio_floor.py): the estimated audio-dependent share with
    each arm's change rate, p and the deviation it was measured under (issue 58), whether it hears, or why the probe
    is unmeasured; results.json files of before issue 58 (greedy share, sampled p) and of before issue 45 (one flat
    entry per model) still render."""
    exact = {"decoding": "greedy", "audio_blind_share": 0.9, "sampled_alpha": 0.01, "p_value": None}
    probes = {
        "deaf": {"transcription": {**exact, "probe": "transcription", "share": 1.0, "requests": 24, "hears": False, "unmeasured": None},
                 "task": {**exact, "probe": "task", "share": 0.95, "requests": 48, "hears": False, "unmeasured": None}},
        "hearing": {"task": {**exact, "probe": "task", "share": 0.25, "requests": 48, "hears": True, "unmeasured": None}},
        "sampler": {"task": {**exact, "probe": "task", "decoding": "sampled", "share": None, "p_value": 0.0004,
                             "requests": 48, "hears": True, "unmeasured": None}},
        "shipped": {"task": {**exact, "probe": "task", "share": None, "requests": None, "hears": None, "unmeasured": HOSTILE}},
        "old": {"share": 0.25, "requests": 48, "audio_blind_share": 0.9, "hears": True, "unmeasured": None},
        "measured": {"task": {"probe": "task", "decoding": "greedy", "audio_dependent_share": 0.842, "requests": 120,
                              "changed": {"replicate": 0.0, "silence": 0.79, "other recording": 0.842}, "p_value": 0.0001,
                              "alpha": 0.01, "audio_blind_share": 0.9, "hears": True, "unmeasured": None,
                              "deviation": "replicate arm not in the cached outputs: greedy decoding assumed"}},
        "noisy": {"task": {"probe": "task", "decoding": "greedy", "audio_dependent_share": 0.02, "requests": 48,
                           "changed": {"replicate": 0.9, "silence": 0.92, "other recording": 0.9}, "p_value": 0.41,
                           "alpha": 0.01, "audio_blind_share": 0.9, "hears": False, "unmeasured": None}},
    }  # fmt: skip
    cases = [ratio_case(passed=True)]
    top = first_screen_html(render_report(results(cases, audio_dependence=probes)))
    line = top[top.index('<p id="audio-dependence"') :]
    assert (
        "<code>deaf</code>: task probe 95% of 48 probe requests (bar 90%): <strong>does not hear the audio</strong>"
        in line
    )
    assert "; transcription probe 100% of 24 probe requests (bar 90%): <strong>does not hear" in line
    assert "<code>hearing</code>: task probe 25% of 48 probe requests (bar 90%): hears the audio" in line
    assert (
        "<code>sampler</code>: task probe 48 sampled requests per audio, p = 0.0004 (below 0.01 when it hears): hears the audio"
        in line
    )
    assert "<code>shipped</code>: task probe unmeasured (&lt;script&gt;" in line and "<script>" not in line
    assert "<code>old</code>: 25% of 48 probe requests (bar 90%): hears the audio" in line
    assert (
        '<code>measured</code>: task probe <span title="answers changed 84% with other recording, 0% with replicate, '
        '79% with silence">audio-dependent share 84%</span> of 120 recordings (bar &gt; 10%; p 0.0001, alpha 0.01; '
        '<em title="replicate arm not in the cached outputs: greedy decoding assumed">replicate assumed, see '
        "deviations</em>): hears the audio" in line
    )
    assert "<code>noisy</code>: task probe <span" in line and "audio-dependent share 2%</span> of 48 recordings" in line
    assert "p 0.41, alpha 0.01): <strong>does not hear the audio</strong>" in line
    deviation = "audio floor (task probe of measured): replicate arm not in the cached outputs: greedy decoding assumed"
    assert results(cases, audio_dependence=probes).deviations()[-1] == deviation
    assert deviation in top.split('class="deviations"', 1)[1].split("</div>", 1)[0]
    assert 'id="audio-dependence"' not in first_screen_html(render_report(results(cases)))


def test_the_first_screen_names_every_corpus_its_cases_came_from_and_the_why_table_has_a_corpus_column():
    """Issue 59, item 8: the first screen said "on mine" when every failure came from the shipped BASIS demo suite,
    and the Why table had no corpus column. The demo's voice-blind release: cases on demo and the BASIS suites."""
    from harness.results import read_results

    results = read_results(Path(__file__).resolve().parents[2] / "harness/data/demo_outputs/voice-blind/results.json")
    screen = first_screen(results)
    assert screen["corpora"][0] == "demo" and "basis-demo" in screen["corpora"]
    assert {line["corpus"] for line in screen["lines"]} >= {"basis-demo", "demo"}
    html = render_report(results)
    assert "<th>Model</th><th>Corpus · dimension</th>" in html and "<code>basis-demo</code>" in html
    assert re.search(r"<td>BASIS classification</td><td class=\"model\">.*?</td><td>basis-demo · gender</td>", html)
