"""The README stays a short user guide and every relative link in it and in docs/ leads somewhere.

A link ``[text](target)`` whose target is not http(s) or mailto must name a file that exists relative to
the linking file, and its ``#anchor``, if any, must be a heading of the target file under GitHub's anchor
rule (lowercase, spaces to '-', punctuation other than '-' and '_' dropped, repeated headings suffixed -1,
-2, ...). Links inside fenced code blocks and inline code spans are not links. Paths to code are not
checked here: the code moves on its own schedule.
"""

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
DOCS = sorted((REPO / "docs").glob("*.md"))
MAX_README_BYTES = 20_000

FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$")
CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1")
LINK = re.compile(r"!?\[([^\]]*)\]\(\s*<?([^)\s>]*)>?(?:\s+(?:\"[^\"]*\"|'[^']*'))?\s*\)")
EXTERNAL = re.compile(r"^(?:https?:|mailto:)", re.IGNORECASE)


def prose_lines(text: str):
    """(line number, line) for every line outside fenced code blocks."""
    fence = None
    for number, line in enumerate(text.splitlines(), 1):
        match = FENCE.match(line)
        if fence is None:
            if match:
                fence = match.group(1)
                continue
            yield number, line
        elif (
            match
            and match.group(1)[0] == fence[0]
            and len(match.group(1)) >= len(fence)
            and not line.strip()[len(match.group(1)) :].strip()
        ):
            fence = None


def slug(heading: str) -> str:
    """GitHub's anchor for a heading's text: markup dropped, lowercase, punctuation but '-' and '_' dropped."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link in a heading: its text
    text = text.replace("`", "").replace("*", "")
    text = text.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every heading anchor of a markdown file, repeated headings numbered as GitHub numbers them."""
    seen: dict[str, int] = {}
    found = set()
    for _, line in prose_lines(path.read_text(encoding="utf-8")):
        match = HEADING.match(line)
        if not match:
            continue
        base = slug(match.group(2))
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def links(path: Path):
    """(line number, target) of every relative link of a markdown file, outside code."""
    for number, line in prose_lines(path.read_text(encoding="utf-8")):
        for match in LINK.finditer(CODE_SPAN.sub("code", line)):
            target = match.group(2)
            if target and not EXTERNAL.match(target):
                yield number, target


def broken_links(path: Path) -> list[str]:
    problems = []
    for number, target in links(path):
        file_part, _, anchor = target.partition("#")
        linked = (path.parent / file_part).resolve() if file_part else path
        where = f"{path.relative_to(REPO)}:{number}: ({target})"
        if not linked.exists():
            problems.append(f"{where}: no file {file_part}")
        elif anchor and linked.suffix == ".md" and anchor not in anchors(linked):
            problems.append(f"{where}: no heading with anchor #{anchor} in {linked.relative_to(REPO)}")
    return problems


def test_the_readme_is_a_short_user_guide():
    size = len(README.read_bytes())
    assert size <= MAX_README_BYTES, f"README.md is {size} bytes; move detail into docs/ (limit {MAX_README_BYTES})"


@pytest.mark.parametrize("path", [README, *DOCS], ids=lambda p: str(p.relative_to(REPO)))
def test_every_relative_link_resolves(path):
    assert broken_links(path) == []


def test_the_readme_links_every_document_in_docs():
    linked = {(README.parent / target.partition("#")[0]).resolve() for _, target in links(README)}
    assert [str(doc.relative_to(REPO)) for doc in DOCS if doc.resolve() not in linked] == []


def test_the_slug_follows_githubs_rule():
    assert slug("The gate's decision rule") == "the-gates-decision-rule"
    assert slug("Layout (as of this split)") == "layout-as-of-this-split"
    assert (
        slug("CI summary, reports from results files, the nightly trend")
        == "ci-summary-reports-from-results-files-the-nightly-trend"
    )
    assert slug("A real `vLLM` engine on CPU") == "a-real-vllm-engine-on-cpu"
    assert slug("snake_case and - dash") == "snake_case-and---dash"


def test_fenced_code_and_repeated_headings(tmp_path):
    doc = tmp_path / "doc.md"
    doc.write_text(
        "# Title\n\n```bash\n# not a heading\n[not a link](missing.md)\n```\n\n## Notes\n\n## Notes\n"
        "\n[ok](#notes-1) [code `[x](gone.md)`](#title)\n"
    )
    assert anchors(doc) == {"title", "notes", "notes-1"}
    assert [target for _, target in links(doc)] == ["#notes-1", "#title"]


def test_the_install_for_a_teams_repository_names_a_source_that_works_before_publication():
    """Issue 59, item 9: "pip install lalm-fairness" named a package no registry holds yet. The README installs from
    a clone (a path, a git URL or a wheel), as tests/plugin/test_installed_plugin.py does from this checkout."""
    section = README.read_text().split("## In your own repository", 1)[1].split("\n## ", 1)[0]
    (source,) = re.findall(r"pip install (\S+) && pytest --pyargs harness\.gate_tests", section)
    assert "/" in source or source.startswith("git+") or source.endswith(".whl"), source
    assert "not yet on\nPyPI" in section or "not yet on PyPI" in section
