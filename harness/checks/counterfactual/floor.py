"""The audio-dependence floor of a gate run (issue 39): per model, the probe of :mod:`.audio_dependence` answered
through the run's output cache, and the reason that makes every voice-bias case of a model that does not hear
the audio unmeasured.

The probe asks ``probe_requests_per_task`` recordings of the run's first corpus by each VIBE task of the run's
selected nTVD cases (the run's first task when none is selected: a ``-k wer`` spot check asks one task, not five),
with the recording, silence of its length and another speaker's recording of other words (the ``counterfactual``
section of thresholds.yaml). Its answers are cached like any other output. A model whose answers cannot be had without loading
it where the run may not (an offline run, or a model served from shipped outputs that ship no probe answers) has
its probe unmeasured, with that reason, and its cases keep their own verdicts: the floor never loads a model
silently.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from harness.checks.base import Case, CheckContext
from harness.checks.counterfactual.audio_dependence import audio_blind_reason, needs_audio, probe_requests
from harness.checks.counterfactual.settings import COUNTERFACTUAL_SCHEMA, SECTION
from harness.metrics.counterfactual import AudioDependence, audio_dependence
from harness.tasks import TASKS


@dataclasses.dataclass(frozen=True)
class AudioFloor:
    """One model's probe: its :class:`AudioDependence` and ``blind_reason`` (set when it does not hear the audio),
    or ``unmeasured`` (why the probe could not be answered) and no figure."""

    model: str
    dependence: AudioDependence | None
    blind_share: float
    blind_reason: str | None = None
    unmeasured: str | None = None

    def as_dict(self) -> dict[str, Any]:
        figure = self.dependence
        return {
            "model": self.model,
            "share": None if figure is None else figure.share,
            "unchanged": None if figure is None else dict(figure.unchanged),
            "requests": None if figure is None else figure.requests,
            "audio_blind_share": self.blind_share,
            "hears": None if figure is None else self.blind_reason is None,
            "unmeasured": self.unmeasured,
        }


def audio_floor(context: CheckContext, model: str, *, may_load: bool, tasks: Sequence[str] | None = None) -> AudioFloor:
    """The probe of ``model`` in this run (once per run) by ``tasks`` (default: the run's first task).
    ``may_load``: whether a missing probe answer may be generated (false in an offline run and for a model served
    from shipped outputs)."""
    floors = context.memo(("audio_floors",), dict)
    if model not in floors:
        floors[model] = _probe(context, model, may_load, tuple(tasks or context.tasks[:1]))
    return floors[model]


def probed_floors(context: CheckContext) -> dict[str, dict[str, Any]]:
    """Model -> its probe (:meth:`AudioFloor.as_dict`), for the models this process probed (run metadata)."""
    return {model: floor.as_dict() for model, floor in context.memo(("audio_floors",), dict).items()}


def _probe(context: CheckContext, model: str, may_load: bool, tasks: tuple[str, ...]) -> AudioFloor:
    settings = context.thresholds.values(SECTION, COUNTERFACTUAL_SCHEMA, None, None)
    blind_share = float(settings["audio_blind_share"])
    if not context.corpora or not tasks:
        return AudioFloor(model, None, blind_share, unmeasured="the run has no corpus or no VIBE task to probe with")
    corpus_name, corpus = next(iter(context.corpora.items()))
    rows, requests = probe_requests(
        corpus,
        {task: TASKS[task] for task in tasks},
        int(settings["probe_requests_per_task"]),
        seed=context.seed,
    )
    cached = context.model(model)
    if not may_load and not cached.loaded:
        keys = cached.keys(requests)
        missing = len(set(keys) - set(context.cache.lookup(keys)))
        if missing:
            return AudioFloor(
                model,
                None,
                blind_share,
                unmeasured=(
                    f"{missing} of its {len(set(keys))} probe answers on {corpus_name} are not cached and the floor "
                    "loads no model (shipped outputs or an offline run); its cases keep their own verdicts"
                ),
            )
    answers = rows.assign(answer=context.outputs(cached, requests, "audio-dependence probe")["answer"].to_numpy())
    dependence = audio_dependence(answers)
    return AudioFloor(model, dependence, blind_share, blind_reason=audio_blind_reason(model, dependence, blind_share))


def audio_floor_reason(
    context: CheckContext, case: Case, *, may_load: bool, tasks: Sequence[str] | None = None
) -> str | None:
    """Why ``case`` cannot be measured by the floor: its model does not hear the audio (probed by ``tasks``) and the
    case measures voice-induced bias (:func:`needs_audio`); None otherwise."""
    if not needs_audio(case.variant):
        return None
    return audio_floor(context, case.model, may_load=may_load, tasks=tasks).blind_reason
