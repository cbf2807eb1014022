"""VIBE's Table II(a) replayed through the gate: 12 replay simulators on a CREMA-D-sized design, two threshold sets.

Each ``sim:vibe-<model>`` preset (:mod:`harness.models.sim_replay`) answers the five VIBE tasks so that its expected
nTVD on the CREMA-D design (91 speakers, 43 female and 48 male, 72 utterances each: 6552 recordings, synthetic
tones at the speaker's pitch, :mod:`harness.data.cremad_design`) is the value the paper publishes for that model
and task. The benchmark builds that corpus in a temporary folder and runs the gate in-process
(:class:`harness.gate.Gate`), the nTVD check only (every other check's family is empty, as ``-k test_ntvd`` makes
it), for all 12 presets in one gate run, so that the nTVD family of the BH q-values holds the paper's 12 models x
5 tasks. It does so twice, under (a) the built-in thresholds (``harness/thresholds.yaml``) and (b) the
VIBE-criterion preset ``harness/presets/vibe.yaml`` (a case fails when its BH q-value is below alpha), with the
same answers (one output cache) and the same permutation seeds. One seed's verdicts are one draw, so it then
gives their distribution over ``--seeds`` seeds (200): 200 gate runs would take half a day, so each seed's answers
are drawn directly as per-speaker value counts from the simulators' distributions (with that seed's voice effects)
and judged by :class:`FastJudge` with the gate's own functions (nTVD, the speaker-level permutation test with the
gate's per-case seeds, the BH family, the thresholds and decision rule of each gate); a test
(``tests/models/test_vibe_replay_fast_path.py``) holds it to the gate's numbers and verdicts for the gate's own
answers on a small design. It writes ``docs/vibe_replay.md``: the median and 5-95% range over seeds of the number
of models and cases each threshold set fails; per cell the paper's value and stars, the gate's nTVD and BH stars at
seed 0, the verdict under each threshold set and the share of seeds failing it; the calibration's residual over
seeds; how it was made; and the cells the replay cannot reach (published value below the design's noise floor). The
seed-0 table and the seed distribution are also printed.

Usage: ``python benchmarks/bench_vibe_replay.py [--permutations 2000] [--seed 0] [--seeds 200]
[--vibe-thresholds PATH]`` (about 7 minutes on a shared 2-core machine: 4 for the two gate runs, most of it
generating and reading 393,120 answers, and under a second per seed of the distribution).
"""

from __future__ import annotations

import argparse
import dataclasses
import shlex
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from harness.checks import all_checks, get_check
from harness.checks.case import Case
from harness.checks.ntvd.check import fdr_family, ntvd_contrast
from harness.checks.verdict import bias_decision
from harness.core.requests import DecodingParams
from harness.core.values import derived_seed
from harness.data import load_corpus
from harness.data.cremad_design import SPEAKERS, answers_per_group, build_design_corpus
from harness.gate import Gate, GateConfig, Unmeasured
from harness.gate.audio_floor import full_hearing_reason
from harness.metrics.multitest import fdr_bh
from harness.metrics.ntvd import CountTensor, PermutationResult, frequent_values, tensor_ntvd, tensor_permutation_test
from harness.models.sim import acoustic_features, pitch_score
from harness.models.sim_replay import (
    PRESET_PREFIX,
    REPLAY_POOLS,
    TASK_ORDER,
    VOICE_LENGTH,
    VOICE_SD,
    ReplayCell,
    noise_floor,
    replay_cells,
    slot_values,
    voice_effect,
    voice_variance,
)

REPO = Path(__file__).resolve().parents[1]
DEFAULT_VIBE_THRESHOLDS = REPO / "harness" / "presets" / "vibe.yaml"
DEFAULT_OUTPUT = REPO / "docs" / "vibe_replay.md"
DEFAULT_PERMUTATIONS = 2000
CORPUS = "cremad"
TITLES = {
    "advisory": "Advisory",
    "hollywood_casting": "Hollywood Casting",
    "personal_shopper": "Personal Shopper",
    "story": "Story",
    "candidate_review": "Candidate Review",
}


