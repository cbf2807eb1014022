"""``scripts/build_basis_demo.py --voices-per-group N`` (issue 57: a suite large enough to measure the BASIS
cases): every group of every set read by N distinct espeak-ng voices, labelled as their role, and the shipped
demo's design unchanged without it."""

import csv
import importlib.util
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def load_script():
    spec = importlib.util.spec_from_file_location("build_basis_demo", REPO / "scripts" / "build_basis_demo.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    return script


def test_the_larger_design_reads_every_group_with_n_distinct_voices(tmp_path):
    script = load_script()
    voices, sets = script.scaled_design(9)
    assert len(voices) == 9 * len(script.ROLES) and len({spec for spec, _ in voices.values()}) == len(voices)
    script.write_items(tmp_path / "items", voices, sets)
    for name, kind, _, dimension, labels, folder, _ in sets:
        with open(tmp_path / "items" / folder / script.metadata_name(kind, dimension)) as handle:
            rows = list(csv.DictReader(handle))
        per_label = Counter(label for label, _ in {(row[dimension], row["speaker"]) for row in rows})
        assert per_label == dict.fromkeys(labels, 9), (name, per_label)
        for row in rows:  # each row's label is its voice's
            label = voices[row["speaker"]][1]["age" if name == "elip-pair" else dimension]
            assert row[dimension] == (label if name != "elip-pair" else "child" if label == "child" else "adult")


def test_without_the_option_the_demo_design_is_the_shipped_one(tmp_path):
    script = load_script()
    script.write_items(tmp_path / "items")
    shipped = REPO / "harness" / "data" / "basis_demo"
    for path in (tmp_path / "items").rglob("*.csv"):
        assert path.read_text() == (shipped / path.relative_to(tmp_path / "items")).read_text(), path
    assert (tmp_path / "items" / "suite.yaml").read_text() == (shipped / "suite.yaml").read_text()
