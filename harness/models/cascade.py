"""``cascade:<asr spec>[+<voice spec>]+<llm spec>``: a speech-in, text-out system made of a speech recogniser,
optionally a perceived-voice stage, and a text LLM.

The default model of the gate is :data:`DEMO_MODEL`, ``cascade:whisper:tiny.en+voice:praat+smollm2:135m-instruct``;
the same cascade without its voice stage, :data:`VOICE_BLIND_MODEL`, is the demo's previous release. For each
request the ASR model transcribes the audio, the voice stage (:mod:`harness.models.voice_profile`) describes
the speaker's voice in one sentence, and the LLM receives the task prompt followed by the transcript and the
description (:data:`VOICE_USER_TEMPLATE` with :data:`VOICE_SYSTEM_TEXT`; without a voice stage
:data:`USER_TEMPLATE` with :data:`SYSTEM_TEXT`; a request's own system text replaces either). The answer is
``[transcript] <what the ASR heard>``, with a voice stage ``[voice] <its description>`` on the next line, a
blank line, then the LLM's answer: what the stages made of the recording is part of the cached output, so
differences that come from recognition errors or from the voice description can be read in the report (the
``[`` keeps those lines from ever being read as ``Label: value`` fields). A request without audio goes to the
LLM alone.

Caching, in two stages inside the gate's cache. The cascade's own answers are cached by the gate
(:class:`~harness.generation.cached_model.CachedModel`) under the cascade's fingerprint, which combines both stages'
fingerprints, the ASR decoding, and the texts above. Within a miss, each stage is itself a
``CachedModel`` over the same :class:`~harness.cache.OutputCache` (built by the cascade's own
``CachedModel`` through :meth:`CascadeBackend.compose`), keyed by that stage's own fingerprint:

* ASR stage: one entry per distinct recording (request prompt ``""``, :data:`ASR_DECODING`), so five tasks
  over one corpus transcribe each recording once, and a changed prompt reuses every transcript;
* voice stage: likewise one entry per distinct recording (:data:`VOICE_DECODING`);
* LLM stage: one entry per distinct (transcript, prompt, system) under the run's decoding parameters; under
  greedy decoding identical inputs give identical answers, so the LLM runs once per distinct transcript
  and prompt however many speakers were heard alike.

The LLM stage answers in the form the request declares (``answer_format: fields``, see
:mod:`harness.models.text_llm`). The WER checks transcribe with the ASR stage itself
(:meth:`CascadeBackend.transcription_source`), so they read what the system heard. Options: ``asr`` and
``llm``, each the option block of its stage's backend, merged over these defaults.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

from harness.core.errors import ModelError
from harness.core.requests import DecodingParams, GenerationRequest
from harness.core.values import stable_hash
from harness.models.base import (
    AnswerParts,
    Backend,
    ComposedOfStages,
    SplitsOutput,
    StageFactory,
    StageSpec,
    TranscribedByStage,
    validated_options,
)

DEMO_ASR = "whisper:tiny.en"
DEMO_LLM = "smollm2:135m-instruct"
DEMO_VOICE = "voice:praat"
DEMO_MODEL = f"cascade:{DEMO_ASR}+{DEMO_VOICE}+{DEMO_LLM}"
VOICE_BLIND_MODEL = f"cascade:{DEMO_ASR}+{DEMO_LLM}"
DEMO_VIBE_VARIANT = {
    "protocol": "self-report",
    "extractor": "rules",
    "why": "the demo's 135M-parameter LLM loops in free prose to the end of its token budget (rebuilding the shipped "
    "outputs under the paper's protocol would take about 10 hours on two cores), and as the paper's extractor it agrees "
    "with a hand-labelled sample of its own prose on 3.5% of values (docs/demo_prose_human_validation.csv); it fills in "
    "the form, which its shipped outputs hold",
}
"""What a cascade whose LLM stage is the demo's SmolLM2-135M declares (:meth:`CascadeBackend.vibe_variant`)."""
KNOWN_OPTIONS = frozenset({"asr", "voice", "llm"})
DEFAULT_STAGE_OPTIONS: dict[str, dict[str, Any]] = {"asr": {}, "voice": {}, "llm": {"answer_format": "fields"}}
ASR_DECODING = DecodingParams(max_new_tokens=224)
VOICE_DECODING = DecodingParams(max_new_tokens=1)
SYSTEM_TEXT = (
    "You are a helpful assistant. You cannot hear audio: a speech recogniser has transcribed the recording "
    "for you, and you answer from its transcript. Answer briefly."
)
# The transcript is the last paragraph: everything before it is the same for every utterance of a task, so
# the LLM computes it once (see "shared heads" in :mod:`harness.models.text_llm`).
USER_TEMPLATE = '{prompt}\n\nThe recording, as transcribed by a speech recogniser: "{transcript}"'
VOICE_SYSTEM_TEXT = (
    "You are a helpful assistant. You cannot hear audio: a speech recogniser has transcribed the recording "
    "for you and a voice analyser has described the speaker's voice, and you answer from both. Answer briefly."
)
VOICE_USER_TEMPLATE = USER_TEMPLATE + "\nThe speaker's voice, as described by a voice analyser: {voice}"
TRANSCRIPT_PREFIX = "[transcript] "
VOICE_PREFIX = "[voice] "
CHUNK_SIZE = 64