@dataclasses.dataclass(frozen=True)
class Outcome:
    """One case under one threshold set: the measured nTVD, its p and BH q, and the verdict."""

    verdict: str  # "pass", "FAIL" or "unmeasured"
    value: float | None
    p: float | None
    q: float | None
    rule: str
    message: str
    criterion: str = ""  # the rule in words, with the across-case step, from the case's record
    alpha: float | None = None
    tau: int | None = None


def stars(q: float | None) -> str:
    if q is None:
        return ""
    return "**" if q < 0.01 else "*" if q < 0.05 else ""


def replay_gate(
    specs: Sequence[str], manifest: Path, thresholds: Path | None, cache_dir: str, permutations: int, seed: int
) -> Gate:
    """A gate over all ``specs`` on the corpus, the nTVD check's family every nTVD case and every other check's empty
    (as ``-k test_ntvd`` makes it)."""
    gate = Gate(
        GateConfig(
            models=tuple(specs),
            corpora={CORPUS: str(manifest)},
            thresholds_path=None if thresholds is None else str(thresholds),
            cache_dir=cache_dir,
            permutations=permutations,
            seed=seed,
            decoding=DecodingParams(seed=seed),
            progress=False,
            embedder="none",
        )
    )
    cases = gate.cases("ntvd")
    for check in all_checks():
        gate.set_family(check.name, cases if check.name == "ntvd" else [])
    return gate


def run_wide(thresholds: Path | None, path: Path) -> Path:
    """``thresholds`` (None: the built-in ones) with the nTVD BH family of the whole run (``fdr_family: run``): the
    replay pools its 12 models as Table II does, named as such; a gate's own default is each model's family."""
    import yaml

    layer = {} if thresholds is None else (yaml.safe_load(thresholds.read_text()) or {})
    layer.setdefault("ntvd", {}).setdefault("defaults", {})["fdr_family"] = "run"
    path.write_text(yaml.safe_dump(layer, sort_keys=False))
    return path


def run_gate(gate: Gate) -> dict[tuple[str, str], Outcome]:
    """Every nTVD case of one gate run: (spec, task) -> outcome."""
    cases = gate.cases("ntvd")
    outcomes = {}
    for case in cases:
        result = gate.outcome(case)
        if isinstance(result, Unmeasured):
            record = getattr(result.error, "record", None)
            outcomes[case.model, case.variant] = Outcome(
                "unmeasured",
                getattr(record, "value", None),
                getattr(record, "p", None),
                getattr(record, "q", None),
                "",
                result.message,
            )
            continue
        record = result.record
        correction = record.decision.correction if record.decision else None
        outcomes[case.model, case.variant] = Outcome(
            "pass" if result.passed else "FAIL",
            record.value,
            record.p,
            record.q,
            record.threshold.rule,
            result.message,
            record.threshold.describe() + (f" [{correction}]" if correction else ""),
            record.threshold.alpha,
            record.threshold.tau,
        )
    return outcomes


@dataclasses.dataclass(frozen=True)
class Voices:
    """The corpus as the replay simulators hear it: each answer's speaker (index into the sorted ``speakers``) and
    pitch score ``z`` (:func:`harness.models.sim.pitch_score` of its audio's measured F0), each speaker's group."""

    speakers: np.ndarray
    groups: np.ndarray
    speaker_group: np.ndarray
    speaker_of_answer: np.ndarray
    pitch_z: np.ndarray
    dimension: str


def corpus_voices(manifest: Path, dimension: str = "gender") -> Voices:
    corpus = load_corpus(manifest)
    table = corpus.table
    labels = corpus.speaker_labels(dimension)
    speakers = np.array(sorted(labels.index.astype(str)), dtype=object)
    groups = np.array(sorted(labels.astype(str).unique()), dtype=object)
    group_of = labels.astype(str).set_axis(labels.index.astype(str))
    speaker_group = np.searchsorted(groups, group_of[speakers].to_numpy().astype(object))
    pitch_z = np.array([pitch_score(acoustic_features(corpus.audio(uid))["f0_hz"]) for uid in table["utterance_id"]])
    speaker_of_answer = np.searchsorted(speakers, table["speaker_id"].astype(str).to_numpy().astype(object))
    return Voices(speakers, groups, speaker_group, speaker_of_answer, pitch_z, dimension)


