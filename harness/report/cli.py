"""``lalm-fairness-report``: the HTML report from results.json files, with no pytest run and no model.

One file: its report, as the gate writes it. Several (nights, or checkpoints in release order): the report
of the last run plus the trend section over all of them (:mod:`harness.report.trend`), whose regressions are
the checks' own baseline tests between neighbouring runs (:mod:`harness.gate.series`). ``--summary-md`` also
writes the CI summary of the last run.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness.core.files import atomic_write_text, ensure_writable
from harness.core.tools import ToolParser, report_error
from harness.gate.series import Run, follow_models, load_series, neighbour_comparisons, read_memo
from harness.report import human_validation_view, render_report
from harness.report.ci_summary import write_summary
from harness.report.trend import trend_view
from harness.thresholds import ThresholdsError, load_thresholds

TOOL = "lalm-fairness-report"
PREVIOUS_SUFFIX = ".previous"
"""Appended to a report that ``-o`` finds at its path, as the gate moves its earlier outputs aside
(``harness.plugin.PREVIOUS_SUFFIX``)."""

DESCRIPTION = (
    "Write the HTML report from results.json files, with no pytest run and no model. One file: its report, as "
    "the gate writes it. Several (nights, or checkpoints in release order): the report of the last run plus a "
    "trend section over all of them, whose regressions are the checks' own baseline tests between neighbouring "
    "runs. An existing report at the output path is moved to <path>.previous first."
)


def move_aside(path: str | Path) -> Path | None:
    """Move the file at ``path`` to ``<path>.previous`` (replacing an older one); None when there is none."""
    path = Path(path)
    if not path.is_file():
        return None
    previous = path.with_name(path.name + PREVIOUS_SUFFIX)
    os.replace(path, previous)
    return previous


def render_series(
    runs: Sequence[Run],
    thresholds_path: str | None = None,
    permutations: int | None = None,
    memo: dict[str, Any] | None = None,
    human_validation: dict[str, Any] | None = None,
) -> str:
    """The report of the last run, with the trend section when there are several (``memo``: see
    :func:`harness.gate.series.neighbour_comparisons`) and Table I when ``human_validation`` is given."""
    trend = None
    if len(runs) > 1:
        thresholds = load_thresholds(thresholds_path) if thresholds_path else None
        comparisons = neighbour_comparisons(runs, thresholds, permutations, memo)
        trend = trend_view([run.label for run in runs], [run.results for run in runs], comparisons, runs[-1].key)
    return render_report(runs[-1].results, trend=trend, human_validation=human_validation)


def main(argv: Sequence[str] | None = None) -> int:
    parser = ToolParser(prog=TOOL, description=DESCRIPTION)
    parser.add_argument("results", nargs="+", metavar="RESULTS_JSON", help="one results.json, or a series of them")
    parser.add_argument(
        "-o",
        "--output",
        default="report.html",
        metavar="FILE",
        help="report path (default report.html); a report already there is moved to FILE.previous",
    )
    parser.add_argument(
        "--order",
        choices=("time", "given"),
        default="time",
        help="order the series by each run's recorded time (default) or as given (checkpoints in release order)",
    )
    parser.add_argument(
        "--follow",
        choices=("auto", "spec", "position"),
        default="auto",
        help="pair cases across runs by model spec, or by position (one model per run: checkpoints whose specs "
        "change, paired on check, corpus, variant and dimension); auto (default): position when every run "
        "holds one model and the specs differ",
    )
    parser.add_argument(
        "--thresholds",
        metavar="FILE",
        help="judge the neighbour comparisons with this thresholds file (default: each record's own settings)",
    )
    parser.add_argument(
        "--permutations",
        type=int,
        metavar="B",
        help="permutations of the nTVD paired test between neighbours (default: each run's own)",
    )
    parser.add_argument(
        "--memo",
        metavar="FILE",
        help="keep the neighbour comparisons in this JSON file and reuse them (a nightly render then compares only the newest pair)",
    )
    parser.add_argument("--summary-md", metavar="FILE", help="also write the CI summary of the last run")
    parser.add_argument(
        "--human-validation",
        metavar="CSV",
        help="a filled annotation file (harness.extraction.validation): adds VIBE's Table I, the extractor's agreement",
    )
    args = parser.parse_args(argv)
    for option, value in (("-o", args.output), ("--summary-md", args.summary_md), ("--memo", args.memo)):
        try:
            if value:
                ensure_writable(value)
        except OSError as exc:
            return report_error(TOOL, f"{option} {value}: cannot be written ({type(exc).__name__}: {exc})")
    try:
        runs = follow_models(load_series(args.results, "given" if len(args.results) == 1 else args.order), args.follow)
        memo = read_memo(args.memo) if args.memo else None
        validation = human_validation_view(args.human_validation) if args.human_validation else None
        html = render_series(runs, args.thresholds, args.permutations, memo, validation)
    except (ValueError, ThresholdsError) as exc:
        return report_error(TOOL, exc)
    previous = move_aside(args.output)
    atomic_write_text(args.output, html)
    if args.memo:
        atomic_write_text(args.memo, json.dumps(memo))
    if args.summary_md:
        write_summary(runs[-1].results, args.summary_md, args.output, runs[-1].source)
    print(
        f"lalm-fairness-report: {args.output} from {len(runs)} run(s)"
        + (f"; the earlier report moved to {previous}" if previous else "")
        + (f"; summary {args.summary_md}" if args.summary_md else "")
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
