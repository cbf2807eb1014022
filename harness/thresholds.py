"""Pass/fail thresholds from ``thresholds.yaml``, validated against the known checks, variants and dimensions.

One section per check (``ntvd``, ...), each with the same layered layout; later layers override earlier
ones::

    ntvd:
      defaults:   {max_ntvd: 20.0, alpha: 0.05, rule: both, tau: 10}
      dimensions: {accent: {max_ntvd: 30.0}}
      tasks:                       # the check's variant axis: tasks, modes... (see the check)
        advisory:
          max_ntvd: 15.0
          dimensions: {gender: {max_ntvd: 10.0}}

Each check declares its keys (type, default, allowed range) in a :class:`ThresholdSchema`.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml


class ThresholdsError(ValueError):
    """The thresholds file is invalid; the message names the file and the key path."""


@dataclasses.dataclass(frozen=True)
class ThresholdKey:
    """One threshold setting: accepted types, default, and a check returning a problem or None."""

    types: tuple[type, ...]
    default: Any
    problem: Callable[[Any], str | None] = lambda value: None


@dataclasses.dataclass(frozen=True)
class ThresholdSchema:
    keys: Mapping[str, ThresholdKey]
    variant_axis: str | None = None

    def defaults(self) -> dict[str, Any]:
        return {name: key.default for name, key in self.keys.items()}


def in_open_unit_interval(value: Any) -> str | None:
    return None if 0 < value < 1 else "must lie in (0, 1)"


def at_least(minimum: float) -> Callable[[Any], str | None]:
    return lambda value: None if value >= minimum else f"must be >= {minimum:g}"


def between(low: float, high: float) -> Callable[[Any], str | None]:
    return lambda value: None if low <= value <= high else f"must lie in [{low:g}, {high:g}]"


def one_of(*choices: str) -> Callable[[Any], str | None]:
    return lambda value: None if value in choices else f"is not one of {', '.join(choices)}"


@dataclasses.dataclass(frozen=True)
class Thresholds:
    source: str
    raw: Mapping[str, Any]
    digest: str

    def values(self, check: str, schema: ThresholdSchema, variant: str | None, dimension: str) -> dict[str, Any]:
        """The merged settings of one case: defaults < dimension < variant < variant x dimension."""
        section = self.raw.get(check, {}) or {}
        merged = schema.defaults()
        merged.update(section.get("defaults", {}) or {})
        merged.update((section.get("dimensions", {}) or {}).get(dimension, {}) or {})
        if schema.variant_axis and variant is not None:
            variant_block = dict((section.get(schema.variant_axis, {}) or {}).get(variant, {}) or {})
            variant_dimensions = variant_block.pop("dimensions", {}) or {}
            merged.update(variant_block)
            merged.update(variant_dimensions.get(dimension, {}) or {})
        return merged

    def validate(self, schemas: Mapping[str, ThresholdSchema], variants: Mapping[str, Iterable[str]], dimensions: Iterable[str]) -> None:
        """Raise :class:`ThresholdsError` for an unknown check, variant, dimension or key, listing the valid ones."""
        dimensions = sorted(set(dimensions))
        unknown = sorted(set(self.raw) - set(schemas))
        if unknown:
            self._fail(f"unknown section(s) {unknown}", sorted(schemas))
        for check, section in self.raw.items():
            schema = schemas[check]
            section = section or {}
            self._expect_mapping(section, check)
            layers = ["defaults", "dimensions"] + ([schema.variant_axis] if schema.variant_axis else [])
            unknown = sorted(set(section) - set(layers))
            if unknown:
                self._fail(f"{check}: unknown key(s) {unknown}", layers)
            self._check_values(section.get("defaults", {}) or {}, f"{check}.defaults", schema)
            self._check_dimension_block(section.get("dimensions", {}) or {}, f"{check}.dimensions", dimensions, schema)
            if schema.variant_axis:
                valid_variants = sorted(set(variants.get(check, ())))
                variant_section = section.get(schema.variant_axis, {}) or {}
                path = f"{check}.{schema.variant_axis}"
                self._expect_mapping(variant_section, path)
                for variant, block in variant_section.items():
                    if variant not in valid_variants:
                        self._fail(f"{path}: unknown {schema.variant_axis.rstrip('s')} {variant!r}", valid_variants)
                    block = block or {}
                    self._expect_mapping(block, f"{path}.{variant}")
                    block = dict(block)
                    self._check_dimension_block(block.pop("dimensions", {}) or {}, f"{path}.{variant}.dimensions", dimensions, schema)
                    self._check_values(block, f"{path}.{variant}", schema)

    def _check_dimension_block(self, block: Any, path: str, dimensions: list[str], schema: ThresholdSchema) -> None:
        self._expect_mapping(block, path)
        for dimension, values in block.items():
            if dimension not in dimensions:
                self._fail(f"{path}: unknown dimension {dimension!r}", dimensions)
            self._check_values(values or {}, f"{path}.{dimension}", schema)

    def _check_values(self, block: Any, path: str, schema: ThresholdSchema) -> None:
        self._expect_mapping(block, path)
        for name, value in block.items():
            if name not in schema.keys:
                self._fail(f"{path}: unknown key {name!r}", sorted(schema.keys))
            key = schema.keys[name]
            if isinstance(value, bool) != (bool in key.types) or not isinstance(value, key.types):
                raise ThresholdsError(f"{self.source}: {path}.{name} = {value!r} is not a {key.types[0].__name__}")
            problem = key.problem(value)
            if problem:
                raise ThresholdsError(f"{self.source}: {path}.{name} = {value!r} {problem}")

    def _expect_mapping(self, block: Any, path: str) -> None:
        if not isinstance(block, Mapping):
            raise ThresholdsError(f"{self.source}: {path} must be a mapping, got {type(block).__name__}")

    def _fail(self, message: str, valid: Iterable[str]) -> None:
        raise ThresholdsError(f"{self.source}: {message}; valid: {', '.join(valid)}")


def load_thresholds(path: str | Path | None) -> Thresholds:
    """Read a thresholds file (``None``: the built-in defaults). Structure is checked by :meth:`validate`."""
    if path is None:
        return Thresholds("<built-in defaults>", {}, hashlib.sha256(b"").hexdigest()[:16])
    path = Path(path)
    if not path.is_file():
        raise ThresholdsError(f"{path}: thresholds file does not exist")
    text = path.read_text(encoding="utf-8")
    try:
        raw = yaml.safe_load(text) or {}
    except yaml.YAMLError as exc:
        raise ThresholdsError(f"{path}: not valid YAML ({exc})") from exc
    if not isinstance(raw, Mapping):
        raise ThresholdsError(f"{path}: the top level must be a mapping of check sections")
    return Thresholds(str(path), raw, hashlib.sha256(text.encode()).hexdigest()[:16])