def draw_tensors(
    voices: Voices, cells: Sequence[ReplayCell], seed: int, taus: Mapping[str, int]
) -> dict[str, CountTensor]:
    """One seed's answers of every replay cell, drawn as the simulator draws them (each answer's lean ``+-tv + r(z)``
    with the voice effect of that model, task and seed, one value per slot from ``(1 + lean s_v) / K``) but as
    per-speaker value counts, vectorised, from a stream of this function's own (``default_rng([seed, 37])``), and
    filtered by tau as the gate's :func:`harness.metrics.ntvd.count_tensor` filters: ``"<spec>|<task>"`` -> tensor."""
    rng = np.random.default_rng([seed, 37])
    unique_z, answer_z = np.unique(voices.pitch_z, return_inverse=True)
    n_speakers = len(voices.speakers)
    tensors = {}
    for cell in cells:
        task = cell.published.task
        voice = voice_effect(unique_z, cell.published.model, task, seed)[answer_z]
        lean = np.clip(np.where(voices.pitch_z > 0, cell.tv, -cell.tv) + voice, -1.0, 1.0)
        blocks, attribute_of_column, values = [], [], []
        attributes = sorted(REPLAY_POOLS[task])
        for attribute_index, attribute in enumerate(attributes):
            for slot in REPLAY_POOLS[task][attribute]:
                sign = np.array([1.0] * len(slot[0]) + [-1.0] * len(slot[1]))
                cumulative = np.cumsum((1.0 + lean[:, None] * sign) / len(sign), axis=1)
                drawn = rng.random(len(lean))[:, None] * cumulative[:, -1:]
                index = np.minimum((drawn >= cumulative).sum(axis=1), len(sign) - 1)
                counts = np.bincount(voices.speaker_of_answer * len(sign) + index, minlength=n_speakers * len(sign))
                blocks.append(counts.reshape(n_speakers, len(sign)).astype(np.float64))
                attribute_of_column += [attribute_index] * len(sign)
                values += slot_values(slot)
        tensor = CountTensor(
            speakers=voices.speakers,
            groups=voices.groups,
            speaker_group=voices.speaker_group,
            attributes=np.array(attributes, dtype=object),
            values=np.array(values, dtype=object),
            attribute_of_column=np.array(attribute_of_column, dtype=np.int64),
            counts=np.hstack(blocks),
            dropped_attributes=(),
        )
        spec = f"sim:{PRESET_PREFIX}{cell.published.slug}"
        tensors[f"{spec}|{task}"] = frequent_values(tensor, taus[task])
    return tensors


@dataclasses.dataclass(frozen=True)
class Measured:
    value: float
    p: float
    test: PermutationResult | None = None


