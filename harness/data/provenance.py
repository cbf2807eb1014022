"""A built suite's provenance (``provenance.json``, written by ``lalm-fairness-suite build``), in one line for a run.

The run's metadata and the report name where a corpus or BASIS suite came from: its voices' synthesisers, the
admission filters and what they dropped, and an engine confound the build was allowed to keep
(:mod:`harness.suite.build` writes the file). A folder without the file
(a recorded corpus, the shipped demo) has no provenance entry.
"""

from __future__ import annotations

import json
from pathlib import Path

from harness.core.files import portable_path

PROVENANCE_FILE = "provenance.json"


def provenance_summary(folder: Path) -> dict | None:
    """``{"path", "summary", "engine_confound"}`` of ``folder/provenance.json``, or None without one; a file that
    cannot be read is named with why, not an error (the suite itself loaded). ``engine_confound``: the lines of the
    dimensions built with ``--allow-engine-confound`` (:mod:`harness.suite.spread`), or None."""
    path = Path(folder) / PROVENANCE_FILE
    if not path.is_file():
        return None
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
        voices = record["voices"]
        synthesisers = sorted({voice["synthesiser"] for voice in voices})
        filters = record["filters"]
        words = []
        wer = filters.get("wer", {})
        words.append(f"WER = 0 by {wer['asr']}: {wer['dropped']} dropped" if wer.get("enabled") else "WER = 0 off")
        perceived = filters.get("perceived_group", {})
        words.append(
            f"perceived {perceived['dimension']} by {perceived['perceiver']}: "
            f"{len(perceived['dropped_voices'])} voice(s) dropped"
            if perceived.get("enabled")
            else "perceived group off"
        )
        outliers = filters.get("outliers", {})
        words.append(f"{len(outliers['listed'])} outlier(s) listed" if outliers.get("enabled") else "outliers off")
        clips = record["clips"]
        confounds = list((record.get("engine_confound") or {}).get("dimensions") or [])
        if confounds:
            words.append(f"ENGINE CONFOUND allowed: {' | '.join(confounds)}")
        summary = (
            f"{record['tool']} ({record['layout']}): {len(voices)} voices ({', '.join(synthesisers)}); "
            f"{clips['admitted']} of {clips['planned']} clips admitted; {'; '.join(words)}"
        )
    except (OSError, ValueError, KeyError, TypeError) as exc:
        summary, confounds = f"unreadable ({type(exc).__name__}: {exc})", []
    return {"path": portable_path(path), "summary": summary, "engine_confound": confounds or None}
