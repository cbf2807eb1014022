"""The gate keeps verdicts and metadata; the run context keeps data. A run's memory is freed with its gate,
and the run metadata of several xdist workers is merged by one function."""

import gc
import json
import os
import weakref
from pathlib import Path

from harness.gate import Gate, GateConfig
from harness.results import RunMetadata
from harness.results.metadata import BundledExport

from support.gate import decided_record

REPO = Path(__file__).resolve().parents[2]
pytest_plugins = ["pytester"]


def test_a_gate_is_freed_after_its_verdicts(tmp_path):
    gate = Gate(
        GateConfig(models=("sim:fair",), cache_dir=str(tmp_path), permutations=50, tasks=("story",), progress=False)
    )
    for check in ("ntvd", "icat", "personalization"):
        assert decided_record(gate.outcome(gate.cases(check)[0])) is not None  # decided (some unmeasured by design)
    gate_ref, context_ref = weakref.ref(gate), weakref.ref(gate.context)
    del gate
    gc.collect()
    assert gate_ref() is None and context_ref() is None


def test_a_table_is_computed_once_per_run(tmp_path):
    from harness.checks.ntvd.tables import answers

    config = GateConfig(models=("sim:fair",), cache_dir=str(tmp_path), tasks=("story",), progress=False)
    first, second = Gate(config).context, Gate(config).context
    assert answers(first, "sim:fair", "demo", "story") is answers(first, "sim:fair", "demo", "story")
    assert answers(first, "sim:fair", "demo", "story") is not answers(second, "sim:fair", "demo", "story")


def test_metadata_merge_unites_what_each_worker_saw():
    worker = {
        "models": {"m": "fm"},
        "model_calls": 3,
        "cache_hits": 1,
        "models_loaded": ["m"],
        "seed": 0,
        "judge": None,
        "bundled_outputs": [],
        "embedder": "none",
    }
    other = {
        "models": {"m": "fm"},
        "stage_models": {"asr:b": "fb"},
        "model_calls": 2,
        "cache_hits": 4,
        "models_loaded": ["asr:b"],
        "seed": 0,
        "judge": "fj",
        "bundled_outputs": [{"model": "m", "file": "x.gz", "entries": 5, "provenance": None}],
        "embedder": "none",
    }
    parts = [{**worker, "stage_models": {"asr:a": "fa"}}, other, {**other, "stage_models": {}}]
    merged = RunMetadata.merge([RunMetadata.from_json(part, "part") for part in parts])
    assert merged.stage_models == {"asr:a": "fa", "asr:b": "fb"}
    assert merged.model_calls == 7 and merged.cache_hits == 9
    assert merged.models_loaded == ["asr:b", "m"]
    assert merged.judge == "fj" and merged.seed == 0
    # each process counts the entries its import added (issue 59): the processes' counts are summed
    assert merged.bundled_outputs == [BundledExport(model="m", file="x.gz", entries=10)]


STAGED_BACKEND = '''
import os

from harness.core.requests import DecodingParams
from harness.models.base import Backend, StageSpec, TranscribedByStage


class EchoModel:
    def generate(self, requests, params):
        return ["the words" for _ in requests]


class EchoBackend(Backend):
    """Answers every request with the same words."""

    def __init__(self, spec, target, options=None):
        self.spec = spec

    def fingerprint(self):
        return self.spec + "@1"

    def load(self):
        return EchoModel()


class StagedBackend(EchoBackend, TranscribedByStage):
    """Transcribed by a stage that differs per xdist worker."""

    def transcription_source(self):
        return StageSpec("echo:" + os.environ.get("PYTEST_XDIST_WORKER", "none"), DecodingParams())
'''

PROBE_TESTS = """
import os

import pytest

from harness.checks.base import Verdict
from harness.checks.semantic_aware.record import RatioRecord
from harness.checks.semantic_aware.thresholds import RatioThresholds
from harness.checks.wer_ratio.tables import transcripts


@pytest.mark.parametrize("index", range(4))
def test_transcribe(index, fairness_gate, record_verdict):
    transcripts(fairness_gate.context, "staged:x", "demo")
    record = RatioRecord(check="wer_ratio", id=str(index), model="staged:x", model_fingerprint="staged:x@1",
                         corpus="demo", dimension="none", variant=None, value=None, threshold=RatioThresholds(), passed=True,
                         message=os.environ["PYTEST_XDIST_WORKER"], ci=[None, None], p=None, q=None, comparisons=[],
                         semantics={})
    record_verdict(Verdict(True, "ok", record))
"""


def test_xdist_workers_that_saw_different_stage_models_are_all_in_the_metadata(pytester, monkeypatch):
    pytester.makeconftest(
        "from harness.models import register_backend\n\n"
        'register_backend("staged", "staged_backend:StagedBackend")\n'
        'register_backend("echo", "staged_backend:EchoBackend")\n'
        'pytest_plugins = ["harness.plugin"]\n'
    )
    pytester.makepyfile(staged_backend=STAGED_BACKEND, test_probe=PROBE_TESTS)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(pytester.path), str(REPO), os.environ.get("PYTHONPATH", "")]))
    result = pytester.runpytest_subprocess(
        "-p",
        "no:cacheprovider",
        "-n",
        "2",
        "--model",
        "staged:x",
        "--report",
        "",
        "--cache-dir",
        str(pytester.path / "cache"),
    )
    result.assert_outcomes(passed=4)
    results = json.loads((pytester.path / "results.json").read_text())
    assert {case["message"] for case in results["cases"]} == {"gw0", "gw1"}
    assert results["metadata"]["workers"] == 2
    assert set(results["metadata"]["stage_models"]) == {"echo:gw0", "echo:gw1"}
    assert results["metadata"]["model_calls"] == 2 * 324


def protocol_members(protocol) -> set[str]:
    """Every method and attribute a protocol (and the protocols it extends) declares."""
    members = {name for name in dir(protocol) if not name.startswith("_")}
    for base in protocol.__mro__:
        members |= set(getattr(base, "__annotations__", {}))
    return members


def test_the_run_context_provides_every_member_of_the_check_context(tmp_path):
    from harness.checks.context import CheckContext

    context = Gate(GateConfig(models=("sim:fair",), cache_dir=str(tmp_path), progress=False)).context
    assert sorted(name for name in protocol_members(CheckContext) if not hasattr(context, name)) == []


def test_a_recorded_context_provides_every_member_of_the_compare_context():
    from harness.checks.context import CompareContext
    from harness.gate.series import RecordContext, RecordThresholds

    recorded = RecordContext(RecordThresholds({}, None), seed=0, permutations=10)
    assert sorted(name for name in protocol_members(CompareContext) if not hasattr(recorded, name)) == []