class FastJudge:
    """The gate's nTVD decision for one threshold set, on count tensors instead of answers: the case's nTVD
    (:func:`harness.metrics.ntvd.tensor_ntvd`), its speaker-level permutation p-value with the gate's seed
    (``derived_seed(seed, model, corpus, task, dimension)``, :func:`harness.metrics.ntvd.tensor_permutation_test`),
    the BH q over the check's family (:func:`harness.checks.ntvd.check.fdr_family`, p = 1 where unmeasured) and the
    verdict by the gate's :func:`harness.checks.verdict.bias_decision` with the gate's thresholds and decision rule."""

    def __init__(self, gate: Gate):
        self.gate = gate
        self.cases = gate.cases("ntvd")
        check = get_check("ntvd")
        self.thresholds = {case: check.thresholds(gate.context, case) for case in self.cases}

    def key(self, case: Case) -> str:
        return f"{case.model}|{case.variant}"

    def diluted(self, case: Case, decision) -> bool:
        """Whether a pass of ``case`` does not hold at its model's full-hearing scale: the gate's own audio floor
        (its probe is asked once per model and kept) and :func:`harness.gate.audio_floor.full_hearing_reason`."""
        probe = get_check(case.check).audio_probe(case)
        if probe is None:
            return False
        found = self.gate.audio_floor.floor(case.model, probe, self.gate.probe_tasks()).dependence
        return found is not None and full_hearing_reason(decision.contrasts, found.share, decision.rule) is not None

    def taus(self) -> dict[str, int]:
        return {case.variant: threshold.tau for case, threshold in self.thresholds.items()}

    def measure(self, tensors: Mapping[str, CountTensor], seed: int, permutations: int) -> dict[str, Measured]:
        measured = {}
        for case in self.cases:
            tensor = tensors[self.key(case)]
            test_seed = derived_seed(seed, case.model, case.corpus, case.variant, case.dimension)
            test = tensor_permutation_test(tensor, permutations, test_seed)
            measured[self.key(case)] = Measured(tensor_ntvd(tensor), test.p_value, test)
        return measured

    def decide(self, measured: Mapping[str, Measured]) -> dict[tuple[str, str], Outcome]:
        outcomes = {}
        for case in self.cases:
            family = fdr_family(self.cases, case, self.thresholds[case].fdr_family)
            p_values = [measured[self.key(member)].p for member in family]
            q = float(fdr_bh([p if np.isfinite(p) else 1.0 for p in p_values])[family.index(case)])
            result, threshold = measured[self.key(case)], self.thresholds[case]
            if not np.isfinite(result.value):
                outcomes[case.model, case.variant] = Outcome("unmeasured", None, None, None, threshold.rule, "")
                continue
            relevant = threshold.rule == "q-value" or bool(result.value > threshold.max_ntvd)
            contrast = ntvd_contrast(result.value, result.test, relevant, threshold.max_ntvd)
            decision, block = bias_decision(
                self.gate.context,
                case,
                [contrast],
                rule=threshold.rule,
                statistic="nTVD",
                fdr=(q, len(family), threshold.alpha),
            )
            # as the gate: a case that did not fail while its design could not have failed it is unmeasured, and so is
            # a pass that does not hold at its model's full-hearing scale (issue 58, :func:`full_hearing_reason`)
            verdict = "FAIL" if decision.failed else "unmeasured" if block.untestable else "pass"
            if verdict == "pass" and self.diluted(case, block):
                verdict = "unmeasured"
            outcomes[case.model, case.variant] = Outcome(verdict, result.value, result.p, q, threshold.rule, "")
        return outcomes


@dataclasses.dataclass(frozen=True)
class SeedDistribution:
    """Per threshold set, per seed: models and cases failed; per (spec, task): measured nTVD and verdicts per seed."""

    seeds: int
    failed_models: list[list[int]]
    failed_cases: list[list[int]]
    values: dict[tuple[str, str], list[float]]
    fails: list[dict[tuple[str, str], int]]


def seed_distribution(
    voices: Voices, cells: Sequence[ReplayCell], judges: Sequence[FastJudge], seeds: int, permutations: int
) -> SeedDistribution:
    failed_models: list[list[int]] = [[] for _ in judges]
    failed_cases: list[list[int]] = [[] for _ in judges]
    values: dict[tuple[str, str], list[float]] = {}
    fails: list[dict[tuple[str, str], int]] = [{} for _ in judges]
    for seed in range(seeds):
        tensors = draw_tensors(voices, cells, seed, judges[0].taus())
        measured = judges[0].measure(tensors, seed, permutations)
        for index, judge in enumerate(judges):
            outcomes = judge.decide(measured)
            failed_models[index].append(len(failing_models(outcomes)))
            failed_cases[index].append(count(outcomes, "FAIL"))
            for key, outcome in outcomes.items():
                fails[index][key] = fails[index].get(key, 0) + (outcome.verdict == "FAIL")
                if index == 0 and outcome.value is not None:
                    values.setdefault(key, []).append(outcome.value)
    return SeedDistribution(seeds, failed_models, failed_cases, values, fails)


def quantiles(counts: Sequence[int]) -> tuple[int, int, int]:
    """Median and 5% / 95% quantiles of integer counts (values that occurred: the inverted CDF)."""
    low, median, high = np.quantile(np.asarray(counts), [0.05, 0.5, 0.95], method="inverted_cdf")
    return int(median), int(low), int(high)


def describe_rules(outcomes: Mapping[tuple[str, str], Outcome]) -> str:
    """The rules in force, each in words with the tasks it applied to, from the records."""
    tasks: dict[str, list[str]] = {}
    for (_, task), outcome in outcomes.items():
        if outcome.criterion and TITLES[task] not in tasks.setdefault(outcome.criterion, []):
            tasks[outcome.criterion].append(TITLES[task])
    return (
        "; ".join(
            f"{', '.join(names) if len(names) < len(TASK_ORDER) else 'every task'}: {criterion}"
            for criterion, names in tasks.items()
        )
        or "n/a"
    )


