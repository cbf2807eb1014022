"""The HTML report: self-contained, Table II with stars, SVG charts, and everything escaped."""

import re

from harness.checks.ntvd.view import significance_stars, table_two
from harness.report import bar_chart, render_report
from harness.results import parse_results

from support.records import case, ntvd_record, results, results_json, typed

HOSTILE = '<script>alert(1)</script><img src=x onerror="alert(2)">'


def test_stars_follow_q():
    assert [significance_stars(q) for q in (0.001, 0.02, 0.2, None)] == ["**", "*", "", ""]


def test_table_two_layout():
    tables = table_two(
        typed(
            case(),
            case(task="story", value=5.0, q=0.3, passed=True),
            case(dimension="accent", value=3.0, q=0.04, passed=True),
        )
    )
    assert [(t["dimension"], t["tasks"]) for t in tables] == [
        ("accent", ["Advisory"]),
        ("gender", ["Story", "Advisory"]),
    ]
    gender = tables[1]["rows"][0]["cells"]
    assert [(c["value"], c["stars"]) for c in gender] == [(5.0, ""), (40.0, "**")]


def test_report_is_self_contained_and_draws_failing_distributions():
    html = render_report(results([case(), case(task="story", passed=True, q=0.5)]))
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", html)
    assert "<svg" in html and "yoga" in html
    assert html.count("<svg") == 3  # the failing case's chart, Figure 3 for the most biased cells, Figure 4
    assert "no model was loaded" in html


def test_hostile_strings_are_inert_text():
    hostile = case(model=HOSTILE, id=f"{HOSTILE}-advisory-gender", message=HOSTILE)
    hostile["most_divergent"]["values"] = [HOSTILE, "chess"]
    html = render_report(results([hostile]))
    assert "<script>alert" not in html and "<img src=x" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_bar_chart_widths_are_proportional():
    chart = bar_chart(ntvd_record().most_divergent)
    widths = [bar["width"] for row in chart["rows"] for bar in row["bars"]]
    assert widths == [0.8 * 320, 0.1 * 320, 0.2 * 320, 0.9 * 320]


def test_cross_corpus_agreement_appears_with_three_models_on_two_corpora():
    from harness.checks.ntvd.view import cross_corpus

    cases = [
        case(model=f"m{i}", value=value, passed=True, q=0.5) | {"corpus": corpus, "dimension": "accent"}
        for corpus, values in (("saa", (5.0, 10.0, 20.0)), ("l2arctic", (4.0, 12.0, 30.0)))
        for i, value in enumerate(values)
    ]
    rows = cross_corpus(typed(*cases))
    assert len(rows) == 1 and rows[0]["rho"] == 1.0 and rows[0]["models"] == 3
    assert "Cross-corpus agreement" in render_report(results(cases))


def test_stacked_shares_legend_shows_every_group_inside_the_figure_and_above_the_bars():
    from harness.checks.ntvd.view import stacked_shares

    groups = ["british", "caribbean", "lancashire", "scottish", "us", "westmidlands"]
    record = case(
        most_divergent={
            "attribute": "activity",
            "groups": groups,
            "values": ["yoga", "chess"],
            "probabilities": {g: [0.5, 0.5] for g in groups},
        }
    )
    chart = stacked_shares(typed(record)[0])
    figure_width = chart["label_width"] + chart["plot_width"] + 20
    assert [item["group"] for item in chart["legend"]] == groups
    assert len({(item["x"], item["y"]) for item in chart["legend"]}) == len(groups)
    assert all(item["x"] + 14 + 7 * len(item["group"]) <= figure_width for item in chart["legend"])
    assert max(item["y"] for item in chart["legend"]) + 10 < min(row["y"] for row in chart["rows"])
    assert chart["rows"][-1]["y"] + chart["bar_height"] <= chart["height"]


def test_run_table_states_the_compute_environment_and_the_numerics_in_force():
    from harness.models.numerics import CPU_NUMERICS

    run = results_json([case()])
    run["metadata"]["compute_environment"] = {
        "cpu": {
            "machine": "x86_64",
            "cpus": 2,
            "vendor": "AuthenticAMD",
            "model_name": "AMD EPYC 9B14",
            "flags": ["avx2", "avx512f"],
        },
        "contract": {"version": "2", "settings": dict(CPU_NUMERICS)},
        "contract_applies": True,
        "engines": {
            "ctranslate2": {"status": "verified", "in_force": {}, "reason": "x86-64 with AVX2"},
            "torch": {
                "status": "unverified",
                "in_force": {},
                "reason": "this CPU (AuthenticAMD, AMD EPYC 9B14) does not give the contract",
            },
        },
        "environment": {},
        "in_force": {"torch_mkl_branch": "AUTO"},
        "gpu": {
            "devices": [{"name": "NVIDIA H200", "capability": "9.0", "memory_gib": 139.8}],
            "cuda": "12.8",
            "cudnn": 90800,
            "driver": "570.1",
            "torch": "2.13.0",
            "tf32_matmul": False,
            "cudnn_benchmark": False,
        },
    }
    run["metadata"]["resolved_settings"] = {"vllm:/ckpts/1.3": {"dtype": "float32", "device": "cpu"}, "sim:fair": {}}
    html = render_report(parse_results(run))
    assert "As run: vllm:/ckpts/1.3: dtype float32, device cpu<" in html and "sim:fair:" not in html
    assert "AMD EPYC 9B14 (AuthenticAMD, 2 CPUs; avx2, avx512f)" in html
    assert (
        "MKL_CBWR=COMPATIBLE" in html and "in force: torch_mkl_branch AUTO" in html and "ctranslate2 verified" in html
    )
    assert (
        "torch <strong>unverified</strong> (this CPU (AuthenticAMD, AMD EPYC 9B14) does not give the contract: its outputs have "
        "their own fingerprint"
    ) in html
    assert "NVIDIA H200 (sm 9.0), driver 570.1, CUDA 12.8" in html
    run["metadata"]["compute_environment"]["contract"]["settings"] = "native"
    assert "native (the engines&#39; own choices)" in render_report(
        parse_results(run)
    ) or "native (the engines' own choices)" in render_report(parse_results(run))
