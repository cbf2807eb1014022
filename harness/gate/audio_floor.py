"""The audio floor, a rule of the whole gate (issues 45 and 58): a voice-bias case is measured only when its model
is shown to hear what the case needs it to hear; otherwise the case is unmeasured, never passed.

A model that ignores its audio (audio dropped by a wrong processor argument, a text-only checkpoint behind a speech
API) answers every voice alike, so it would pass every between-group and counterfactual comparison: a pass that says
nothing. Each check says what its cases must hear (:meth:`harness.checks.base.Check.audio_probe`): the
**transcription** probe for WER-type cases (the transcript changes with the recording), the **task** probe for
VIBE-type cases (the answers to an open prompt change with it), none for a case whose group reaches the model in the
text (BASIS explicit and text modes). The probe (:mod:`harness.gate.audio_probe`) asks ``probe_requests_per_task``
recordings with the recording, with the same recording again (the replicate arm, a request of its own), with
silence of its length and with another speaker's recording of other words; its answers are cached like any other
output.

**It measures, not assumes** (issue 58). Whatever the configured decoding (greedy, a backend nondeterministic at
temperature 0, sampling), a model hears when its answers change more under replacement than under replication
(:func:`harness.metrics.audio_dependence.audio_dependence`): the estimated audio-dependent share
``share = max_r [rate(r) - rate(replicate)]`` (change rates against the original answer) must exceed
``1 - audio_blind_share`` and the within-recording permutation test must give ``p < alpha`` over
``max(--permutations, ceil(20 / alpha) - 1)`` relabellings (enough that the smallest p lies well below alpha).

**A pass is judged at full hearing** (issue 58). A model whose answers ignore the audio in a share ``1 - h`` of
requests shows every between-group or between-arm effect multiplied by ``h``: its blind answers are alike for every
voice, so each distribution is the mixture ``h R_g + (1 - h) Q`` and a total variation distance, a difference of
shares or of paired means, is ``h`` times the full-hearing one (a log ratio of error rates at least that much
shrunk when blind answers err at least as often as heard ones). Its test's detectable effect on the full-hearing
scale is likewise ``D / h``. So a case of a model that hears with the estimated share ``h < 1`` passes only when
each contrast with a bar stays within it on the full-hearing scale, ``|estimate| / h <= bar`` (rules ``both`` and
``magnitude``, where a bar decides; on a log scale ``|log estimate| / h <= log bar``) and ``D / h <= bar``, else it
is unmeasured (:func:`full_hearing_reason`): it never passes a case it would fail with full hearing. A fail stays a
fail (dilution only shrinks an effect). The estimate ``h`` is the probe's ``share``, which a replacement that happens
to give the same answer (a coincidence) and a replicate that differs (a nondeterministic backend) can only lower:
the rule errs toward unmeasured. ``benchmarks/bench_blind_share.py`` measures it (docs/statistics.md).

**It fails closed.** When a probe cannot be answered without loading a model where the run may not (an offline run,
a model served from shipped outputs whose exports lack some probe answers), every case that needs that probe is
unmeasured, "audio dependence not measured", naming the missing answers. The floor never loads a model silently.
One exception, a named deviation on every surface: the shipped outputs of a greedy model made before the replicate
arm lack only its replicate answers; their replicate is taken as the original answer (:data:`REPLICATE_ASSUMED`).
Under ``--plan`` the probe's missing requests are planned with the case's own (:class:`~harness.core.errors.RequestsPlanned`),
so that a re-score from the filled plans measures the floor as the in-process run does.

**Once per model and probe per run** (issue 59): a probe's figure, and equally its failure (a model that cannot
load, an extra missing), is kept for the session; every case that needs it is judged from the one probe, and a
failure is one cause (the first case gives it in full, later ones name that case).

Configured by the ``audio_floor`` section of thresholds.yaml (only ``defaults``), :data:`AUDIO_FLOOR_SCHEMA`.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from typing import Any

import pandas as pd

from harness.checks import get_check
from harness.checks.base import TASK_PROBE, TRANSCRIPTION_PROBE
from harness.checks.case import Case
from harness.core.errors import CaseNotMeasured, ModelError, RequestsPlanned
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
from harness.metrics.audio_dependence import ORIGINAL, REPLICATE, AudioDependence, audio_dependence
from harness.records import CaseRecord, Contrast
from harness.results.metadata import AudioProbe
from harness.tasks import TASKS
from harness.tasks.base import SELF_REPORT
from harness.thresholds import (
    HIGHER,
    LOWER,
    SectionThresholds,
    Thresholds,
    at_least,
    in_open_unit_interval,
    setting,
)

AUDIO_FLOOR_SECTION = "audio_floor"
NOT_MEASURED = "audio dependence not measured"
"""How the reason of a case whose model's probe could not be answered begins."""
REPLICATE_ASSUMED = "replicate arm not in the cached outputs: greedy decoding assumed"
"""The deviation of a probe of shipped outputs of a greedy model that lack only the replicate answers (made before
issue 58): each replicate answer is taken as the original's, as a deterministic greedy decoder would answer."""
SMALLEST_P_FACTOR = 20
"""The floor relabels at least ``SMALLEST_P_FACTOR / alpha - 1`` times, so that its smallest p is alpha / 20."""


