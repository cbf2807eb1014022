"""Headless Chromium, where Debian's package is installed."""

import html
import json
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def chromium(*args: str, timeout: int = 120) -> subprocess.CompletedProcess:
    with tempfile.TemporaryDirectory(prefix="chromium-profile-") as profile:
        return subprocess.run(
            [
                CHROMIUM,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                f"--user-data-dir={profile}",
                "--enable-logging=stderr",
                "--v=0",
                *args,
            ],
            capture_output=True,
            text=True,
            timeout=timeout,
        )


LAYOUT_SCRIPT = """<script>
(() => {
  if (OPEN_DETAILS) document.querySelectorAll("details").forEach(d => { d.open = true; });
  const page = document.documentElement;
  const width = page.clientWidth;
  const boxOf = e => { const r = e.getBoundingClientRect(); return {left: r.left, right: r.right, top: r.top + scrollY, bottom: r.bottom + scrollY}; };
  const shown = b => b.right - b.left > 0 && b.bottom - b.top > 0;
  const meets = (a, b) => a.left < b.right - 0.5 && b.left < a.right - 0.5 && a.top < b.bottom - 0.5 && b.top < a.bottom - 0.5;
  const name = e => (e.textContent || e.tagName).trim().slice(0, 80);
  const isMark = e => {
    if (e.tagName === "line") return parseFloat(e.getAttribute("stroke-width") || "1") >= 2;
    if (e.tagName === "rect") return (e.getAttribute("fill") || "") !== "none";
    return true;
  };
  const overlaps = [];
  document.querySelectorAll("body svg").forEach((svg, figure) => {
    const texts = [...svg.querySelectorAll("text")].filter(t => t.textContent.trim()).map(t => [t, boxOf(t)]).filter(([, b]) => shown(b));
    const marks = [...svg.querySelectorAll("circle, ellipse, rect, path, polygon, polyline, line")].filter(isMark).map(m => [m, boxOf(m)]).filter(([, b]) => shown(b));
    texts.forEach(([text, box], i) => {
      texts.slice(i + 1).forEach(([other, otherBox]) => {
        if (meets(box, otherBox)) overlaps.push({figure, kind: "text", text: name(text), other: name(other)});
      });
      marks.forEach(([mark, markBox]) => {
        if (meets(box, markBox)) overlaps.push({figure, kind: "mark", text: name(text), other: mark.tagName});
      });
    });
  });
  const tables = [...document.querySelectorAll("table")].map(t => [t, boxOf(t)]).filter(([, b]) => shown(b) && b.right > width + 0.5)
    .map(([t, b]) => ({right: Math.round(b.right), head: name(t).slice(0, 60)}));
  const scrolled = [...document.querySelectorAll("table")].filter(t => shown(boxOf(t)) && t.scrollWidth > t.clientWidth + 0.5)
    .map(t => t.className || name(t).slice(0, 40));
  const allCases = document.querySelector("#all-cases + table");
  const report = {width, overflow: Math.max(0, page.scrollWidth - width), overlaps, tables, scrolled, height: page.scrollHeight,
    all_cases_height: allCases ? Math.round(allCases.getBoundingClientRect().height) : null};
  document.body.insertAdjacentHTML("beforeend", "<pre id='layout-measure'></pre>");
  document.getElementById("layout-measure").textContent = JSON.stringify(report);
})();
</script>"""


def measure_layout(report: Path, width: int, scratch: Path, open_details: bool = True) -> dict:
    """The layout of ``report`` in headless Chromium at ``width`` px, every ``<details>`` opened unless
    ``open_details`` is false: ``overflow`` (px the page is wider than the window), ``tables`` (those whose right
    edge lies beyond it), ``overlaps`` (pairs in an inline SVG of a ``<text>`` and another text or a plotted mark,
    whose boxes meet by more than 0.5 px; a mark is a circle, rect with a fill, path, polygon, polyline, or a
    line at least 2 px wide), ``scrolled`` (the class, else the first words, of each table whose content is wider
    than its own box, so that part of it is seen only by scrolling it), ``height`` (the page's) and
    ``all_cases_height`` (the table of all cases')."""
    measured = scratch / f"measured-{width}-{open_details}-{report.parent.name}.html"
    script = LAYOUT_SCRIPT.replace("OPEN_DETAILS", "true" if open_details else "false")
    measured.write_text(report.read_text().replace("</body>", script + "</body>"))
    run = chromium("--dump-dom", f"--window-size={width},1000", "--hide-scrollbars", measured.as_uri())
    found = re.search(r'<pre id="layout-measure">(.*?)</pre>', run.stdout, re.S)
    if not found:
        raise RuntimeError(f"Chromium gave no layout for {report} at {width} px: {run.stderr[-2000:]}")
    return json.loads(html.unescape(found.group(1)))


LONG_SPECS = (
    "cascade:whisper:large-v3-turbo+voice:praat+qwen2.5:7b-instruct-release-candidate-2026-12",
    "cascade:whisper:medium.en+voice:praat+llama3.1:8b-instruct-q4-checkpoint-0347",
)


def three_model_results(results: dict) -> dict:
    """A three-model results.json from a one-model one: its cases once as they are and once under each of
    :data:`LONG_SPECS` (every mention of the model's spec replaced), the summary recounted."""
    (spec,) = {case["model"] for case in results["cases"] if case.get("model")}
    text = json.dumps(results)
    copies = [results] + [
        json.loads(text.replace(json.dumps(spec)[1:-1], json.dumps(other)[1:-1])) for other in LONG_SPECS
    ]
    merged = copies[0] | {"cases": [case for copy in copies for case in copy["cases"]]}
    merged["metadata"] = dict(results["metadata"])
    merged["metadata"]["models"] = {
        name: value for copy in copies for name, value in copy["metadata"]["models"].items()
    }
    merged["summary"] = {key: sum(copy["summary"][key] for copy in copies) for key in results["summary"]}
    return merged
