"""Two parts of a cold CREMA-D-sized gate run, each against what main c913e63 did, in one process back to back.

* ``labels``: keeping the perceiver's label of each clip in the arm store (``voice:formants`` labels the 6552
  originals and their 6552 swaps: 13,104 labels). Main wrote each durably (:func:`harness.core.files.atomic_write_text`:
  ``fsync`` of the file and of its folder, and a scan of the folder for stale temporaries); the store now writes
  each as it writes an arm (:meth:`~harness.data.voice_transforms.arm_audio.ArmStore.keep_labels`: a temporary
  file renamed, no ``fsync``). ``fsync`` waits for the disk, so its cost is wall time, which a disk shared with other
  work stretches most.
* ``f0``: the simulators' median F0 of each clip they hear (a cold run asks 26,208: original, identity, swap and
  sham). Main measured each in the gate's own process as the simulator answered it, one core
  (:func:`harness.models.sim.stored_f0_hz`); the simulator is now told the missing requests first and measures
  their clips over the cores (:func:`harness.models.sim.prepare_f0`). Printed: wall time and the gate process's own
  CPU time (the serial part), and that every value is the in-process one.

    .venv/bin/python benchmarks/bench_cold_parts.py --part labels [--labels 13104] [--repeats 2]
    .venv/bin/python benchmarks/bench_cold_parts.py --part f0 --corpus-dir DIR [--clips 2000]

Each part runs both ways ``--repeats`` times, alternating; a machine shared with other work stretches the wall
times, so read the ratios within one invocation.
"""

from __future__ import annotations

import argparse
import math
import resource
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from harness.core.files import atomic_write_text
from harness.core.requests import Audio
from harness.core.values import stable_hash
from harness.data.audio import FileAudio
from harness.data.voice_transforms.arm_audio import ArmStore
from harness.models import sim

LABELLER = "voice:formants:features:bench"
LABEL = "5.123456 6.234567 7.345678 7.956789"  # what voice:formants keeps: four log features


def cpu_s(who: int = resource.RUSAGE_SELF) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def durable_labels(store: ArmStore, labelled: list[tuple[Audio, str]]) -> None:
    """Main c913e63's ``keep_labels``: each label through :func:`atomic_write_text`."""
    for arm, label in labelled:
        path = store.label_path(arm, LABELLER)
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, label)


def labels_part(count: int, repeats: int) -> None:
    arms = [Audio(np.zeros(16, np.float32), recipe=f"recording {i}|male|change-gender") for i in range(count)]
    labelled = [(arm, LABEL) for arm in arms]
    ways = (
        ("durable (main)", durable_labels),
        ("store (branch)", lambda store, items: store.keep_labels(items, LABELLER)),
    )
    for _ in range(repeats):
        for name, keep in ways:
            with tempfile.TemporaryDirectory() as tmp:
                store = ArmStore(Path(tmp) / "arms")
                started, cpu = time.perf_counter(), cpu_s()
                keep(store, labelled)
                wall, cpu = time.perf_counter() - started, cpu_s() - cpu
                assert store.labels(arms, LABELLER) == {arm.content_hash: LABEL for arm in arms}
            print(f"labels {name:15s} {count} labels: wall {wall:7.2f}s  CPU {cpu:6.2f}s", flush=True)


def f0_part(corpus_dir: Path, count: int, repeats: int) -> None:
    manifest = pd.read_csv(corpus_dir / "manifest.csv", dtype=str)
    paths = [corpus_dir / relative for relative in manifest["audio"].iloc[:count]]
    clips = [FileAudio(path, stable_hash(str(path))) for path in paths]
    reference = None
    for _ in range(repeats):
        for name in ("in process (main)", "prepared over the cores (branch)"):
            sim._F0_HZ.clear()
            started, cpu, workers = time.perf_counter(), cpu_s(), cpu_s(resource.RUSAGE_CHILDREN)
            if name.startswith("prepared"):
                sim.prepare_f0(clips)
            values = [sim.stored_f0_hz(clip) for clip in clips]
            wall, cpu = time.perf_counter() - started, cpu_s() - cpu
            workers = cpu_s(resource.RUSAGE_CHILDREN) - workers
            reference = reference or values
            same = all(a == b or (math.isnan(a) and math.isnan(b)) for a, b in zip(values, reference))
            print(f"f0 {name:33s} {count} clips: wall {wall:7.2f}s  gate process CPU {cpu:6.2f}s  workers CPU "
                  f"{workers:6.2f}s  same values: {same}", flush=True)  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=("labels", "f0"), required=True)
    parser.add_argument("--labels", type=int, default=13104)
    parser.add_argument("--corpus-dir", type=Path, default=None, help="a corpus of bench_cached_rescore.py (f0)")
    parser.add_argument("--clips", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    if args.part == "labels":
        labels_part(args.labels, args.repeats)
    elif args.corpus_dir is None:
        print("ERROR: --part f0 needs --corpus-dir (a folder with manifest.csv)", file=sys.stderr)
        return 2
    else:
        f0_part(args.corpus_dir, args.clips, args.repeats)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
