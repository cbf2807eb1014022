"""docs/datasheet.md states what docs/datasheet.json holds (``benchmarks/bench_datasheet.py`` writes both), and
the README points to it (issue 57: every figure from a command that regenerates it)."""

import importlib.util
import json
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def test_the_datasheet_markdown_is_its_json_and_its_targets_hold():
    spec = importlib.util.spec_from_file_location("bench_datasheet", REPO / "benchmarks" / "bench_datasheet.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    sheet = json.loads((REPO / "docs" / "datasheet.json").read_text())
    assert (REPO / "docs" / "datasheet.md").read_text() == bench.markdown(sheet)
    assert all(row["share"] >= 0.75 for row in sheet["detectable"]["rows"])  # each family at its stated effect
    assert (
        sheet["sim:fair"]["whole"]["failed"] == 0
        and sheet["sim:biased"]["whole"]["failed"] == sheet["sim:biased"]["whole"]["runs"]
    )
    assert "docs/datasheet.md" in (REPO / "README.md").read_text()


def test_the_release_rows_meet_their_targets():
    """Issue 57's release targets at the gate's own rule: a fair candidate against a fair baseline never fails, the
    biased one always does; checkpoints with the same systematic effect (none, or equal non-zero effects under
    greedy against sampling decoding) are judged worse in at most 5% of pairs by each statistic the gate uses (the
    raw measures compared before issue 45 are printed beside them, and are not held to it)."""
    sheet = json.loads((REPO / "docs" / "datasheet.json").read_text())
    scenarios = sheet["release"]["scenarios"]
    assert scenarios["fair/fair"]["failed"] == 0 and scenarios["fair/fair"]["runs"] >= 10
    assert scenarios["biased/fair"]["failed"] == scenarios["biased/fair"]["runs"] >= 10
    equal = ("noisy vs steady", "steady vs noisy", "noisy vs noisy", "grown vs steady-grown", "steady-grown vs grown")
    rows = [
        (check, row)
        for check, block in sheet["release_noise"]["checks"].items()
        for row in block["rows"]
        if row["pair"] in equal and not row["statistic"].startswith("raw")
    ]
    assert len(rows) >= 20 and {check for check, _ in rows} == {"counterfactual", "ntvd"}
    assert all(row["judged_worse"] <= 0.05 for _, row in rows), [r for _, r in rows if r["judged_worse"] > 0.05]


def test_the_blind_share_rows_are_read_from_their_log_and_written_as_a_section():
    """bench_blind_share.py's rows (issue 58) reach the sheet and its markdown; a sheet without them has no section."""
    spec = importlib.util.spec_from_file_location("bench_datasheet", REPO / "benchmarks" / "bench_datasheet.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    log = "header\nrow biased ntvd=40 speakers=45 fixed s=0.89 share=0.101 old=0/150/50 new=0/200/0 seeds=200\n"
    rows = bench.blind_share(log)["rows"]
    assert rows == [{"model": "biased", "full_ntvd": 40.0, "speakers_per_group": 45, "mechanism": "fixed", "blind_share": 0.89,
                     "probe_share": 0.101, "seeds": 200, "old": {"failed": 0, "unmeasured": 150, "passed": 50},
                     "new": {"failed": 0, "unmeasured": 200, "passed": 0}}]  # fmt: skip
    lines = bench.blind_share_lines({"blind_share": {"rows": rows}})
    assert (
        lines[1] == "## The audio floor's blind bar"
        and lines[-1] == "| biased | 40 | 45 | fixed | 0.89 | 0.101 | 200 | 0/150/50 | 0/200/0 |"
    )
    assert bench.blind_share_lines({}) == []


def test_the_sham_rule_and_the_deciding_row_releases_meet_their_targets():
    """Issues 57 and 58 at the gate's own settings (``benchmarks/datasheet_rules.py``): the sham rule fails a fair
    case, with or without a transform artefact, in at most 5% of seeds; pathological inputs never PASS; a release
    judged against both controls, and a deciding-row ratio release, judge a candidate with the same systematic effect
    as its baseline (none, or equal under another answer noise) worse in at most 5% of pairs."""
    sheet = json.loads((REPO / "docs" / "datasheet.json").read_text())
    fair = ("fair", "fair + resynthesis artefact", "artefact only")
    rows = [row for entry in sheet["sham_rule"]["kinds"].values() for row in entry["rows"]]
    assert {row["model"].split(" (")[0] for row in rows} >= set(fair)
    assert all(row["failed"] <= 0.05 for row in rows if row["model"].split(" (")[0] in fair)
    gaps = ("word count zero", "no sham arm", "two speakers", "swap arm only", "half the recordings")
    pathological = [row for row in sheet["sham_rule"]["pathological"] if any(gap in row["input"] for gap in gaps)]
    assert len(pathological) >= 5 and all(row["verdict"] != "PASS" for row in pathological)
    release = [row for row in sheet["sham_release"]["rows"] if row["controls"] == "identity and sham"]
    same = [row for row in release if not row["pair"].startswith("grown")]
    assert len(same) >= 6 and all(row["judged_worse"] <= 0.05 for row in same), same
    ratio = [row for design in sheet["ratio_release"].values() for entry in design.values() for row in entry["rows"]]
    assert {"demo", "cremad"} <= set(sheet["ratio_release"])
    assert all(row["judged_worse"] <= 0.05 for row in ratio if not row["pair"].startswith("grown"))


def test_the_rule_sections_parse_every_row_the_benches_print():
    spec = importlib.util.spec_from_file_location("datasheet_rules", REPO / "benchmarks" / "datasheet_rules.py")
    rules = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(rules)
    absolute = rules.sham_rule(
        "asr: 13 female, 14 male speakers x 12 recordings; bar 10; 10000 sign flips; corrected alpha 0.00116 (0.05 "
        "over 43 cases); 200 seeds\n"
        "fair                                                              0.000 [0.000, 0.018]       0.135    0.865"
        "        0.000\n  stated detectable effect (median over the fair seeds): 7.90\n"
        "  asr, two speakers per direction: unmeasured\n"
    )
    assert absolute["kinds"]["asr"]["rows"][0]["unmeasured"] == 0.135
    assert (
        absolute["kinds"]["asr"]["stated_detectable"] == 7.9 and absolute["pathological"][0]["verdict"] == "unmeasured"
    )
    release = rules.sham_release(
        "release (counterfactual VIBE, demo design): 100 simulated pairs; margin 5; one-sided alpha 0.000581 (0.05 "
        "over 86 tests); effect share 0.240 (nTVD 20)\n"
        "noisy + artefact vs noisy (no group effect)  identity and sham         0.000 [0.000, 0.036]         1.000"
        "          0.000\n"
    )
    assert release["rows"][0]["pair"] == "noisy + artefact vs noisy (no group effect)"
    ratio = rules.ratio_release(
        "score ratio, deciding row, demo design (27 speakers x 12 utterances): 3 simulated pairs; one-sided alpha "
        "0.000581 (0.05 over 86 tests); margin 0.05\n"
        "grown (0 -> -0.65 points, log ratio about -0.1)             0.333 [0.008, 0.906]         0.667          0.000"
        "    1.000\n"
    )
    assert ratio["score"]["rows"][0]["p_at_most_05"] == 1.0 and ratio["score"]["margin"] == 0.05


CREMAD_LOG = """{seeds}
{model} (strength x1), 2 seeds, 80 s; design: CREMA-D-sized corpus /tmp/cremad/manifest.csv, suite demo; 10000 permutations
  icat[age-text-implicit]                                 failed   0/2   unmeasured   2/2   passed   0/2
  ntvd[story-gender]                                      failed {f}/2   unmeasured   0/2   passed {p}/2
  wer_ratio[cremad-gender]                                failed   0/2   unmeasured   1/2   passed   1/2
whole gate: failed {f}/2 = 0% (95% CI 0% to 84%); unmeasured without a failure {u}/2; passed 0/2 = 0% (95% CI 0% to 84%)
"""
FAIR_SEEDS = """seed 1: 3 cases, failed -, unmeasured ['icat[age-text-implicit]', 'wer_ratio[cremad-gender]'] (40 s)
seed 2: 3 cases, failed -, unmeasured ['icat[age-text-implicit]'] (41 s)"""
BIASED_SEEDS = """seed 1: 3 cases, failed ['ntvd[story-gender]'], unmeasured ['icat[age-text-implicit]', 'wer_ratio[cremad-gender]']
seed 2: 3 cases, failed ['ntvd[story-gender]'], unmeasured ['icat[age-text-implicit]'] (39 s)"""


def test_the_cremad_section_tallies_each_case_and_the_whole_gate(tmp_path):
    """``bench_gate_seeds.py --design cremad``'s logs become the datasheet's CREMA-D-sized section: per case its
    failed, unmeasured and passed runs, and the whole gate's shares with their Clopper-Pearson intervals; a sheet
    without those logs has no such section."""
    spec = importlib.util.spec_from_file_location("bench_datasheet", REPO / "benchmarks" / "bench_datasheet.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    assert bench.cremad_design(tmp_path) is None and bench.cremad_lines({}) == []
    (tmp_path / "cremad_fair.log").write_text(CREMAD_LOG.format(seeds=FAIR_SEEDS, model="sim:fair", f=0, p=2, u=2))
    (tmp_path / "cremad_biased.log").write_text(
        CREMAD_LOG.format(seeds=BIASED_SEEDS, model="sim:biased", f=2, p=0, u=0)
    )
    cremad = bench.cremad_design(tmp_path)
    assert cremad["permutations"] == 10_000 and cremad["design"].startswith("CREMA-D-sized corpus")
    assert cremad["sim:fair"]["whole"] == {"failed": 0, "unmeasured_without_failure": 2, "runs": 2, "passed": 0}
    assert cremad["sim:biased"]["cases"]["ntvd[story-gender]"] == {"failed": 2, "unmeasured": 0, "runs": 2, "passed": 0}
    assert cremad["sim:fair"]["by_design"] == {"unmeasured_by_design": ["icat[age-text-implicit]"],
        "flickering": ["wer_ratio[cremad-gender]"], "runs": 2, "passed_every_other_case": 1}  # fmt: skip
    assert cremad["sim:biased"]["by_design"]["passed_every_other_case"] == 0
    lines = bench.cremad_lines({"cremad": cremad})
    assert "| sim:fair | 2 | 0/2 = 0% (0%-84%) | 2/2 = 100% (16%-100%) | 0/2 = 0% (0%-84%) |" in lines
    assert (
        "sim:fair: 1 cases unmeasured in every seed (by design), 1 unmeasured in some seeds only "
        "(`wer_ratio[cremad-gender]`); every other case passed in 1/2 = 50% (1%-99%) of seeds." in lines
    )
    assert "| `wer_ratio[cremad-gender]` | 0/2 | 1/2 | 1/2 | 0/2 | 1/2 | 1/2 |" in lines
    (tmp_path / "cremad_biased.log").write_text(
        CREMAD_LOG.format(seeds=BIASED_SEEDS, model="sim:biased", f=2, p=0, u=0).replace("10000", "999")
    )
    with pytest.raises(ValueError, match="2 designs"):
        bench.cremad_design(tmp_path)
