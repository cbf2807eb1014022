"""A short Markdown summary of a results.json, for a CI job page or a pull-request comment (``--summary-md``).

:func:`render_summary` is a pure function of the results dict: the verdict and counts, one table row per
failed, unmeasured or regressed case (its value and, where judged, its group gap; the threshold's bounds, and
the quality floors it does not meet, which never fail a case; its q-value, adjusted p, CI or gap CI; the delta
against the baseline; for an unmeasured case, its cause), and a line linking the report. It states nothing
that results.json does not hold.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from harness.core.files import atomic_write_text

THRESHOLD_SYMBOLS = {"max": "≤", "min": "≥", "upper": "≤", "lower": "≥"}
"""A threshold key's prefix (``max_ntvd``) or name (``upper``) -> the relation a passing value has to it."""


def render_summary(results: Mapping[str, Any], report_link: str | None = None, results_link: str | None = None) -> str:
    """The Markdown summary of ``results``; ``report_link`` and ``results_link`` (paths or URLs) fill the link line."""
    cases = [case for case in results.get("cases", []) if isinstance(case, Mapping)]
    counts = outcome_counts(results, cases)
    models = sorted({case["model"] for case in cases if isinstance(case.get("model"), str)})
    regressed = [case for case in cases if _regressed(case)]
    scope = results.get("scope") if isinstance(results.get("scope"), Mapping) else {}
    title = (
        f"SPOT CHECK — {scope.get('ran')} of {scope.get('gate_cases')} cases; not a release verdict"
        if results.get("verdict") == "spot-check"
        else str(results.get("verdict") or _verdict(counts)).upper()
    )
    lines = [f"### Voice-induced bias gate: **{title}**", ""]
    if scope.get("off"):
        lines += [f"Off (turned off in the thresholds file): {', '.join(f'`{name}`' for name in scope['off'])}.", ""]
    stopped = results.get("incomplete")
    if isinstance(stopped, Mapping):
        lines += [
            f"**Do not release: the run was stopped by {stopped.get('stopped_by')}; {len(stopped.get('not_run') or [])} of "
            f"{stopped.get('selected')} selected tests did not run.** The counts below are of the cases that finished.",
            "",
        ]
    lines.append(
        f"{counts['cases']} cases: {counts['passed']} passed, {counts['failed']} failed, {counts['unmeasured']} unmeasured"
        + (
            f"; {len(regressed)} regressed against the baseline `{_baseline_source(results, cases)}`"
            if regressed
            else ""
        )
        + (f". Model{'s' if len(models) > 1 else ''}: {', '.join(f'`{model}`' for model in models)}" if models else "")
        + "."
    )
    listed = [
        case for case in cases if not case.get("passed") or _regressed(case) or case.get("release") == "known failure"
    ]
    if listed:
        prefix = f"{models[0]}-" if len(models) == 1 else ""
        lines += [
            "",
            "| Case | Check | Outcome | Value | Threshold | adjusted p / q / CI | Δ baseline |",
            "|---|---|---|---|---|---|---|",
        ]
        for case in sorted(listed, key=_row_order):
            lines.append("| " + " | ".join(_cell(text) for text in _row(case, prefix)) + " |")
    links = [
        f"[report]({report_link})" if report_link else None,
        f"[results.json]({results_link})" if results_link else None,
    ]
    if any(links):
        lines += ["", "Details: " + " · ".join(link for link in links if link)]
    return "\n".join(lines) + "\n"


def write_summary(
    results: Mapping[str, Any],
    path: str | Path,
    report: str | Path | None = None,
    results_file: str | Path | None = None,
) -> Path:
    """Write :func:`render_summary` atomically to ``path``; the report and results files are linked relative to it."""
    path = Path(path)
    atomic_write_text(path, render_summary(results, _relative(report, path), _relative(results_file, path)))
    return path


def _relative(target: str | Path | None, summary: Path) -> str | None:
    if target is None:
        return None
    return Path(os.path.relpath(Path(target).resolve(), summary.resolve().parent)).as_posix()


