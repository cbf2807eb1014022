"""The admission filters of BASIS-Bench (Appendix A.1.3, A.2 "Speech Synthesis"), each switchable and recorded.

* **WER = 0** (:func:`wer_filter`): the ASR (``--asr``, default ``whisper:tiny.en``, the demo's; any model spec)
  transcribes each clip, and a clip is admitted only when ``WER = 100 (S + D + I) / N`` is 0 after Whisper's English
  normaliser on both sides (:func:`harness.metrics.wer.word_errors`), as BASIS discarded every clip with WER > 0 by
  whisper-large-v3.
* **Perceived group** (:func:`perceived_voices`): the perceiver (``--perceiver``, default ``voice:praat``: Praat's
  median F0 read as "a man" < 160 Hz <= "a woman" < 255 Hz <= "a child", :mod:`harness.models.voice_profile`; or any
  model spec, asked the counterfactual check's perceiver prompt) labels every clip; a voice is kept only if the
  share of its clips perceived as its declared group on ``--dimension`` is at least ``min_share`` (default 0.8, the
  counterfactual check's ``min_perceived_share``). A voice that fails is dropped whole, named and counted (BASIS
  checked each voice's perceived age with a classifier).
* **Outliers** (:func:`outliers`): per group of ``--dimension``, the admitted clips whose duration or median F0 lies
  outside the box plot's whiskers ``[Q1 - 1.5 IQR, Q3 + 1.5 IQR]`` (Tukey) are listed in the build report for a person
  to look at (BASIS inspected box-plot outliers by hand); nothing is dropped.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from harness.core.errors import ModelError
from harness.core.parallel import map_in_processes
from harness.core.requests import Audio, DecodingParams, GenerationRequest
from harness.metrics.wer import normalise_text, word_errors
from harness.models import build_backend, missing_model_packages
from harness.models.voice_profile import describe_voice, measure_voice
from harness.suite.errors import SuiteError

DEFAULT_ASR = "whisper:tiny.en"
DEFAULT_PERCEIVER = "voice:praat"
DEFAULT_MIN_SHARE = 0.8
WHISKER_IQR = 1.5
VOICE_PRAAT_HEARS = ("male", "female", "child")

Transcriber = Callable[[Sequence[np.ndarray]], list[str]]
"""16 kHz clips -> their transcripts."""
Perceiver = Callable[[Sequence[np.ndarray], Sequence[str]], list[str | None]]
"""16 kHz clips and the groups to choose from -> each clip's perceived group (None: could not tell)."""


@dataclasses.dataclass(frozen=True)
class ClipMeasures:
    """Duration (s), median F0 (Hz, None when unvoiced) and ``voice:praat``'s perceived group of one clip."""

    duration_s: float
    f0_median_hz: float | None
    praat_group: str | None


def measure_clip(job: tuple[str, str]) -> ClipMeasures:
    """One clip's :class:`ClipMeasures` (a worker's job: the clip's FLAC path and the measuring code's fingerprint),
    kept beside the clip (``<recipe>.measures.json``) under that fingerprint, so that a rebuild reads them."""
    import json

    import soundfile as sf

    from harness.perception import group_from_voice_description

    path, fingerprint = job
    kept = Path(path).with_suffix(".measures.json")
    if kept.is_file():
        with contextlib.suppress(ValueError, KeyError, TypeError):
            record = json.loads(kept.read_text())
            if record.pop("fingerprint") == fingerprint:
                return ClipMeasures(**record)
    samples, rate = sf.read(path, dtype="float64")
    measures = measure_voice(samples, rate)
    result = ClipMeasures(
        len(samples) / rate, measures.f0_median_hz, group_from_voice_description(describe_voice(measures))
    )
    temporary = kept.with_name(f".{kept.name}.{os.getpid()}")
    temporary.write_text(json.dumps({"fingerprint": fingerprint, **dataclasses.asdict(result)}))
    os.replace(temporary, kept)
    return result


def measure_clips(paths: Sequence[str], progress: bool = True) -> list[ClipMeasures]:
    """Every clip's measures over the cores, read back where a build already measured the clip with this code
    (:func:`harness.perception.voice_praat_labeller`: voice:praat's code and thresholds)."""
    from harness.perception import voice_praat_labeller

    fingerprint = voice_praat_labeller()
    return map_in_processes(measure_clip, [(path, fingerprint) for path in paths], "duration and F0", progress=progress)


WITHOUT = {"--asr": "--no-wer-filter", "--perceiver": "--no-perceived-filter"}
"""The option that builds without the filter a role's model serves."""


def model_of(spec: str, role: str):
    """The loaded model of ``spec`` for ``role`` (``--asr``, ``--perceiver``); an error names the spec, the packages
    it lacks and the option that builds without it (checked before any clip is made)."""
    without = f"; or build without it: {WITHOUT[role]}" if role in WITHOUT else ""
    reason = missing_model_packages(spec)
    try:
        backend = build_backend(spec)
        reason = reason or backend.unavailable()
        if reason:
            raise SuiteError(f"{role} {spec}: {reason}{without}")
        return backend, backend.load()
    except ModelError as exc:
        raise SuiteError(f"{role} {spec}: {' '.join(str(exc).split())}{without}") from exc


