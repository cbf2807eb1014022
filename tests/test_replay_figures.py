"""The README's replay figures are those of docs/vibe_replay.md, which benchmarks/bench_vibe_replay.py writes: the
seed count and, per threshold set, the median and 5-95% range of the number of models failed."""

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
REPLAY = REPO / "docs" / "vibe_replay.md"

ROW = re.compile(r"^\| (built-in defaults|VIBE preset) \| (\d+) \((\d+)–(\d+)\) \|", re.MULTILINE)
SEEDS = re.compile(r"share of the (\d+) seeds")
QUOTED = re.compile(
    r"over (\d+)\s+seeds the preset fails a median of (\d+) of (\d+) models \(5–95%: (\d+)–(\d+)\),.*?"
    r"the release policy\s+(\d+) \((\d+)–(\d+)\)",
    re.DOTALL,
)


def test_the_readme_quotes_the_replays_seed_distribution():
    generated = REPLAY.read_text(encoding="utf-8")
    rows = {name: tuple(int(n) for n in numbers) for name, *numbers in ROW.findall(generated)}
    assert set(rows) == {"built-in defaults", "VIBE preset"}, rows
    seeds = int(SEEDS.search(generated).group(1))
    assert seeds >= 200
    quoted = QUOTED.search(README.read_text(encoding="utf-8"))
    assert quoted, "README.md no longer quotes the replay's seed distribution in the form this test reads"
    numbers = [int(n) for n in quoted.groups()]
    assert numbers[0] == seeds and numbers[2] == 12
    assert (numbers[1], numbers[3], numbers[4]) == rows["VIBE preset"]
    assert tuple(numbers[5:]) == rows["built-in defaults"]