def q_value_disagreements(outcomes: Mapping[tuple[str, str], Outcome]) -> list[str]:
    """Cases under the ``q-value`` rule whose verdict is not "q < alpha" (there should be none)."""
    return [
        f"{spec} {task}: {outcome.verdict}, q = {outcome.q}"
        for (spec, task), outcome in outcomes.items()
        if outcome.rule == "q-value"
        and outcome.verdict != "unmeasured"
        and outcome.q is not None
        and outcome.alpha is not None
        and (outcome.verdict == "FAIL") != (outcome.q < outcome.alpha)
    ]


def number(value: float | None, digits: int = 2) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def cell_text(
    cell: ReplayCell,
    spec: str,
    runs: Sequence[Mapping[tuple[str, str], Outcome]],
    markdown: bool,
    distribution: SeedDistribution,
) -> str:
    published = cell.published
    first = runs[0][spec, published.task]
    dagger = " †" if cell.below_floor else ""
    verdicts = " / ".join(run[spec, published.task].verdict for run in runs)
    rates = " / ".join(
        f"{100 * fails.get((spec, published.task), 0) / distribution.seeds:.0f}" for fails in distribution.fails
    )
    paper = f"{published.ntvd:.2f}{escape(published.stars, markdown)}{dagger}"
    return f"{paper} → {number(first.value)}{escape(stars(first.q), markdown)} · {verdicts} · {rates}%"


def escape(text: str, markdown: bool) -> str:
    """Stars as markdown shows them literally."""
    return text.replace("*", r"\*") if markdown else text


def failing_models(outcomes: Mapping[tuple[str, str], Outcome]) -> list[str]:
    return sorted({spec for (spec, _), outcome in outcomes.items() if outcome.verdict == "FAIL"})


def count(outcomes: Mapping[tuple[str, str], Outcome], verdict: str) -> int:
    return sum(outcome.verdict == verdict for outcome in outcomes.values())


