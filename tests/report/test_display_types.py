"""The display helpers name the record types they read (issue 60): a record, its decision, its baseline comparison
and its floors are annotated with their classes (:mod:`harness.records`) or a protocol, never ``Any``."""

import ast
import re
from pathlib import Path

import pytest

DISPLAY = Path(__file__).resolve().parents[2] / "harness" / "display"
RECORD_PARAMETERS = {"record", "records", "case", "cases", "decision", "baseline", "floors", "comparison"}
"""Parameters that hold a record or one of its typed values."""


def loosely_typed(source: str) -> list[str]:
    """``function(parameter: annotation)`` for each record parameter whose annotation is or holds ``Any``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            for argument in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]:
                annotation = ast.unparse(argument.annotation) if argument.annotation is not None else "Any"
                if argument.arg in RECORD_PARAMETERS and "Any" in annotation.replace("[str, Any]", ""):
                    found.append(f"{node.name}({argument.arg}: {annotation})")
    return found


def test_the_scan_finds_a_record_typed_any():
    code = "def f(record: Any, floors: Sequence[Any] | None, decision: Decision | Mapping[str, Any] | None): ..."
    assert loosely_typed(code) == ["f(record: Any)", "f(floors: Sequence[Any] | None)"]


@pytest.mark.parametrize("module", sorted(DISPLAY.glob("*.py")), ids=lambda path: path.name)
def test_display_names_the_record_types_it_reads(module):
    assert loosely_typed(module.read_text(encoding="utf-8")) == []


def any_annotations(source: str) -> list[str]:
    """Every annotation (a parameter's, a return's, an assigned name's) that is or holds ``Any``."""
    annotations = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            arguments = [
                *node.args.posonlyargs,
                *node.args.args,
                *node.args.kwonlyargs,
                node.args.vararg,
                node.args.kwarg,
            ]
            annotations += [
                argument.annotation for argument in arguments if argument is not None and argument.annotation
            ]
            annotations += [node.returns] if node.returns is not None else []
        elif isinstance(node, ast.AnnAssign):
            annotations.append(node.annotation)
    return [text for text in map(ast.unparse, annotations) if re.search(r"\bAny\b", text)]


def test_any_is_in_at_most_two_annotations_of_display():
    """Issue 60: display's figures and rows are :data:`~harness.display.plots.TemplateData` and its records their
    classes; ``Any`` is left where a record's value is not typed yet (the ratio checks' comparisons)."""
    assert any_annotations("def f(a: Any, *b: int, **c: Any) -> dict[str, Any]: ...") == [
        "Any",
        "Any",
        "dict[str, Any]",
    ]
    found = [text for module in sorted(DISPLAY.glob("*.py")) for text in any_annotations(module.read_text())]
    print(f"Any in display's annotations: {len(found)}: {found}")
    assert len(found) <= 2, found
