"""Every module path the code's own words name still exists (issue 60 item 6: references to moved modules).

Scanned: the docstrings and comments of ``harness/`` and ``lalm_fairness_pytest/``, the built-in thresholds.yaml and
the shipped presets. Each dotted ``harness.…`` name must import (its longest importable module prefix, then
attributes or dataclass fields; a class or function where the module it is named under, or a package of it,
defines it, not where it is merely imported); each Sphinx role of a relative name (``:mod:`.tables```) and of a member of a name
the module holds (``:meth:`Check.compare```) must resolve from that module; each ``harness/….py`` path must exist.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SOURCES = sorted([*(REPO / "harness").rglob("*.py"), *(REPO / "lalm_fairness_pytest").rglob("*.py")])
SETTINGS = [REPO / "harness" / "thresholds.yaml", *sorted((REPO / "harness" / "presets").glob("*.yaml"))]
DOTTED = re.compile(r"(?<![\w./])harness(?:\.[A-Za-z_]\w*)+")
ROLE = re.compile(r":(?:mod|class|func|meth|data|attr|exc):`~?(\.?[A-Za-z_][\w.]*)`")
FILE_PATH = re.compile(r"(?<![\w/])harness/[a-z_0-9/]+\.(?:py|yaml|j2)")


def member(value: object, name: str) -> object:
    """``value.name``, or None for a dataclass field without a class default (it exists on each instance)."""
    if hasattr(value, name):
        return getattr(value, name)
    if isinstance(value, type) and (
        name in getattr(value, "__annotations__", {})
        or (dataclasses.is_dataclass(value) and name in {field.name for field in dataclasses.fields(value)})
    ):
        return None
    raise AttributeError(f"{value!r} has no {name!r}")


def resolve(dotted: str) -> None:
    """Import the longest module prefix of ``dotted`` and walk the rest as members; an error where it breaks."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            value: object = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        module = value
        for name in parts[cut:]:
            if value is None:
                return
            value = member(value, name)
            if value is not None and module is not None and (inspect.isclass(value) or inspect.isfunction(value)):
                defined = value.__module__
                if not (defined == module.__name__ or defined.startswith(module.__name__ + ".")):
                    raise ImportError(f"{module.__name__}.{name} is defined in {defined}, which the name should say")
                module = None
        return
    raise ModuleNotFoundError(dotted)


def module_of(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def broken_references(path: Path) -> list[str]:
    """``line: name (why)`` for every reference in ``path`` that does not resolve."""
    text = path.read_text(encoding="utf-8")
    broken = []

    def check(offset: int, name: str, resolver, *arguments) -> None:
        try:
            resolver(*arguments)
        except (ImportError, AttributeError) as exc:
            broken.append(f"{text[:offset].count(chr(10)) + 1}: {name} ({exc})")

    for match in DOTTED.finditer(text):
        check(match.start(), match.group(0), resolve, match.group(0))
    for match in FILE_PATH.finditer(text):
        check(match.start(), match.group(0), _exists, REPO / match.group(0))
    if path.suffix == ".py":
        module = module_of(path)
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        for match in ROLE.finditer(text):
            name = match.group(1)
            if name.startswith("."):
                check(match.start(), name, resolve, package + name)
            elif "." in name and not name.startswith("harness"):
                head, *rest = name.split(".")
                check(match.start(), name, _member_of, module, head, rest)
    return broken


def _exists(path: Path) -> None:
    if not path.exists():
        raise ImportError(f"{path.relative_to(REPO)} does not exist")


def _member_of(module: str, head: str, rest: list[str]) -> None:
    """``head.rest…`` where ``head`` is a name ``module`` holds; a name it does not hold is another module's
    (``pd.DataFrame``) and is not checked here."""
    holder = importlib.import_module(module)
    if not hasattr(holder, head):
        return
    value: object = getattr(holder, head)
    for name in rest:
        if value is None:
            return
        value = member(value, name)


def test_the_scanner_reports_a_moved_module_a_missing_member_and_a_missing_file(tmp_path, monkeypatch):
    monkeypatch.setattr(f"{__name__}.REPO", tmp_path)
    stale = tmp_path / "stale.py"
    stale.write_text(
        '"""See harness.checks.counterfactual.perceived, harness.records.PermutationFloor and\n'
        'harness/checks/counterfactual/perceived.py; harness.perception and harness/perception.py are here."""\n'
    )
    (tmp_path / "harness").mkdir()
    (tmp_path / "harness" / "perception.py").write_text("")
    found = broken_references(stale)
    assert [line.split(" (")[0] for line in found] == [
        "1: harness.checks.counterfactual.perceived",
        "1: harness.records.PermutationFloor",
        "2: harness/checks/counterfactual/perceived.py",
    ]
    assert "defined in harness.metrics.permutation_floor" in found[1]


@pytest.mark.parametrize("path", [*SOURCES, *SETTINGS], ids=lambda path: str(path.relative_to(REPO)))
def test_every_module_path_named_in_the_code_and_the_settings_resolves(path):
    assert broken_references(path) == []
