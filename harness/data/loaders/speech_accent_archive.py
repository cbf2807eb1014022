"""Speech Accent Archive (Weinberger & Kunath 2011; VIBE §II-C, accent): every speaker reads the same
elicitation paragraph ("Please call Stella..."), one recording per speaker.

Layout read (the Kaggle distribution): ``speakers_all.csv`` with columns ``age, age_onset, birthplace,
filename, native_language, sex, speakerid, country`` and optionally ``file_missing?``, and the audio at
``recordings/<filename>.mp3`` (or ``recordings/recordings/<filename>.mp3``, as the Kaggle archive
unpacks). Rows flagged ``file_missing? = True`` are skipped; any other row whose file is absent is an error.

Selection (§II-C): the ``n_languages`` (6) most common native languages other than English among the
speakers with audio (ties by name), unless ``languages`` names them; within each language, as many
women as men, the larger gender subsampled with ``seed``, so gender is not a within-group confound
(VIBE: Spanish, Arabic, Mandarin, French, Korean, Russian; 406 speakers). Dimensions: ``accent`` (the
native language) and ``gender``. The sex value ``famale`` (a typo in the Kaggle CSV) is read as female.

MP3: libsndfile >= 1.1 (soundfile's bundled build here) reads MP3, and the manifest then references the
original files. With an older libsndfile the files are decoded by ``ffmpeg``, when it is on PATH, to
16 kHz mono FLAC under ``<output>/audio/``; without either, loading stops with an error saying so.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from harness.data.loaders._common import (
    LoaderError,
    audio_reference,
    check_audio_files,
    csv_line,
    read_table,
    require_file,
    write_corpus,
)

NAME = "speech-accent-archive"
DIMENSIONS = ("accent", "gender")
CONTENT_ID = "please_call_stella"
PARAGRAPH = (
    "Please call Stella. Ask her to bring these things with her from the store: Six spoons of fresh snow peas, "
    "five thick slabs of blue cheese, and maybe a snack for her brother Bob. We also need a small plastic snake "
    "and a big toy frog for the kids. She can scoop these things into three red bags, and we will go meet her "
    "Wednesday at the train station."
)
REQUIRED_COLUMNS = ("age", "age_onset", "birthplace", "filename", "native_language", "sex", "speakerid", "country")
MISSING_FLAG = "file_missing?"
SEXES = {"female": "female", "male": "male", "famale": "female"}
EXCLUDED_LANGUAGE = "english"


def soundfile_reads_mp3() -> bool:
    import soundfile

    return "MP3" in soundfile.available_formats()


def recordings_dir(source: Path) -> Path:
    for candidate in (source / "recordings" / "recordings", source / "recordings"):
        if candidate.is_dir() and any(candidate.glob("*.mp3")):
            return candidate
    raise LoaderError(
        f"{source / 'recordings'}: no folder of .mp3 recordings (looked in recordings/ and recordings/recordings/)"
    )


def build(
    source: str | Path,
    output: str | Path,
    *,
    n_languages: int = 6,
    languages: Sequence[str] | None = None,
    seed: int = 0,
    relative_audio: bool = True,
    check_audio: bool = True,
) -> Path:
    """Write the gender-balanced Speech Accent Archive subset's manifest and corpus.yaml; returns ``output``."""
    source, output = Path(source), Path(output)
    csv_path = source / "speakers_all.csv"
    speakers = read_table(csv_path, REQUIRED_COLUMNS, "Speech Accent Archive speaker table")
    speakers = _available_speakers(speakers, csv_path, recordings_dir(source))
    chosen_languages = _languages(speakers, n_languages, languages, csv_path)
    selected = balanced_subset(speakers[speakers["accent"].isin(chosen_languages)], seed)
    if not soundfile_reads_mp3():
        selected = selected.assign(_path=[_decode_mp3(path, output) for path in selected["_path"]])
    if check_audio:
        check_audio_files(selected["_path"])
    table = pd.DataFrame(
        {
            "utterance_id": selected["filename"].to_numpy(),
            "audio": [audio_reference(path, output, relative_audio) for path in selected["_path"]],
            "speaker_id": selected["speakerid"].to_numpy(),
            "content_id": CONTENT_ID,
            "transcript": PARAGRAPH,
            "accent": selected["accent"].to_numpy(),
            "gender": selected["gender"].to_numpy(),
            "age": selected["age"].to_numpy(),
            "age_onset": selected["age_onset"].to_numpy(),
            "birthplace": selected["birthplace"].to_numpy(),
            "country": selected["country"].to_numpy(),
        }
    )
    per_language = table.groupby("accent")["speaker_id"].nunique()
    description = (
        f"Speech Accent Archive read from {source.resolve()}: the gender-balanced subset of the "
        f"{len(chosen_languages)} most common non-English native languages (VIBE §II-C), "
        f"{len(table)} speakers reading the same paragraph once each "
        f"({', '.join(f'{language} {count}' for language, count in per_language.items())}); seed {seed}."
    )
    return write_corpus(output, table, name=NAME, dimensions=list(DIMENSIONS), description=description)


