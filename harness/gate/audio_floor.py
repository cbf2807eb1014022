"""The audio floor, a rule of the whole gate (issue 45): a voice-bias case is measured only when its model is shown
to hear what the case needs it to hear; otherwise the case is unmeasured, never passed.

A model that ignores its audio (audio dropped by a wrong processor argument, a text-only checkpoint behind a speech
API) answers every voice alike, so it would pass every between-group and counterfactual comparison: a pass that says
nothing. Each check says what its cases must hear (:meth:`harness.checks.base.Check.audio_probe`): the
**transcription** probe for WER-type cases (the transcript changes with the recording), the **task** probe for
VIBE-type cases (the answers to an open prompt change with it), none for a case whose group reaches the model in the
text (BASIS explicit and text modes). The probe (:mod:`harness.gate.audio_probe`) asks ``probe_requests_per_task``
recordings with the recording, silence of its length and another speaker's recording of other words; its answers
are cached like any other output.

* **Greedy decoding**: a model does not hear when its read answers (extracted values, normalised transcripts) are
  unchanged by every replacement in at least ``audio_blind_share`` of the requests
  (:func:`harness.metrics.audio_dependence.audio_dependence`).
* **Sampled decoding** (``do_sample`` or ``temperature > 0`` in the asked model's decoding): a model does not hear
  unless the answers with a recording differ in distribution from those with silence, permutation p <
  ``sampled_alpha`` over ``--permutations`` relabellings
  (:func:`harness.metrics.audio_dependence.sampled_audio_dependence`).

**It fails closed.** When a probe cannot be answered without loading a model where the run may not (an offline run,
a model served from shipped outputs whose exports lack some probe answers), every case that needs that probe is
unmeasured, "audio dependence not measured", naming the missing answers. The floor never loads a model silently.
Under ``--plan`` the probe's missing requests are planned with the case's own (:class:`~harness.core.errors.RequestsPlanned`),
so that a re-score from the filled plans measures the floor as the in-process run does.

Configured by the ``audio_floor`` section of thresholds.yaml (only ``defaults``), :data:`AUDIO_FLOOR_SCHEMA`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import pandas as pd

from harness.checks import get_check
from harness.checks.base import TASK_PROBE, TRANSCRIPTION_PROBE
from harness.checks.case import Case
from harness.core.errors import CaseNotMeasured, ModelError
from harness.core.requests import DecodingParams
from harness.core.values import derived_seed
from harness.gate.audio_probe import (
    ProbeRequests,
    read_task_answer,
    read_transcript,
    task_probe_requests,
    transcription_probe_requests,
)
from harness.gate.context import RunContext
from harness.metrics.audio_dependence import (
    AudioDependence,
    SampledAudioDependence,
    audio_dependence,
    sampled_audio_dependence,
)
from harness.results.metadata import AudioProbe
from harness.tasks import TASKS
from harness.tasks.base import SELF_REPORT
from harness.thresholds import HIGHER, LOWER, ThresholdKey, Thresholds, ThresholdSchema, at_least, in_open_unit_interval

AUDIO_FLOOR_SECTION = "audio_floor"
NOT_MEASURED = "audio dependence not measured"
"""How the reason of a case whose model's probe could not be answered begins."""


def in_half_open_unit_interval(value: Any) -> str | None:
    return None if 0 < value <= 1 else "must lie in (0, 1]"


AUDIO_FLOOR_SCHEMA = ThresholdSchema(
    keys={
        "probe_requests_per_task": ThresholdKey((int,), 24, at_least(1), HIGHER),
        "audio_blind_share": ThresholdKey((int, float), 0.9, in_half_open_unit_interval, LOWER),
        "sampled_alpha": ThresholdKey((int, float), 0.01, in_open_unit_interval, LOWER),
    }
)
"""The ``audio_floor`` section: recordings per probed task (and of the transcription probe), the greedy bar and the
level of the sampled test."""


