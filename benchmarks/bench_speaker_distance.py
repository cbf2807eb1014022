"""The speaker-embedding distance of each counterfactual arm to its recording (issue 61), by Resemblyzer.

For the demo corpus's gender arms (Praat's ``identity``, ``gender_swap`` and ``gender_sham``) and, with
``--age-corpus DIR`` (a corpus with ``age`` labels ``young``/``elderly``, e.g. the suite
``bench_age_counterfactual.py`` builds in its ``--work``), the WORLD age arms (``world_identity``, ``age_shift``,
``age_sham``): one recording per speaker (its first sentence), each arm's cosine distance to it
(:func:`harness.checks.counterfactual.speaker_distance.speaker_distances`), printed per direction (median) and over
all recordings (median, 90th percentile, maximum). These are the figures behind the thresholds.yaml bounds
``max_identity_speaker_distance`` and ``min_swap_speaker_distance``.

Usage (needs ``[resemblyzer]``): ``python benchmarks/bench_speaker_distance.py --age-corpus /tmp/age-counterfactual/suite``
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from pathlib import Path

from harness.checks.counterfactual.arms import build_arms
from harness.checks.counterfactual.settings import COUNTERFACTUAL_SCHEMA, SECTION
from harness.checks.counterfactual.speaker_distance import RESEMBLYZER, speaker_distance_checks
from harness.data.corpus import load_corpus
from harness.thresholds import packaged_thresholds

DEMO = Path(__file__).resolve().parents[1] / "harness" / "data" / "demo"


def measure(corpus_folder: Path, transform: str) -> None:
    corpus = load_corpus(corpus_folder, check_audio=False)
    packaged = packaged_thresholds().settings(SECTION, COUNTERFACTUAL_SCHEMA, None, "gender")
    settings = dataclasses.replace(packaged, transform=transform)
    first = corpus.table.groupby("speaker_id").head(1).index
    started = time.perf_counter()
    arms = build_arms(corpus, settings.transform_settings(), transform=transform, utterances=first,
                      sham_settings=settings.sham_settings())  # fmt: skip
    checks = speaker_distance_checks(arms.recordings, arms.audio, encoder=RESEMBLYZER, filters=False,
                                     max_identity_speaker_distance=settings.max_identity_speaker_distance,
                                     min_swap_speaker_distance=settings.min_swap_speaker_distance)  # fmt: skip
    if checks.unavailable:
        raise SystemExit(f"ERROR: {checks.unavailable}")
    columns = [column for column in checks.rows.columns if column.endswith("_speaker_distance")]
    print(f"\n{transform} on {corpus_folder.name}: {len(first)} recordings (one per speaker), {checks.version}, "
          f"arms made and embedded in {time.perf_counter() - started:.0f} s")  # fmt: skip
    print(checks.rows.groupby(["source_group", "target_group"])[columns].median().round(3).to_string())
    print(checks.rows[columns].quantile([0.5, 0.9, 1.0]).round(3).rename(index={0.5: "median", 0.9: "p90", 1.0: "max"})
          .to_string())  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--age-corpus", type=Path, default=None, help="a corpus with young/elderly age labels")
    arguments = parser.parse_args()
    measure(DEMO, "gender_swap")
    if arguments.age_corpus is not None:
        measure(arguments.age_corpus, "age_shift")


if __name__ == "__main__":
    main()