def _available_speakers(speakers: pd.DataFrame, csv_path: Path, audio_dir: Path) -> pd.DataFrame:
    if MISSING_FLAG in speakers.columns:
        flag = speakers[MISSING_FLAG].str.strip().str.lower()
        bad = speakers.index[~flag.isin(["true", "false", ""])]
        if len(bad):
            raise LoaderError(
                f"{csv_path}, line {csv_line(bad[0])}: {MISSING_FLAG} is {speakers.at[bad[0], MISSING_FLAG]!r}, not True/False"
            )
        speakers = speakers[flag != "true"]
    speakers = speakers.assign(
        filename=speakers["filename"].str.strip(),
        speakerid=speakers["speakerid"].str.strip(),
        accent=speakers["native_language"].str.strip().str.lower(),
        gender=speakers["sex"].str.strip().str.lower().map(SEXES),
    )
    for column, what in (
        ("filename", "an empty filename"),
        ("speakerid", "an empty speakerid"),
        ("accent", "an empty native_language"),
    ):
        empty = speakers.index[speakers[column] == ""]
        if len(empty):
            raise LoaderError(f"{csv_path}, line {csv_line(empty[0])}: {what}")
    if speakers["gender"].isna().any():
        index = speakers.index[speakers["gender"].isna()][0]
        raise LoaderError(
            f"{csv_path}, line {csv_line(index)}: sex {speakers.at[index, 'sex']!r} is not male or female"
        )
    duplicated = speakers.index[speakers["filename"].duplicated()]
    if len(duplicated):
        raise LoaderError(
            f"{csv_path}, line {csv_line(duplicated[0])}: filename {speakers.at[duplicated[0], 'filename']!r} appears twice"
        )
    paths = [audio_dir / f"{name}.mp3" for name in speakers["filename"]]
    absent = [index for index, path in zip(speakers.index, paths) if not path.is_file()]
    if absent:
        index = absent[0]
        raise LoaderError(
            f"{audio_dir / (speakers.at[index, 'filename'] + '.mp3')}: recording of {csv_path} line {csv_line(index)} "
            f"does not exist (and {MISSING_FLAG} does not say it is missing)"
        )
    return speakers.assign(_path=paths)


def _languages(speakers: pd.DataFrame, n_languages: int, languages: Sequence[str] | None, csv_path: Path) -> list[str]:
    if languages is not None:
        wanted = [language.strip().lower() for language in languages]
        unknown = sorted(set(wanted) - set(speakers["accent"]))
        if unknown:
            raise LoaderError(f"{csv_path}: no speaker with audio has native_language {unknown}")
        return wanted
    counts = speakers.loc[speakers["accent"] != EXCLUDED_LANGUAGE, "accent"].value_counts()
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return [language for language, _ in ranked[:n_languages]]


def balanced_subset(speakers: pd.DataFrame, seed: int) -> pd.DataFrame:
    """Per ``accent``, ``min(#female, #male)`` speakers of each gender; the larger gender subsampled."""
    rng = np.random.default_rng(seed)
    kept = []
    for _, language in speakers.sort_values(["accent", "filename"]).groupby("accent", sort=True):
        by_gender = {gender: rows for gender, rows in language.groupby("gender", sort=True)}
        size = min((len(by_gender.get(gender, ())) for gender in ("female", "male")), default=0)
        for gender in ("female", "male"):
            if size:
                rows = by_gender[gender]
                kept.append(rows.iloc[np.sort(rng.choice(len(rows), size=size, replace=False))])
    return pd.concat(kept) if kept else speakers.iloc[:0]


def _decode_mp3(path: Path, output: Path) -> Path:
    ffmpeg = shutil.which("ffmpeg")
    if ffmpeg is None:
        import soundfile

        raise LoaderError(
            f"{path}: this libsndfile ({soundfile.__libsndfile_version__}) cannot read MP3 and ffmpeg is not on PATH; "
            "install soundfile >= 0.12 (libsndfile >= 1.1) or ffmpeg"
        )
    target = require_dir_for(output / "audio") / f"{path.stem}.flac"
    command = [ffmpeg, "-nostdin", "-loglevel", "error", "-y", "-i", str(path), "-ac", "1", "-ar", "16000", str(target)]
    completed = subprocess.run(command, capture_output=True, text=True, check=False)
    if completed.returncode != 0:
        raise LoaderError(f"{path}: ffmpeg could not decode it ({completed.stderr.strip()[:300]})")
    return require_file(target, "decoded recording")


def require_dir_for(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path
