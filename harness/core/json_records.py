"""The JSON codec of typed records: a frozen dataclass written as a JSON object of its fields, in order, and read
back by its fields' annotations (:class:`JsonRecord`, :func:`to_json_value`, :func:`from_json_value`), every error
naming where the value lies and its key. results.json's metadata (:mod:`harness.results.metadata`) and the records'
nested values (:mod:`harness.records`) are such records."""

from __future__ import annotations

import dataclasses
import functools
import math
import types
import typing
from collections.abc import Mapping
from typing import Any, ClassVar, TypeVar

R = TypeVar("R", bound="JsonRecord")


class JsonRecord:
    """A frozen dataclass written as a JSON object of its fields, in order (:func:`to_json_value`). ``OMITTED_WHEN_NONE``
    names the fields left out of the JSON while None (a key some writers do not write)."""

    OMITTED_WHEN_NONE: ClassVar[tuple[str, ...]] = ()
    WRITTEN_TOGETHER: ClassVar[tuple[tuple[str, ...], ...]] = ()
    """Groups of fields written whole (a None as null) where any of them is set, and left out together otherwise
    (keys a later schema added as one block)."""
    NOT_WRITTEN: ClassVar[tuple[str, ...]] = ()
    """Fields held in memory only (a test's sensitivity), never written nor read."""
    WRITTEN_AS_READ: ClassVar[tuple[str, ...]] = ()
    """Fields a later writer added, always written by it (a None as null), that a record read from JSON writes back
    only where that JSON had them."""
    JSON_KEYS: ClassVar[dict[str, str]] = {}
    """Field name -> its JSON key, where the key is no Python name (``anti-stereotype``)."""

    def to_json(self) -> dict[str, Any]:
        unset = {
            name
            for group in self.WRITTEN_TOGETHER
            if all(getattr(self, member) is None for member in group)
            for name in group
        } | set(getattr(self, "_keys_not_read", ()))
        return {
            self.JSON_KEYS.get(field.name, field.name): to_json_value(getattr(self, field.name))
            for field in dataclasses.fields(self)  # type: ignore[arg-type]
            if field.name not in self.NOT_WRITTEN
            and field.name not in unset
            and not (field.name in self.OMITTED_WHEN_NONE and getattr(self, field.name) is None)
        }

    @classmethod
    def from_json(cls: type[R], data: Any, where: str, strict: bool = False) -> R:
        """The record of JSON object ``data``, each field read as its annotation says; ``where`` prefixes every error.
        A key the record has no field for is an error when ``strict`` (a file of this schema), else dropped."""
        if not isinstance(data, Mapping):
            raise ValueError(f"{where}: expected a JSON object, got {type(data).__name__}")
        if cls.JSON_KEYS:
            names = {key: name for name, key in cls.JSON_KEYS.items()}
            data = {names.get(key, key): value for key, value in data.items()}
        hints = {name: hint for name, hint in field_types(cls).items() if name not in cls.NOT_WRITTEN}
        unknown = sorted(set(data) - set(hints))
        if unknown and strict:
            raise ValueError(f"{where}: unknown key(s) {unknown}")
        values = {
            name: from_json_value(hints[name], value, where, cls.JSON_KEYS.get(name, name), strict)
            for name, value in data.items()
            if name in hints
        }
        missing = [
            cls.JSON_KEYS.get(field.name, field.name)
            for field in dataclasses.fields(cls)  # type: ignore[arg-type]
            if field.name not in values
            and field.default is dataclasses.MISSING
            and field.default_factory is dataclasses.MISSING
        ]
        if missing:
            raise ValueError(f"{where}: lacks key(s) {missing}")
        try:
            record = cls(**values)
        except (TypeError, ValueError) as exc:  # a value the class's own checks refuse
            raise ValueError(f"{where}: {exc}") from None
        not_read = tuple(name for name in cls.WRITTEN_AS_READ if name not in data)
        if not_read:
            object.__setattr__(record, "_keys_not_read", not_read)
        return record