def render(
    cells: Sequence[ReplayCell],
    runs: Sequence[Mapping[tuple[str, str], Outcome]],
    names: Sequence[str],
    sources: Sequence[str],
    distribution: SeedDistribution,
    *,
    command: str,
    permutations: int,
    seed: int,
    seconds: float,
    markdown: bool,
) -> str:
    by_model: dict[str, dict[str, ReplayCell]] = {}
    for cell in cells:
        by_model.setdefault(cell.published.model, {})[cell.published.task] = cell
    spec_of = {cell.published.model: f"sim:{PRESET_PREFIX}{cell.published.slug}" for cell in cells}
    header = ["model", *(TITLES[task] for task in TASK_ORDER)]
    rows = [
        [model, *(cell_text(tasks[task], spec_of[model], runs, markdown, distribution) for task in TASK_ORDER)]
        for model, tasks in by_model.items()
    ]
    lines = []
    if markdown:
        lines += [
            "# VIBE Table II(a) replayed through the gate",
            "",
            "Generated by `benchmarks/bench_vibe_replay.py`; do not edit by hand. Each `sim:vibe-<model>` preset",
            "(`harness/models/sim_replay.py`) is a simulator built so that its expected nTVD on a CREMA-D-sized design",
            "is the value VIBE's Table II(a) publishes (gender-induced bias on CREMA-D, `harness/data/vibe_table2.csv`).",
            "The gate then measures it like any model: the question is not whether the replay reproduces the paper's",
            "numbers (it is built to) but what each threshold set does with numbers like the paper's.",
            "",
            "## What it shows, and what it cannot",
            "",
            "It shows that the pipeline (pitch -> answers -> field reader -> nTVD -> speaker-level permutation -> decision)",
            "recovers an effect planted at a known size: the measured nTVD averages the published one (the residual",
            "below), and how each threshold set classifies effects of the sizes the paper reports, as a share of seeds,",
            "since one seed's verdicts are one draw. It cannot say how well the extractor reads real answers (the replay's",
            "answers are written in the reader's own words), how real speakers differ from one another (each voice's",
            "lean is a random effect of an assumed size, and the voices are tones that differ only in pitch), or how",
            "real models concentrate their answers (the pools are uniform): the verdicts of a real model can differ.",
            "",
            "## Over seeds",
            "",
        ]
        lines += seed_table(names, runs, distribution, len(by_model), len(cells))
        lines += ["", "## The table (seed 0)", ""]
        lines.append("| " + " | ".join(header) + " |")
        lines.append("|" + "---|" * len(header))
        lines += ["| " + " | ".join(row) + " |" for row in rows]
    else:
        lines += seed_table(names, runs, distribution, len(by_model), len(cells)) + [""]
        widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
        lines += ["  ".join(text.ljust(width) for text, width in zip(row, widths)) for row in [header, *rows]]
    legend = (
        f"Each cell: the paper's nTVD and stars → the gate's nTVD and stars at seed 0 (its BH q over the run's {len(cells)} "
        f"nTVD cases: {escape('**', markdown)} q < 0.01, {escape('*', markdown)} q < 0.05, as in the paper) "
        "· the verdict under "
        + " / ".join(names)
        + f" (pass, FAIL, or unmeasured) · the share of {distribution.seeds} seeds in which each fails it. † the "
        "published value lies below the replay's noise floor (see below)."
    )
    lines += ["", legend, ""]

    paper_significant = sum(bool(cell.published.stars) for cell in cells)
    paper_models = len({cell.published.model for cell in cells if cell.published.stars})
    measured = runs[0]
    gate_significant = sum(bool(stars(outcome.q)) for outcome in measured.values())
    agree = sum(
        bool(stars(measured[spec_of[c.published.model], c.published.task].q)) == bool(c.published.stars) for c in cells
    )
    replayable = [c for c in cells if not c.below_floor]
    deviations = [
        abs(measured[spec_of[c.published.model], c.published.task].value - c.published.ntvd)
        for c in replayable
        if measured[spec_of[c.published.model], c.published.task].value is not None
    ]
    summary = ["## Summary", ""] if markdown else ["Summary:", ""]
    summary.append(
        f"- The paper: {paper_models} of {len(by_model)} models significantly biased (q < 0.05) on at least one task; "
        f"{paper_significant} of {len(cells)} cells significant."
    )
    for name, source, run in zip(names, sources, runs):
        failed = failing_models(run)
        summary.append(
            f"- {name[:1].upper() + name[1:]} (`{source}`; {describe_rules(run)}): at seed 0 fails {len(failed)} of {len(by_model)} models, "
            f"{count(run, 'FAIL')} of {len(cells)} cases ({count(run, 'unmeasured')} unmeasured)"
            + (
                f"; passes {', '.join(m for m in by_model if spec_of[m] not in failed)}"
                if len(failed) < len(by_model)
                else ""
            )
            + "."
        )
    summary.append(
        f"- The replay itself: {gate_significant} of {len(cells)} cases have q < 0.05 (the paper: {paper_significant}); "
        f"significance agrees with the paper's stars in {agree} of {len(cells)} cells. Measured minus published nTVD over "
        f"the {len(replayable)} replayable cells: mean absolute {sum(deviations) / max(len(deviations), 1):.2f}, largest "
        f"{max(deviations, default=float('nan')):.2f} points."
    )
    lines += summary + [""]

    lines += residual_lines(cells, spec_of, distribution, markdown)
    floors = {task: noise_floor(task) for task in TASK_ORDER}
    below = [c for c in cells if c.below_floor]
    design = answers_per_group()
    lines += [
        "## Noise floor" if markdown else "Noise floor:",
        "",
        "A model that ignores the voice still measures an nTVD above 0 on a finite corpus: sampling noise alone makes "
        f"two groups of {design['female']} and {design['male']} answers differ. On this design the replay pools' floor "
        "(the expected nTVD of a voice-blind replay) is "
        + ", ".join(f"{TITLES[task]} {floors[task]:.2f}" for task in TASK_ORDER)
        + ". Each preset's distance is calibrated so that the *expected observed* nTVD (population distance plus "
        "sampling noise) equals the published value; a published value below the floor cannot be reached: that "
        f"cell is replayed voice-blind and measures about the floor. {len(below)} of {len(cells)} cells are below it: "
        + "; ".join(
            f"{c.published.model} {TITLES[c.published.task]} {c.published.ntvd:.2f} (floor {c.noise_floor:.2f}, "
            f"measured {number(measured[spec_of[c.published.model], c.published.task].value)})"
            for c in below
        )
        + ". The real models reach such values because their answers concentrate on few values (greedy decoding), "
        "which lowers their floor; the replay's pools are small and uniform. For the same reason a replayed cell just "
        "above the floor carries a small population effect and may be measured but not significant where the paper's "
        "is (its stars came with a lower floor).",
        "",
    ]
    lines += [
        "## How it was made" if markdown else "How it was made:",
        "",
        f"`{command}` ({seconds / 60:.1f} min). Corpus: `harness/data/cremad_design.py`, "
        f"{sum(SPEAKERS.values())} speakers ({SPEAKERS['female']} female, {SPEAKERS['male']} male) x 12 sentences x 6 "
        "emotions, 0.25 s harmonic tones at each speaker's pitch (female 180-240 Hz, male 100-135 Hz). One gate run "
        f"per threshold set over the 12 presets, the nTVD check only, {permutations} speaker-level permutations per "
        f"case, fairness and decoding seed {seed}, tau "
        + "/".join(str(tau) for tau in sorted({o.tau for run in runs for o in run.values() if o.tau is not None}))
        + ". Threshold sets: "
        + "; ".join(f"{name}: {source}" for name, source in zip(names, sources))
        + " (the rules each applied are in the summary, as the cases' records state them). The paper's q-values are "
        "BH over its 120 reported tests (Tables II(a) and (b) together); the gate's BH family is every nTVD test of "
        "the run, here the 60 cases of Table II(a) (the accent half's corpus is not replayed), and its across-case "
        f"Bonferroni step counts each model's 5 cases. Voice effect: SD {VOICE_SD:g}, correlation length {VOICE_LENGTH:g} "
        f"in the pitch score (`harness/models/sim_replay.py`; W = {voice_variance():.2e} on this design). The seed "
        f"distribution: seeds 0-{distribution.seeds - 1}, each drawing every cell's answers as per-speaker counts from "
        "the simulator's distributions (with that seed's voice effects) and judging them with the gate's own functions "
        "(`FastJudge`: nTVD, the speaker-level permutation test with the gate's seeds, BH over the family, the gate's "
        "decision rule and thresholds), as many permutations as the gate run; `tests/models/test_vibe_replay_fast_path.py` "
        "checks that it gives the gate's numbers and verdicts for the gate's own answers. Its draws are not the "
        "simulator's stream, so its seed 0 is another draw than the gate run's seed 0.",
        "",
    ]
    return "\n".join(lines)