def outcome_counts(results: Mapping[str, Any], cases: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """Cases, passed, failed and unmeasured (``check: error`` records); the file's own ``summary`` where it has all four."""
    stated = results.get("summary")
    if isinstance(stated, Mapping) and all(
        isinstance(stated.get(key), int) for key in ("cases", "passed", "failed", "unmeasured")
    ):
        return {key: stated[key] for key in ("cases", "passed", "failed", "unmeasured")}
    unmeasured = sum(case.get("check") == "error" for case in cases)
    passed = sum(bool(case.get("passed")) for case in cases)
    return {"cases": len(cases), "passed": passed, "failed": len(cases) - passed - unmeasured, "unmeasured": unmeasured}


def threshold_text(threshold: Mapping[str, Any] | None, floors: Sequence[str] = ()) -> str:
    """The bounds of a record's ``threshold`` (``max_ntvd ≤ 30``, ``[0.9, 1.11]``); settings such as ``alpha``
    and the quality ``floors`` (keys reported apart from the bias verdict) are left out."""
    threshold = {key: value for key, value in (threshold or {}).items() if key not in floors}
    if not threshold:
        return ""
    if isinstance(threshold.get("lower"), (int, float)) and isinstance(threshold.get("upper"), (int, float)):
        return f"[{_number(threshold['lower'])}, {_number(threshold['upper'])}]"
    parts = []
    for key, value in threshold.items():
        relation = THRESHOLD_SYMBOLS.get(key) or THRESHOLD_SYMBOLS.get(key.split("_", 1)[0])
        if (
            relation
            and isinstance(value, (int, float))
            and not isinstance(value, bool)
            and key not in ("max_worsening", "max_increase")
        ):
            parts.append(f"{key} {relation} {_number(value)}")
    return ", ".join(parts)


def uncertainty_text(case: Mapping[str, Any]) -> str:
    """The p-value the verdict was decided on, adjusted for the gate's family (the ``decision`` of schema 2), else
    the BH q-value VIBE reports (it decides nothing), else p, else the CI."""
    decision = case.get("decision") if isinstance(case.get("decision"), Mapping) else {}
    for label, value in (("adjusted p", decision.get("p_adjusted")), ("BH q", case.get("q")), ("p", case.get("p"))):
        if isinstance(value, (int, float)):
            return f"{label} = {value:.3g}"
    ci = case.get("ci")
    if isinstance(ci, Sequence) and len(ci) == 2 and all(isinstance(bound, (int, float)) for bound in ci):
        return f"CI [{_number(ci[0])}, {_number(ci[1])}]"
    gap = _gap(case)
    if gap and isinstance(gap.get("ci_low"), (int, float)) and isinstance(gap.get("ci_high"), (int, float)):
        return f"gap CI [{_number(gap['ci_low'])}, {_number(gap['ci_high'])}]"
    return ""


def value_text(case: Mapping[str, Any]) -> str:
    """The case's value, and where that value is a quality floor (BASIS), the bias measure its verdict was judged
    on: the best-worst group gap, or the deciding contrast (ICAT: the difference in the share choosing a group's
    stereotype)."""
    gap = _gap(case)
    value = _number(case.get("value"))
    if gap and isinstance(gap.get("value"), (int, float)):
        return f"{value}; gap {_number(gap['value'])}"
    decision = case.get("decision") if isinstance(case.get("decision"), Mapping) else {}
    if case.get("floors") and isinstance(decision.get("estimate"), (int, float)):
        return f"{value}; contrast {_number(decision['estimate'])}"
    return value


def _gap(case: Mapping[str, Any]) -> Mapping[str, Any] | None:
    gap = case.get("gap")
    return gap if isinstance(gap, Mapping) else None


def _row(case: Mapping[str, Any], prefix: str) -> list[str]:
    name = str(case.get("id", case.get("nodeid", "?")))
    name = name[len(prefix) :] if prefix and name.startswith(prefix) else name
    if case.get("check") == "error":
        cause = case.get("cause") if isinstance(case.get("cause"), Mapping) else {}
        message = str(cause.get("message") or case.get("message") or "")
        kind = f"{cause['kind']} error" if cause.get("kind") else "error"
        check = re.search(r"::test_(\w+)\[", str(case.get("nodeid", "")))
        message = message.replace(f"{case.get('id')}: ", "")
        return [
            f"`{name}`",
            check.group(1) if check else "–",
            f"unmeasured ({kind}: {_shorten(message)})",
            "–",
            "–",
            "–",
            "–",
        ]
    baseline = case.get("baseline") if isinstance(case.get("baseline"), Mapping) else {}
    floors = [floor for floor in case.get("floors") or [] if isinstance(floor, Mapping) and "key" in floor]
    outcome = (
        ("failed" if not case.get("passed") else "passed")
        + (f" ({case['release']})" if case.get("release") else "; regressed" if _regressed(case) else "")
        + "".join(
            f"; floor {floor['key']} {_number(floor.get('threshold'))} not met"
            for floor in floors
            if floor.get("met") is False
        )
    )
    delta = baseline.get("delta")
    return [
        f"`{name}`",
        str(case.get("check", "")),
        outcome,
        value_text(case),
        threshold_text(case.get("threshold"), [floor["key"] for floor in floors]),
        uncertainty_text(case),
        "–" if not isinstance(delta, (int, float)) else f"{delta:+.3g}" + _release_p(baseline),
    ]


def _release_p(baseline: Mapping[str, Any]) -> str:
    """The regression test's adjusted p (the gate's family), with whether it made a regression or a backbone change."""
    adjusted = (
        (baseline.get("decision") or {}).get("p_adjusted") if isinstance(baseline.get("decision"), Mapping) else None
    )
    word = " significant" if baseline.get("regressed") else " backbone" if baseline.get("status") == "backbone" else ""
    if isinstance(adjusted, (int, float)):
        return f" (adjusted p = {adjusted:.3g}{';' + word if word else ''})"
    return f" ({word.strip()})" if word else ""


def _row_order(case: Mapping[str, Any]) -> tuple:
    return (not _regressed(case), case.get("check") != "error", str(case.get("check")), str(case.get("id")))


def _regressed(case: Mapping[str, Any]) -> bool:
    return isinstance(case.get("baseline"), Mapping) and bool(case["baseline"].get("regressed"))


def _baseline_source(results: Mapping[str, Any], cases: Sequence[Mapping[str, Any]]) -> str:
    baseline = (results.get("metadata") or {}).get("baseline") or next(
        (case["baseline"] for case in cases if _regressed(case)), {}
    )
    return str(baseline.get("source", "?"))


def _verdict(counts: Mapping[str, int]) -> str:
    return "fail" if counts["failed"] else "unmeasured" if counts["unmeasured"] else "pass"


def _number(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return "–"
    return f"{value:.3g}" if abs(value) < 1000 else f"{value:.0f}"


def _shorten(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")