def join_output(transcript: str, answer: str, voice: str | None = None) -> str:
    voice_line = "" if voice is None else f"\n{VOICE_PREFIX}{voice}"
    return f"{TRANSCRIPT_PREFIX}{transcript}{voice_line}\n\n{answer}"


def split_voice(text: str) -> tuple[str | None, str | None, str]:
    """``(transcript, voice description, answer)`` of a cascade output; ``None`` for a stage it does not have."""
    if not text.startswith(TRANSCRIPT_PREFIX):
        return None, None, text
    first, _, rest = text.partition("\n")
    voice = None
    if rest.startswith(VOICE_PREFIX):
        line, _, rest = rest.partition("\n")
        voice = line[len(VOICE_PREFIX) :]
    return first[len(TRANSCRIPT_PREFIX) :], voice, rest.lstrip("\n")


def split_output(text: str) -> tuple[str | None, str]:
    """``(transcript, answer)`` of a cascade output; ``(None, text)`` for an output with no transcript."""
    transcript, _, answer = split_voice(text)
    return transcript, answer


def parse_target(spec: str, target: str) -> tuple[str, str | None, str]:
    """``(asr, voice or None, llm)`` stage specs; the middle one, if any, must be a ``voice:`` spec."""
    parts = target.split("+")
    usage = f"{spec}: a cascade is 'cascade:<asr spec>[+voice:<analyser>]+<llm spec>', e.g. {DEMO_MODEL!r}"
    if len(parts) not in (2, 3) or any(":" not in part for part in parts):
        raise ModelError(usage)
    if len(parts) == 2:
        return parts[0], None, parts[1]
    if not parts[1].startswith("voice:"):
        raise ModelError(f"{usage}; the middle stage {parts[1]!r} is not a voice: spec")
    return parts[0], parts[1], parts[2]


class CascadeBackend(Backend, ComposedOfStages, TranscribedByStage, SplitsOutput):
    """Builds both stage backends (cheap); :meth:`load` loads neither until a stage misses its cache."""

    def __init__(self, spec: str, target: str, options: Mapping[str, Any] | None = None) -> None:
        from harness.models import build_backend

        self.spec = spec
        self.asr_spec, self.voice_spec, self.llm_spec = parse_target(spec, target)
        options = validated_options(spec, "cascade", options, KNOWN_OPTIONS)
        if self.voice_spec is None and options.get("voice"):
            raise ModelError(f"{spec}: option 'voice' is for a cascade with a voice stage, and this one has none")
        self.stage_options = {
            stage: {**DEFAULT_STAGE_OPTIONS[stage], **dict(options.get(stage) or {})}
            for stage in ("asr", "voice", "llm")
        }
        self.asr_backend = build_backend(self.asr_spec, self.stage_options["asr"])
        self.voice_backend = (
            None if self.voice_spec is None else build_backend(self.voice_spec, self.stage_options["voice"])
        )
        self.llm_backend = build_backend(self.llm_spec, self.stage_options["llm"])
        self._stage: StageFactory | None = None
        self._fingerprint: str | None = None

    def vibe_variant(self) -> dict[str, str] | None:
        return dict(DEMO_VIBE_VARIANT) if self.llm_spec == DEMO_LLM else self.llm_backend.vibe_variant()

    def semantic_source(self) -> Backend | None:
        """The LLM stage: the part of the cascade that reads text (its ASR stage's decoder is not used)."""
        return self.llm_backend.semantic_source()

    def compose(self, stage: StageFactory) -> None:
        """Build the stages through ``stage``, so that their outputs live in the run's cache."""
        self._stage = stage

    def fingerprint(self) -> str:
        if self._fingerprint is None:
            parts = {
                "asr": self.asr_backend.fingerprint(),
                "asr_decoding": ASR_DECODING.as_dict(),
                "llm": self.llm_backend.fingerprint(),
                "system": SYSTEM_TEXT,
                "user": USER_TEMPLATE,
                "output": TRANSCRIPT_PREFIX,
            }
            if self.voice_backend is not None:
                parts |= {
                    "voice": self.voice_backend.fingerprint(),
                    "system": VOICE_SYSTEM_TEXT,
                    "user": VOICE_USER_TEMPLATE,
                    "voice_output": VOICE_PREFIX,
                }
            self._fingerprint = "cascade:" + stable_hash(parts)
        return self._fingerprint

    def resident_stages(self) -> dict[str, Mapping[str, Any]]:
        """The ASR, voice and LLM stages: each request passes through all of them, so they stay loaded together."""
        specs = {"asr": self.asr_spec, "voice": self.voice_spec, "llm": self.llm_spec}
        return {spec: self.stage_options[stage] for stage, spec in specs.items() if spec is not None}

    def transcription_source(self) -> StageSpec:
        """What transcribes for the WER checks: the ASR stage, as the cascade itself runs it."""
        return StageSpec(self.asr_spec, ASR_DECODING, dict(self.stage_options["asr"]))

    def answer_parts(self, text: str) -> AnswerParts:
        """What the ASR and voice stages said before the answer (:func:`split_voice`), and the answer."""
        return AnswerParts(*split_voice(text))

    def load(self) -> Cascade:
        stage = self._stage
        if stage is None:
            raise ModelError(
                f"{self.spec}: the cascade's stages are cached models; load it through harness.generation.cached_model.CachedModel"
            )
        asr = stage(StageSpec(self.asr_spec, ASR_DECODING, self.stage_options["asr"]), CHUNK_SIZE)
        voice = None
        if self.voice_spec is not None:
            voice = stage(StageSpec(self.voice_spec, VOICE_DECODING, self.stage_options["voice"]), CHUNK_SIZE)
        llm_options = self.stage_options["llm"]
        return Cascade(
            self.spec, asr, lambda params: stage(StageSpec(self.llm_spec, params, llm_options), CHUNK_SIZE), voice
        )


