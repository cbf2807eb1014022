"""Write harness/data/bundled_audio_checks.json: the audio checks of every recording the harness ships (the demo
corpus and the BASIS demo suite), so that a first run on a fresh cache decodes none of them
(:data:`harness.data.audio.BUNDLED_AUDIO_CHECKS`). Run it after rebuilding either (``build_demo_corpus.py``,
``build_basis_demo.py``); ``tests/data/test_bundled_audio_checks.py`` fails, naming this script, until then.

Usage: ``python scripts/build_bundled_audio_checks.py``
"""

from __future__ import annotations

import json

from harness.data.audio import BUNDLED_AUDIO_CHECKS, bundled_audio_entries, bundled_audio_files


def main() -> None:
    files = bundled_audio_files()
    memo = bundled_audio_entries(files)
    lines = [f"{json.dumps(digest)}:{json.dumps(entry, sort_keys=True)}" for digest, entry in memo["entries"].items()]
    entries = ",\n".join(lines)
    BUNDLED_AUDIO_CHECKS.write_text(f'{{"version": {memo["version"]}, "entries": {{\n{entries}\n}}}}\n')
    print(f"{BUNDLED_AUDIO_CHECKS}: {len(memo['entries'])} entries from {len(files)} files")


if __name__ == "__main__":
    main()
