"""The speaker-embedding manipulation check of the counterfactual arms (issue 61): how far each arm moved the voice
from its source recording, by a speaker encoder, reported in the case's record and usable as an admission filter.

Per recording, the encoder embeds the source and each arm (``identity``, ``swap``, ``sham`` where made: the gender
swap and its sham, the WORLD age arms and ``world_identity``); an arm's distance is the cosine distance of the
embeddings, ``d = 1 - <e_arm, e_source> / (|e_arm| |e_source|)`` (0: the same voice to the encoder; the encoder's
unit-norm embeddings of different speakers lie at about 0.2-0.5, Wan et al. 2018, "Generalized end-to-end loss for
speaker verification", ICASSP, whose encoder Resemblyzer is). The encoder is Resemblyzer 0.1.4 (its 17 MB GE2E
model ships in the wheel; ``pip install 'lalm-fairness[resemblyzer]'``): ``preprocess_wav`` (resampled to 16 kHz,
volume normalised, long silences trimmed) then ``VoiceEncoder.embed_utterance``.

Settings (thresholds.yaml ``counterfactual``): ``speaker_encoder`` (``none``: no check, no record field;
``resemblyzer``: measured and recorded, or, where the package is absent, the record's ``speaker_distance`` says
so and names the install); ``speaker_distance_filter`` (false: reported only; true: an admission filter beside the
perceived-group and F0/formant filters) admitting a recording when its identity arm stayed within
``max_identity_speaker_distance`` of the source (the control kept the speaker) and its swap moved at least
``min_swap_speaker_distance`` (the arm changed the voice).
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.metadata
import importlib.util
import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pandas as pd

from harness.core.requests import Audio

NONE, RESEMBLYZER = "none", "resemblyzer"
ENCODERS = (NONE, RESEMBLYZER)
INSTALL = "pip install 'lalm-fairness[resemblyzer]' (Resemblyzer 0.1.4 and CPU torch)"
MEASURED_ARMS = ("identity", "swap", "sham")

Embedder = Callable[[np.ndarray, int], np.ndarray | None]
"""Samples and their rate -> the speaker embedding (None where the clip holds too little speech to embed)."""


def cosine_distance(first: np.ndarray | None, second: np.ndarray | None) -> float:
    """``1 - <a, b> / (|a| |b|)``; NaN where either embedding is missing or zero."""
    if first is None or second is None:
        return math.nan
    norms = float(np.linalg.norm(first) * np.linalg.norm(second))
    return math.nan if norms == 0.0 else 1.0 - float(np.dot(first, second)) / norms


def encoder_unavailable(encoder: str) -> str | None:
    """Why ``encoder`` cannot embed here, with how to install it; None when it can."""
    if encoder == RESEMBLYZER and importlib.util.find_spec("resemblyzer") is None:
        return f"the speaker-distance check needs Resemblyzer, which is not installed: {INSTALL}"
    return None


def encoder_version(encoder: str) -> str:
    """``resemblyzer 0.1.4``: the encoder and its installed version, as the record names it."""
    return f"{encoder} {importlib.metadata.version('Resemblyzer')}"


@functools.cache
def resemblyzer_embedder() -> Embedder:
    """Resemblyzer's GE2E encoder on the CPU (loaded once per process)."""
    from resemblyzer import VoiceEncoder, preprocess_wav

    encoder = VoiceEncoder("cpu", verbose=False)

    def embed(samples: np.ndarray, rate: int) -> np.ndarray | None:
        wav = preprocess_wav(np.asarray(samples, dtype=np.float32), source_sr=rate)
        return encoder.embed_utterance(wav) if wav.size else None

    return embed


def speaker_distances(
    recordings: pd.DataFrame, audio: Mapping[str, Mapping[Any, Audio]], embed: Embedder
) -> pd.DataFrame:
    """Per recording (``recordings``: index its key, columns ``source_group``, ``target_group``; ``audio``: the
    ``original`` and each arm's :class:`Audio` per key), the cosine distance of each measured arm's embedding to the
    original's: ``recording, source_group, target_group, <arm>_speaker_distance``."""
    arms = [arm for arm in MEASURED_ARMS if arm in audio]
    rows = []
    for key in recordings.index:
        source = audio["original"][key]
        reference = embed(np.asarray(source.samples), source.sample_rate)
        row: dict[str, Any] = {"recording": str(key)}
        for arm in arms:
            clip = audio[arm][key]
            row[f"{arm}_speaker_distance"] = cosine_distance(
                embed(np.asarray(clip.samples), clip.sample_rate), reference
            )
        rows.append(row)
    table = pd.DataFrame(rows, columns=["recording", *(f"{arm}_speaker_distance" for arm in arms)])
    table.insert(1, "source_group", recordings["source_group"].astype(str).to_numpy())
    table.insert(2, "target_group", recordings["target_group"].astype(str).to_numpy())
    return table