def seed_table(
    names: Sequence[str],
    runs: Sequence[Mapping[tuple[str, str], Outcome]],
    distribution: SeedDistribution,
    n_models: int,
    n_cases: int,
) -> list[str]:
    """The number of models and cases each threshold set fails: median and 5-95% range over seeds, and seed 0's gate run."""
    lines = [
        f"| threshold set | models failed (of {n_models}): median, 5–95% | cases failed (of {n_cases}): median, 5–95% "
        "| gate run, seed 0: models, cases |",
        "|---|---|---|---|",
    ]
    for name, run, models, cases in zip(names, runs, distribution.failed_models, distribution.failed_cases):
        model_median, model_low, model_high = quantiles(models)
        case_median, case_low, case_high = quantiles(cases)
        lines.append(
            f"| {name} | {model_median} ({model_low}–{model_high}) | {case_median} ({case_low}–{case_high}) "
            f"| {len(failing_models(run))}, {count(run, 'FAIL')} |"
        )
    shares = []
    for name, models in zip(names, distribution.failed_models):
        values, frequency = np.unique(models, return_counts=True)
        shares.append(
            f"{name}: " + ", ".join(f"{v} in {100 * f / distribution.seeds:.1f}%" for v, f in zip(values, frequency))
        )
    lines += ["", f"Models failed, share of the {distribution.seeds} seeds: " + "; ".join(shares) + "."]
    return lines


