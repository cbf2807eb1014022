"""Size and render time of the trend report over 60 nights x 12 models, against the one-night report.

The nights are copies of one real gate run (the demo gate's results.json, every check's record with its
per-speaker paired data; made here unless --template names one) under 12 model names, values jittered per
night, and one regression injected (a WER-ratio case's worst group makes three times the errors from a
given night on). Timed in this run: reading the series; the neighbour comparisons of the newest pair, cold
(what a nightly render computes); the nightly render with the memo holding every other pair (read, memo
look-ups, trend view, HTML); and the report of the last night alone (the baseline). The memo of the older
pairs is filled by computing each distinct comparison once (the nights' paired data repeat, so equal
inputs are compared once and their result reused); a cold render of the whole series costs about
(nights - 1) times the newest pair, printed as an estimate.

    .venv/bin/python benchmarks/bench_trend_report.py [--nights 60] [--models 12] [--permutations 999] [--template results.json] [--output trend.html]
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import datetime
import json
import math
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from harness.core.files import atomic_write_text
from harness.core.values import stable_hash
from harness.gate.series import load_series, memo_key, neighbour_comparisons
from harness.report import render_report
from harness.report.trend import trend_view

REPO = Path(__file__).resolve().parents[1]


def demo_results(folder: Path) -> dict:
    path = folder / "demo.json"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "fairness_tests",
            "-q",
            "-p",
            "no:cacheprovider",
            "--report",
            "",
            "--results-json",
            str(path),
        ],
        cwd=REPO,
        capture_output=True,
        check=False,
    )
    return json.loads(path.read_text())


def night(template: dict, index: int, models: int, injected_from: int) -> dict:
    """``template`` under ``models`` model names, values jittered; from ``injected_from`` on, model 3's first
    WER-ratio case has three times the errors in its worst group."""
    source_model = next(case["model"] for case in template["cases"] if "model" in case)
    cases = []
    for number in range(models):
        model = f"{source_model}#{number:02d}"
        for case in template["cases"]:
            case = copy.deepcopy(case)
            for key in ("id", "nodeid", "model"):
                if isinstance(case.get(key), str):
                    case[key] = case[key].replace(source_model, model)
            if isinstance(case.get("value"), (int, float)):
                case["value"] = case["value"] * (1 + 0.01 * math.sin(index + number))
            cases.append(case)
        if number == 3 and index >= injected_from:
            inject(next(case for case in cases if case["check"] == "wer_ratio" and case["model"] == model))
    result = dict(template, cases=cases)
    created = datetime.datetime(2026, 9, 1, 2, tzinfo=datetime.UTC) + datetime.timedelta(days=index)
    result["metadata"] = dict(template["metadata"], created=created.isoformat(timespec="seconds"))
    return result


def inject(case: dict) -> None:
    data = case["paired_data"]
    rates: dict[str, list[float]] = {}
    for group, errors, words in zip(data["group"], data["errors"], data["words"]):
        rates.setdefault(group, [0.0, 0.0])
        rates[group][0] += errors
        rates[group][1] += words
    worst = max(rates, key=lambda group: rates[group][0] / rates[group][1])
    data["errors"] = [errors * 3 if group == worst else errors for group, errors in zip(data["group"], data["errors"])]


def fill_memo(runs, permutations: int) -> dict:
    """The memo of every neighbour pair, each distinct (case, candidate data, baseline data) compared once."""
    results: dict = {}
    memo: dict = {}
    settings = {"thresholds": None, "permutations": permutations}
    for index in range(1, len(runs)):
        previous = {runs[index - 1].key(case): case for case in runs[index - 1].results.measured}
        for case in runs[index].results.measured:
            key = runs[index].key(case)
            if key not in previous:
                continue
            content = stable_hash([list(key), case.paired_data, previous[key].paired_data, case.threshold.to_json()])
            if content not in results:
                pair = [
                    dataclasses.replace(
                        runs[index - 1], results=dataclasses.replace(runs[index - 1].results, cases=(previous[key],))
                    ),
                    dataclasses.replace(runs[index], results=dataclasses.replace(runs[index].results, cases=(case,))),
                ]
                results[content] = neighbour_comparisons(pair, None, permutations)[(1, key)]
            memo[memo_key(runs[index], runs[index - 1], key, settings)] = results[content]
    return memo


def timed(function, *args):
    started = time.perf_counter()
    value = function(*args)
    return value, time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nights", type=int, default=60)
    parser.add_argument("--models", type=int, default=12)
    parser.add_argument(
        "--permutations", type=int, default=999, help="nTVD paired-test permutations between neighbours"
    )
    parser.add_argument("--template", help="a results.json to copy (default: run the demo gate)")
    parser.add_argument("--output", help="also keep the trend report here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        template = json.loads(Path(args.template).read_text()) if args.template else demo_results(folder)
        injected_from = args.nights * 2 // 3
        paths = []
        for index in range(args.nights):
            path = folder / f"night-{index:02d}.json"
            path.write_text(json.dumps(night(template, index, args.models, injected_from)))
            paths.append(path)
        runs, read_s = timed(load_series, paths)
        newest: dict = {}
        _, pair_s = timed(neighbour_comparisons, runs[-2:], None, args.permutations, newest)
        memo = fill_memo(runs, args.permutations)
        memo.update(newest)
        labels, results = [run.label for run in runs], [run.results for run in runs]
        started = time.perf_counter()
        nightly_runs = load_series(paths)
        comparisons = neighbour_comparisons(nightly_runs, None, args.permutations, memo)
        view = trend_view(labels, results, comparisons)
        html = render_report(results[-1], trend=view)
        nightly_s = time.perf_counter() - started
        _, view_s = timed(trend_view, labels, results, comparisons)
        _, render_s = timed(lambda: render_report(results[-1], trend=view))
        single, single_s = timed(render_report, results[-1])
    if args.output:
        atomic_write_text(args.output, html)
    regressions = sorted(
        (runs[index].label, "-".join(str(part) for part in key[1:] if part))
        for (index, key), comparison in comparisons.items()
        if comparison["regressed"]
    )
    cases = len(results[-1].cases)
    print(
        f"{args.nights} nights x {args.models} models = {cases} cases a night, {len(comparisons)} neighbour comparisons "
        f"({args.permutations} nTVD permutations)"
    )
    print(
        f"read the series {read_s:.1f} s; newest pair's comparisons (cold) {pair_s:.1f} s; "
        f"whole series cold, estimated: {pair_s * (args.nights - 1):.0f} s"
    )
    print(
        f"nightly render {nightly_s + pair_s:.1f} s (read, newest pair compared, older pairs from the memo, trend view, HTML); "
        f"{nightly_s:.1f} s with every pair from the memo, of it trend view {view_s:.2f} s and HTML {render_s:.2f} s"
    )
    print(
        f"report {len(html) / 1e6:.2f} MB; one-night report (baseline) {len(single) / 1e6:.2f} MB in {single_s:.2f} s; "
        f"trend report / one-night report: size x{len(html) / len(single):.1f}, view + HTML time x{(view_s + render_s) / single_s:.1f}"
    )
    print(
        f"significant regressions found: {regressions} (injected: night-{injected_from:02d}, model #03's first wer_ratio case)"
    )
    first = view["shown"][0]["id"] if view["shown"] else None
    print(f"first panel: {first}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