def spec_transcriber(spec: str) -> tuple[Transcriber, str]:
    """A transcriber asking model ``spec`` (an empty prompt: a recogniser's transcript), and its fingerprint."""
    backend, model = model_of(spec, "--asr")

    def transcribe(clips: Sequence[np.ndarray]) -> list[str]:
        requests = [GenerationRequest("", Audio(np.asarray(clip, dtype=np.float32))) for clip in clips]
        return list(model.generate(requests, DecodingParams()))

    return transcribe, backend.fingerprint()


def spec_perceiver(spec: str) -> Perceiver:
    """A perceiver asking model ``spec`` the counterfactual check's perceiver prompt, its answer read as the one
    group it names."""
    from harness.checks.counterfactual.tables import PERCEIVER_PROMPT, named_group

    _, model = model_of(spec, "--perceiver")

    def perceive(clips: Sequence[np.ndarray], groups: Sequence[str]) -> list[str | None]:
        prompt = PERCEIVER_PROMPT.format(groups=" or a ".join(groups), choices=" or ".join(groups))
        requests = [GenerationRequest(prompt, Audio(np.asarray(clip, dtype=np.float32))) for clip in clips]
        return [named_group(answer, groups) for answer in model.generate(requests, DecodingParams())]

    return perceive


@dataclasses.dataclass(frozen=True)
class WerResult:
    """Per clip key: ``transcripts`` and ``wer`` (percent); ``dropped``: the keys with WER > 0."""

    transcripts: dict[str, str]
    wer: dict[str, float]
    dropped: tuple[str, ...]


def wer_filter(texts: dict[str, str], transcripts: dict[str, str]) -> WerResult:
    """Admit a clip only when its transcript has WER 0 against its text after Whisper's normaliser (both sides); a
    text whose normalised form is empty cannot be checked and is dropped."""
    rates = {}
    for key, text in texts.items():
        rates[key] = 100.0 if not normalise_text(text).strip() else word_errors(text, transcripts[key]).wer
    dropped = tuple(key for key, rate in rates.items() if rate > 0)
    return WerResult(dict(transcripts), rates, dropped)


@dataclasses.dataclass(frozen=True)
class VoicePerception:
    """One voice's perceived-group count on the filter's dimension and whether it was kept."""

    speaker: str
    group: str
    clips: int
    perceived_as_group: int
    share: float
    kept: bool
    perceived: dict[str, int]
    """Perceived label (``(none)`` when the perceiver could not tell) -> clips."""


def perceived_voices(
    declared: dict[str, str], clip_speaker: dict[str, str], perceived: dict[str, str | None], min_share: float
) -> list[VoicePerception]:
    """Per voice that reads a clip (``declared``: speaker -> its group), the share of its clips (``clip_speaker``: clip key -> speaker)
    that the perceiver labelled its group (``perceived``: clip key -> label); kept when ``share >= min_share``."""
    rows = []
    for speaker, group in declared.items():
        labels = [perceived[key] for key, owner in clip_speaker.items() if owner == speaker]
        if not labels:  # a voice that reads nothing in this suite is neither heard nor dropped
            continue
        hits = sum(label == group for label in labels)
        share = hits / len(labels) if labels else 0.0
        counts: dict[str, int] = {}
        for label in labels:
            counts[label or "(none)"] = counts.get(label or "(none)", 0) + 1
        rows.append(VoicePerception(speaker, group, len(labels), hits, share, share >= min_share, counts))
    return rows


def whiskers(values: Sequence[float]) -> tuple[float, float]:
    """Tukey's box-plot whiskers ``(Q1 - 1.5 IQR, Q3 + 1.5 IQR)``, quartiles by linear interpolation."""
    first, third = np.percentile(np.asarray(values, dtype=float), [25, 75])
    spread = third - first
    return float(first - WHISKER_IQR * spread), float(third + WHISKER_IQR * spread)


def outliers(groups: dict[str, str], measures: dict[str, ClipMeasures], speakers: dict[str, str]) -> list[dict]:
    """Per group (``groups``: clip key -> group), the clips whose duration or median F0 lies outside the group's
    whiskers: ``{clip, speaker, group, measure, value, low, high}`` rows, for the build report (none dropped)."""
    rows = []
    for group in sorted(set(groups.values())):
        keys = [key for key, member in groups.items() if member == group]
        for measure in ("duration_s", "f0_median_hz"):
            values = {key: getattr(measures[key], measure) for key in keys}
            values = {key: value for key, value in values.items() if value is not None}
            if len(values) < 4:
                continue
            low, high = whiskers(list(values.values()))
            for key, value in values.items():
                if not low <= value <= high:
                    rows.append(
                        {"clip": key, "speaker": speakers[key], "group": group, "measure": measure,
                         "value": round(value, 3), "low": round(low, 3), "high": round(high, 3)}
                    )  # fmt: skip
    return rows