@dataclasses.dataclass(frozen=True)
class AudioFloorSettings:
    """The ``audio_floor`` section, read once (:data:`AUDIO_FLOOR_SCHEMA`)."""

    probe_requests_per_task: int
    audio_blind_share: float
    sampled_alpha: float

    @classmethod
    def from_thresholds(cls, thresholds: Thresholds) -> AudioFloorSettings:
        values = thresholds.values(AUDIO_FLOOR_SECTION, AUDIO_FLOOR_SCHEMA, None, "")
        return cls(
            probe_requests_per_task=int(values["probe_requests_per_task"]),
            audio_blind_share=float(values["audio_blind_share"]),
            sampled_alpha=float(values["sampled_alpha"]),
        )


def is_sampled(decoding: DecodingParams) -> bool:
    """Whether equal inputs may give different answers: sampling on, or a temperature above 0."""
    return bool(decoding.do_sample) or decoding.temperature > 0


@dataclasses.dataclass(frozen=True)
class AudioFloor:
    """One model's probe of one kind (``probe``: transcription or task), asked of ``asked`` (the model, or the
    transcriber that answers for it) under ``decoding`` (greedy or sampled): the exact test's ``dependence`` or the
    sampled test's ``sampled``, and ``blind_reason`` when it does not hear; or ``unmeasured`` (why the probe could
    not be answered) and no figure."""

    model: str
    probe: str
    asked: str
    decoding: str
    audio_blind_share: float
    sampled_alpha: float
    dependence: AudioDependence | None = None
    sampled: SampledAudioDependence | None = None
    blind_reason: str | None = None
    unmeasured: str | None = None

    @property
    def hears(self) -> bool | None:
        if self.unmeasured is not None:
            return None
        return self.blind_reason is None

    def record(self) -> AudioProbe:
        """The run metadata's entry (``audio_dependence[model][probe]``); the report's first screen reads it."""
        exact, sampled = self.dependence, self.sampled
        return AudioProbe(
            model=self.model,
            probe=self.probe,
            asked=self.asked,
            decoding=self.decoding,
            share=None if exact is None else exact.share,
            unchanged=None if exact is None else dict(exact.unchanged),
            requests=exact.requests if exact is not None else (None if sampled is None else sampled.requests),
            statistic=None if sampled is None else sampled.statistic,
            p_value=None if sampled is None else sampled.p_value,
            permutations=None if sampled is None else sampled.permutations,
            audio_blind_share=self.audio_blind_share,
            sampled_alpha=self.sampled_alpha,
            hears=self.hears,
            unmeasured=self.unmeasured,
        )