def admitted_by_distance(rows: pd.DataFrame, max_identity: float, min_swap: float) -> pd.Series:
    """``identity_speaker_distance <= max_identity`` and ``swap_speaker_distance >= min_swap`` (a NaN distance is
    not admitted)."""
    identity, swap = rows["identity_speaker_distance"], rows["swap_speaker_distance"]
    return (identity <= max_identity) & (swap >= min_swap)


@dataclasses.dataclass(frozen=True)
class SpeakerDistanceChecks:
    """The check of one source's arms: the ``encoder`` asked for and its ``version`` (None where it is absent),
    ``unavailable`` (why it was not measured, or None), the per-recording ``rows``, whether it ``filters`` and its
    bounds, and the recordings it ``admitted`` (every recording when it does not filter or was not measured)."""

    encoder: str
    version: str | None
    unavailable: str | None
    rows: pd.DataFrame
    filters: bool
    max_identity_speaker_distance: float
    min_swap_speaker_distance: float
    admitted: frozenset[str] | None
    """None: no recording is dropped by this check (report only, or not measured)."""

    def summary(self) -> list[dict[str, Any]]:
        """Per direction: clips, those admitted and the median distance of each arm to the source."""
        distances = [column for column in self.rows.columns if column.endswith("_speaker_distance")]
        summary = []
        for (source, target), rows in self.rows.groupby(["source_group", "target_group"], sort=True):
            admitted = len(rows) if self.admitted is None else int(rows["recording"].isin(self.admitted).sum())
            medians = {column: _finite(rows[column].median()) for column in distances}
            summary.append({"source_group": str(source), "target_group": str(target), "clips": len(rows),
                            "admitted": admitted, **medians})  # fmt: skip
        return summary

    def to_json(self) -> dict[str, Any]:
        """The record's ``speaker_distance``: what measured it (or why nothing did), the filter and its bounds, and
        the per-direction :meth:`summary`."""
        return {
            "encoder": self.encoder,
            "version": self.version,
            "unmeasured": self.unavailable,
            "measure": "cosine distance of the arm's speaker embedding to its recording's",
            "filters": self.filters,
            "max_identity_speaker_distance": self.max_identity_speaker_distance,
            "min_swap_speaker_distance": self.min_swap_speaker_distance,
            "per_direction": [] if self.unavailable else self.summary(),
        }

    def record(self) -> SpeakerDistance:  # noqa: F821 (imported in the body: record.py imports this module)
        """:meth:`to_json` as the record's typed row."""
        from harness.checks.counterfactual.record import SpeakerDistance, SpeakerDistanceRow  # record imports settings

        block = self.to_json()
        rows = [SpeakerDistanceRow(**row) for row in block.pop("per_direction")]
        return SpeakerDistance(**block, per_direction=rows)

    def words(self) -> str:
        """The case's findings: the median distances per direction, or why the check was not measured."""
        if self.unavailable:
            return f"speaker distance not measured: {self.unavailable}"
        parts = []
        for row in self.summary():
            arms = ", ".join(
                f"{column.removesuffix('_speaker_distance')} {value:.3f}"
                for column, value in row.items()
                if column.endswith("_speaker_distance") and value is not None
            )
            parts.append(f"{row['source_group']} -> {row['target_group']}: {arms}")
        kept = (
            f"; admitted {sum(row['admitted'] for row in self.summary())} of {len(self.rows)}" if self.filters else ""
        )
        return f"speaker distance to the source ({self.version}): " + "; ".join(parts) + kept


def speaker_distance_checks(
    recordings: pd.DataFrame,
    audio: Mapping[str, Mapping[Any, Audio]],
    *,
    encoder: str,
    filters: bool,
    max_identity_speaker_distance: float,
    min_swap_speaker_distance: float,
    embed: Embedder | None = None,
) -> SpeakerDistanceChecks:
    """The check of every recording of one source with ``encoder`` (``embed`` replaces the encoder's embedder:
    tests); where the encoder is absent, a check that names why and admits every recording."""
    bounds = {"filters": filters, "max_identity_speaker_distance": max_identity_speaker_distance,
              "min_swap_speaker_distance": min_swap_speaker_distance}  # fmt: skip
    missing = None if embed is not None else encoder_unavailable(encoder)
    if missing:
        return SpeakerDistanceChecks(encoder, None, missing, pd.DataFrame(), admitted=None, **bounds)
    rows = speaker_distances(recordings, audio, embed or resemblyzer_embedder())
    admitted = None
    if filters:
        keep = admitted_by_distance(rows, max_identity_speaker_distance, min_swap_speaker_distance)
        admitted = frozenset(rows.loc[keep, "recording"])
    version = encoder_version(encoder) if embed is None else f"{encoder} (given embedder)"
    return SpeakerDistanceChecks(encoder, version, None, rows, admitted=admitted, **bounds)


def _finite(value: float) -> float | None:
    return float(value) if np.isfinite(value) else None
