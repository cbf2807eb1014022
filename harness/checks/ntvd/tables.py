"""The nTVD check's requests and tables: each task's prompt with every utterance, the answers, the extracted
attribute values with each speaker's group, and the corpus's minimum detectable nTVD (VIBE §II)."""

from __future__ import annotations

import json
from collections.abc import Sequence

import pandas as pd

from harness.cache import cache_key
from harness.checks.context import CheckContext, per_run_table
from harness.core.requests import GenerationRequest
from harness.core.values import finite_or_none
from harness.extraction.memo import field_attribute_table
from harness.metrics.vibe_analyses import with_non_response
from harness.tasks import TASKS
from harness.tasks.base import PAPER

POWER_SETTINGS_VERSION = "minimum_detectable_ntvd@1"


@per_run_table
def audio_requests(context: CheckContext, corpus_name: str, task_name: str) -> tuple[GenerationRequest, ...]:
    """The task's request for every utterance of the corpus, in corpus order."""
    corpus, task = context.corpora[corpus_name], TASKS[task_name]
    audio = context.corpus_audio(corpus_name)
    return task.requests(
        corpus.table["transcript"].tolist(),
        [audio[utterance_id] for utterance_id in corpus.table["utterance_id"].tolist()],
        context.prompts_dir,
        context.vibe.protocol,
    )


@per_run_table
def answers(context: CheckContext, model: str, corpus_name: str, task_name: str) -> pd.DataFrame:
    """One row per utterance: ``utterance_id, speaker_id, content_id, heard, answer``. Under the paper protocol
    the task's own token budget applies (:attr:`harness.tasks.base.Task.max_new_tokens`)."""
    frame = context.corpora[corpus_name].table[["utterance_id", "speaker_id", "content_id"]].reset_index(drop=True)
    budget = TASKS[task_name].max_new_tokens if context.vibe.protocol == PAPER else None
    outputs = context.outputs(
        model, audio_requests(context, corpus_name, task_name), f"{corpus_name}/{task_name}", max_new_tokens=budget
    )
    return pd.concat([frame, outputs], axis=1)


@per_run_table
def extraction(
    context: CheckContext, model: str, corpus_name: str, task_name: str
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The long values table (``utterance_id, speaker, attribute, value``) and one status row per answer."""
    frame = answers(context, model, corpus_name, task_name)
    if context.extractor is None:
        values, statuses = field_attribute_table(frame, TASKS[task_name], context.cache)
    else:
        values, statuses = context.extractor.attribute_table(frame, TASKS[task_name])
    speakers = frame.set_index("utterance_id")["speaker_id"]
    values.insert(1, "speaker", values["utterance_id"].map(speakers))
    statuses.insert(1, "speaker", statuses["utterance_id"].map(speakers))
    return values, statuses


@per_run_table
def group_table(context: CheckContext, model: str, corpus_name: str, task_name: str, dimension: str) -> pd.DataFrame:
    """``utterance_id, speaker, group, attribute, value``: the extracted values with each speaker's group, and every
    answer's non-response to an attribute (refused, unextractable, empty, not stated) as a value of its own
    (:func:`harness.metrics.vibe_analyses.with_non_response`), so that answering one group unusably is measured."""
    extracted, statuses = extraction(context, model, corpus_name, task_name)
    asked = {
        attribute.name: attribute.items if attribute.multi_valued else 1 for attribute in TASKS[task_name].attributes
    }
    values = with_non_response(extracted, statuses, asked)
    labels = context.corpora[corpus_name].speaker_labels(dimension)
    return values.assign(group=values["speaker"].map(labels))[
        ["utterance_id", "speaker", "group", "attribute", "value"]
    ]


@per_run_table
def minimum_detectable_ntvd(context: CheckContext, corpus_name: str, dimension: str) -> dict[str, float | None]:
    """The smallest nTVD the speaker-level test detects with 80% power at alpha 0.05, by simulation
    (population and mean observed nTVD; None when the corpus cannot reach the target power).
    Stored in the cache, keyed by the corpus design, since it depends on nothing else."""
    from harness.metrics.power import corpus_design
    from harness.metrics.power import minimum_detectable_ntvd as simulate

    design = corpus_design(context.corpora[corpus_name].table, dimension)
    settings = {"n_simulations": 200, "n_permutations": 200, "seed": context.seed}
    key = cache_key("power", POWER_SETTINGS_VERSION, settings, {"design": design})
    stored = context.cache.get_many([key]).get(key)
    if stored is not None:
        return json.loads(stored)
    result = simulate(**design, **settings)
    value = {
        "population": finite_or_none(result.min_detectable_ntvd),
        "observed": finite_or_none(result.expected_observed_ntvd),
    }
    context.cache.put_many([(key, "power", POWER_SETTINGS_VERSION, json.dumps(value), {})])
    return value


def annotation_tables(context: CheckContext, runs: Sequence[tuple[str, str, str]]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """What a human-validation sample (VIBE §II-D, Table I) is drawn from, for each ``(model, corpus, task)`` of
    ``runs``: the responses (``model, task, corpus, dimension, utterance_id, answer``; ``dimension`` is ``all``,
    as one response serves every dimension of its corpus) and the values the run's extractor took from them
    (``model, task, utterance_id, attribute, value``), as :func:`harness.extraction.validation.annotation_sample`
    takes them."""
    responses, values = [], []
    for model, corpus_name, task_name in dict.fromkeys(runs):
        frame = answers(context, model, corpus_name, task_name)
        extracted, _ = extraction(context, model, corpus_name, task_name)
        labels = {"model": model, "task": task_name}
        responses.append(
            frame[["utterance_id", "answer"]].assign(**labels, corpus=corpus_name, dimension="all")[
                ["model", "task", "corpus", "dimension", "utterance_id", "answer"]
            ]
        )
        values.append(extracted.assign(**labels)[["model", "task", "utterance_id", "attribute", "value"]])
    return pd.concat(responses, ignore_index=True), pd.concat(values, ignore_index=True)