class AudioFloorRule:
    """The gate's audio floor for one run: each (model, probe) asked once, and the reason a case cannot be measured.
    ``may_load(model)``: whether a missing probe answer of ``model`` may be generated (false in an offline run and
    for a model served from shipped outputs)."""

    def __init__(self, context: RunContext, settings: AudioFloorSettings, may_load: Callable[[str], bool]):
        self.context = context
        self.settings = settings
        self.may_load = may_load
        self._floors: dict[tuple[str, str], AudioFloor] = {}

    def reason(self, case: Case, tasks: Sequence[str] = ()) -> str | None:
        """Why ``case`` cannot be measured: its model's probe (of the kind its check asks,
        :meth:`~harness.checks.base.Check.audio_probe`; ``tasks``: the VIBE tasks of the task probe) could not be
        answered, or shows that it does not hear; None when it hears or the case needs no audio."""
        probe = get_check(case.check).audio_probe(case)
        if probe is None:
            return None
        floor = self.floor(case.model, probe, tasks)
        if floor.unmeasured is not None:
            return f"{NOT_MEASURED} for {case.model} ({probe} probe): {floor.unmeasured}"
        return floor.blind_reason

    def require_hearing(self, case: Case, tasks: Sequence[str] = ()) -> None:
        """Raise when ``case`` cannot be measured (:meth:`reason`): :class:`~harness.core.errors.ModelError` (cause
        ``model``) when its model's probe could not be answered, its outputs missing where no model may load;
        :class:`~harness.core.errors.CaseNotMeasured` (cause ``input``) when the model does not hear."""
        reason = self.reason(case, tasks)
        if reason is None:
            return
        if reason.startswith(NOT_MEASURED):
            raise ModelError(reason, source=case.model)
        raise CaseNotMeasured(reason)

    def floor(self, model: str, probe: str, tasks: Sequence[str] = ()) -> AudioFloor:
        """The probe of kind ``probe`` of ``model`` (asked once per run); the task probe asks ``tasks`` (default:
        the run's first task)."""
        if (model, probe) not in self._floors:
            self._floors[(model, probe)] = self._probe(model, probe, tuple(tasks))
        return self._floors[(model, probe)]

    def probed(self) -> dict[str, dict[str, AudioProbe]]:
        """Model -> probe -> :meth:`AudioFloor.record`, for the probes this process asked (run metadata)."""
        probed: dict[str, dict[str, AudioProbe]] = {}
        for (model, probe), floor in self._floors.items():
            probed.setdefault(model, {})[probe] = floor.record()
        return probed

    def _probe(self, model: str, probe: str, tasks: tuple[str, ...]) -> AudioFloor:
        context, settings = self.context, self.settings
        if probe == TRANSCRIPTION_PROBE:
            asked, prompt = context.transcriber(model)
        elif probe == TASK_PROBE:
            asked, prompt = context.model(model), None
            tasks = tasks or context.tasks[:1] or tuple(sorted(TASKS))[:1]
        else:
            raise ValueError(f"audio floor: unknown probe {probe!r}; known: {TRANSCRIPTION_PROBE}, {TASK_PROBE}")
        sampled = is_sampled(asked.decoding)
        floor = AudioFloor(
            model=model,
            probe=probe,
            asked=model if asked.spec == model else f"{asked.spec}, the transcriber of {model}",
            decoding="sampled" if sampled else "greedy",
            audio_blind_share=settings.audio_blind_share,
            sampled_alpha=settings.sampled_alpha,
        )
        if not context.corpora:
            return dataclasses.replace(floor, unmeasured="the run has no corpus whose recordings could probe it")
        corpus_name, corpus = next(iter(context.corpora.items()))
        per_task, seed = settings.probe_requests_per_task, context.seed
        if probe == TRANSCRIPTION_PROBE:
            # silence only for a sampling recogniser's distributional test: the exact test compares recordings
            built = transcription_probe_requests(corpus, prompt, per_task, seed=seed, silence=sampled)
        else:
            built = task_probe_requests(corpus, {task: TASKS[task] for task in tasks}, per_task, seed=seed)
        answers = self._answers(model, asked, built, probe, tasks, corpus_name)
        if isinstance(answers, str):
            return dataclasses.replace(floor, unmeasured=answers)
        read = [
            read_transcript(answer) if probe == TRANSCRIPTION_PROBE else read_task_answer(answer, TASKS[stratum])
            for answer, stratum in zip(answers, built.rows["stratum"])
        ]
        table = built.rows.assign(value=[value for value, _ in read], tokens=[tokens for _, tokens in read])
        if sampled:
            result = sampled_audio_dependence(
                table,
                context.permutations,
                seed=derived_seed(context.seed, AUDIO_FLOOR_SECTION, model, probe),
            )
            return dataclasses.replace(floor, sampled=result, blind_reason=sampled_blind_reason(floor, result))
        dependence = audio_dependence(table)
        return dataclasses.replace(floor, dependence=dependence, blind_reason=greedy_blind_reason(floor, dependence))

    def _answers(
        self, model: str, asked: Any, built: ProbeRequests, probe: str, tasks: Sequence[str], corpus_name: str
    ) -> list[str] | str:
        """The probe's answers, or, when ``model`` may not be loaded to make those the cache lacks, which are
        missing, in words. A transcriber that is a stage of ``model`` (a cascade's ASR stage) has a stand-in for
        an entry of its own it lacks: what that stage heard of the same audio inside ``model``'s own cached answer
        to the task probe (the ``heard`` line of :meth:`~harness.gate.context.RunContext.outputs`; the stage, its
        decoding and the audio are the same, only the cache entry differs)."""
        context, label = self.context, f"audio floor {probe} probe"
        if (
            self.may_load(model) or asked.loaded or context.pool.planner is not None
        ):  # --plan: the missing ones are planned
            return list(context.outputs(asked, built.requests, label)["answer"])
        answers: list[str | None] = [None] * len(built.requests)
        self._fill(answers, asked, built.requests, range(len(answers)), "answer", label)
        own = context.model(model)
        if probe == TRANSCRIPTION_PROBE and asked is not own:
            for task in [*tasks, *context.tasks]:
                absent = [index for index, answer in enumerate(answers) if answer is None]
                if not absent:
                    break
                stand_ins = [TASKS[task].request("", built.requests[i].audio, protocol=SELF_REPORT) for i in absent]
                self._fill(answers, own, stand_ins, absent, "heard", f"{label} (the {task} answers' transcripts)")
        absent = pd.Series([answer is None for answer in answers], index=built.rows.index)
        if not absent.any():
            return [str(answer) for answer in answers]
        rows = built.rows[absent]
        by_variant = ", ".join(
            f"{count} with {variant}" for variant, count in rows["audio"].value_counts().sort_index().items()
        )
        first = rows.iloc[0]
        why = (
            "the run is offline: import the cache export of a run that asked the probe, or drop --offline"
            if context.config.offline
            else "it is served from shipped outputs that lack them: keep the packaged audio_floor settings, or "
            "rebuild the exports (scripts/build_demo_outputs.py)"
        )
        return (
            f"{int(absent.sum())} of its {len(answers)} probe answers on {corpus_name} from {asked.spec} are not cached "
            f"({by_variant}; first: {first['request']} with {first['audio']}), and the floor loads no model ({why})"
        )

    def _fill(
        self,
        answers: list[str | None],
        cached: Any,
        requests: Sequence[Any],
        positions: Sequence[int],
        column: str,
        label: str,
    ) -> None:
        """Set ``answers[positions[i]]`` to the ``column`` of ``cached``'s answer to ``requests[i]`` where the cache
        holds it (read through the run, so that an export of the run's cache holds it too)."""
        stored = set(self.context.cache.lookup(cached.keys(requests)))
        held = [i for i, key in enumerate(cached.keys(requests)) if key in stored]
        if not held:
            return
        read = self.context.outputs(cached, [requests[i] for i in held], label)[column]
        for i, value in zip(held, read):
            if value is not None:
                answers[positions[i]] = value


