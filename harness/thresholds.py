"""Pass/fail thresholds from ``thresholds.yaml``, validated against the known tasks and dimensions.

Layout (every level optional; later levels override earlier ones)::

    ntvd:
      defaults:   {max_ntvd: 20.0, alpha: 0.05, rule: both, tau: 10}
      dimensions: {accent: {max_ntvd: 30.0}}
      tasks:
        advisory:
          max_ntvd: 15.0
          dimensions: {gender: {max_ntvd: 10.0}}

``rule`` says when an nTVD case fails: ``magnitude`` (nTVD > max_ntvd), ``significance`` (q < alpha,
q being the Benjamini-Hochberg q-value over every nTVD test of the session), or ``both`` (the two at once:
a large disparity that is also statistically reliable, VIBE §II-D).
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml

NTVD_RULES = ("magnitude", "significance", "both")
NTVD_KEYS = {"max_ntvd": (int, float), "alpha": (int, float), "rule": (str,), "tau": (int,)}
DEFAULT_NTVD = {"max_ntvd": 20.0, "alpha": 0.05, "rule": "both", "tau": 10}
TOP_LEVEL_KEYS = ("ntvd",)


class ThresholdsError(ValueError):
    """The thresholds file is invalid; the message names the file and the key path."""


@dataclasses.dataclass(frozen=True)
class NtvdThreshold:
    max_ntvd: float
    alpha: float
    rule: str
    tau: int

    def fails(self, score: float, q_value: float) -> bool:
        too_large = score > self.max_ntvd
        significant = q_value < self.alpha
        if self.rule == "magnitude":
            return too_large
        if self.rule == "significance":
            return significant
        return too_large and significant

    def describe(self) -> str:
        if self.rule == "magnitude":
            return f"nTVD <= {self.max_ntvd:g}"
        if self.rule == "significance":
            return f"q >= {self.alpha:g}"
        return f"not (nTVD > {self.max_ntvd:g} and q < {self.alpha:g})"

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class Thresholds:
    source: str
    raw: Mapping[str, Any]
    digest: str

    def ntvd(self, task: str, dimension: str) -> NtvdThreshold:
        section = self.raw.get("ntvd", {}) or {}
        merged = dict(DEFAULT_NTVD)
        merged.update(section.get("defaults", {}) or {})
        merged.update((section.get("dimensions", {}) or {}).get(dimension, {}) or {})
        task_block = dict((section.get("tasks", {}) or {}).get(task, {}) or {})
        task_dimensions = task_block.pop("dimensions", {}) or {}
        merged.update(task_block)
        merged.update(task_dimensions.get(dimension, {}) or {})
        return NtvdThreshold(float(merged["max_ntvd"]), float(merged["alpha"]), str(merged["rule"]), int(merged["tau"]))

    def validate(self, tasks: Iterable[str], dimensions: Iterable[str]) -> None:
        """Raise :class:`ThresholdsError` for an unknown task, dimension or key, listing the valid ones."""
        tasks, dimensions = sorted(set(tasks)), sorted(set(dimensions))
        unknown = sorted(set(self.raw) - set(TOP_LEVEL_KEYS))
        if unknown:
            self._fail(f"unknown section(s) {unknown}", TOP_LEVEL_KEYS)
        section = self.raw.get("ntvd", {}) or {}
        self._expect_mapping(section, "ntvd")
        unknown = sorted(set(section) - {"defaults", "dimensions", "tasks"})
        if unknown:
            self._fail(f"ntvd: unknown key(s) {unknown}", ["defaults", "dimensions", "tasks"])
        self._check_values(section.get("defaults", {}) or {}, "ntvd.defaults")
        self._check_dimension_block(section.get("dimensions", {}) or {}, "ntvd.dimensions", dimensions)
        task_section = section.get("tasks", {}) or {}
        self._expect_mapping(task_section, "ntvd.tasks")
        for task, block in task_section.items():
            if task not in tasks:
                self._fail(f"ntvd.tasks: unknown task {task!r}", tasks)
            block = dict(block or {})
            self._expect_mapping(block, f"ntvd.tasks.{task}")
            self._check_dimension_block(block.pop("dimensions", {}) or {}, f"ntvd.tasks.{task}.dimensions", dimensions)
            self._check_values(block, f"ntvd.tasks.{task}")

    def _check_dimension_block(self, block: Any, path: str, dimensions: list[str]) -> None:
        self._expect_mapping(block, path)
        for dimension, values in block.items():
            if dimension not in dimensions:
                self._fail(f"{path}: unknown dimension {dimension!r}", dimensions)
            self._check_values(values or {}, f"{path}.{dimension}")

    def _check_values(self, block: Any, path: str) -> None:
        self._expect_mapping(block, path)
        for key, value in block.items():
            if key not in NTVD_KEYS:
                self._fail(f"{path}: unknown key {key!r}", sorted(NTVD_KEYS))
            if isinstance(value, bool) or not isinstance(value, NTVD_KEYS[key]):
                raise ThresholdsError(f"{self.source}: {path}.{key} = {value!r} is not a {NTVD_KEYS[key][0].__name__}")
            if key == "rule" and value not in NTVD_RULES:
                self._fail(f"{path}.rule: unknown rule {value!r}", NTVD_RULES)
            if key == "alpha" and not 0 < value < 1:
                raise ThresholdsError(f"{self.source}: {path}.alpha = {value!r} must lie in (0, 1)")
            if key == "tau" and value < 1:
                raise ThresholdsError(f"{self.source}: {path}.tau = {value!r} must be >= 1")
            if key == "max_ntvd" and not 0 <= value <= 100:
                raise ThresholdsError(f"{self.source}: {path}.max_ntvd = {value!r} must lie in [0, 100]")

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
        raise ThresholdsError(f"{path}: the top level must be a mapping with the section(s) {list(TOP_LEVEL_KEYS)}")
    return Thresholds(str(path), raw, hashlib.sha256(text.encode()).hexdigest()[:16])
