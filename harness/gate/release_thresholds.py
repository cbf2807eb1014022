"""A release judged by one rule (issue 57): the candidate and its baseline at the stricter of their two thresholds.

A release gate reads the thresholds the baseline was judged by from its results.json (``metadata.thresholds``: the
files layered over the built-in defaults, :func:`recorded_layers`) and layers them beside the candidate's. Every key
whose two values differ is judged at the stricter of the two (:func:`harness.thresholds.stricter_value`: the smaller
bar, margin or alpha, the larger floor, Bonferroni before none); a key with no order (a rule, a method) keeps the
baseline's. Each such key is a :class:`ThresholdDeviation`, named on every surface. So a candidate cannot pass its
release by loosening its own thresholds file: it is judged at least as strictly as the release it replaces.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from harness.thresholds import OFF_KEY, Thresholds, ThresholdSchema, packaged_thresholds, stricter_value


@dataclasses.dataclass(frozen=True)
class ThresholdDeviation:
    """A key of one case's thresholds that differs between the candidate and its baseline: both values and the one
    the release is judged at (``used``)."""

    section: str
    variant: str | None
    dimension: str
    key: str
    candidate: Any
    baseline: Any
    used: Any

    ordered: bool = True
    """Whether the key orders its values (:attr:`~harness.thresholds.ThresholdKey.stricter`)."""

    def describe(self) -> str:
        where = ".".join(part for part in (self.section, self.variant, self.dimension) if part)
        if self.used == self.candidate:
            which = "this run's, the stricter"
        elif self.ordered:
            which = "the baseline's, the stricter"
        else:
            which = "the baseline's (the two have no order)"
        return (
            f"release threshold {self.key} ({where}): this run {self.candidate!r}, the baseline {self.baseline!r}; "
            f"judged at {self.used!r}, {which}"
        )


@dataclasses.dataclass(frozen=True)
class ReleaseThresholds(Thresholds):
    """The candidate's :class:`~harness.thresholds.Thresholds` (its fields) judged beside the ``baseline``'s
    (module docstring). Each case's merged values are the stricter of the two; the differing keys are collected in
    :attr:`deviations` as cases read them."""

    baseline: Thresholds | None = None
    found: dict[tuple, ThresholdDeviation] = dataclasses.field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def of(cls, candidate: Thresholds, baseline: Thresholds) -> ReleaseThresholds:
        fields = {field.name: getattr(candidate, field.name) for field in dataclasses.fields(Thresholds)}
        return cls(**fields, baseline=baseline)

    @property
    def packaged(self) -> bool:
        return self.raw is packaged_thresholds().raw

    def values(self, check: str, schema: ThresholdSchema, variant: str | None, dimension: str) -> dict[str, Any]:
        own = super().values(check, schema, variant, dimension)
        if self.baseline is None:
            return own
        theirs = self.baseline.values(check, schema, variant, dimension)
        merged = dict(own)
        for key, value in own.items():
            other = theirs.get(key, value)
            if key == OFF_KEY or other == value:
                continue
            threshold_key = schema.keys.get(key)
            used = stricter_value(threshold_key, value, other)
            merged[key] = used
            ordered = threshold_key is not None and threshold_key.stricter is not None
            deviation = ThresholdDeviation(check, variant, dimension, key, value, other, used, ordered)
            self.found.setdefault((check, variant, dimension, key), deviation)
        return merged

    def deviations(self) -> list[str]:
        """Every key judged differently from the candidate's own file, in words: once per section, key and values,
        with how many of the section's case settings it held for."""
        grouped: dict[tuple, list[ThresholdDeviation]] = {}
        for deviation in self.found.values():
            key = (deviation.section, deviation.key, repr(deviation.candidate), repr(deviation.baseline))
            grouped.setdefault(key, []).append(deviation)
        return [
            dataclasses.replace(group[0], variant=None, dimension="").describe()
            + (f" ({len(group)} settings of the section)" if len(group) > 1 else "")
            for group in grouped.values()
        ]


def recorded_layers(thresholds: Thresholds) -> list[dict[str, Any]]:
    """The thresholds files a run layered over the built-in defaults, as results.json records them: the preset's
    and the file's own documents, each with its source (none for the built-in defaults alone)."""
    layers = []
    if thresholds.preset is not None:
        layers.append({"source": thresholds.preset.source, "document": dict(thresholds.preset.raw)})
    if not thresholds.packaged and thresholds.raw is not (thresholds.preset.raw if thresholds.preset else None):
        layers.append({"source": thresholds.source, "document": dict(thresholds.raw)})
    return layers


def baseline_thresholds(source: str | None, digest: str | None, layers: list[Mapping[str, Any]] | None) -> Thresholds:
    """The thresholds a baseline run was judged by, from its results.json: the built-in defaults with its recorded
    ``layers`` over them (the last is the file itself, any before it its preset). Without layers, the built-in
    defaults, where the source or the hash names them; else (a file written before the layers were recorded, judged
    by a file of its own) ``ValueError``."""
    if layers:
        *presets, own = layers
        preset = None
        for layer in presets:
            preset = Thresholds(str(layer["source"]), dict(layer["document"]), digest or "", preset=preset)
        return Thresholds(str(own["source"]), dict(own["document"]), digest or "", preset=preset)
    builtin = packaged_thresholds()
    if source is None or digest == builtin.digest or str(source).startswith(("<built-in defaults", "<harness>/")):
        return builtin
    raise ValueError(
        f"the baseline's results state its thresholds file ({source}, hash {digest}) but not its values (written "
        "before they were recorded): rerun the baseline to gate a release by one rule"
    )
