"""Does a model's answer depend on its audio? The test of the gate's audio floor (issues 45 and 58,
:mod:`harness.gate.audio_floor`), a pure function on a table of probe answers.

A probe asks each of n recordings (per stratum s: a VIBE task, or transcription) several times: with the recording
(``original``), with the same recording again (``replicate``: a request of its own, so a nondeterministic backend
is really asked twice), with silence of its length and with another speaker's recording of other words (the
replacements). Each answer arrives already reduced to what the check reads of it (``value``: the extracted
attribute values of a task answer, the normalised words of a transcript). One unit u is one (stratum, recording).

For each unit u and each arm v other than the original, ``c_u(v) = 1[value_u(v) != value_u(original)]``: did the
answer change? The change rate of an arm is ``rate(v) = (1/N) sum_u c_u(v)`` over the N units. Replication
measures how much a model's answers change by decoding noise alone (0 for a deterministic greedy decoder, more for
a nondeterministic backend at temperature 0 or a sampler); replacement measures noise plus what the audio carries.
The **estimated audio-dependent share** of a replacement r is

    D(r) = rate(r) - rate(replicate)

and the figure is ``share = max_r D(r)`` (a model hears when some replacement changes its answers more than a
replicate does; a fair model may rightly answer alike for another voice saying the same words, not for silence).

Test. Under H0 "the answers do not depend on the audio", the answers of a unit's non-original arms (replicate and
replacements) are exchangeable given its original answer, whatever the decoding (greedy, nondeterministic,
sampled). The permutation test relabels them within each unit (each of the k! orders equally likely, units
independently) and recomputes ``T = max_r D(r)``; ``p = (1 + #{b : T_b >= T}) / (B + 1)`` over B relabellings is
exact (level alpha) for a deaf model. For a deterministic greedy decoder ``rate(replicate) = 0`` and
``share = 1 - min_r unchanged(r)``, the exact-match figure of issue 45.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

from harness.core.values import require_columns

ORIGINAL, REPLICATE, SILENCE, OTHER_RECORDING = "original", "replicate", "silence", "other recording"
RELABELLED_CELLS = 1_000_000
"""How many (relabelling, unit, arm) cells the test draws at once, so that its memory stays bounded (about 30 MB)
whatever the probe's size and ``--permutations``."""


@dataclasses.dataclass(frozen=True)
class AudioDependence:
    """The test's figures (module docstring): ``changed``, arm -> its change rate ``rate(v)`` (0-1; the replicate
    and each replacement); ``dependent``, replacement -> ``D(r)``; ``share``, the estimated audio-dependent share
    ``max_r D(r)``; the permutation ``p_value`` over ``permutations`` relabellings; ``units``, the (stratum,
    recording) units answered in every arm."""

    changed: dict[str, float]
    dependent: dict[str, float]
    share: float
    p_value: float
    permutations: int
    units: int

    @property
    def blind_share(self) -> float:
        """The estimated share of answers that do not depend on the audio, ``1 - share``."""
        return 1.0 - self.share


def audio_dependence(table: pd.DataFrame, permutations: int, seed: int = 0) -> AudioDependence:
    """The replicate-controlled test (module docstring). ``table``: one row per answer with ``stratum``,
    ``utterance``, ``audio`` (``original``, ``replicate`` or a replacement's name) and ``value`` (the answer as the
    check reads it, compared exactly). A unit lacking an arm is left out."""
    require_columns(table, ["stratum", "utterance", "audio", "value"], "audio_dependence", nonempty=True)
    if permutations < 1:
        raise ValueError(f"audio_dependence: needs at least 1 permutation, got {permutations}")
    duplicated = table.duplicated(["stratum", "utterance", "audio"])
    if duplicated.any():
        first = table[duplicated].iloc[0]
        raise ValueError(
            f"audio_dependence: recording {first['utterance']!r} of {first['stratum']!r} has two answers with audio "
            f"{first['audio']!r}"
        )
    arms = set(table["audio"])
    if not {ORIGINAL, REPLICATE} <= arms or len(arms) < 3:
        raise ValueError(
            f"audio_dependence: needs answers with {ORIGINAL!r}, {REPLICATE!r} and a replacement; audio variants: "
            f"{sorted(arms)}"
        )
    values = table.assign(value=table["value"].fillna("").astype(str))
    answers = values.pivot(index=["stratum", "utterance"], columns="audio", values="value").dropna()
    if answers.empty:
        raise ValueError("audio_dependence: no recording is answered in every audio variant")
    replacements = sorted(arm for arm in answers.columns if arm not in (ORIGINAL, REPLICATE))
    columns = [REPLICATE, *replacements]
    changes = np.stack([(answers[arm] != answers[ORIGINAL]).to_numpy() for arm in columns], axis=1).astype(float)
    observed = share_of(changes[None])[0]
    rng = np.random.default_rng(seed)
    reached, block = 0, max(1, RELABELLED_CELLS // changes.size)
    for start in range(0, permutations, block):
        count = min(block, permutations - start)
        order = np.argsort(rng.random((count, *changes.shape)), axis=2)
        null = share_of(np.take_along_axis(np.broadcast_to(changes, order.shape), order, axis=2))
        reached += int(np.sum(null >= observed - 1e-12))
    p_value = (1.0 + reached) / (permutations + 1.0)
    rates = changes.mean(axis=0)
    changed = {arm: float(rate) for arm, rate in zip(columns, rates)}
    dependent = {arm: float(rate - rates[0]) for arm, rate in zip(replacements, rates[1:])}
    return AudioDependence(changed, dependent, float(observed), p_value, permutations, len(answers))


def share_of(changes: np.ndarray) -> np.ndarray:
    """Per labelling (first axis; units x arms, the replicate first): ``max_r rate(r) - rate(replicate)``."""
    rates = changes.mean(axis=1)
    return rates[:, 1:].max(axis=1) - rates[:, 0]
