"""Simulated per-utterance WER tables with a known expected-WER ratio (paper §IV-style), for tests and
benchmarks of :func:`harness.metrics.wer_ratio.wer_ratio`."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
from scipy import special

from harness.metrics.wer_model import _expected_wer_from_parts


@dataclasses.dataclass(frozen=True)
class SimulatedWER:
    """A simulated per-utterance WER table and its true expected-WER ratio (same estimand as
    :func:`wer_ratio`, evaluated at the true parameters on the table's own pooled covariates)."""

    table: pd.DataFrame
    true_ratio: float
    covariates: tuple[str, ...]


def simulate_wer_table(
    seed: int | np.random.Generator,
    *,
    n_speakers: int = 40,
    utterances_per_speaker: int = 65,
    sigma: float = 0.5,
    group_effect_insertions: float = 0.0,
    group_effect_delsub: float = 0.0,
    difficulty_effect: float = 1.0,
    confounding: float = 0.6,
    n_noise_covariates: int = 3,
    intercept_insertions: float = -4.3,
    intercept_delsub: float = -3.4,
) -> SimulatedWER:
    """Paper §IV-style simulation in WER form, with one speaker intercept shared by both components.

    Half the speakers are in group ``"F"``, half in ``"M"``. Each utterance has a semantic difficulty
    covariate ``x_difficulty ~ N(+-confounding, 1)`` (``+`` for ``F``: difficulty is confounded with the
    group) and ``n_noise_covariates`` pure-noise semantic covariates; ``N ~`` a log-normal length in 5..60.
    Errors follow eq. 4-5 with ``difficulty_effect`` on both logits and the group effects on ``F``
    (default 0: no true group effect). ``true_ratio`` is the expected-WER ratio ``F / M`` at the true
    parameters.
    """
    rng = np.random.default_rng(seed)
    speaker_group = np.where(np.arange(n_speakers) < n_speakers // 2, "F", "M")
    speaker_of = np.repeat(np.arange(n_speakers), utterances_per_speaker)
    is_f = (speaker_group[speaker_of] == "F").astype(float)
    n = speaker_of.size
    n_words = np.clip(np.round(np.exp(rng.normal(np.log(17.0), 0.65, n))), 5, 60)
    difficulty = rng.normal(confounding * (2 * is_f - 1), 1.0)
    noise = rng.normal(size=(n, n_noise_covariates))
    r = rng.normal(0.0, sigma, n_speakers)[speaker_of]
    eta_ins_fixed = intercept_insertions + difficulty_effect * difficulty
    eta_del_fixed = intercept_delsub + difficulty_effect * difficulty
    insertions = rng.poisson(n_words * np.exp(eta_ins_fixed + group_effect_insertions * is_f + r))
    delsub = rng.binomial(n_words.astype(int), special.expit(eta_del_fixed + group_effect_delsub * is_f + r))
    deletions = rng.binomial(delsub, 0.3)
    table = pd.DataFrame(
        {
            "speaker": [f"s{k:03d}" for k in speaker_of],
            "group": speaker_group[speaker_of],
            "insertions": insertions,
            "deletions": deletions,
            "substitutions": delsub - deletions,
            "n_ref_words": n_words.astype(int),
            "x_difficulty": difficulty,
        }
    )
    names = ["x_difficulty"]
    for k in range(n_noise_covariates):
        table[f"x_noise{k + 1}"] = noise[:, k]
        names.append(f"x_noise{k + 1}")
    true_wer = [
        _expected_wer_from_parts(
            eta_ins_fixed + group_effect_insertions * level,
            eta_del_fixed + group_effect_delsub * level,
            sigma,
            sigma,
            n_words,
        )
        for level in (1.0, 0.0)
    ]
    return SimulatedWER(table=table, true_ratio=true_wer[0] / true_wer[1], covariates=tuple(names))


@dataclasses.dataclass(frozen=True)
class SimulatedRelease:
    """Two checkpoints' per-utterance WER tables on the same utterances, each with its own semantic covariates
    (``covariates``: the same column names in both), and the true change of the log expected-WER ratio."""

    candidate: pd.DataFrame
    baseline: pd.DataFrame
    covariates: tuple[str, ...]
    true_delta: float


def simulate_release_pair(
    seed: int | np.random.Generator,
    *,
    n_speakers: int = 40,
    utterances_per_speaker: int = 40,
    sigma: float = 0.5,
    confounding: float = 0.8,
    difficulty_baseline: float = 0.3,
    difficulty_candidate: float = 1.2,
    group_effect_baseline: float = 0.0,
    group_effect_candidate: float = 0.0,
    embedding_noise: float = 0.1,
    speaker_checkpoint_sd: float = 0.0,
    utterance_sd_candidate: float = 0.0,
    utterance_sd_baseline: float = 0.0,
) -> SimulatedRelease:
    """A baseline and a candidate transcribing the same utterances (:func:`simulate_wer_table`'s design: content
    difficulty ``~ N(+-confounding, 1)``, ``+`` for group ``F``, so content is confounded with group).

    Each checkpoint's errors follow eq. 4-5 with its own ``difficulty_*`` effect (a candidate whose errors grow on
    hard content: ``difficulty_candidate > difficulty_baseline``), its own group effect on ``F`` (both logits) and
    one speaker intercept shared by both checkpoints, plus a checkpoint's own speaker deviation of SD
    ``speaker_checkpoint_sd`` (0: the joint fit's assumption), and an utterance-level logit deviation of SD
    ``utterance_sd_candidate`` / ``utterance_sd_baseline`` (residual noise beyond the binomial: a sampling decoder's;
    not in the true ratio). Each checkpoint's semantic covariate ``x_pc1`` is its own
    embedding of the content: the difficulty up to sign and ``embedding_noise``, as two embedders' first principal
    components may differ. ``true_delta`` is ``log R_cand - log R_base`` of the ratios ``F / M`` at the true
    parameters."""
    rng = np.random.default_rng(seed)
    speaker_group = np.where(np.arange(n_speakers) < n_speakers // 2, "F", "M")
    speaker_of = np.repeat(np.arange(n_speakers), utterances_per_speaker)
    is_f = (speaker_group[speaker_of] == "F").astype(float)
    n = speaker_of.size
    n_words = np.clip(np.round(np.exp(rng.normal(np.log(17.0), 0.65, n))), 5, 60)
    difficulty = rng.normal(confounding * (2 * is_f - 1), 1.0)
    r = rng.normal(0.0, sigma, n_speakers)[speaker_of]
    tables, log_ratios = [], []
    spread = float(np.hypot(sigma, speaker_checkpoint_sd))
    for effect, group_effect, sign, utterance_sd in (
        (difficulty_candidate, group_effect_candidate, -1.0, utterance_sd_candidate),
        (difficulty_baseline, group_effect_baseline, 1.0, utterance_sd_baseline),
    ):
        eta_ins = -4.3 + effect * difficulty
        eta_del = -3.4 + effect * difficulty
        own = r + (rng.normal(0.0, speaker_checkpoint_sd, n_speakers)[speaker_of] if speaker_checkpoint_sd else 0.0)
        own = own + (rng.normal(0.0, utterance_sd, n) if utterance_sd else 0.0)
        insertions = rng.poisson(n_words * np.exp(eta_ins + group_effect * is_f + own))
        delsub = rng.binomial(n_words.astype(int), special.expit(eta_del + group_effect * is_f + own))
        deletions = rng.binomial(delsub, 0.3)
        tables.append(
            pd.DataFrame(
                {
                    "speaker": [f"s{k:03d}" for k in speaker_of],
                    "group": speaker_group[speaker_of],
                    "insertions": insertions,
                    "deletions": deletions,
                    "substitutions": delsub - deletions,
                    "n_ref_words": n_words.astype(int),
                    "x_pc1": sign * difficulty + rng.normal(0.0, embedding_noise, n),
                }
            )
        )
        wer = [
            _expected_wer_from_parts(
                eta_ins + group_effect * level, eta_del + group_effect * level, spread, spread, n_words
            )
            for level in (1.0, 0.0)
        ]
        log_ratios.append(np.log(wer[0] / wer[1]))
    return SimulatedRelease(tables[0], tables[1], ("x_pc1",), float(log_ratios[0] - log_ratios[1]))


def simulate_score_release_pair(
    seed: int,
    *,
    group_effect_candidate: float = 0.0,
    n_speakers: int = 30,
    replies: int = 20,
    speaker_checkpoint_sd: float = 0.0,
    group_effect_baseline: float = 0.0,
    residual_sd_candidate: float = 0.8,
    residual_sd_baseline: float = 0.8,
) -> list[pd.DataFrame]:
    """Judge scores of a candidate and a baseline (in that order) on the same replies' content: content difficulty
    confounded with group (``F`` reads harder content), the candidate's scores falling more on hard content (-0.9
    against -0.2 per SD), a speaker intercept (SD 0.4) shared by both plus the candidate's own speaker deviation of SD
    ``speaker_checkpoint_sd``, residual SD ``residual_sd_candidate`` / ``residual_sd_baseline`` (0.8), no voice
    effect unless ``group_effect_candidate`` / ``group_effect_baseline`` (added to group F's scores); each checkpoint's
    covariate ``x_pc1`` is its own noisy embedding of the difficulty. Columns ``utterance, speaker, group, score,
    x_pc1``."""
    rng = np.random.default_rng(seed)
    speaker = np.repeat(np.arange(n_speakers), replies)
    is_f = speaker < n_speakers // 2
    difficulty = rng.normal(np.where(is_f, 0.8, -0.8), 1.0)
    intercept = rng.normal(0.0, 0.4, n_speakers)[speaker]
    tables = []
    for slope, effect, sign, residual_sd in (
        (-0.9, group_effect_candidate, -1.0, residual_sd_candidate),
        (-0.2, group_effect_baseline, 1.0, residual_sd_baseline),
    ):
        score = 6.5 + slope * difficulty + effect * is_f + intercept + rng.normal(0.0, residual_sd, speaker.size)
        if speaker_checkpoint_sd and sign < 0:
            score = score + rng.normal(0.0, speaker_checkpoint_sd, n_speakers)[speaker]
        tables.append(
            pd.DataFrame(
                {
                    "utterance": [f"u{k:05d}" for k in range(speaker.size)],
                    "speaker": [f"s{k:03d}" for k in speaker],
                    "group": np.where(is_f, "F", "M"),
                    "score": score,
                    "x_pc1": sign * difficulty + rng.normal(0.0, 0.1, speaker.size),
                }
            )
        )
    return tables


__all__ = [
    "SimulatedRelease",
    "SimulatedWER",
    "simulate_release_pair",
    "simulate_score_release_pair",
    "simulate_wer_table",
]


@dataclasses.dataclass(frozen=True)
class SimulatedNested:
    """A simulated table of 0/100 scores of speakers nested in item sets, and its true group gap."""

    table: pd.DataFrame
    true_gap: float


def simulate_nested_scores(
    seed: int | np.random.Generator,
    *,
    item_sets: int = 2,
    speakers_per_cell: int = 2,
    items_per_set: int = 8,
    probits: tuple[float, float] = (0.8, 0.8),
    speaker_sd: float = 0.6,
    item_sd: float = 0.6,
) -> SimulatedNested:
    """BASIS classification's design (:mod:`harness.metrics.crossed`, "speakers nested in item sets"): each of
    ``item_sets`` sets has ``items_per_set`` items read by its own ``speakers_per_cell`` speakers of groups
    ``a`` and ``b``. A speaker of group ``g`` is right on item ``i`` with probability
    ``Phi(probit_g + A_s + B_i)``, ``A_s ~ N(0, speaker_sd^2)``, ``B_i ~ N(0, item_sd^2)``; ``score`` is 100 or 0.
    Over the population of speakers and items the group's mean is ``100 Phi(probit_g / sqrt(1 + speaker_sd^2 +
    item_sd^2))``, and ``true_gap`` is ``a``'s minus ``b``'s."""
    rng = np.random.default_rng(seed)
    rows = []
    for item_set in range(item_sets):
        item_effects = rng.normal(0.0, item_sd, items_per_set)
        for group, probit in zip(("a", "b"), probits):
            for speaker in range(speakers_per_cell):
                speaker_effect = rng.normal(0.0, speaker_sd)
                right = rng.random(items_per_set) < special.ndtr(probit + speaker_effect + item_effects)
                rows += [
                    {
                        "group": group,
                        "speaker": f"set{item_set}/{group}{speaker}",
                        "item": f"set{item_set}/i{item}",
                        "score": 100.0 * correct,
                    }
                    for item, correct in enumerate(right)
                ]
    scale = np.sqrt(1.0 + speaker_sd**2 + item_sd**2)
    true_gap = 100.0 * float(special.ndtr(probits[0] / scale) - special.ndtr(probits[1] / scale))
    return SimulatedNested(pd.DataFrame(rows), true_gap)
