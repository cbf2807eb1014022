"""Corpora, item suites and loader outputs the tests build: tones, manifests, a small stereotype suite."""

import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import soundfile

from harness.data.basis_suite import DEMO_SUITE_PATH

HEADER = "utterance_id,audio,speaker_id,content_id,transcript,gender\n"


def write_tone(path, seconds=0.3, rate=16000, channels=1, hz=200.0):
    t = np.arange(int(seconds * rate)) / rate
    signal = 0.3 * np.sin(2 * np.pi * hz * t)
    soundfile.write(path, np.stack([signal] * channels, axis=1) if channels > 1 else signal, rate)


def make_corpus(tmp_path, rows, header=HEADER, audio_names=None):
    (tmp_path / "audio").mkdir(exist_ok=True)
    for position, name in enumerate(audio_names if audio_names is not None else [row.split(",")[1] for row in rows]):
        write_tone(tmp_path / name, hz=200.0 + 7.0 * position)  # a recording of its own per file
    manifest = tmp_path / "manifest.csv"
    manifest.write_text(header + "".join(row + "\n" for row in rows))
    return manifest


def good_rows():
    speakers = [("a", "female"), ("b", "female"), ("c", "male"), ("d", "male")]
    return [f"{s}_1,audio/{s}_1.wav,{s},c1,hello there,{g}" for s, g in speakers]


GENDER_CSV = DEMO_SUITE_PATH / "stereoset" / "gender.csv"


def small_suite(tmp_path: Path, edit=None, ids=(1, 2)) -> Path:
    """A copy of the demo's gender stereotype set restricted to ``ids``, with ``edit(table)`` applied."""
    folder = tmp_path / "suite"
    table = pd.read_csv(GENDER_CSV, dtype=str, keep_default_na=False)
    table = table[table["id"].astype(int).isin(ids)].reset_index(drop=True)
    (folder / "stereoset" / "speech" / "gender").mkdir(parents=True)
    for record in table.to_dict(orient="records"):
        name = f"{int(record['id']):05d}_{record['speaker']}.flac"
        shutil.copy(
            DEMO_SUITE_PATH / "stereoset" / "speech" / "gender" / name,
            folder / "stereoset" / "speech" / "gender" / name,
        )
    if edit is not None:
        table = edit(table)
    table.to_csv(folder / "stereoset" / "gender.csv", index=False)
    (folder / "suite.yaml").write_text(
        "name: small\nsets:\n  - {name: s, kind: stereotype, dimension: gender, labels: [female, male], metadata: stereoset/gender.csv}\n"
    )
    return folder


def write_audio(path: Path, fmt: str = "WAV", seconds: float = 0.05) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    samples = 0.1 * np.sin(2 * np.pi * 220 * np.arange(int(16000 * seconds)) / 16000)
    soundfile.write(str(path), samples.astype(np.float32), 16000, format=fmt)
    return path


def manifest(folder: Path) -> pd.DataFrame:
    return pd.read_csv(folder / "manifest.csv", dtype=str, keep_default_na=False)
