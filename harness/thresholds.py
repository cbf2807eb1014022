"""Pass/fail thresholds from ``thresholds.yaml``, validated against the known checks, variants and dimensions.

One section per check (``ntvd``, ...), each with the same layered layout; within a file, later (more specific)
layers override earlier ones. A file of one's own is laid over the built-in defaults key by key: each value replaces
only the key it names at its own layer or a less specific one, so that its ``defaults`` never shadow a built-in
dimension- or task-specific value (write that specific key to change it)::

    ntvd:
      defaults:   {max_ntvd: 20.0, alpha: 0.05, rule: both, tau: 10}
      dimensions: {accent: {max_ntvd: 30.0}}
      tasks:                       # the check's variant axis: tasks, modes... (see the check)
        advisory:
          max_ntvd: 15.0
          dimensions: {gender: {max_ntvd: 10.0}}

Each check declares its keys (type, default, allowed range) as the fields of a frozen dataclass, a
:class:`SectionThresholds` whose fields are declared by :func:`setting`; its :meth:`~SectionThresholds.schema` is the section's
:class:`ThresholdSchema`, and one case's merged layers parse into it (:meth:`Thresholds.settings`), so that checks and
views read attributes, never a key by its name, and a bad value names the file and the key.

Loading rejects, naming the file: a file that is not UTF-8, invalid YAML, a key given twice in one mapping
(YAML would keep the last silently; the message gives both lines) and, in any layer or any merged case,
``lower > upper``. A ``dimensions`` override may name a dimension that this session's corpora and BASIS suite
lack, so that one file serves every corpus: such an override is *unused*, reported (a warning and
``Thresholds.notes``, which reach results.json's metadata) and never fatal. A name that is no dimension of any
known kind stays an error; the known dimensions are those of the session's corpora and suite, those any
registered corpus loader writes (``harness.data.loaders.loader_dimensions()``, what each loader module declares: CREMA-D's gender, age_group,
race; accent and gender of SAA and L2-ARCTIC; LibriSpeech's gender; Common Voice's gender, age, accent; VCTK's
gender, accent, age_group; Fair-Speech's gender, age, ethnicity, first_language, socioeconomic; AIR-Bench-Chat's
gender; Spoken StereoSet's gender, age) and those of the shipped demo corpus and demo BASIS suite (:func:`known_dimensions`).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import re
import warnings
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, ClassVar, Self, TypeVar

import yaml

from harness.core.json_records import JsonRecord

TYPE_WORDS = {
    bool: "true or false",
    int: "an integer",
    float: "a number",
    str: "a string",
    list: "a list",
    dict: "a mapping",
}
"""A threshold value's type in the words of an error ("tau = 'ten' is not an integer")."""


def type_words(types: tuple[type, ...]) -> str:
    """What a value of ``types`` is, in words: "a number" for int or float, "an integer", "a string", ..."""
    if float in types:
        return "a number"
    return " or ".join(dict.fromkeys(TYPE_WORDS.get(kind, f"a {kind.__name__}") for kind in types))


OFF_KEY = "enabled"
"""The thresholds key that turns a check off: ``<check>: {defaults: {enabled: false}}`` (YAML reads a bare ``off``
as false, so the key is not named so). Every check's section accepts it (:meth:`harness.checks.base.Check.gate_schema`);
it is the gate's, so a check's typed thresholds leave it out (:meth:`Thresholds.settings`)."""


class ThresholdsError(ValueError):
    """The thresholds file is invalid; the message names the file and the key path."""


# Keys that bound one interval: in every layer and every merged case, the first may not exceed the second.
ORDERED_KEYS: tuple[tuple[str, str], ...] = (("lower", "upper"),)