@functools.cache
def field_types(kind: type) -> dict[str, Any]:
    """Field name -> its resolved annotation, for a dataclass ``kind``."""
    hints = typing.get_type_hints(kind)
    return {field.name: hints[field.name] for field in dataclasses.fields(kind)}


@functools.cache
def row_fields(kind: type) -> frozenset[str]:
    """The fields of dataclass ``kind`` whose annotation holds a :class:`JsonRecord` (a row class, a list or mapping of
    them, or one of them or None): the fields written by :func:`to_json_value` and read by :func:`from_json_value`."""
    return frozenset(name for name, hint in field_types(kind).items() if _holds_record(hint))


def _holds_record(hint: Any) -> bool:
    if isinstance(hint, type) and issubclass(hint, JsonRecord):
        return True
    return any(_holds_record(argument) for argument in typing.get_args(hint))


def to_json_value(value: Any) -> Any:
    """``value`` as JSON: a record by its ``to_json()``, a mapping or sequence item by item, a NumPy scalar as its
    Python value, a non-finite number as null (JSON has no NaN), anything else as it is."""
    if type(value).__module__ == "numpy" and getattr(value, "ndim", None) == 0:  # a NumPy scalar, not an array
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, JsonRecord):
        return value.to_json()
    if isinstance(value, Mapping):
        return {key: to_json_value(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_json_value(item) for item in value]
    return value


_SCALARS: dict[type, tuple[type, ...]] = {str: (str,), int: (int,), float: (int, float), bool: (bool,)}


def described(kind: Any) -> str:
    """The JSON types annotation ``kind`` admits, in words (``int or null``), for errors."""
    arguments = typing.get_args(kind)
    if typing.get_origin(kind) in (types.UnionType, typing.Union):
        return " or ".join("null" if argument is type(None) else described(argument) for argument in arguments)
    if kind in _SCALARS:
        return " or ".join(accepted.__name__ for accepted in _SCALARS[kind])
    if kind in (list, tuple) or typing.get_origin(kind) in (list, tuple):
        return "a list"
    return "dict"


def from_json_value(kind: Any, value: Any, where: str, key: str, strict: bool = False) -> Any:
    """The value of ``key`` (in ``where``) read as annotation ``kind``: a record, ``dict[str, X]``, ``list[X]``,
    ``X | None``, a scalar, or ``Any`` (kept as it is); anything else is a ``ValueError`` saying what was expected."""
    if kind is Any:
        return value
    origin, arguments = typing.get_origin(kind), typing.get_args(kind)
    if origin in (types.UnionType, typing.Union):
        if value is None and type(None) in arguments:
            return None
        (inner,) = [argument for argument in arguments if argument is not type(None)]
        if value is None or not _fits(inner, value):
            raise ValueError(f"{where}: key {key!r} must be {described(kind)}, got {value!r:.80}")
        return from_json_value(inner, value, where, key, strict)
    if not _fits(kind, value):
        raise ValueError(f"{where}: key {key!r} must be {described(kind)}, got {value!r:.80}")
    if isinstance(kind, type) and issubclass(kind, JsonRecord):
        return kind.from_json(value, f"{where}, {key}", strict)
    if origin is dict or kind is dict:
        item = arguments[1] if arguments else Any
        return {name: from_json_value(item, entry, f"{where}, {key}", name, strict) for name, entry in value.items()}
    if origin in (list, tuple) or kind in (list, tuple):
        item = arguments[0] if arguments else Any
        items = [from_json_value(item, entry, where, f"{key}[{index}]", strict) for index, entry in enumerate(value)]
        return tuple(items) if tuple in (origin, kind) else items
    return value


def _fits(kind: Any, value: Any) -> bool:
    """Whether JSON ``value`` is of the JSON type annotation ``kind`` (not a union) stands for."""
    if kind in _SCALARS:
        return isinstance(value, _SCALARS[kind]) and (kind is bool or not isinstance(value, bool))
    if kind in (list, tuple) or typing.get_origin(kind) in (list, tuple):
        return isinstance(value, (list, tuple))
    return isinstance(value, Mapping)
