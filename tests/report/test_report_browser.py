"""The report in a real browser (headless Chromium): no console errors, a screenshot, hostile text inert."""

import html
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from harness.report import render_report
from harness.results import parse_results

from support.browser import CHROMIUM, LONG_SPECS, chromium, measure_layout, three_model_results
from support.records import regressed_within_its_bar, results_json

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="headless Chromium is not installed (Debian: apt-get install chromium)"
)
pytest_plugins = ["pytester"]

HOSTILE_BACKEND = """
import hashlib
from harness.models import register_backend
from harness.models.base import Backend

PAYLOAD = "<script>document.title='PWNED'</script><img src=x onerror=\\"document.title='PWNED'\\">"


class HostileModel:
    def generate(self, requests, params):
        answers = []
        for request in requests:
            pick = int(hashlib.sha256(request.audio.content_hash.encode()).hexdigest(), 16) % 3
            value = ["yoga", "chess", PAYLOAD][pick]
            answers.append(f"Try this {PAYLOAD}\\n\\nActivities: {value}, hiking, {PAYLOAD}")
        return answers


class HostileBackend(Backend):
    def __init__(self, spec, target, options):
        self.spec = spec

    def fingerprint(self):
        return "hostile:" + self.spec

    def load(self):
        return HostileModel()


register_backend("hostile", "conftest:HostileBackend")
pytest_plugins = ["harness.plugin"]
"""


@pytest.fixture(scope="module")
def hostile_report(tmp_path_factory) -> Path:
    project = tmp_path_factory.mktemp("hostile")
    (project / "conftest.py").write_text(HOSTILE_BACKEND)
    shutil.copy(REPO / "fairness_tests" / "test_vibe.py", project / "test_vibe.py")
    (project / "thresholds.yaml").write_text(  # a team's defaults never shadow the built-in accent bar: name it too
        "ntvd:\n  defaults: {rule: magnitude, max_ntvd: 0.0, tau: 1}\n  dimensions: {accent: {max_ntvd: 0.0}}\n"
    )
    evil_spec = "hostile:<img src=x onerror=\"document.title='PWNED'\">"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "--model",
            evil_spec,
            "--extractor",
            "rules",
            "-k",
            "advisory",
            "--permutations",
            "99",
            "--cache-dir",
            str(project / "cache"),
            "--junitxml",
            str(project / "junit.xml"),
        ],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 1, result.stdout[-3000:] + result.stderr[-3000:]
    return project


def test_report_renders_without_console_errors_and_screenshots(hostile_report, tmp_path):
    screenshot = tmp_path / "report.png"
    run = chromium(f"--screenshot={screenshot}", "--window-size=1200,2000", (hostile_report / "report.html").as_uri())
    assert screenshot.is_file() and screenshot.stat().st_size > 10_000
    assert "CONSOLE" not in run.stderr


def test_hostile_model_output_and_case_ids_stay_inert_text(hostile_report):
    html = (hostile_report / "report.html").read_text()
    assert "<script>" not in html and "<img src=x" not in html
    assert "&lt;script&gt;" in html
    dom = chromium("--dump-dom", (hostile_report / "report.html").as_uri()).stdout
    assert "<title>lalm-fairness report: SPOT-CHECK</title>" in dom  # -k advisory: a spot check, not a verdict
    assert "PWNED</title>" not in dom
    assert "<img" not in dom


def test_junit_and_results_json_carry_the_same_verdicts(hostile_report):
    import xml.etree.ElementTree as ElementTree

    results = json.loads((hostile_report / "results.json").read_text())
    verdicts = {case["nodeid"].split("::", 1)[1]: case["passed"] for case in results["cases"]}
    junit = {
        case.get("name"): case.find("failure") is None and case.find("error") is None
        for case in ElementTree.parse(hostile_report / "junit.xml").getroot().iter("testcase")
    }
    assert junit == verdicts
    assert not any(verdicts.values())


