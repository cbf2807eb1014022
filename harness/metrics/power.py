"""Power of the speaker-level permutation test of nTVD (VIBE §II-D): the smallest nTVD a corpus detects.

A corpus fixes the number of speakers per group, the utterances per speaker and (roughly) the number of
distinct values per attribute. Data are simulated from a parametric family of group differences with
one effect size ``delta`` (a linear-by-linear association model): with group scores ``s_g`` and value
scores ``w_v`` evenly spaced in [-1, 1],

    logit P_s(v) = delta * s_{g(s)} * w_v + sigma * z_{s,v},    z ~ N(0, 1),

so ``delta = 0`` is the null, every speaker's answers are multinomial draws from P_s, and ``sigma``
(``speaker_sd``) adds speaker-to-speaker variation within a group, which is what makes the speaker the
exchangeable unit. Each attribute is drawn independently with the same ``delta``; the task score is the
mean nTVD over attributes. The detection rate at ``delta`` is the share of simulated corpora whose
permutation p-value (B speaker-level permutations, group sizes fixed, p = (1 + #{null >= observed}) /
(B + 1)) is at most ``alpha``.

:func:`minimum_detectable_ntvd` bisects ``delta`` for the target power, reusing the same random draws at
every ``delta`` (common random numbers, so the detection rate moves smoothly with ``delta``), and reports
the effect as the *population* nTVD of the group distributions (the nTVD of infinitely many speakers),
together with the mean observed nTVD at that effect, which is larger because sampling noise adds
divergence. Assumes every value passes the tau filter (utterances per group >> tau x values).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from harness.metrics.ntvd import mean_over_measured, ntvd_from_group_counts, speaker_permutations

DEFAULT_ALPHA = 0.05
DEFAULT_POWER = 0.8
_ELEMENTS_PER_CHUNK = 4_000_000
_POPULATION_DRAWS = 20_000


@dataclasses.dataclass(frozen=True)
class Design:
    """What a corpus fixes for the power analysis."""

    speakers_per_group: tuple[int, ...]
    utterances_per_speaker: int
    values_per_attribute: int = 5
    n_attributes: int = 1
    speaker_sd: float = 0.0

    def __post_init__(self):
        if len(self.speakers_per_group) < 2 or min(self.speakers_per_group) < 1:
            raise ValueError(f"need >= 2 groups of >= 1 speaker, got speakers_per_group={self.speakers_per_group}")
        if (
            self.utterances_per_speaker < 1
            or self.values_per_attribute < 2
            or self.n_attributes < 1
            or self.speaker_sd < 0
        ):
            raise ValueError(
                "utterances_per_speaker and n_attributes must be >= 1, values_per_attribute >= 2 and speaker_sd >= 0; "
                f"got {self.utterances_per_speaker}, {self.n_attributes}, {self.values_per_attribute}, {self.speaker_sd}"
            )


@dataclasses.dataclass(frozen=True)
class DetectionRate:
    """Share of simulated corpora with p <= alpha, and their mean observed nTVD, at one effect size."""

    effect: float
    population_ntvd: float
    power: float
    mean_observed_ntvd: float


@dataclasses.dataclass(frozen=True)
class PowerResult:
    """``min_detectable_ntvd``: population nTVD at which the test reaches ``target_power`` (NaN and
    ``detectable`` False when even ``max_effect`` does not). ``curve``: every evaluated effect, with its
    population nTVD, detection rate and mean observed nTVD."""

    min_detectable_ntvd: float
    effect: float
    power: float
    expected_observed_ntvd: float
    detectable: bool
    design: Design
    alpha: float
    target_power: float
    n_simulations: int
    n_permutations: int
    seed: int
    curve: pd.DataFrame


def corpus_design(table: pd.DataFrame, dimension: str, speaker_column: str = "speaker_id") -> dict[str, object]:
    """``speakers_per_group`` (by group name) and the median ``utterances_per_speaker`` of a manifest table."""
    missing = [column for column in (speaker_column, dimension) if column not in table.columns]
    if missing:
        raise ValueError(f"manifest table lacks column(s) {missing}")
    speakers = table.groupby(dimension)[speaker_column].nunique()
    utterances = table.groupby(speaker_column).size()
    return {"speakers_per_group": speakers.to_dict(), "utterances_per_speaker": int(np.median(utterances))}


def _scores(n: int) -> np.ndarray:
    return np.linspace(-1.0, 1.0, n)


def group_logits(effect: float, n_groups: int, values_per_attribute: int) -> np.ndarray:
    """(G, K) logits delta * s_g * w_v of the family (before speaker variation)."""
    return effect * np.outer(_scores(n_groups), _scores(values_per_attribute))


def _softmax(logits: np.ndarray) -> np.ndarray:
    shifted = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return shifted / shifted.sum(axis=-1, keepdims=True)


def population_ntvd(effect: float, n_groups: int, values_per_attribute: int, speaker_sd: float = 0.0) -> float:
    """nTVD (VIBE eq. 2-5) of the population group distributions: P_g = E_z softmax(logits_g + sigma z)."""
    logits = group_logits(effect, n_groups, values_per_attribute)
    if speaker_sd > 0:
        noise = np.random.default_rng(0).standard_normal((_POPULATION_DRAWS, 1, values_per_attribute))
        probabilities = _softmax(logits[None] + speaker_sd * noise).mean(axis=0)
    else:
        probabilities = _softmax(logits)
    return float(ntvd_from_group_counts(probabilities, np.zeros(values_per_attribute, dtype=np.int64), 1)[0])


class _Simulation:
    """Random draws shared by every effect size (common random numbers) for one design and seed."""

    def __init__(self, design: Design, n_simulations: int, n_permutations: int, seed: int):
        self.design = design
        self.n_simulations = n_simulations
        self.n_permutations = n_permutations
        sizes = np.asarray(design.speakers_per_group)
        self.n_groups = len(sizes)
        self.speaker_group = np.repeat(np.arange(self.n_groups), sizes)
        n_speakers, n_values = len(self.speaker_group), design.values_per_attribute
        rng = np.random.default_rng(seed)
        shape = (n_simulations, n_speakers, design.n_attributes)
        self.uniforms = rng.random((*shape, design.utterances_per_speaker))
        self.noise = rng.standard_normal((*shape, n_values)) if design.speaker_sd > 0 else None
        assignments = speaker_permutations(self.speaker_group, n_permutations, seed + 1)
        group_ids = np.arange(self.n_groups)
        self.null_one_hot = (
            (assignments[:, None, :] == group_ids[None, :, None]).astype(np.float32).reshape(-1, n_speakers)
        )
        self.observed_one_hot = (self.speaker_group[None, :] == group_ids[:, None]).astype(np.float32)
        self.attribute_of_column = np.repeat(np.arange(design.n_attributes), n_values)

    def counts(self, effect: float) -> np.ndarray:
        """(R, S, A * K) per-speaker value counts at ``effect``."""
        design = self.design
        logits = group_logits(effect, self.n_groups, design.values_per_attribute)[self.speaker_group][None, :, None, :]
        if self.noise is not None:
            logits = logits + design.speaker_sd * self.noise
        cumulative = np.cumsum(_softmax(logits), axis=-1)  # (R or 1, S, A or 1, K)
        cumulative = np.broadcast_to(cumulative, (*self.uniforms.shape[:3], design.values_per_attribute))
        drawn = (self.uniforms[..., None] > cumulative[..., None, :-1]).sum(axis=-1)  # (R, S, A, m) value index
        one_hot = drawn[..., None] == np.arange(design.values_per_attribute)
        counts = one_hot.sum(axis=-2, dtype=np.float32)  # (R, S, A, K)
        return counts.reshape(self.n_simulations, len(self.speaker_group), -1)

    def rate(self, effect: float, alpha: float) -> DetectionRate:
        counts = self.counts(effect)
        n_attributes = self.design.n_attributes
        n_columns = counts.shape[-1]
        observed = mean_over_measured(
            ntvd_from_group_counts(
                np.einsum("gs,rsv->rgv", self.observed_one_hot, counts).astype(np.float64),
                self.attribute_of_column,
                n_attributes,
            )
        )
        chunk = max(1, _ELEMENTS_PER_CHUNK // (self.n_permutations * self.n_groups * n_columns))
        exceed = np.empty(self.n_simulations)
        for start in range(0, self.n_simulations, chunk):
            block = counts[start : start + chunk]  # (r, S, V)
            grouped = self.null_one_hot @ block.transpose(1, 0, 2).reshape(block.shape[1], -1)  # (B*G, r*V)
            grouped = grouped.reshape(self.n_permutations, self.n_groups, len(block), n_columns).transpose(2, 0, 1, 3)
            null = mean_over_measured(
                ntvd_from_group_counts(grouped.astype(np.float64), self.attribute_of_column, n_attributes)
            )
            threshold = observed[start : start + chunk, None] - 1e-9 * np.maximum(
                1.0, observed[start : start + chunk, None]
            )
            exceed[start : start + chunk] = (np.isnan(null) | (null >= threshold)).sum(axis=1)
        p_values = (1.0 + exceed) / (self.n_permutations + 1.0)
        design = self.design
        return DetectionRate(
            effect=effect,
            population_ntvd=population_ntvd(effect, self.n_groups, design.values_per_attribute, design.speaker_sd),
            power=float(np.mean(p_values <= alpha)),
            mean_observed_ntvd=float(observed.mean()),
        )


def _design(
    speakers_per_group: Mapping[str, int] | Sequence[int],
    utterances_per_speaker: int = 12,
    values_per_attribute: int = 5,
    n_attributes: int = 1,
    speaker_sd: float = 0.0,
) -> Design:
    """The :class:`Design` of a corpus as :func:`detection_rate` and :func:`minimum_detectable_ntvd` take it
    (``speakers_per_group`` by group name or in order; the rest as their ``design_options``, defaults here)."""
    sizes = speakers_per_group.values() if isinstance(speakers_per_group, Mapping) else speakers_per_group
    return Design(
        tuple(int(size) for size in sizes),
        int(utterances_per_speaker),
        int(values_per_attribute),
        int(n_attributes),
        float(speaker_sd),
    )


def detection_rate(
    effect: float,
    speakers_per_group: Mapping[str, int] | Sequence[int],
    *,
    alpha: float = DEFAULT_ALPHA,
    n_simulations: int = 400,
    n_permutations: int = 400,
    seed: int = 0,
    **design_options: Any,
) -> DetectionRate:
    """Simulated power of the speaker-level permutation test at one effect size (see module docstring).
    ``design_options``: ``utterances_per_speaker`` (12), ``values_per_attribute`` (5), ``n_attributes`` (1) and
    ``speaker_sd`` (0), as :func:`_design` takes them."""
    design = _design(speakers_per_group, **design_options)
    return _Simulation(design, n_simulations, n_permutations, seed).rate(effect, alpha)


def minimum_detectable_ntvd(
    speakers_per_group: Mapping[str, int] | Sequence[int],
    *,
    alpha: float = DEFAULT_ALPHA,
    target_power: float = DEFAULT_POWER,
    n_simulations: int = 400,
    n_permutations: int = 400,
    seed: int = 0,
    tolerance: float = 0.01,
    max_effect: float = 16.0,
    **design_options: Any,
) -> PowerResult:
    """Smallest population nTVD detected with ``target_power`` at ``alpha`` (see module docstring);
    ``design_options`` as :func:`detection_rate` takes them.

    The effect is doubled from 0.25 until the detection rate reaches ``target_power`` (or ``max_effect``
    is passed), then bisected until the bracket is narrower than ``tolerance`` times its upper end; the
    result is the bracket's upper end, where the simulated rate is at least ``target_power``.
    """
    if not 0 < alpha < 1 or not 0 < target_power < 1:
        raise ValueError(f"alpha and target_power must lie in (0, 1), got {alpha}, {target_power}")
    design = _design(speakers_per_group, **design_options)
    simulation = _Simulation(design, n_simulations, n_permutations, seed)
    evaluated: dict[float, DetectionRate] = {}

    def rate(effect: float) -> DetectionRate:
        if effect not in evaluated:
            evaluated[effect] = simulation.rate(effect, alpha)
        return evaluated[effect]

    low, high = 0.0, 0.25
    while rate(high).power < target_power:
        if high >= max_effect:
            return _result(design, None, evaluated, alpha, target_power, n_simulations, n_permutations, seed)
        low, high = high, min(2 * high, max_effect)
    while high - low > tolerance * high:
        middle = 0.5 * (low + high)
        low, high = (middle, high) if rate(middle).power < target_power else (low, middle)
    return _result(design, rate(high), evaluated, alpha, target_power, n_simulations, n_permutations, seed)


def _result(design, found, evaluated, alpha, target_power, n_simulations, n_permutations, seed) -> PowerResult:
    curve = pd.DataFrame(
        [
            (r.effect, r.population_ntvd, r.power, r.mean_observed_ntvd)
            for r in sorted(evaluated.values(), key=lambda r: r.effect)
        ],
        columns=["effect", "population_ntvd", "power", "mean_observed_ntvd"],
    )
    nan = float("nan")
    return PowerResult(
        min_detectable_ntvd=found.population_ntvd if found else nan,
        effect=found.effect if found else nan,
        power=found.power if found else nan,
        expected_observed_ntvd=found.mean_observed_ntvd if found else nan,
        detectable=found is not None,
        design=design,
        alpha=alpha,
        target_power=target_power,
        n_simulations=n_simulations,
        n_permutations=n_permutations,
        seed=seed,
        curve=curve,
    )
