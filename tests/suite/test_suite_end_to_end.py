"""Issue 49 end to end: an 8-sentence suite read by 24 espeak-ng voices (12 per gender: 3 accents x 4 variants),
built with the perceived-group filter (voice:praat) and outlier listing, gated as it is with ``--corpus``:
sim:biased fails its gender WER case, sim:fair passes it, and the report names the suite's provenance."""

from __future__ import annotations

import json

from harness.data import load_corpus
from harness.suite.build import Filters, build_suite
from harness.suite.voices import read_voices

from support.gate import decided_cases, gate_project
from support.suite_inputs import needs_espeak, write_items

pytest_plugins = ["pytester"]
pytestmark = needs_espeak
ACCENTS = {"us": "en-us", "rp": "en-gb-x-rp", "scottish": "en-gb-scotland"}


def voices() -> str:
    return ",".join(
        f"espeak-ng:{language}+{gender[0]}{variant}@gender={gender}@accent={accent}"
        for accent, language in ACCENTS.items()
        for gender in ("female", "male")
        for variant in range(1, 5)
    )


def test_a_built_suite_gates_sim_biased_and_passes_sim_fair(pytester):
    gate_project(pytester, "test_wer.py")
    suite = pytester.path / "suite"
    result = build_suite("corpus", write_items(pytester.path, 8), read_voices(voices()), suite,
                         Filters(perceived=True, outliers=True), name="built", progress=False, log=lambda line: None)  # fmt: skip
    assert result.problems == [] and result.provenance["groups"]["gender"] == {
        "female": {"voices": 12, "clips": 96}, "male": {"voices": 12, "clips": 96}}  # fmt: skip
    assert len(load_corpus(suite).table) == 192
    run = pytester.runpytest_subprocess(
        "--model", "sim:fair", "--model", "sim:biased", "--corpus", f"built={suite}", "-k", "wer_ratio and gender",
        "-p", "no:cacheprovider",
    )  # fmt: skip
    results = json.loads((pytester.path / "results.json").read_text())
    outcome = {(c["model"], c["check"], c["dimension"]): (c["passed"], c["by_design"]) for c in decided_cases(results)}
    # sim:fair does not fail; 24 voices cannot detect a ratio of 1.11, so it is unmeasured by design, not passed
    assert outcome == {
        ("sim:fair", "wer_ratio", "gender"): (True, True),
        ("sim:biased", "wer_ratio", "gender"): (False, False),
    }
    assert run.ret == 1
    provenance = results["metadata"]["corpora"]["built"]["provenance"]
    assert provenance["summary"].startswith("lalm-fairness-suite build (corpus): 24 voices (espeak-ng 1.")
    assert "192 of 192 clips admitted" in provenance["summary"]
    assert "perceived gender by voice:praat: 0 voice(s) dropped" in provenance["summary"]
    assert f"built by {provenance['summary']}" in (pytester.path / "report.html").read_text()