FIRST_SCREEN_PX = 900
POSITIONS_SCRIPT = """<script>
document.body.insertAdjacentHTML("beforeend", "<pre id='positions'></pre>");
const rows = [...document.querySelectorAll("#why [data-case]")].map(row => {
  const box = row.getBoundingClientRect();
  return {id: row.dataset.case, top: box.top + window.scrollY, bottom: box.bottom + window.scrollY, text: row.innerText};
});
document.getElementById("positions").textContent = JSON.stringify(rows);
</script>"""


@pytest.fixture(scope="module")
def biased_run(tmp_path_factory) -> Path:
    """The demo gate on the biased simulator (it fails), with its report and results.json."""
    out = tmp_path_factory.mktemp("biased")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "fairness_tests",
            "-p",
            "no:cacheprovider",
            "--model",
            "sim:biased",
            "--cache-dir",
            str(out / "cache"),
            "--report",
            str(out / "report.html"),
            "--results-json",
            str(out / "results.json"),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert result.returncode == 1, result.stdout[-3000:] + result.stderr[-3000:]
    return out


def test_first_900_px_of_a_failing_run_name_every_failed_case(biased_run, tmp_path):
    """In Chromium at 1200 x 900, every failed case's first-screen line (check, model, dimension, mode or
    task) ends above 900 px; an unmeasured case has its line too, below the failures (it may lie further down);
    a copy of the report with a measuring script gives the DOM positions."""
    cases = json.loads((biased_run / "results.json").read_text())["cases"]
    failed = [case for case in cases if not case["passed"] and case.get("status") != "unmeasured"]
    unmeasured = [case for case in cases if case.get("status") == "unmeasured"]
    assert failed
    measured = tmp_path / "measured.html"
    measured.write_text((biased_run / "report.html").read_text().replace("</body>", POSITIONS_SCRIPT + "</body>"))
    dom = chromium("--dump-dom", f"--window-size=1200,{FIRST_SCREEN_PX}", measured.as_uri()).stdout
    lines = json.loads(html.unescape(re.search(r"<pre id=\"positions\">(.*?)</pre>", dom, re.S).group(1)))
    rows: dict[str, dict] = {}
    for row in lines:
        rows.setdefault(row["id"], row)  # failed lines come first: the WER and judge-score cases share an id
    for case in failed:
        row = rows[case["id"]]
        assert row["bottom"] <= FIRST_SCREEN_PX, f"{case['id']} ends at {row['bottom']:.0f} px"
        for known in (case.get("model"), case.get("dimension"), case.get("variant")):
            assert known is None or known in row["text"], (known, row["text"])
    lowest_failure = max(rows[case["id"]]["bottom"] for case in failed)
    for case in unmeasured:
        own = [row for row in lines if row["id"] == case["id"] and row["text"].startswith("unmeasured")]
        assert own and all(row["bottom"] > lowest_failure for row in own), case["id"]
    screenshot = tmp_path / "first-screen.png"
    chromium(
        f"--screenshot={screenshot}",
        f"--window-size=1200,{FIRST_SCREEN_PX}",
        "--hide-scrollbars",
        (biased_run / "report.html").as_uri(),
    )
    assert screenshot.is_file() and screenshot.stat().st_size > 10_000


def test_failing_report_is_self_contained_and_renders_without_console_errors(biased_run, tmp_path):
    page = (biased_run / "report.html").read_text()
    assert "<script" not in page and not re.search(r"""(src|href)=["']?(https?:)?//""", page)
    assert page.count("<svg") >= 8  # forest plots of both WER cases, BASIS group and mode-effect plots
    targets = set(re.findall(r' id="([^"]+)"', page))
    assert set(re.findall(r'href="#([^"]+)"', page)) <= targets  # every first-screen and section link lands
    run = chromium(
        f"--screenshot={tmp_path / 'full.png'}", "--window-size=1200,4000", (biased_run / "report.html").as_uri()
    )
    assert "CONSOLE" not in run.stderr