@functools.cache
def known_dimensions() -> frozenset[str]:
    """Every dimension name a thresholds file may use whatever the session's corpora: the dimensions the
    registered corpus loaders write, and those of the shipped demo corpus and demo BASIS suite."""
    from harness.data.loaders import loader_dimensions

    names = {dimension for dimensions in loader_dimensions().values() for dimension in dimensions}
    data = Path(__file__).parent / "data"
    demo = yaml.safe_load((data / "demo" / "corpus.yaml").read_text(encoding="utf-8")) or {}
    names.update(demo.get("dimensions", []))
    suite = yaml.safe_load((data / "basis_demo" / "suite.yaml").read_text(encoding="utf-8")) or {}
    names.update(
        entry["dimension"] for entry in suite.get("sets", []) if isinstance(entry, Mapping) and "dimension" in entry
    )
    return frozenset(names)


class UniqueKeyLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that refuses a key given twice in one mapping (plain YAML keeps the last one)."""

    def construct_mapping(self, node, deep=False):
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            try:
                first = seen.get(key)
            except TypeError:  # an unhashable key: construct_mapping below says so
                continue
            if first is not None:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {key!r} (first on line {first + 1})", key_node.start_mark
                )
            seen[key] = key_node.start_mark.line
        return super().construct_mapping(node, deep=deep)


UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, UniqueKeyLoader.construct_mapping)
# YAML 1.2's floats without a dot (``1e-3``, ``5E2``), which YAML 1.1 and so PyYAML read as strings.
UniqueKeyLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float", re.compile(r"^[-+]?[0-9]+(?:\.[0-9]*)?[eE][-+]?[0-9]+$"), list("-+0123456789")
)


def load_yaml_unique(text: str):
    """``yaml.safe_load`` that raises ``yaml.YAMLError`` on a duplicate key (:class:`UniqueKeyLoader`)."""
    return yaml.load(text, Loader=UniqueKeyLoader)


@dataclasses.dataclass(frozen=True)
class ThresholdKey:
    """One threshold setting: accepted types, default, and a check returning a problem or None."""

    types: tuple[type, ...]
    default: Any
    problem: Callable[[Any], str | None] = lambda value: None
    stricter: str | tuple[str, ...] | None = None
    """Which of two values is the stricter (issue 57, a release judged by one rule): :data:`LOWER` (a bar or a
    level: the smaller), :data:`HIGHER` (a floor: the larger), or the choices from strictest to loosest; None where
    neither is (a rule, a method: :class:`harness.gate.release_thresholds.ReleaseThresholds` keeps the baseline's)."""
    bound: str | None = None
    """What the setting is to the measure it bounds (:data:`UPPER_BOUND`: a passing measure lies at or below it,
    :data:`LOWER_BOUND`: at or above it); None for a setting that bounds no measure (a rule, a level, a margin)."""
    measure: str = "value"
    """What a bounding setting bounds: :data:`VALUE`, the case's value, or another measure in words (``gap``)."""
    floor: bool = False
    """A quality floor: reported with the case, never failing it."""
    decides_under: tuple[str, ...] | None = None
    """The values of the section's ``rule`` under which the bound decides; None: whatever the rule."""
    level: bool = False
    """The significance level of the case's own test (``alpha``)."""


def value_type_problem(key: ThresholdKey, value: Any) -> str | None:
    """What is wrong with the type of ``value`` for ``key``, or None."""
    if isinstance(value, bool) != (bool in key.types) or not isinstance(value, key.types):
        return f"is not {type_words(key.types)}"
    return None


def value_problem(key: ThresholdKey, value: Any) -> str | None:
    """What is wrong with ``value`` for ``key`` (its type, then its validator), or None."""
    return value_type_problem(key, value) or key.problem(value)


@dataclasses.dataclass(frozen=True)
class ThresholdSchema:
    """A section's keys (type, default, validator) and its variant axis (``tasks``, ``modes``; None for none).
    ``settings``: the frozen dataclass (a :class:`SectionThresholds`) one case's merged values parse into
    (:meth:`parse`); :meth:`SectionThresholds.schema` builds the schema from it, so a check declares each key once."""

    keys: Mapping[str, ThresholdKey]
    variant_axis: str | None = None
    settings: type[SectionThresholds] | None = None

    def defaults(self) -> dict[str, Any]:
        return {name: key.default for name, key in self.keys.items()}

    def parse(self, values: Mapping[str, Any], *, source: str, section: str) -> SectionThresholds:
        """One case's merged ``values`` as the schema's typed :attr:`settings`; :class:`ThresholdsError` naming
        ``source`` (the thresholds file) and ``section.key`` for a value of the wrong type or range."""
        if self.settings is None:
            raise TypeError(f"the {section!r} threshold schema has no typed settings class to parse into")
        return self.settings.parse(values, source=source, section=section)


THRESHOLD_KEY, RECORDED = "threshold_key", "recorded"
"""Where a :func:`setting` field keeps its :class:`ThresholdKey` and whether a record states it (its metadata)."""


LOWER, HIGHER = "lower", "higher"
"""Which value of a :class:`ThresholdKey` is the stricter: the smaller (a bar, a margin, an alpha) or the larger (a
floor, a least share)."""

UPPER_BOUND, LOWER_BOUND = "upper", "lower"
"""What a bounding setting is to its measure (:attr:`ThresholdKey.bound`): a passing measure lies at or below an
upper bound, at or above a lower one."""
VALUE = "value"
"""The measure a bound of the case's own value bounds (:attr:`ThresholdKey.measure`)."""
ADJUSTED_P = "adjusted p"
"""The test that decides a case whose rule sets no bar: its p-value adjusted for the gate's family."""


@dataclasses.dataclass(frozen=True)
class Bound:
    """One stated setting that bounds a measure of a case (:meth:`SectionThresholds.bounds`): its ``key`` and
    ``value``, its ``side`` (:data:`UPPER_BOUND`: a passing measure is <= it; :data:`LOWER_BOUND`: >=), the
    ``measure`` it bounds (:data:`VALUE`, the case's value, else in words) and whether it is a quality ``floor``."""

    key: str
    value: float
    side: str
    measure: str = VALUE
    floor: bool = False

    @property
    def relation(self) -> str:
        """``≤`` for an upper bound, ``≥`` for a lower one: what a passing measure is to it."""
        return "≤" if self.side == UPPER_BOUND else "≥"


@dataclasses.dataclass(frozen=True)
class SignificanceRule:
    """The test that alone decides a case whose rule sets no bar (:meth:`SectionThresholds.significance_rule`): its
    name in words (``adjusted p``, ``BH q``) and its level (None where the gate's, not the case's, sets it)."""

    test: str
    alpha: float | None = None


def setting(
    types: tuple[type, ...],
    default: Any,
    problem: Callable[[Any], str | None] | None = None,
    *,
    recorded: bool = True,
    stricter: str | tuple[str, ...] | None = None,
    bound: str | None = None,
    measure: str = VALUE,
    floor: bool = False,
    decides_under: tuple[str, ...] | None = None,
    level: bool = False,
) -> Any:
    """A field of a :class:`SectionThresholds` class: the thresholds key of the same name, which accepts values of
    ``types``, defaults to ``default`` and is refused when ``problem(value)`` says why (e.g. :func:`between`);
    ``recorded``: whether a case's record states it (:meth:`SectionThresholds.recorded_keys`); ``stricter``: which of two
    values is the stricter (:attr:`ThresholdKey.stricter`). What the setting means to a reader of the record, which
    the CI summary and the trend ask instead of guessing from its name: ``bound`` (:data:`UPPER_BOUND` or
    :data:`LOWER_BOUND`), the ``measure`` it bounds, whether it is a quality ``floor``, the rules it
    ``decides_under``, and whether it is the significance ``level`` (:class:`ThresholdKey`)."""
    if bound not in (None, UPPER_BOUND, LOWER_BOUND):
        raise ValueError(f"setting: bound must be {UPPER_BOUND!r}, {LOWER_BOUND!r} or None, got {bound!r}")
    key = ThresholdKey(
        types, default, problem or (lambda value: None), stricter, bound, measure, floor, decides_under, level
    )
    return dataclasses.field(default=default, metadata={THRESHOLD_KEY: key, RECORDED: recorded})


def regression_margin(default: float) -> Any:
    """The :func:`setting` ``max_worsening`` of a check's baseline comparison: by how much the bias measure may worsen
    before a significant worsening is a regression (significance is the gate's, ``gate.alpha``); not recorded with
    the case's absolute verdict. The smaller is the stricter."""
    return setting((int, float), default, at_least(0), recorded=False, stricter=LOWER)


def stricter_value(key: ThresholdKey | None, first: Any, second: Any) -> Any:
    """The stricter of two values of ``key`` (:attr:`ThresholdKey.stricter`); ``second`` where the key has no order
    or a value is outside it."""
    order = None if key is None else key.stricter
    if order == LOWER:
        return min(first, second)
    if order == HIGHER:
        return max(first, second)
    if isinstance(order, tuple) and first in order and second in order:
        return first if order.index(first) < order.index(second) else second
    return second


@dataclasses.dataclass(frozen=True, kw_only=True)
class SectionThresholds(JsonRecord):
    """The typed thresholds of one case of a check: a frozen dataclass whose :func:`setting` fields are the keys of
    the check's thresholds.yaml section. Parsed once per case from the merged layers (:meth:`Thresholds.settings`);
    checks and views read its attributes, never a key by its name. A case's record holds them as its ``threshold``
    (:class:`harness.records.StatedThreshold`), written by :meth:`to_json` and read back by :meth:`from_json`."""

    record_keys: tuple[str, ...] | None = dataclasses.field(default=None, repr=False)
    """The keys a results.json record read back stated, in its order, where they are not the settings this version
    records (an older record's): written back as they were. None for thresholds parsed from a thresholds file."""

    @classmethod
    def threshold_keys(cls) -> dict[str, ThresholdKey]:
        return {
            field.name: field.metadata[THRESHOLD_KEY]
            for field in dataclasses.fields(cls)
            if THRESHOLD_KEY in field.metadata
        }

    @classmethod
    def schema(cls, variant_axis: str | None = None) -> ThresholdSchema:
        """The section's :class:`ThresholdSchema`: every :func:`setting` field, with this class to parse into."""
        return ThresholdSchema(keys=cls.threshold_keys(), variant_axis=variant_axis, settings=cls)

    @classmethod
    def parse(cls, values: Mapping[str, Any], *, source: str, section: str) -> Self:
        """``values`` (one case's merged keys; a key left out takes its default) as this class. A number key's
        integer becomes a float. :class:`ThresholdsError` names ``source`` and ``section.key`` for an unknown key or
        a value of the wrong type or range."""
        keys = cls.threshold_keys()
        unknown = sorted(set(values) - set(keys))
        if unknown:
            raise ThresholdsError(f"{source}: {section}: unknown key {unknown[0]!r}; valid: {', '.join(sorted(keys))}")
        parsed = {}
        for name, key in keys.items():
            value = values.get(name, key.default)
            problem = value_problem(key, value)
            if problem:
                raise ThresholdsError(f"{source}: {section}.{name} = {value!r} {problem}")
            parsed[name] = float(value) if float in key.types else value
        return cls(**parsed)

    SIGNIFICANCE_TESTS: ClassVar[Mapping[str, str]] = {}
    """``rule`` -> the test that decides alone under it where that is not the :data:`ADJUSTED_P` (``q-value``: BH q)."""

    def bounds(self) -> tuple[Bound, ...]:
        """The stated settings that bound a measure of the case and decide under its ``rule`` (or are quality
        floors), as their :func:`setting` declares them, in declaration order."""
        stated, rule = self.to_json(), getattr(self, "rule", None)
        return tuple(
            Bound(name, float(stated[name]), key.bound, key.measure, key.floor)
            for name, key in self.threshold_keys().items()
            if key.bound is not None
            and _number(stated.get(name))
            and (key.decides_under is None or rule in key.decides_under)
        )

    def significance_rule(self) -> SignificanceRule | None:
        """The test that alone decides a case whose ``rule`` lets none of its declared bars decide (``significance``:
        the adjusted p; ``q-value``: VIBE's BH q), with the stated level; None where a bar decides or none is
        declared."""
        stated, rule = self.to_json(), getattr(self, "rule", None)
        bars = [key for key in self.threshold_keys().values() if key.bound and not key.floor]
        if not bars or any(key.decides_under is None or rule in key.decides_under for key in bars):
            return None
        levels = [
            stated[name] for name, key in self.threshold_keys().items() if key.level and _number(stated.get(name))
        ]
        return SignificanceRule(self.SIGNIFICANCE_TESTS.get(rule, ADJUSTED_P), float(levels[0]) if levels else None)

    @classmethod
    def recorded_keys(cls) -> tuple[str, ...]:
        """The settings a case's record states: every :func:`setting` declared ``recorded``, in declaration order."""
        return tuple(field.name for field in dataclasses.fields(cls) if field.metadata.get(RECORDED, False))

    def to_json(self) -> dict[str, Any]:
        """What a case's record states of these thresholds (its ``threshold``): the :meth:`recorded_keys`, or the keys
        the record they were read from stated (:attr:`record_keys`)."""
        keys = self.recorded_keys() if self.record_keys is None else self.record_keys
        return {name: getattr(self, name) for name in keys}

    NOT_WRITTEN: ClassVar[tuple[str, ...]] = ("record_keys",)

    @classmethod
    def from_json(cls, data: Any, where: str, strict: bool = True) -> Self:
        """The thresholds a results.json record states (its ``threshold``), read by the codec (always strict: a key
        that is no setting of this class, or a value of another type than its annotation's, is a ``ValueError``
        naming ``where`` and the key); a key the record does not state keeps its default, and the keys it stated
        are kept (:attr:`record_keys`), so that it is written back as it was."""
        record = super().from_json(data, where, strict=True)
        stated = tuple(data)
        return dataclasses.replace(record, record_keys=None if stated == cls.recorded_keys() else stated)


SectionT = TypeVar("SectionT", bound=SectionThresholds)
"""A :class:`SectionThresholds` class, for the readers that return the class they are given."""


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


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
    notes: list[str] = dataclasses.field(default_factory=list, compare=False)
    """What :meth:`validate` reported without failing (overrides of dimensions the session lacks)."""
    preset: Thresholds | None = None
    """The shipped preset this file names (top-level ``preset: NAME``), layered between the built-in defaults
    and this file."""
    shipped: bool = False
    """A shipped preset: a whole criterion, laid over the built-in defaults block by block (its ``defaults``
    replace theirs everywhere), where a file of one's own is laid over them key by key (:meth:`_layer`)."""

    def values(self, check: str, schema: ThresholdSchema, variant: str | None, dimension: str) -> dict[str, Any]:
        """The merged settings of one case: the schema's defaults, then the built-in thresholds file's layers
        (:data:`PACKAGED`), then this file's; in each file defaults < dimension < variant < variant x dimension."""
        merged = schema.defaults()
        levels: dict[str, int] = {}
        if not self.packaged:
            packaged_thresholds()._layer(merged, check, schema, variant, dimension, levels)
        if self.preset is not None:
            self.preset._layer(merged, check, schema, variant, dimension, levels)
        self._layer(merged, check, schema, variant, dimension, levels, by_key=not (self.packaged or self.shipped))
        return merged

    def settings(self, check: str, schema: ThresholdSchema, variant: str | None, dimension: str) -> SectionThresholds:
        """One case's merged values (:meth:`values`, less the gate's :data:`OFF_KEY`) parsed into the schema's typed
        settings (:meth:`ThresholdSchema.parse`); an error names this file and the key."""
        values = self.values(check, schema, variant, dimension)
        values.pop(OFF_KEY, None)
        return schema.parse(values, source=self.source, section=check)

    def section(self, section: str, settings: type[SectionT]) -> SectionT:
        """A section of the gate's own whose ``defaults`` alone apply (``gate``, ``audio_floor``), merged over the
        built-in defaults and parsed into its typed ``settings`` class; an error names this file and the key."""
        values = self.values(section, settings.schema(), None, "")
        return settings.parse(values, source=self.source, section=section)

    def gate(self) -> GateSettings:
        """The ``gate`` section (:class:`GateSettings`)."""
        return self.section(GATE_SECTION, GateSettings)

    @property
    def packaged(self) -> bool:
        return self.raw is packaged_thresholds().raw

    def explicit(self, section: str) -> dict[str, Any]:
        """What this file itself sets in ``section.defaults`` (nothing for the built-in defaults): settings such as
        the VIBE protocol, where a value the file states outranks one a model declares."""
        if self.packaged:
            return {}
        own = dict((self.raw.get(section) or {}).get("defaults") or {})
        return {**(self.preset.explicit(section) if self.preset is not None else {}), **own}

    def _layer(
        self,
        merged: dict[str, Any],
        check: str,
        schema: ThresholdSchema,
        variant: str | None,
        dimension: str,
        levels: dict[str, int],
        by_key: bool = False,
    ) -> None:
        """Lay this file's blocks for one case over ``merged``, least specific first (:data:`LAYER_LEVELS`);
        ``levels`` holds, per key, how specific the block that set it was. ``by_key`` (a file of one's own, issue 59):
        a key replaces only a value set by a block no more specific than its own, so that a ``defaults`` key never
        shadows a built-in dimension- or task-specific value; to change that, write the specific key."""
        section = self.raw.get(check, {}) or {}
        blocks = [section.get("defaults", {}) or {}, (section.get("dimensions", {}) or {}).get(dimension, {}) or {}]
        if schema.variant_axis and variant is not None:
            variant_block = dict((section.get(schema.variant_axis, {}) or {}).get(variant, {}) or {})
            variant_dimensions = variant_block.pop("dimensions", {}) or {}
            blocks += [variant_block, variant_dimensions.get(dimension, {}) or {}]
        for level, block in enumerate(blocks):
            for key, value in block.items():
                if by_key and levels.get(key, -1) > level:
                    continue
                merged[key] = value
                levels[key] = level

    def validate(
        self, schemas: Mapping[str, ThresholdSchema], variants: Mapping[str, Iterable[str]], dimensions: Iterable[str]
    ) -> None:
        """Raise :class:`ThresholdsError` for an unknown check, variant, dimension or key, listing the valid ones,
        and for ``lower > upper`` in a layer or in a merged case. ``dimensions`` are the session's; an override of
        a :func:`known_dimensions` name that the session lacks is recorded in :attr:`notes` and warned about."""
        self.notes.clear()
        if self.preset is not None:
            self.preset.validate(schemas, variants, dimensions)
            self.notes.extend(self.preset.notes)
        session = sorted(set(dimensions))
        dimensions = sorted(set(dimensions) | known_dimensions())
        unknown = sorted(set(self.raw) - set(schemas) - {PRESET_KEY})
        if unknown:
            self._fail(f"unknown section(s) {unknown}", sorted(schemas) + [PRESET_KEY])
        for check, section in self.raw.items():
            if check == PRESET_KEY:
                continue
            schema = schemas[check]
            section = section or {}
            self._expect_mapping(section, check)
            layers = ["defaults", "dimensions"] + ([schema.variant_axis] if schema.variant_axis else [])
            unknown = sorted(set(section) - set(layers))
            if unknown:
                self._fail(f"{check}: unknown key(s) {unknown}", layers)
            self._check_values(section.get("defaults", {}) or {}, f"{check}.defaults", schema)
            self._check_dimension_block(
                section.get("dimensions", {}) or {}, f"{check}.dimensions", dimensions, session, schema
            )
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
                    self._check_dimension_block(
                        block.pop("dimensions", {}) or {}, f"{path}.{variant}.dimensions", dimensions, session, schema
                    )
                    self._check_values(block, f"{path}.{variant}", schema)
            self._check_merged_order(check, schema, variants.get(check, ()), session)
        for note in self.notes:
            warnings.warn(f"{self.source}: {note}", UserWarning, stacklevel=2)

    def _check_merged_order(
        self, check: str, schema: ThresholdSchema, variants: Iterable[str], session: list[str]
    ) -> None:
        """``lower <= upper`` (:data:`ORDERED_KEYS`) in every case the layers merge to."""
        pairs = [(low, high) for low, high in ORDERED_KEYS if low in schema.keys and high in schema.keys]
        if not pairs:
            return
        axis = list(variants) if schema.variant_axis else []
        for variant in axis or [None]:
            for dimension in session or [None]:
                merged = self.values(check, schema, variant, dimension)
                for low, high in pairs:
                    if merged[low] > merged[high]:
                        where = " x ".join(str(part) for part in (variant, dimension) if part is not None)
                        raise ThresholdsError(
                            f"{self.source}: {check}: {low} = {merged[low]!r} exceeds {high} = {merged[high]!r} "
                            f"once the layers are merged ({where or 'defaults'})"
                        )

    def _check_dimension_block(
        self, block: Any, path: str, dimensions: list[str], session: list[str], schema: ThresholdSchema
    ) -> None:
        self._expect_mapping(block, path)
        for dimension, values in block.items():
            if dimension not in dimensions:
                self._fail(f"{path}: unknown dimension {dimension!r}", dimensions)
            if dimension not in session and not (self.packaged or self.shipped):  # built-in: not a user's override
                self.notes.append(f"{path}.{dimension} is unused: no corpus or suite of this session has dimension "
                                  f"{dimension!r} (it has {', '.join(session) or 'none'})")  # fmt: skip
            self._check_values(values or {}, f"{path}.{dimension}", schema)

    def _check_values(self, block: Any, path: str, schema: ThresholdSchema) -> None:
        self._expect_mapping(block, path)
        for name, value in block.items():
            if name in RETIRED_KEYS and name not in schema.keys:
                raise ThresholdsError(f"{self.source}: {path}.{name}: {RETIRED_KEYS[name]}")
            if name not in schema.keys:
                self._fail(f"{path}: unknown key {name!r}", sorted(schema.keys))
            problem = value_problem(schema.keys[name], value)
            if problem:
                raise ThresholdsError(f"{self.source}: {path}.{name} = {value!r} {problem}")
        for low, high in ORDERED_KEYS:
            if low in block and high in block and block[low] > block[high]:
                raise ThresholdsError(f"{self.source}: {path}: {low} = {block[low]!r} exceeds {high} = {block[high]!r}")

    def _expect_mapping(self, block: Any, path: str) -> None:
        if not isinstance(block, Mapping):
            raise ThresholdsError(f"{self.source}: {path} must be a mapping, got {type(block).__name__}")

    def _fail(self, message: str, valid: Iterable[str]) -> None:
        raise ThresholdsError(f"{self.source}: {message}; valid: {', '.join(valid)}")


GATE_SECTION = "gate"
RETIRED_KEYS = {
    "regression_alpha": "was retired: a regression is now judged under the gate's own error control (gate.alpha, "
    'Bonferroni across the model\'s cases; README "Release gating"); remove the key',
    **{
        key: f"has moved to the gate's audio floor: set audio_floor.defaults.{key} (its own section, which every "
        'voice-bias case of every check obeys; docs/statistics.md, "The audio floor")'
        for key in ("probe_requests_per_task", "audio_blind_share")
    },
}
"""Keys of earlier versions, refused with what replaced them."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class GateSettings(SectionThresholds):
    """The ``gate`` section (only ``defaults`` apply), typed like a check's: the family-wise false-fail probability
    ``alpha`` of one model's run and the across-case ``correction`` (:class:`harness.metrics.multitest.DecisionRule`);
    read by :meth:`Thresholds.gate`."""

    alpha: float = setting((int, float), 0.05, in_open_unit_interval, stricter=LOWER)
    correction: str = setting((str,), "bonferroni", one_of("bonferroni", "none"), stricter=("bonferroni", "none"))


GATE_SCHEMA = GateSettings.schema()
"""The ``gate`` section's schema (:class:`GateSettings`)."""


PACKAGED = Path(__file__).with_name("thresholds.yaml")
"""The built-in defaults: the repository's thresholds.yaml (the repository root holds a link to this file), shipped
in the wheel. A thresholds file of one's own is layered over it, key by key (:meth:`Thresholds.values`)."""


@functools.cache
def packaged_thresholds() -> Thresholds:
    return _read_thresholds(PACKAGED, source=f"<built-in defaults: {PACKAGED}>")


PRESETS_DIR = Path(__file__).parent / "presets"
PRESET_KEY = "preset"
PRESET_PREFIX = "preset:"


def presets() -> list[str]:
    """The shipped presets (``harness/presets/NAME.yaml``): ``vibe``, VIBE's own criterion."""
    return sorted(path.stem for path in PRESETS_DIR.glob("*.yaml"))


def preset_thresholds(name: str, named_in: str) -> Thresholds:
    path = PRESETS_DIR / f"{name}.yaml"
    if not isinstance(name, str) or not path.is_file():
        raise ThresholdsError(f"{named_in}: unknown preset {name!r}; shipped presets: {', '.join(presets())}")
    return dataclasses.replace(_read_thresholds(path, source=f"<preset {name}: {path}>"), shipped=True)


def load_thresholds(path: str | Path | None) -> Thresholds:
    """Read a thresholds file (``None``: the built-in defaults, :data:`PACKAGED`; ``preset:NAME``: a shipped preset).
    A file's top-level ``preset: NAME`` layers that preset under it. Structure is checked by :meth:`validate`."""
    if path is None:
        return packaged_thresholds()
    if isinstance(path, str) and path.startswith(PRESET_PREFIX):
        return preset_thresholds(path[len(PRESET_PREFIX) :], "--thresholds")
    if Path(path).resolve() == PACKAGED.resolve():
        return dataclasses.replace(packaged_thresholds(), source=str(path), notes=[])
    return _read_thresholds(Path(path))


def _read_thresholds(path: Path, source: str | None = None) -> Thresholds:
    if not path.is_file():
        raise ThresholdsError(f"{path}: thresholds file does not exist")
    data = path.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ThresholdsError(
            f"{path}: not UTF-8 text (byte {exc.start}: {data[exc.start : exc.start + 1]!r}); save it as UTF-8"
        ) from None
    try:
        raw = load_yaml_unique(text) or {}
    except yaml.YAMLError as exc:
        raise ThresholdsError(f"{path}: not valid YAML ({exc})") from exc
    if not isinstance(raw, Mapping):
        raise ThresholdsError(f"{path}: the top level must be a mapping of check sections")
    preset = preset_thresholds(raw[PRESET_KEY], f"{path}: {PRESET_KEY}") if PRESET_KEY in raw else None
    digest = hashlib.sha256(text.encode() + (preset.digest.encode() if preset else b"")).hexdigest()[:16]
    return Thresholds(source or str(path), raw, digest, preset=preset)
