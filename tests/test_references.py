"""Every module path that harness/'s docstrings, comments, templates and thresholds.yaml name exists, so a
moved module cannot leave its old address behind: a dotted ``harness.x.y[.name[.member]]`` (or a Sphinx role's
relative ``.y.name``, from the module's package) resolves to a module, then to a name defined or imported at its
top level, then to a member of that class; a file path ``harness/x/y.py`` names a file. Read statically (no
imports), so the scan is quick."""

import ast
import functools
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
HARNESS = REPO / "harness"
DOTTED = re.compile(r"\bharness(?:\.[A-Za-z_]\w*)+")
FILE_PATH = re.compile(r"\bharness/[\w/]+\.(?:py|yaml|j2|json|csv)\b")
RELATIVE = re.compile(r":[a-z]+:`~?(\.[A-Za-z_][\w.]*)")
"""A Sphinx role's relative target (``:mod:`.tables```, ``:func:`~.arms.vibe_arm_table```): relative to the
module's package."""
PLACEHOLDER = re.compile(r"/[A-Z_]+\.")
"""``harness/presets/NAME.yaml`` names a family of files, not one."""
SCANNED_SUFFIXES = {".py", ".yaml", ".j2"}


def module_file(parts: list[str]) -> Path | None:
    path = REPO.joinpath(*parts)
    if (path / "__init__.py").is_file():
        return path / "__init__.py"
    return path.with_suffix(".py") if path.with_suffix(".py").is_file() else None


def bound_names(body: list[ast.stmt]) -> dict[str, ast.AST]:
    """Names a module or class body binds (definitions, assignments, imports, also under if/try), each to
    its node."""
    names: dict[str, ast.AST] = {}
    for statement in body:
        if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names[statement.name] = statement
        elif isinstance(statement, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            names.update(
                {node.id: statement for target in targets for node in ast.walk(target) if isinstance(node, ast.Name)}
            )
        elif isinstance(statement, ast.Import | ast.ImportFrom):
            names.update({(alias.asname or alias.name).split(".")[0]: statement for alias in statement.names})
        elif isinstance(statement, ast.If | ast.Try | ast.With):
            for block in ("body", "orelse", "finalbody", "handlers"):
                for inner in getattr(statement, block, []):
                    names.update(bound_names(inner.body if isinstance(inner, ast.ExceptHandler) else [inner]))
    return names


@functools.cache
def module_names(path: Path) -> dict[str, ast.AST]:
    return bound_names(ast.parse(path.read_text(encoding="utf-8")).body)


def resolves(reference: str) -> bool:
    parts = reference.split(".")
    depth = len(parts)
    while depth > 1 and module_file(parts[:depth]) is None:
        depth -= 1
    path = module_file(parts[:depth])
    rest = parts[depth:]
    if path is None:
        return False
    if not rest:
        return True
    node = module_names(path).get(rest[0])
    if node is None:
        return False
    if len(rest) > 1 and isinstance(node, ast.ClassDef):
        return has_member(path, node, rest[1])
    return True


def has_member(path: Path, cls: ast.ClassDef, member: str) -> bool:
    """Whether ``cls`` (defined in ``path``) or one of its harness base classes binds ``member``."""
    if member in bound_names(cls.body):
        return True
    for base in cls.bases:
        name = (
            base.value.id
            if isinstance(base, ast.Subscript) and isinstance(base.value, ast.Name)
            else getattr(base, "id", None)
        )
        node = module_names(path).get(name)
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("harness"):
            base_path = module_file(node.module.split("."))
            node = module_names(base_path).get(name) if base_path else None
            if isinstance(node, ast.ClassDef) and has_member(base_path, node, member):
                return True
        elif isinstance(node, ast.ClassDef) and has_member(path, node, member):
            return True
    return False


def absolute(path: Path, relative: str) -> str:
    """A relative target (``.arms.vibe_arm_table``) of module ``path`` as a dotted path from its package."""
    package = path.parent.relative_to(REPO).parts
    return ".".join(package) + relative.rstrip(".")


def references() -> list[tuple[str, str]]:
    """(where, reference) for each dotted module path and harness file path in harness/'s text files."""
    found = []
    for path in sorted(HARNESS.rglob("*")):
        if path.suffix not in SCANNED_SUFFIXES or not path.is_file():
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            where = f"{path.relative_to(REPO)}:{number}"
            found += [(where, match.group()) for match in DOTTED.finditer(line)]
            found += [
                (where, absolute(path, match.group(1))) for match in RELATIVE.finditer(line) if path.suffix == ".py"
            ]
            found += [
                (where, match.group()) for match in FILE_PATH.finditer(line) if not PLACEHOLDER.search(match.group())
            ]
    return found


def test_the_scan_finds_the_references_it_checks():
    found = {reference for _, reference in references()}
    assert "harness.display.plots.NOT_ESTIMABLE" in found
    assert "harness/extraction/vibe_protocol.py" in found
    assert "harness.checks.counterfactual.arms.vibe_arm_table" in found  # :func:`.arms.vibe_arm_table` in tables.py
    assert not resolves("harness.report.plots")
    assert not resolves("harness.checks.counterfactual.perceived")  # moved to harness.perception
    assert not resolves("harness.checks.ntvd.ntvd_with_merging")
    assert not resolves("harness.checks.base.Check.no_such_method")
    assert resolves("harness.checks.base.Check.compare")


def test_every_named_module_and_file_exists():
    stale = []
    for where, reference in references():
        exists = (REPO / reference).is_file() if "/" in reference else resolves(reference)
        if not exists:
            stale.append(f"{where}: {reference}")
    assert not stale, "references to modules, names or files that do not exist:\n" + "\n".join(stale)