@pytest.fixture(scope="module")
def layout_reports(tmp_path_factory) -> dict[str, Path]:
    """The default gate's report (the embedded default model on its shipped outputs) and a three-model report
    of long specs made from its results.json (:func:`support.browser.three_model_results`)."""
    out = tmp_path_factory.mktemp("layout")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "fairness_tests",
            "-p",
            "no:cacheprovider",
            "--cache-dir",
            str(out / "cache"),
            "--report",
            str(out / "report.html"),
            "--results-json",
            str(out / "results.json"),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert result.returncode == 1, result.stdout[-3000:] + result.stderr[-3000:]
    three = out / "three" / "report.html"
    three.parent.mkdir()
    three.write_text(render_report(parse_results(three_model_results(json.loads((out / "results.json").read_text())))))
    assert all(spec in three.read_text() for spec in LONG_SPECS)
    return {"default": out / "report.html", "three models": three}


@pytest.mark.parametrize("width", [700, 1280, 1920])
@pytest.mark.parametrize("name", ["default", "three models"])
def test_no_label_over_a_mark_no_horizontal_overflow_every_table_within_the_window(
    layout_reports, name, width, tmp_path
):
    """With every <details> open: no <text> of an inline SVG meets another text or a plotted mark, the page is
    no wider than the window, and no table reaches past its right edge (below 1100 px a wide table scrolls within
    its own box and a plot scales down to the window)."""
    layout = measure_layout(layout_reports[name], width, tmp_path)
    assert layout["width"] == width
    assert layout["overlaps"] == []
    assert layout["overflow"] == 0
    assert layout["tables"] == []


CROWDED_PAGE = """<!DOCTYPE html><html><body style="margin: 0">
<svg xmlns="http://www.w3.org/2000/svg" width="300" height="60"><circle cx="30" cy="20" r="6"/>
<text x="10" y="24">a label over the dot</text><text x="40" y="26">and another</text>
<line x1="0" x2="300" y1="50" y2="50" stroke="#999"/></svg>
<table><tr><td style="white-space: nowrap">{wide}</td></tr></table></body></html>"""


def test_the_measurement_finds_a_label_over_a_mark_a_crowded_label_and_a_table_past_the_window(tmp_path):
    page = tmp_path / "crowded" / "report.html"
    page.parent.mkdir()
    page.write_text(CROWDED_PAGE.format(wide="x" * 400))
    layout = measure_layout(page, 1280, tmp_path)
    kinds = sorted((overlap["kind"], overlap["text"]) for overlap in layout["overlaps"])
    assert kinds == [("mark", "a label over the dot"), ("text", "a label over the dot")]
    assert layout["overflow"] > 0 and len(layout["tables"]) == 1


@pytest.mark.parametrize("width", [700, 1280])
def test_the_first_screens_table_and_the_run_table_fit_the_window_without_scrolling(tmp_path, width):
    """Issue 59 (Chromium at 700 px): the release example's Why table was 846 px wide in a 684 px box, its
    "Fails when" and "adjusted p / q / CI" cells seen only by scrolling the table, and the run table cut a model's
    fingerprint. Both now wrap within the window; the check sections' wide tables still scroll in their own box."""
    cases = [regressed_within_its_bar() | {"variant": task, "task": task, "id": f"sim:biased-{task}-gender"}
             for task in ("hollywood_casting", "candidate_review", "personal_shopper")]  # fmt: skip
    data = results_json(cases)
    data["metadata"]["baseline"] = {"source": "harness/data/demo_outputs/voice-blind/results.json", "model": "m"}
    data["metadata"]["models"] = {"sim:biased": "cascade:" + "201e6ad3beff6334" * 4}
    page = tmp_path / "release" / "report.html"
    page.parent.mkdir()
    page.write_text(render_report(parse_results(data)))
    layout = measure_layout(page, width, tmp_path, open_details=False)
    assert layout["overflow"] == 0 and layout["tables"] == []
    assert not {"why lines", "meta"} & set(layout["scrolled"]), layout["scrolled"]
