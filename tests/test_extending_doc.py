"""docs/extending.md stays true: every path, module, attribute, registry and entry-point group it names exists.

The checklist's steps themselves are exercised by tests/checks/test_extension_entry_point.py (a toy check from
another package through the gate) and tests/checks/test_registries.py (the contracts over every registry entry).
"""

import importlib
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
TEXT = (REPO / "docs" / "extending.md").read_text(encoding="utf-8")
SPANS = re.findall(r"`([^`\n]+)`", TEXT)
PATHS = sorted(
    {span for span in SPANS if re.fullmatch(r"[\w.]+(/[\w.]+)*/?", span) and "/" in span and "<" not in span}
)
DOTTED = sorted({span for span in SPANS if re.fullmatch(r"harness(\.\w+)+", span)})
NAMED_IN = sorted(set(re.findall(r"`(\w+)` in `(harness/[\w/]+\.py)`", TEXT)))


def resolve(dotted: str):
    """The module or attribute a dotted name names (the longest importable module prefix, then attributes)."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            value = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for attribute in parts[cut:]:
            value = getattr(value, attribute)
        return value
    raise ModuleNotFoundError(dotted)


def test_the_page_names_what_it_should():
    assert len(PATHS) > 10 and len(DOTTED) > 5 and len(NAMED_IN) >= 5


@pytest.mark.parametrize("path", PATHS)
def test_every_path_exists(path):
    assert (REPO / path).exists(), f"docs/extending.md names {path}, which does not exist"


@pytest.mark.parametrize("dotted", DOTTED)
def test_every_dotted_name_resolves(dotted):
    resolve(dotted)


@pytest.mark.parametrize(("name", "path"), NAMED_IN)
def test_every_registry_line_lies_where_the_page_says(name, path):
    module = importlib.import_module(path.removesuffix(".py").removesuffix("/__init__").replace("/", "."))
    assert hasattr(module, name), f"{path} defines no {name}"


def test_the_entry_point_groups_are_the_registries_groups():
    from harness.checks import CHECKS
    from harness.data.loaders import LOADERS
    from harness.models import BACKENDS
    from harness.models.hf_arch import ARCHITECTURES
    from harness.models.sim import RESPONDERS
    from harness.suite.banks import VOICE_BANKS

    named = set(re.findall(r"lalm_fairness\.\w+", TEXT))
    registries = (CHECKS, BACKENDS, ARCHITECTURES, LOADERS, RESPONDERS, VOICE_BANKS)
    assert named == {registry.group for registry in registries}