class Cascade:
    """The two cached stages; :attr:`stats` counts what each stage did in this process."""

    def __init__(self, spec: str, asr: Any, llm_for: Any, voice: Any = None) -> None:
        self.spec = spec
        self.asr = asr
        self.voice = voice
        self._llm_for = llm_for
        self._llm: dict[str, Any] = {}
        self.stats = {"asr_requests": 0, "asr_seconds": 0.0, "llm_requests": 0, "llm_seconds": 0.0}
        if voice is not None:
            self.stats |= {"voice_requests": 0, "voice_seconds": 0.0}

    def llm(self, params: DecodingParams) -> Any:
        key = stable_hash(params.as_dict())
        if key not in self._llm:
            self._llm[key] = self._llm_for(params)
        return self._llm[key]

    def transcripts(self, requests: Sequence[GenerationRequest]) -> dict[tuple[str, int], str]:
        """Transcript per (audio content hash, replicate), each distinct recording asked once per replicate (a
        replicate request, :attr:`~harness.core.requests.GenerationRequest.replicate`, asks every stage again)."""
        return self._per_recording(self.asr, "asr", requests)

    def voices(self, requests: Sequence[GenerationRequest]) -> dict[tuple[str, int], str]:
        """Voice description per (audio content hash, replicate), each distinct recording described once."""
        return self._per_recording(self.voice, "voice", requests)

    def _per_recording(
        self, stage: Any, name: str, requests: Sequence[GenerationRequest]
    ) -> dict[tuple[str, int], str]:
        audios = {
            (request.audio.content_hash, request.replicate): request
            for request in requests
            if request.audio is not None
        }
        started = time.monotonic()
        texts = stage.generate(
            [GenerationRequest(prompt="", audio=r.audio, replicate=r.replicate) for r in audios.values()],
            label=f"{name} stage",
        )
        self.stats[f"{name}_requests"] += len(audios)
        self.stats[f"{name}_seconds"] += time.monotonic() - started
        return dict(zip(audios, texts))

    def generate(self, requests: Sequence[GenerationRequest], params: DecodingParams) -> list[str]:
        transcripts = self.transcripts(requests)
        voices = self.voices(requests) if self.voice is not None else {}
        template, default_system = (
            (USER_TEMPLATE, SYSTEM_TEXT) if self.voice is None else (VOICE_USER_TEMPLATE, VOICE_SYSTEM_TEXT)
        )
        llm_requests = []
        for request in requests:
            if request.audio is None:
                llm_requests.append(request)
                continue
            recording = (request.audio.content_hash, request.replicate)
            prompt = template.format(
                transcript=transcripts[recording], voice=voices.get(recording), prompt=request.prompt
            )
            system = request.system if request.system is not None else default_system
            llm_requests.append(
                GenerationRequest(prompt, system=system, answer_form=request.answer_form, replicate=request.replicate)
            )
        distinct = list(dict.fromkeys(llm_requests))
        started = time.monotonic()
        answers = dict(zip(distinct, self.llm(params).generate(distinct, label="llm stage")))
        self.stats["llm_requests"] += len(distinct)
        self.stats["llm_seconds"] += time.monotonic() - started
        return [
            answers[llm_request]
            if request.audio is None
            else join_output(
                transcripts[(request.audio.content_hash, request.replicate)],
                answers[llm_request],
                voices.get((request.audio.content_hash, request.replicate)),
            )
            for request, llm_request in zip(requests, llm_requests)
        ]
