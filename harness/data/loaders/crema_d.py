"""CREMA-D (Cao et al. 2014; VIBE §II-C, gender): 91 actors, 12 sentences, 6 emotions, 7,442 clips.

Layout read: ``AudioWAV/<actor>_<sentence>_<emotion>_<level>.wav`` (e.g. ``1001_DFA_ANG_XX.wav``) and
``VideoDemographics.csv`` with columns ``ActorID, Age, Sex, Race, Ethnicity``. One manifest row per clip:
``utterance_id`` = file stem, ``speaker_id`` = actor, ``content_id`` = sentence code (every actor reads
the same 12 sentences, so content is controlled), ``transcript`` = the sentence text from the corpus
documentation. Dimensions: ``gender`` (always), ``age_group`` and ``race`` on request; ``emotion``,
``emotion_level``, ``age`` and ``ethnicity`` are kept as information. Older copies name one clip
``1040_ITH_SAD_X.wav``: level ``X`` is read as ``XX``. License: ODbL v1.0.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from harness.data.loaders._common import (
    LoaderError,
    age_group,
    audio_reference,
    check_audio_files,
    csv_line,
    read_table,
    require_dir,
    write_corpus,
)

NAME = "crema-d"
SENTENCES = {
    "IEO": "It's eleven o'clock.",
    "TIE": "That is exactly what happened.",
    "IOM": "I'm on my way to the meeting.",
    "IWW": "I wonder what this is about.",
    "TAI": "The airplane is almost full.",
    "MTI": "Maybe tomorrow it will be cold.",
    "IWL": "I would like a new alarm clock.",
    "ITH": "I think I have a doctor's appointment.",
    "DFA": "Don't forget a jacket.",
    "ITS": "I think I've seen this before.",
    "TSI": "The surface is slick.",
    "WSI": "We'll stop in a couple of minutes.",
}
EMOTIONS = {"ANG": "anger", "DIS": "disgust", "FEA": "fear", "HAP": "happy", "NEU": "neutral", "SAD": "sad"}
LEVELS = {"LO": "low", "MD": "medium", "HI": "high", "XX": "unspecified", "X": "unspecified"}  # 1040_ITH_SAD_X.wav
SEXES = {"female": "female", "male": "male"}
DIMENSIONS = ("gender", "age_group", "race")
DEFAULT_AGE_EDGES = (30, 40, 50, 60)
_CLIP_NAME = re.compile(r"^(?P<actor>\d{4})_(?P<sentence>[A-Z]{3})_(?P<emotion>[A-Z]{3})_(?P<level>[A-Z]{1,2})$")


def parse_clip_name(path: Path) -> dict[str, str]:
    match = _CLIP_NAME.match(path.stem)
    if not match:
        raise LoaderError(
            f"{path}: file name is not <actor>_<sentence>_<emotion>_<level>.wav (e.g. 1001_DFA_ANG_XX.wav)"
        )
    for field, known in (("sentence", SENTENCES), ("emotion", EMOTIONS), ("level", LEVELS)):
        if match[field] not in known:
            raise LoaderError(f"{path}: unknown {field} code {match[field]!r}; known: {sorted(known)}")
    return match.groupdict()


def build(
    source: str | Path,
    output: str | Path,
    *,
    dimensions: Sequence[str] = ("gender",),
    emotions: Sequence[str] | None = None,
    age_edges: Sequence[int] = DEFAULT_AGE_EDGES,
    relative_audio: bool = True,
    check_audio: bool = True,
) -> Path:
    """Write a CREMA-D manifest and corpus.yaml into ``output``; returns ``output``.

    ``emotions``: emotion codes to keep (e.g. ``["NEU"]``), all by default (VIBE uses all clips).
    """
    source, output = Path(source), Path(output)
    unknown = sorted(set(dimensions) - set(DIMENSIONS))
    if unknown or "gender" not in dimensions:
        raise ValueError(
            f"CREMA-D dimensions must include gender and come from {list(DIMENSIONS)}; got {list(dimensions)}"
        )
    if emotions is not None and set(emotions) - set(EMOTIONS):
        raise ValueError(f"unknown emotion code(s) {sorted(set(emotions) - set(EMOTIONS))}; known: {sorted(EMOTIONS)}")
    audio_dir = require_dir(source / "AudioWAV", "CREMA-D audio folder")
    clips = sorted(audio_dir.glob("*.wav"))
    if not clips:
        raise LoaderError(f"{audio_dir}: no .wav file")
    demographics_path = source / "VideoDemographics.csv"
    demographics = read_table(demographics_path, ("ActorID", "Age", "Sex", "Race", "Ethnicity"), "CREMA-D demographics")
    actors = _actor_table(demographics, demographics_path, age_edges)

    rows = []
    for clip in clips:
        fields = parse_clip_name(clip)
        if emotions is not None and fields["emotion"] not in emotions:
            continue
        if fields["actor"] not in actors.index:
            raise LoaderError(f"{clip}: actor {fields['actor']} is not in {demographics_path}")
        rows.append(
            {
                "utterance_id": clip.stem,
                "audio": audio_reference(clip, output, relative_audio),
                "speaker_id": fields["actor"],
                "content_id": fields["sentence"],
                "transcript": SENTENCES[fields["sentence"]],
                "emotion": EMOTIONS[fields["emotion"]],
                "emotion_level": LEVELS[fields["level"]],
                "_path": clip,
            }
        )
    table = pd.DataFrame(rows)
    if check_audio and not table.empty:
        check_audio_files(table["_path"])
    table = table.drop(columns="_path", errors="ignore")
    if not table.empty:
        table = table.join(actors, on="speaker_id")
    description = (
        f"CREMA-D read from {source.resolve()}: {len(table)} clips of {table['speaker_id'].nunique() if len(table) else 0} "
        "actors reading the same 12 sentences in six emotions (VIBE §II-C, gender). "
        f"Emotions kept: {', '.join(emotions) if emotions else 'all'}. License: ODbL v1.0."
    )
    return write_corpus(output, table, name=NAME, dimensions=list(dimensions), description=description)


def _actor_table(demographics: pd.DataFrame, path: Path, age_edges: Sequence[int]) -> pd.DataFrame:
    ids = demographics["ActorID"].str.strip()
    duplicated = demographics.index[ids.duplicated()]
    if len(duplicated):
        raise LoaderError(f"{path}, line {csv_line(duplicated[0])}: ActorID {ids[duplicated[0]]!r} appears twice")
    sex = demographics["Sex"].str.strip().str.lower().map(SEXES)
    if sex.isna().any():
        index = sex.index[sex.isna()][0]
        raise LoaderError(
            f"{path}, line {csv_line(index)}: Sex {demographics.at[index, 'Sex']!r} is not Male or Female"
        )
    age = pd.to_numeric(demographics["Age"].str.strip(), errors="coerce")
    if age.isna().any():
        index = age.index[age.isna()][0]
        raise LoaderError(f"{path}, line {csv_line(index)}: Age {demographics.at[index, 'Age']!r} is not a number")
    return pd.DataFrame(
        {
            "gender": sex.to_numpy(),
            "age_group": age_group(age.to_numpy(), age_edges),
            "race": demographics["Race"].str.strip().str.lower().to_numpy(),
            "age": age.astype(int).astype(str).to_numpy(),
            "ethnicity": demographics["Ethnicity"].str.strip().str.lower().to_numpy(),
        },
        index=pd.Index(ids.to_numpy(), name="speaker_id"),
    )
