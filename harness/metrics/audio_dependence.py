"""Does a model's answer depend on its audio? The two tests of the gate's audio floor (issue 45,
:mod:`harness.gate.audio_floor`), pure functions on a table of probe answers.

A probe asks each of n requests three times: with the recording (``original``), with silence of its length and with
another speaker's recording of other words. Each answer arrives already reduced to what the check reads of it
(``value``: the extracted attribute values of a task answer, the normalised words of a transcript) and, for the
distributional test, to its ``tokens``.

* **Greedy decoding** (:func:`audio_dependence`): equal inputs give equal answers, so an answer that survives a
  replacement is evidence the model did not use the audio. ``unchanged[r]`` = (1/n) sum_i 1[value_i(r) =
  value_i(original)]; the figure is ``share = min_r unchanged[r]`` (a model does not hear when its answers survive
  every replacement; a fair model may rightly answer alike for another voice saying the same words).
* **Sampled decoding** (:func:`sampled_audio_dependence`): equal inputs give different answers, so the exact test
  would call a deaf sampler hearing. Under H0 "the answers do not depend on the audio" the 3n answers of a stratum
  (one task) are exchangeable across the three audio variants. The statistic is the total variation distance
  between the token distribution of the silence answers and that of the answers with a recording (the original
  and the other recording pooled), averaged over strata:

      T = mean_s (1/2) sum_w | c_s^sil(w) / N_s^sil - c_s^rec(w) / N_s^rec |

  with c(w) the count of token w among an arm's answers. The p-value is the permutation test's
  p = (1 + #{b : T_b >= T}) / (B + 1), the variant labels permuted within strata; it is exact (level alpha) for a
  deaf sampler whatever its answer distribution. The model hears when p < alpha.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np
import pandas as pd

from harness.core.values import require_columns

ORIGINAL, SILENCE, OTHER_RECORDING = "original", "silence", "other recording"


@dataclasses.dataclass(frozen=True)
class AudioDependence:
    """The exact test's figure: ``unchanged``, replacement -> the share (0-1) of probe requests whose value with the
    replaced audio equals the value with the recording itself; ``share``, the smallest of them (1 = no replacement
    ever changed a value: the model does not hear); ``requests``, the requests answered in every variant."""

    unchanged: dict[str, float]
    share: float
    requests: int


@dataclasses.dataclass(frozen=True)
class SampledAudioDependence:
    """The distributional test's figure: the statistic ``T`` (module docstring), its permutation ``p_value`` over
    ``permutations`` relabellings, and the ``requests`` (answers per variant)."""

    statistic: float
    p_value: float
    permutations: int
    requests: int


def audio_dependence(table: pd.DataFrame, original: str = ORIGINAL) -> AudioDependence:
    """The exact test (module docstring). ``table``: one row per probe request and audio variant with ``request``,
    ``audio`` (``original`` or a replacement's name) and ``value`` (the answer as the check reads it, compared
    exactly)."""
    require_columns(table, ["request", "audio", "value"], "audio_dependence", nonempty=True)
    if original not in set(table["audio"]):
        raise ValueError(
            f"audio_dependence: no row has audio {original!r}; audio variants: {sorted(set(table['audio']))}"
        )
    duplicated = table.duplicated(["request", "audio"])
    if duplicated.any():
        first = table[duplicated].iloc[0]
        raise ValueError(
            f"audio_dependence: request {first['request']!r} has two answers with audio {first['audio']!r}"
        )
    values = table.assign(value=table["value"].fillna("").astype(str))
    answers = values.pivot(index="request", columns="audio", values="value").dropna()
    replacements = [column for column in answers.columns if column != original]
    if not replacements or answers.empty:
        raise ValueError("audio_dependence: needs answers to the same requests with the recording and a replacement")
    unchanged = {name: float((answers[name] == answers[original]).mean()) for name in replacements}
    return AudioDependence(unchanged, min(unchanged.values()), len(answers))


def sampled_audio_dependence(
    table: pd.DataFrame, permutations: int, seed: int = 0, silence: str = SILENCE
) -> SampledAudioDependence:
    """The distributional test (module docstring). ``table``: one row per answer with ``stratum`` (e.g. the task),
    ``audio`` (``silence`` or a recording's variant) and ``tokens`` (a sequence of strings; an empty answer should
    carry a token of its own so that it counts)."""
    require_columns(table, ["stratum", "audio", "tokens"], "sampled_audio_dependence", nonempty=True)
    if permutations < 1:
        raise ValueError(f"sampled_audio_dependence: needs at least 1 permutation, got {permutations}")
    vocabulary = {token: index for index, token in enumerate(sorted({t for ts in table["tokens"] for t in ts}))}
    rng = np.random.default_rng(seed)
    observed, null, requests = 0.0, np.zeros(permutations), 0
    strata = list(table.groupby("stratum", sort=True))
    for name, rows in strata:
        is_silence = rows["audio"].eq(silence).to_numpy()
        if is_silence.all() or not is_silence.any():
            raise ValueError(
                f"sampled_audio_dependence: stratum {name!r} needs answers with {silence!r} and with a recording"
            )
        counts = token_counts(rows["tokens"], vocabulary)
        labels = rng.permuted(np.tile(is_silence, (permutations, 1)), axis=1)
        observed += float(arm_distance(is_silence[None, :], counts)[0])
        null += arm_distance(labels, counts)
        requests = max(requests, int(is_silence.sum()))
    observed, null = observed / len(strata), null / len(strata)
    p_value = (1.0 + float(np.sum(null >= observed - 1e-12))) / (permutations + 1.0)
    return SampledAudioDependence(observed, p_value, permutations, requests)


def token_counts(tokens: Sequence[Sequence[str]], vocabulary: dict[str, int]) -> np.ndarray:
    """One row per answer, one column per token of ``vocabulary``: how often the answer holds it."""
    counts = np.zeros((len(tokens), len(vocabulary)))
    for row, answer in enumerate(tokens):
        for token in answer:
            counts[row, vocabulary[token]] += 1.0
    return counts


def arm_distance(is_silence: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Per labelling (rows of ``is_silence``, booleans over answers): the total variation distance between the token
    distribution of the answers labelled silence and that of the others."""
    silence = is_silence.astype(float) @ counts
    recording = (~is_silence).astype(float) @ counts
    with np.errstate(divide="ignore", invalid="ignore"):
        silence = silence / silence.sum(axis=1, keepdims=True)
        recording = recording / recording.sum(axis=1, keepdims=True)
    return 0.5 * np.nan_to_num(np.abs(silence - recording)).sum(axis=1)
