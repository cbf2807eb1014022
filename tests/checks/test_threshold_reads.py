"""Checks and views read thresholds as attributes of their typed thresholds (issue 48): no ``settings["max_gap"]``,
``limits.get("rule")`` or ``record.threshold["max_ntvd"]`` in any check folder's ``check.py`` or ``view.py``; and
nothing outside :mod:`harness.thresholds` reads the thresholds file past its typed loader (issue 60)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

CHECKS = Path(__file__).resolve().parents[2] / "harness" / "checks"
MODULES = sorted([*CHECKS.glob("*/check.py"), *CHECKS.glob("*/view.py")])
THRESHOLD_NAMES = {"settings", "thresholds", "threshold", "limits", "values", "section"}
"""Names under which a check or view holds thresholds; any name or attribute containing "threshold" counts too."""
KEY_METHODS = {"get", "pop", "setdefault"}


def names_a_threshold(node: ast.AST) -> bool:
    """Whether the expression holding the key is (or is read from) a thresholds mapping: a name or attribute in
    :data:`THRESHOLD_NAMES` or containing "threshold" anywhere in it (``self.threshold_values(c, k)``, ``record.threshold``)."""
    for part in ast.walk(node):
        name = part.id if isinstance(part, ast.Name) else part.attr if isinstance(part, ast.Attribute) else None
        if name is not None and (name in THRESHOLD_NAMES or "threshold" in name.lower()):
            return True
    return False


def string_key_reads(source: str) -> list[tuple[int, str]]:
    """(line, code) of every read of a thresholds mapping by a string constant: ``x["key"]`` or ``x.get("key")``
    (also ``pop``, ``setdefault``) where ``x`` names thresholds (:func:`names_a_threshold`)."""
    reads = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Subscript):
            key, holder = node.slice, node.value
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in KEY_METHODS
            and node.args
        ):
            key, holder = node.args[0], node.func.value
        else:
            continue
        if isinstance(key, ast.Constant) and isinstance(key.value, str) and names_a_threshold(holder):
            reads.append((node.lineno, ast.unparse(node)))
    return reads


@pytest.mark.parametrize(
    "code",
    [
        'settings["max_gap"]',
        'float(limits["min_icat"])',
        'threshold.get("rule")',
        'record.threshold.get("max_ntvd", 20)',
        'self.threshold_values(context, case)["max_gap"]',
        'context.thresholds.values("ntvd", schema, None, "gender")["tau"]',
    ],
)
def test_the_detector_finds_a_string_key_read(code):
    assert [line for line, _ in string_key_reads(code)] == [1]


@pytest.mark.parametrize(
    "code",
    ["settings.max_gap", 'payload["effect"]', 'entry.get("arms")', "record.threshold", "KINDS[record.kind].bar_key"],
)
def test_the_detector_passes_attribute_reads_and_other_mappings(code):
    assert string_key_reads(code) == []


def test_the_check_folders_exist():
    names = {path.parent.name for path in MODULES}
    assert {"ntvd", "counterfactual", "wer_ratio", "icat", "basis_common", "semantic_aware"} <= names


@pytest.mark.parametrize("module", MODULES, ids=lambda path: f"{path.parent.name}/{path.name}")
def test_no_check_or_view_reads_a_threshold_by_string_key(module):
    reads = string_key_reads(module.read_text(encoding="utf-8"))
    assert reads == [], (
        f"{module.relative_to(CHECKS.parents[1])}: read the typed thresholds' attributes instead of "
        + "; ".join(f"line {line}: {code}" for line, code in reads)
    )


HARNESS = CHECKS.parent
GATE_MODULES = sorted((HARNESS / "gate").glob("*.py"))


@pytest.mark.parametrize("module", GATE_MODULES, ids=lambda path: f"gate/{path.name}")
def test_the_gate_reads_its_own_sections_as_attributes(module):
    """Issue 60 item 3: the ``gate`` and ``audio_floor`` sections are typed like a check's (``thresholds.gate()``,
    :class:`harness.gate.audio_floor.AudioFloorSettings`); ``settings["alpha"]`` read them by key."""
    reads = string_key_reads(module.read_text(encoding="utf-8"))
    assert reads == [], f"{module.relative_to(HARNESS.parent)}: " + "; ".join(f"line {n}: {code}" for n, code in reads)


READS = {"read_text", "read_bytes", "open"}


def thresholds_file_reads(source: str) -> list[tuple[int, str]]:
    """(line, code) of every read of the built-in thresholds file (``PACKAGED.read_text()``, ``open(PACKAGED)``)
    outside :mod:`harness.thresholds`, whose typed loader is the one way to its values."""
    reads = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        method = isinstance(node.func, ast.Attribute) and node.func.attr in READS
        opened = isinstance(node.func, ast.Name) and node.func.id == "open" and node.args
        target = node.func.value if method else node.args[0] if opened else None
        if isinstance(target, ast.Name) and target.id == "PACKAGED":
            reads.append((node.lineno, ast.unparse(node)))
    return reads


def test_the_file_read_detector_finds_a_raw_read():
    code = 'yaml.safe_load(PACKAGED.read_text())["counterfactual"]["defaults"]\nopen(PACKAGED)\nf"{PACKAGED}"'
    assert sorted(line for line, _ in thresholds_file_reads(code)) == [1, 2]


def test_nothing_outside_the_thresholds_module_reads_the_thresholds_file():
    """Issue 60: the suite's transform bank read ``yaml.safe_load(PACKAGED.read_text())["counterfactual"]["defaults"]``,
    past the schema's types, ranges and layers."""
    reads = {
        f"{path.relative_to(HARNESS.parent)}:{line}": code
        for path in sorted(HARNESS.rglob("*.py"))
        if path.name != "thresholds.py" or path.parent != HARNESS
        for line, code in thresholds_file_reads(path.read_text(encoding="utf-8"))
    }
    assert reads == {}, f"read the thresholds through harness.thresholds' typed loader: {reads}"
