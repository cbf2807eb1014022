"""One lazy registry for every kind of extension: checks, backends, architectures and loaders.

A :class:`Registry` maps a name to a target string, ``module:attribute`` or a module path, and imports it
only when the name is used (lm-evaluation-harness's lazy registry), so an optional extra (torch, vllm) is
never imported for a run that does not name it. Besides the built-in entries, another installed package adds
entries through the entry-point group of the registry (``[project.entry-points."lalm_fairness.checks"]``,
``...backends``, ``...architectures``, ``...loaders``): its distribution declares ``name = "pkg.module:Class"``
(or ``name = "pkg.check_folder"`` for a check), and the name is then known wherever the package is installed.
A built-in name wins over an entry point of the same name.
"""

from __future__ import annotations

import importlib
import importlib.metadata
from collections.abc import Iterator, Mapping
from typing import Any

ENTRY_POINT_PREFIX = "lalm_fairness."


class Registry(Mapping[str, str]):
    """Name -> target (``module:attribute`` or ``module``), read as a mapping; :meth:`load` imports a target.

    ``kind`` names what is registered, in error messages; ``group`` is the entry-point group (after
    :data:`ENTRY_POINT_PREFIX`) whose entries are added, once, on first use."""

    def __init__(self, kind: str, group: str, builtins: Mapping[str, str]):
        self.kind = kind
        self.group = ENTRY_POINT_PREFIX + group
        self._entries: dict[str, str] = dict(builtins)
        self._discovered = False
        self._loaded: dict[str, Any] = {}

    def _discover(self) -> None:
        if self._discovered:
            return
        self._discovered = True
        for entry_point in importlib.metadata.entry_points(group=self.group):
            self._entries.setdefault(entry_point.name, entry_point.value)

    def __getitem__(self, name: str) -> str:
        self._discover()
        return self._entries[name]

    def __iter__(self) -> Iterator[str]:
        self._discover()
        return iter(list(self._entries))

    def __len__(self) -> int:
        self._discover()
        return len(self._entries)

    def register(self, name: str, target: str) -> None:
        """Add (or replace) ``name`` -> ``target``, imported on first use."""
        self._discover()
        self._entries[name] = target
        self._loaded.pop(name, None)

    def pop(self, name: str, *default: Any) -> Any:
        """Remove ``name`` (tests that register a temporary entry); ``default`` as :meth:`dict.pop`."""
        self._discover()
        self._loaded.pop(name, None)
        return self._entries.pop(name, *default)

    def unknown(self, name: str) -> str:
        """The words of an unknown-name error: what was asked and every known name."""
        return f"unknown {self.kind} {name!r}; known: {sorted(self)}"

    def load(self, name: str) -> Any:
        """The object ``name`` registers (the module, or its attribute), imported once. ``KeyError`` for an
        unknown name; an ``ImportError`` of the target propagates, for the caller to word."""
        if name not in self:
            raise KeyError(self.unknown(name))
        if name not in self._loaded:
            self._loaded[name] = import_target(self[name])
        return self._loaded[name]


def import_target(target: str) -> Any:
    """``module:attribute`` -> the attribute (dotted attributes allowed); ``module`` -> the module."""
    module_name, _, attribute = target.partition(":")
    loaded: Any = importlib.import_module(module_name)
    for part in filter(None, attribute.split(".")):
        loaded = getattr(loaded, part)
    return loaded