def residual_lines(
    cells: Sequence[ReplayCell], spec_of: Mapping[str, str], distribution: SeedDistribution, markdown: bool
) -> list[str]:
    """The calibration's residual: per replayable cell, the mean over seeds of measured minus published nTVD."""
    residuals, errors, names = [], [], []
    for cell in cells:
        values = distribution.values.get((spec_of[cell.published.model], cell.published.task), [])
        if cell.below_floor or not values:
            continue
        residuals.append(float(np.mean(values)) - cell.published.ntvd)
        errors.append(float(np.std(values, ddof=1) / np.sqrt(len(values))))
        names.append(f"{cell.published.model} {TITLES[cell.published.task]}")
    residuals_array, errors_array = np.array(residuals), np.array(errors)
    worst = int(np.argmax(np.abs(residuals_array)))
    beyond = int(np.sum(np.abs(residuals_array) > 3 * errors_array))
    return [
        "## Calibration" if markdown else "Calibration:",
        "",
        f"Each preset's distance is calibrated so that the expected observed nTVD on this design, voice effects "
        f"included, is the published value (`harness/models/sim_replay.py`). The residual, the mean over "
        f"{distribution.seeds} seeds of measured minus published nTVD, over the {len(residuals)} replayable cells: "
        f"mean {residuals_array.mean():+.3f}, mean absolute {np.abs(residuals_array).mean():.3f}, largest "
        f"{residuals_array[worst]:+.3f} ({names[worst]}; Monte-Carlo SE {errors_array[worst]:.3f}); {beyond} of "
        f"{len(residuals)} cells lie more than 3 Monte-Carlo SEs from their target. The normal approximation of each "
        "share's sampling distribution and the voice effect's within-speaker spread, left out of the calibration, "
        "are what remains.",
        "",
    ]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--permutations", type=int, default=DEFAULT_PERMUTATIONS)
    parser.add_argument("--seed", type=int, default=0, help="the gate's fairness seed and the decoding seed")
    parser.add_argument("--vibe-thresholds", type=Path, default=DEFAULT_VIBE_THRESHOLDS)
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT, help="the markdown file to write")
    parser.add_argument("--seeds", type=int, default=200, help="seeds of the fast path's distribution")
    args = parser.parse_args(argv)
    if not args.vibe_thresholds.is_file():
        parser.error(f"--vibe-thresholds {args.vibe_thresholds}: no such file")
    cells = replay_cells()
    specs = list(dict.fromkeys(f"sim:{PRESET_PREFIX}{cell.published.slug}" for cell in cells))
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="vibe-replay-") as folder:
        manifest = build_design_corpus(Path(folder) / "corpus")
        cache_dir = str(Path(folder) / "cache")
        gates = [
            replay_gate(
                specs,
                manifest,
                run_wide(thresholds, Path(folder) / f"run-wide-{n}.yaml"),
                cache_dir,
                args.permutations,
                args.seed,
            )  # fmt: skip
            for n, thresholds in enumerate((None, args.vibe_thresholds))
        ]
        runs = []
        for gate in gates:
            runs.append(run_gate(gate))
            print(f"gate run {len(runs)} done at {time.perf_counter() - start:.0f} s", file=sys.stderr, flush=True)
        voices = corpus_voices(manifest)
        distribution = seed_distribution(
            voices, cells, [FastJudge(gate) for gate in gates], args.seeds, args.permutations
        )
        print(f"{args.seeds} seeds done at {time.perf_counter() - start:.0f} s", file=sys.stderr, flush=True)
    seconds = time.perf_counter() - start
    mismatched = [key for key in runs[0] if runs[0][key].value != runs[1][key].value]
    if mismatched:
        raise SystemExit(f"the two gate runs measured different nTVDs for {mismatched[:3]}: they should share answers")
    for line in q_value_disagreements(runs[1]):
        print(f"warning: the q-value rule's verdict is not q < alpha: {line}", file=sys.stderr)
    names = ("built-in defaults", "VIBE preset")
    sources = ("harness/thresholds.yaml", display_path(args.vibe_thresholds))
    given = sys.argv[1:] if argv is None else list(argv)
    command = shlex.join(["python", "benchmarks/bench_vibe_replay.py", *given])
    options = dict(command=command, permutations=args.permutations, seed=args.seed, seconds=seconds)
    print(render(cells, runs, names, sources, distribution, markdown=False, **options))
    args.output.write_text(
        render(cells, runs, names, sources, distribution, markdown=True, **options), encoding="utf-8"
    )
    print(f"\nwrote {display_path(args.output)}", file=sys.stderr)
    return 0


def display_path(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(REPO))
    except ValueError:
        return str(path)


if __name__ == "__main__":
    raise SystemExit(main())
