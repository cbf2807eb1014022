"""How many requests a fresh gate run sends to its models, against how many distinct cache keys they carry.

Runs the gate on the demo corpus (``fairness_tests``, the default model) over an empty cache, without the
shipped export being imported. Every leaf model (a stage of the cascade, the judge, the extractor: every
backend without stages of its own) is replaced by a replay that answers from the shipped export
(``harness/data/demo_outputs/cascade-demo.jsonl.gz``) by cache key, so the run takes the road a real fresh
run takes, request for request, without loading a model. A key missing from the export is answered ``""``,
as the real model did (empty answers are never stored). Composite backends (the cascade) run for real.

Prints, per model (the cascade and its stages alike) and in total, the requests sent and the distinct keys
among them; a request sent for a key already sent is generated twice ("not in export": requests the replay
answered "", as the real model did). Target: requests sent == distinct keys.

    .venv/bin/python benchmarks/bench_duplicate_requests.py [--permutations 200]
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from harness.gate import config as gate_config  # noqa: E402
from harness.generation.cached_model import CachedModel  # noqa: E402
from harness.models.base import ComposedOfStages  # noqa: E402


def shipped_answers() -> dict[str, str]:
    answers = {}
    for paths in gate_config.BUNDLED_EXPORTS.values():
        for path in paths:
            with gzip.open(path, "rt", encoding="utf-8") as handle:
                handle.readline()
                for line in handle:
                    entry = json.loads(line)
                    answers[entry["key"]] = entry["text"]
    return answers


class Counted:
    """A loaded model that counts the requests it is sent and their cache keys (per model spec); a leaf
    (``answers`` given) answers from the shipped export, a composite model runs for real."""

    def __init__(self, owner: CachedModel, model, answers: dict[str, str] | None, tally: dict[str, dict]):
        self.owner, self.model, self.answers = owner, model, answers
        self.tally = tally.setdefault(owner.spec, {"sent": 0, "keys": set(), "unanswered": 0})

    def generate(self, requests, params):
        keys = self.owner.keys(requests)
        self.tally["sent"] += len(keys)
        self.tally["keys"].update(keys)
        if self.answers is None:
            return self.model.generate(requests, params)
        self.tally["unanswered"] += sum(key not in self.answers for key in keys)
        return [self.answers.get(key, "") for key in keys]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--permutations", type=int, default=200, help="permutations per nTVD test (they do not change the requests)"
    )
    args = parser.parse_args()
    answers = shipped_answers()
    tally: dict[str, dict] = {}
    real_model = CachedModel.model

    def model(self: CachedModel):
        if self._model is None:
            composite = isinstance(self.backend, ComposedOfStages)
            self._model = Counted(self, real_model(self) if composite else None, None if composite else answers, tally)
        return self._model

    CachedModel.model = model
    gate_config.BUNDLED_EXPORTS.clear()
    with tempfile.TemporaryDirectory(prefix="lalm-duplicates-") as tmp:
        code = pytest.main(
            [
                str(ROOT / "fairness_tests"),
                "-q",
                "-p",
                "no:cacheprovider",
                "--rootdir",
                str(ROOT),
                "--cache-dir",
                f"{tmp}/cache",
                "--report",
                "",
                "--results-json",
                f"{tmp}/results.json",
                "--permutations",
                str(args.permutations),
            ]
        )
    print(f"gate exit code: {int(code)}")
    print(f"{'model':<44} {'requests sent':>14} {'distinct keys':>14} {'generated twice':>16} {'not in export':>14}")
    for spec, counts in sorted(tally.items()):
        print(
            f"{spec:<44} {counts['sent']:>14} {len(counts['keys']):>14} {counts['sent'] - len(counts['keys']):>16} {counts['unanswered']:>14}"
        )
    total_sent, total_keys = sum(c["sent"] for c in tally.values()), sum(len(c["keys"]) for c in tally.values())
    print(f"{'total':<44} {total_sent:>14} {total_keys:>14} {total_sent - total_keys:>16}")
    print(f"target (each key generated once): {'met' if total_sent == total_keys else 'NOT met'}")
    return 0 if total_sent == total_keys else 1


if __name__ == "__main__":
    raise SystemExit(main())