def in_half_open_unit_interval(value: Any) -> str | None:
    return None if 0 < value <= 1 else "must lie in (0, 1]"


@dataclasses.dataclass(frozen=True, kw_only=True)
class AudioFloorSettings(SectionThresholds):
    """The ``audio_floor`` section (only ``defaults`` apply), typed like a check's and read once
    (:meth:`from_thresholds`): recordings per probed task (and of the transcription probe); the bar on the estimated
    audio-independent share ``1 - share`` (at or above it the model does not hear); the level of the permutation
    test."""

    probe_requests_per_task: int = setting((int,), 24, at_least(1), stricter=HIGHER)
    audio_blind_share: float = setting((int, float), 0.9, in_half_open_unit_interval, stricter=LOWER)
    alpha: float = setting((int, float), 0.01, in_open_unit_interval, stricter=LOWER)

    @classmethod
    def from_thresholds(cls, thresholds: Thresholds) -> AudioFloorSettings:
        return thresholds.section(AUDIO_FLOOR_SECTION, cls)

    def permutations(self, asked: int) -> int:
        """The relabellings of the test: ``max(asked, ceil(SMALLEST_P_FACTOR / alpha) - 1)``."""
        return max(int(asked), math.ceil(SMALLEST_P_FACTOR / self.alpha) - 1)


AUDIO_FLOOR_SCHEMA = AudioFloorSettings.schema()
"""The ``audio_floor`` section's schema (:class:`AudioFloorSettings`)."""


def is_sampled(decoding: DecodingParams) -> bool:
    """Whether the configured decoding samples (``do_sample`` or a temperature above 0): recorded beside the figure,
    never used to choose the test."""
    return bool(decoding.do_sample) or decoding.temperature > 0


@dataclasses.dataclass(frozen=True)
class AudioFloor:
    """One model's probe of one kind (``probe``: transcription or task), asked of ``asked`` (the model, or the
    transcriber that answers for it) under its configured ``decoding`` (greedy or sampled, for the record): the
    test's ``dependence`` and ``blind_reason`` when it does not hear, with the ``deviation`` it was measured under
    (:data:`REPLICATE_ASSUMED`); or ``unmeasured`` (why the probe could not be answered) and no figure."""

    model: str
    probe: str
    asked: str
    decoding: str
    audio_blind_share: float
    alpha: float
    dependence: AudioDependence | None = None
    blind_reason: str | None = None
    unmeasured: str | None = None
    deviation: str | None = None

    @property
    def hears(self) -> bool | None:
        if self.unmeasured is not None:
            return None
        return self.blind_reason is None

    def record(self) -> AudioProbe:
        """The run metadata's entry (``audio_dependence[model][probe]``); the report's first screen reads it."""
        found = self.dependence
        return AudioProbe(
            model=self.model,
            probe=self.probe,
            asked=self.asked,
            decoding=self.decoding,
            requests=None if found is None else found.units,
            p_value=None if found is None else found.p_value,
            permutations=None if found is None else found.permutations,
            audio_blind_share=self.audio_blind_share,
            hears=self.hears,
            unmeasured=self.unmeasured,
            audio_dependent_share=None if found is None else found.share,
            changed=None if found is None else dict(found.changed),
            alpha=self.alpha,
            deviation=self.deviation,
        )


