"""scripts/build_demo_outputs.py: a seeded rebuild keeps the provenance of the entries it kept."""

import importlib.util
import json
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def build_script():
    spec = importlib.util.spec_from_file_location("build_demo_outputs", REPO / "scripts" / "build_demo_outputs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_an_amended_provenance_keeps_the_origin_cpu_and_lists_the_rebuild():
    script = build_script()
    origin = {
        "made": "2026-12-02T14:08:36+00:00",
        "command": "python scripts/build_demo_outputs.py",
        "compute_environment": {"cpu": {"vendor": "GenuineIntel"}},
        "versions": {"torch": "2.13.0"},
        "entries": 6945,
    }
    build = {
        "made": "2026-12-02T17:16:00+00:00",
        "command": "python scripts/build_demo_outputs.py --seed old.jsonl.gz",
        "compute_environment": {"cpu": {"vendor": "AuthenticAMD"}},
        "versions": {"torch": "2.13.0"},
        "machine": {"cpus": 2},
        "entries": 6933,
    }
    provenance = script.amended(origin, build, new_entries=12)
    assert provenance["compute_environment"]["cpu"]["vendor"] == "GenuineIntel" and provenance["entries"] == 6933
    assert provenance["made"] == origin["made"] and "machine" not in provenance
    (amendment,) = provenance["amendments"]
    assert amendment["compute_environment"]["cpu"]["vendor"] == "AuthenticAMD" and amendment["entries_made"] == 12
    again = script.amended(provenance, build | {"made": "later"}, new_entries=0)
    assert [a["made"] for a in again["amendments"]] == [build["made"], "later"]


def test_the_shipped_provenance_names_the_cpu_of_its_origin_and_every_amendment():
    for path in (REPO / "harness" / "data" / "demo_outputs").glob("**/provenance.json"):
        provenance = json.loads(path.read_text())
        assert provenance["compute_environment"]["cpu"]["vendor"]
        for amendment in provenance.get("amendments", []):
            assert amendment["compute_environment"]["cpu"]["vendor"] and amendment["entries_made"] >= 0
