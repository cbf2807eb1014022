"""The release comparison of an expected-WER ratio on the row that decides it (semantic-aware mixed-effects paper
§III-A, §IV; README "Release gating"): one joint fit of both checkpoints' utterances.

A WER-ratio case is decided on the speaker-and-semantics row: the joint insertion (Poisson, offset ``log N``) and
deletion+substitution (Binomial(N)) GLMM with a speaker intercept and the model's own semantic covariates
(:mod:`harness.metrics.wer_model`). The vanilla ratio of corpus WERs is confounded when content is: a candidate
whose errors grow on hard sentences that one group happens to read more often shows a vanilla "regression" with no
voice effect (§IV), and exchanging group labels does not remove a confound that is systematic by group. So the
release comparison fits both checkpoints' utterances ``j`` of speakers ``i`` at once, checkpoint ``c_j`` 1 for the
candidate and 0 for the baseline, group indicator ``g_j`` 1 for the numerator::

    eta_j = b0 + b1 g_j + b2 c_j + b3 c_j g_j + c_j x_j(cand)' t_cand + (1 - c_j) x_j(base)' t_base + r_i

for both components (eq. 2-5; ``r_i ~ N(0, sigma^2)`` shared by both components and both checkpoints, ``x(cand)``,
``x(base)`` each checkpoint's own semantic covariates, so each keeps its own content adjustment). Each checkpoint's
deciding ratio is its population-average expected-WER ratio over its own utterances (the formula of
:mod:`harness.metrics.wer_model`, with ``c`` fixed at the checkpoint's value)::

    log R_k = log WER_k(g = 1) - log WER_k(g = 0),      Delta = log R_cand - log R_base

``Delta`` is the checkpoint x group interaction on the log-ratio scale (``b3`` carries it; on the WER scale it also
passes through the insertion/deletion mix and ``sigma``). Its standard error is the delta method over all the
fit's parameters with the fit's speaker-cluster-robust (sandwich) covariance
(:attr:`harness.metrics.glmm.GLMMFit.cov_robust`, CR1 factor ``m / (m - 1)``), referred to Student's t with the
deciding row's between-within ``df = m - q`` (``m`` speakers, ``q`` design columns constant within speaker). The
sandwich, not the model's inverse information: one intercept per speaker shared by both checkpoints is the model,
but a speaker's effect may differ between checkpoints, and then the model-based se is too small (measured:
``benchmarks/bench_wer_release.py --null``, docs/statistics.md); speakers stay independent, which is all the
sandwich needs.

The release question is whether the candidate is *more biased*, ``|log R_cand| - |log R_base|`` beyond the margin.
``Delta`` is tested one-sided in the direction ``s = sign(log R_cand + log R_base)`` of the two checkpoints' mean
ratio, ``p = P(T_df > s Delta / se)``: with both ratios estimated on the same utterances with equal precision, the
sum is uncorrelated with the difference, so the direction does not select for a large ``Delta`` and the test keeps
its level at ``Delta = 0`` whatever the size of the shared bias. The worsening is the magnitude change
``|log R_cand| - |log R_base|``, which equals ``s Delta`` when the ratios lie on the same side of 1 and is smaller
when the candidate's crosses it (equal bias flipped to the other group is no worsening). A dimension with more
groups gives one such contrast per group against the rest; the case's contrast is the one with the smallest ``p``,
Bonferroni-corrected over them.

When a group has no insertions in a checkpoint, the insertion coefficient has no finite estimate and both
checkpoints' ratios are of the deletion+substitution rates alone, as the deciding row does.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy import stats

from harness.metrics.ratio_table import _speaker_level_columns
from harness.metrics.wer_model import _design, _expected_wer_from_parts, _WERModel, numerical_gradient

COUNTS = ("insertions", "deletions", "substitutions", "n_ref_words")
CHECKPOINT = "checkpoint"
INTERACTION = "checkpoint:group"


@dataclasses.dataclass(frozen=True)
class RatioInteraction:
    """The checkpoint x group contrast of one comparison (module docstring): each checkpoint's log ratio, their
    difference ``delta`` with its cluster-robust ``se`` and ``df``, the magnitude change ``worsening``,
    the one-sided ``p`` in the direction ``direction``; ``converged`` False (``message`` why) when the joint fit
    did not converge, and then never used to judge."""

    label: str
    log_ratio_candidate: float
    log_ratio_baseline: float
    delta: float
    se: float
    df: float
    direction: float
    p: float
    converged: bool
    message: str
    n_speakers: int
    n_utterances: int

    @property
    def worsening(self) -> float:
        return abs(self.log_ratio_candidate) - abs(self.log_ratio_baseline)


def stacked_table(
    candidate: pd.DataFrame,
    baseline: pd.DataFrame,
    candidate_covariates: Sequence[str],
    baseline_covariates: Sequence[str],
    values: Sequence[str] = COUNTS,
) -> tuple[pd.DataFrame, list[str]]:
    """Both checkpoints' utterances in one table (``checkpoint`` 1 for the candidate, 0 for the baseline; their
    ``values`` columns, by default the error counts, of which utterances without reference words are left out) with
    each checkpoint's covariates as columns of their own, zero on the other's rows; and the covariate columns of the
    joint design (``checkpoint``, the interaction, filled by the caller, and the covariates). A ``ValueError`` where
    the speakers or their groups differ."""
    for name, table, columns in (
        ("candidate", candidate, candidate_covariates),
        ("baseline", baseline, baseline_covariates),
    ):
        missing = [c for c in ("speaker", "group", *values, *columns) if c not in table.columns]
        if missing:
            raise ValueError(f"the {name} utterance table has no column {missing[0]!r}")
    groups = [
        t.groupby("speaker")["group"].agg(lambda s: tuple(sorted(set(map(str, s))))) for t in (candidate, baseline)
    ]
    if not groups[0].sort_index().equals(groups[1].sort_index()):
        raise ValueError("candidate and baseline must hold the same speakers in the same groups")
    parts = []
    for flag, table, own, other in (
        (1.0, candidate, candidate_covariates, baseline_covariates),
        (0.0, baseline, baseline_covariates, candidate_covariates),
    ):
        prefix, other_prefix = ("candidate:", "baseline:") if flag else ("baseline:", "candidate:")
        part = pd.DataFrame(
            {
                "speaker": table["speaker"].astype(str).to_numpy(),
                "group": table["group"].astype(str).to_numpy(),
                **{c: table[c].to_numpy(float) for c in values},
                CHECKPOINT: flag,
            }
        )
        for column in own:
            part[prefix + column] = table[column].to_numpy(float)
        for column in other:
            part[other_prefix + column] = 0.0
        parts.append(part)
    stacked = pd.concat(parts, ignore_index=True)
    if "n_ref_words" in values:
        stacked = stacked[stacked["n_ref_words"] > 0].reset_index(drop=True)
    covariates = [CHECKPOINT, INTERACTION]
    covariates += [f"candidate:{c}" for c in candidate_covariates] + [f"baseline:{c}" for c in baseline_covariates]
    return stacked, covariates


def ratio_interaction(
    candidate: pd.DataFrame,
    baseline: pd.DataFrame,
    *,
    numerator: str,
    denominator: str,
    candidate_covariates: Sequence[str] = (),
    baseline_covariates: Sequence[str] = (),
    nagq: int = 10,
    label: str | None = None,
) -> RatioInteraction:
    """The checkpoint x group contrast of the expected-WER ratio ``numerator / denominator`` (module docstring).

    Tables: one row per utterance, columns ``speaker``, ``group`` (any other level than ``numerator`` counts as
    ``denominator``: a one-vs-rest comparison), ``insertions``, ``deletions``, ``substitutions``, ``n_ref_words``
    and the covariate columns. A ``ValueError`` where the tables cannot be paired or the joint model cannot be
    fitted (a rank-deficient design, separation)."""
    one_vs_rest = [table.assign(group=np.where(table["group"].astype(str) == numerator, numerator, denominator))
                   for table in (candidate, baseline)]  # fmt: skip
    stacked, covariates = stacked_table(*one_vs_rest, candidate_covariates, baseline_covariates)
    stacked[INTERACTION] = stacked[CHECKPOINT] * (stacked["group"] == numerator)
    cells = stacked.groupby([CHECKPOINT, "group"])["insertions"].sum()
    delsub_only = bool((cells == 0).any() or len(cells) < 4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if delsub_only:
            note = "insertions left out: a group has none in a checkpoint (no finite insertion estimate)"
            model = _WERModel.fit_delsub(stacked, numerator, covariates, nagq, True, note)
        else:
            model = _WERModel.fit_mixed(stacked, numerator, covariates, nagq, "joint", False)
    designs = _checkpoint_designs(stacked, numerator, model.columns)

    def log_ratios(params: np.ndarray) -> np.ndarray:
        theta_ins, theta_del, s_ins, s_del = model.unpack(params)
        values = []
        for high, low, words in designs:
            wer = [
                _expected_wer_from_parts(
                    None if theta_ins is None else x @ theta_ins, x @ theta_del, s_ins, s_del, words
                )
                for x in (high, low)
            ]
            values.append(math.log(wer[0]) - math.log(wer[1]))
        return np.asarray(values)

    candidate_log, baseline_log = log_ratios(model.params)
    gradient = numerical_gradient(lambda params: float(np.diff(log_ratios(params)[::-1])[0]), model.params)
    used = gradient != 0
    robust = _robust_cov(model)
    variance = float(gradient[used] @ robust[np.ix_(used, used)] @ gradient[used])
    n_speakers = int(stacked["speaker"].nunique())
    df = float(n_speakers - _speaker_level_columns(stacked, _design(stacked, numerator, covariates)))
    if df < 1:
        raise ValueError(f"{n_speakers} speakers leave no degrees of freedom for the speaker-level fixed effects")
    return tested_interaction(
        label or f"{numerator} / {denominator}",
        float(candidate_log),
        float(baseline_log),
        se=math.sqrt(variance) if variance >= 0 else math.nan,
        df=df,
        converged=bool(model.converged),
        message="; ".join(part for part in (model.message, model.note) if part),
        n_speakers=n_speakers,
        n_utterances=len(stacked),
    )


def tested_interaction(label: str, candidate_log: float, baseline_log: float, *, se: float, df: float,
                       **fit: object) -> RatioInteraction:  # fmt: skip
    """The contrast of two checkpoints' log ratios, tested one-sided in the direction of their mean ratio
    (module docstring): ``p = P(T_df > s Delta / se)``, ``s = sign(log R_cand + log R_base)``."""
    delta = candidate_log - baseline_log
    direction = 1.0 if candidate_log + baseline_log >= 0 else -1.0
    p = float(stats.t.sf(direction * delta / se, df)) if se > 0 else math.nan
    return RatioInteraction(
        label=label,
        log_ratio_candidate=candidate_log,
        log_ratio_baseline=baseline_log,
        delta=delta,
        se=se,
        df=df,
        direction=direction,
        p=p,
        **fit,
    )


def _robust_cov(model: _WERModel) -> np.ndarray:
    """The fit's cluster-robust covariance in the order of ``model.params`` (its model-based one where the fit
    carries none)."""
    robust = getattr(model.fit, "cov_robust", None)
    return model.cov if robust is None else robust.to_numpy(float)


def _checkpoint_designs(
    stacked: pd.DataFrame, numerator: str, columns: Sequence[str]
) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Per checkpoint (candidate first): its utterances' design with the group set to the numerator and to the
    denominator (the interaction following), and their lengths."""
    design = _design(stacked, numerator, columns[2:])
    indicator = design.columns[1]
    result = []
    for flag in (1.0, 0.0):
        rows = (stacked[CHECKPOINT] == flag).to_numpy()
        own = design[rows]
        high = own.assign(**{indicator: 1.0, INTERACTION: flag}).to_numpy(float)
        low = own.assign(**{indicator: 0.0, INTERACTION: 0.0}).to_numpy(float)
        result.append((high, low, stacked.loc[rows, "n_ref_words"].to_numpy(float)))
    return result