def greedy_blind_reason(floor: AudioFloor, dependence: AudioDependence) -> str | None:
    """The unmeasured reason of every case needing ``floor``'s probe when its greedy answers survive each
    replacement in at least ``audio_blind_share`` of the requests; None when it hears."""
    if dependence.share < floor.audio_blind_share:
        return None
    survived = ", ".join(f"{100 * share:.0f}% with {name}" for name, share in dependence.unchanged.items())
    return (
        f"{floor.model} does not hear the audio ({floor.probe} probe of {floor.asked}): whatever replaced the audio, "
        f"its {'transcripts' if floor.probe == TRANSCRIPTION_PROBE else 'extracted answers'} were unchanged in at "
        f"least {100 * dependence.share:.0f}% of {dependence.requests} probe requests ({survived}; audio_blind_share "
        f"{100 * floor.audio_blind_share:.0f}%), so no voice-bias case of it that needs this probe can be measured"
    )


def sampled_blind_reason(floor: AudioFloor, result: SampledAudioDependence) -> str | None:
    """The unmeasured reason when the sampled answers with a recording do not differ in distribution from those
    with silence (p >= ``sampled_alpha``); None when they do."""
    if result.p_value < floor.sampled_alpha:
        return None
    return (
        f"{floor.model} does not hear the audio ({floor.probe} probe of {floor.asked}, sampled decoding): its answers "
        f"with a recording do not differ in distribution from those with silence (total variation {result.statistic:.3f}, "
        f"permutation p = {result.p_value:.3g} over {result.permutations} relabellings, {result.requests} requests; "
        f"sampled_alpha {floor.sampled_alpha:g}), so no voice-bias case of it that needs this probe can be measured"
    )