class AudioFloorRule:
    """The gate's audio floor for one run: each (model, probe) asked once, its figure or its failure kept, and the
    reason a case cannot be measured. ``may_load(model)``: whether a missing probe answer of ``model`` may be
    generated (false in an offline run and for a model served from shipped outputs)."""

    def __init__(self, context: RunContext, settings: AudioFloorSettings, may_load: Callable[[str], bool]):
        self.context = context
        self.settings = settings
        self.may_load = may_load
        self._floors: dict[tuple[str, str], AudioFloor] = {}
        self._planned: dict[tuple[str, str], RequestsPlanned] = {}
        self._failed: dict[tuple[str, str], ModelError] = {}
        self.probes_asked = 0
        """How many probes this session asked (each (model, probe) once, whether it was answered or failed)."""

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
        ``model``) when its model's probe could not be answered, its outputs missing where no model may load or its
        model failing to load; :class:`~harness.core.errors.CaseNotMeasured` (cause ``input``) when the model does
        not hear."""
        reason = self.reason(case, tasks)
        if reason is None:
            return
        if reason.startswith(NOT_MEASURED):
            raise ModelError(reason, source=case.model)
        raise CaseNotMeasured(reason)

    def full_hearing_message(self, case: Case, record: CaseRecord, tasks: Sequence[str] = ()) -> str | None:
        """Why ``record``, which passed, is unmeasured on the full-hearing scale of its model's audio-dependent share
        (:func:`full_hearing_reason`), or None: for a failed case, one that needs no probe or one whose model hears
        every request. The gate raises :class:`~harness.core.errors.DesignCannotFail` with it (a release
        comparison's regression still fails the case: dilution hides an effect, it never makes one)."""
        probe = get_check(case.check).audio_probe(case)
        if probe is None or not record.passed or record.decision is None:
            return None
        found = self.floor(case.model, probe, tasks).dependence
        if found is None:
            return None
        reason = full_hearing_reason(record.decision.contrasts, found.share, record.decision.rule)
        if reason is None:
            return None
        return (
            f"{case.id}: did not fail, but {case.model} hears its audio in an estimated {100 * found.share:.0f}% of "
            f"requests ({probe} probe), so each effect it shows is diluted to that share: {reason}: unmeasured"
        )

    def floor(self, model: str, probe: str, tasks: Sequence[str] = ()) -> AudioFloor:
        """The probe of kind ``probe`` of ``model``, asked once per run (a failure to answer it, a model that cannot
        load, is kept as its ``unmeasured`` reason for the run's metadata and raised again, the same error, for every
        case that needs the probe: never retried); the task probe asks ``tasks`` (default: the
        run's first task). Under ``--plan`` its planned requests are raised again for every case that needs it."""
        key = (model, probe)
        if key in self._planned:
            raise self._planned[key]
        if key in self._failed:
            raise self._failed[key]  # the same error, so every case names the same cause (a server, a model)
        if key not in self._floors:
            self.probes_asked += 1
            try:
                self._floors[key] = self._probe(model, probe, tuple(tasks))
            except RequestsPlanned as planned:
                self._planned[key] = planned
                raise
            except ModelError as error:
                self._floors[key] = dataclasses.replace(
                    self._unprobed(model, probe), unmeasured=f"the probe could not be asked: {error}"
                )
                # The error itself (its kind and source: a server, a model), told as the probe's failure.
                failed = type(error).__new__(type(error))  # its class and attributes, without its __init__'s arguments
                failed.__dict__.update(error.__dict__)
                failed.args = (f"{NOT_MEASURED} for {model} ({probe} probe): the probe could not be asked: {error}",)
                self._failed[key] = failed
                raise failed from error
        return self._floors[key]

    def probed(self) -> dict[str, dict[str, AudioProbe]]:
        """Model -> probe -> :meth:`AudioFloor.record`, for the probes this process asked (run metadata)."""
        probed: dict[str, dict[str, AudioProbe]] = {}
        for (model, probe), floor in self._floors.items():
            probed.setdefault(model, {})[probe] = floor.record()
        return probed

    def _asked(self, model: str, probe: str) -> tuple[Any, str | None]:
        """Who answers the probe (the model, or its transcriber) and with what prompt (None: the tasks' own)."""
        if probe == TRANSCRIPTION_PROBE:
            return self.context.transcriber(model)
        if probe == TASK_PROBE:
            return self.context.model(model), None
        raise ValueError(f"audio floor: unknown probe {probe!r}; known: {TRANSCRIPTION_PROBE}, {TASK_PROBE}")

    def _unprobed(self, model: str, probe: str) -> AudioFloor:
        """The floor's settings and names before any answer: the asked model's name when it can be built."""
        settings, asked, decoding = self.settings, model, "greedy"
        try:
            cached = self._asked(model, probe)[0]
            asked = model if cached.spec == model else f"{cached.spec}, the transcriber of {model}"
            decoding = "sampled" if is_sampled(cached.decoding) else "greedy"
        except ModelError:
            pass
        return AudioFloor(model, probe, asked, decoding, settings.audio_blind_share, settings.alpha)

    def _probe(self, model: str, probe: str, tasks: tuple[str, ...]) -> AudioFloor:
        context, settings = self.context, self.settings
        asked, prompt = self._asked(model, probe)
        if probe == TASK_PROBE:
            tasks = tasks or context.tasks[:1] or tuple(sorted(TASKS))[:1]
        floor = self._unprobed(model, probe)
        if not context.corpora:
            return dataclasses.replace(floor, unmeasured="the run has no corpus whose recordings could probe it")
        corpus_name, corpus = next(iter(context.corpora.items()))
        per_task, seed = settings.probe_requests_per_task, context.seed
        if probe == TRANSCRIPTION_PROBE:
            built = transcription_probe_requests(corpus, prompt or "", per_task, seed=seed)
        else:
            built = task_probe_requests(corpus, {task: TASKS[task] for task in tasks}, per_task, seed=seed)
        answered = self._answers(model, asked, built, probe, tasks, corpus_name)
        if isinstance(answered, str):
            return dataclasses.replace(floor, unmeasured=answered)
        answers, deviation = answered
        read = [
            read_transcript(answer) if probe == TRANSCRIPTION_PROBE else read_task_answer(answer, TASKS[stratum])
            for answer, stratum in zip(answers, built.rows["stratum"])
        ]
        table = built.rows.assign(value=[value for value, _ in read])
        dependence = audio_dependence(
            table,
            settings.permutations(context.permutations),
            seed=derived_seed(context.seed, AUDIO_FLOOR_SECTION, model, probe),
        )
        floor = dataclasses.replace(floor, dependence=dependence, deviation=deviation)
        return dataclasses.replace(floor, blind_reason=blind_reason(floor, dependence))

    def _answers(
        self, model: str, asked: Any, built: ProbeRequests, probe: str, tasks: Sequence[str], corpus_name: str
    ) -> tuple[list[str], str | None] | str:
        """The probe's answers and the deviation they were had under (:data:`REPLICATE_ASSUMED`, else None), or,
        when ``model`` may not be loaded to make those the cache lacks, which are missing, in words. A transcriber
        that is a stage of ``model`` (a cascade's ASR stage) has a stand-in for an entry of its own it lacks: what
        that stage heard of the same audio inside ``model``'s own cached answer to the task probe (the ``heard``
        line of :meth:`~harness.gate.context.RunContext.outputs`; the stage, its decoding, the audio and the
        replicate are the same, only the cache entry differs)."""
        context, label = self.context, f"audio floor {probe} probe"
        if (
            self.may_load(model) or asked.loaded or context.pool.planner is not None
        ):  # --plan: the missing ones are planned
            return list(context.outputs(asked, built.requests, label)["answer"]), None
        answers: list[str | None] = [None] * len(built.requests)
        self._fill(answers, asked, built.requests, range(len(answers)), "answer", label)
        own = context.model(model)
        if probe == TRANSCRIPTION_PROBE and asked is not own:
            for task in [*tasks, *context.tasks]:
                absent = [index for index, answer in enumerate(answers) if answer is None]
                if not absent:
                    break
                stand_ins = [
                    dataclasses.replace(
                        TASKS[task].request("", built.requests[i].audio, protocol=SELF_REPORT),
                        replicate=built.requests[i].replicate,
                    )
                    for i in absent
                ]
                self._fill(answers, own, stand_ins, absent, "heard", f"{label} (the {task} answers' transcripts)")
        absent = pd.Series([answer is None for answer in answers], index=built.rows.index)
        if not absent.any():
            return [str(answer) for answer in answers], None
        if self._replicate_assumable(model, asked, built, absent):
            original = {
                request: answers[position]
                for position, (request, audio) in enumerate(zip(built.rows["request"], built.rows["audio"]))
                if audio == ORIGINAL
            }
            filled = [
                original[request] if answer is None else answer
                for answer, request in zip(answers, built.rows["request"])
            ]
            return [str(answer) for answer in filled], REPLICATE_ASSUMED
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

    def _replicate_assumable(self, model: str, asked: Any, built: ProbeRequests, absent: pd.Series) -> bool:
        """Whether the missing answers are only replicate answers of ``model``'s shipped outputs under greedy
        decoding (:data:`REPLICATE_ASSUMED`): every other arm is answered."""
        return (
            bool(self.context.config.bundled_exports.get(model))
            and not is_sampled(asked.decoding)
            and bool((built.rows.loc[absent, "audio"] == REPLICATE).all())
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


def blind_reason(floor: AudioFloor, found: AudioDependence) -> str | None:
    """The unmeasured reason of every case needing ``floor``'s probe when its answers do not change more under
    replacement than under replication: the estimated audio-independent share ``1 - share`` at or above
    ``audio_blind_share``, or the permutation p at or above ``alpha``; None when it hears."""
    if found.blind_share < floor.audio_blind_share and found.p_value < floor.alpha:
        return None
    rates = ", ".join(f"{100 * rate:.0f}% with {arm}" for arm, rate in found.changed.items())
    what = "transcripts" if floor.probe == TRANSCRIPTION_PROBE else "extracted answers"
    return (
        f"{floor.model} does not hear the audio ({floor.probe} probe of {floor.asked}): its {what} changed no more "
        f"under replacement than under replication (changed: {rates}; estimated audio-dependent share "
        f"{100 * found.share:.0f}% of {found.units} recordings, bar: above {100 * (1 - floor.audio_blind_share):.0f}% "
        f"by audio_blind_share {100 * floor.audio_blind_share:.0f}%; permutation p = {found.p_value:.3g} over "
        f"{found.permutations} relabellings within recording, alpha {floor.alpha:g}"
        f"{'' if floor.deviation is None else '; ' + floor.deviation}), so no voice-bias case of it that needs this "
        "probe can be measured"
    )


BAR_DECIDES = ("both", "magnitude")
"""The decision rules under which an estimate beyond its bar can fail a case (so its full-hearing scale matters)."""


def full_hearing_reason(contrasts: Sequence[Contrast], share: float, rule: str | None = "both") -> str | None:
    """Why a passing case whose model hears an estimated ``share`` (``h``, 0-1) of its requests cannot pass on the
    full-hearing scale, or None (module docstring, "A pass is judged at full hearing"): some contrast with a bar has
    ``|estimate| / h`` beyond it (rules :data:`BAR_DECIDES`) or a detectable effect ``D / h`` beyond it. On a log
    scale (a ratio contrast, its sensitivity's ``log_scale``) the distances are ``|log estimate|``, ``log D`` and
    ``log bar``. None when ``h >= 1``."""
    if not share < 1:
        return None
    beyond = []
    for contrast in contrasts:
        if contrast.bar is None or not math.isfinite(contrast.bar):
            continue
        log_scale = bool(getattr(contrast.sensitivity, "log_scale", False))

        def full(value: float, log_scale: bool = log_scale) -> float:
            if log_scale:
                return math.exp(abs(math.log(value)) / share) if value > 0 else math.inf
            return abs(value) / max(share, 1e-12)

        estimate, detectable = contrast.estimate, contrast.detectable
        if rule in BAR_DECIDES and estimate is not None and math.isfinite(estimate):
            if full(estimate) > contrast.bar:
                beyond.append(
                    f"{contrast.label}: {estimate:.3g} is {full(estimate):.3g} at full hearing, beyond its bar "
                    f"{contrast.bar:.3g}"
                )
                continue
        if detectable is not None and math.isfinite(detectable) and full(detectable) > contrast.bar:
            beyond.append(
                f"{contrast.label}: detects {detectable:.3g} at 80% power, {full(detectable):.3g} at full hearing, "
                f"beyond its bar {contrast.bar:.3g}"
            )
    return "; ".join(beyond) or None
