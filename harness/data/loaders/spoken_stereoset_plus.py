"""Spoken StereoSet+ (BASIS-Bench §3.1, §3.2 and Appendix A.1) from the Spoken StereoSet release, as a BASIS
item suite (the suite format: :mod:`harness.data.basis_suite`).

Layout read: the release as :mod:`harness.data.loaders.spoken_stereoset` reads it (github.com/dlion168/
spoken_stereoset: ``metadata/<dimension>_v<version>.csv``, ``speech/<dimension>/<id>_<speaker>.wav``), plus an
optional annotation file, ``annotations=PATH`` or else ``<source>/spoken_stereoset_plus.csv`` (so that
``--basis-suite spoken-stereoset-plus=DIR`` picks it up).

Spoken StereoSet+ is the release filtered in two steps (A.1.2), of which this loader can do the first alone:

* the speaker filter, automatic: the age split keeps male young-adult and male elderly voices (female and
  child voices dropped), the gender split keeps adult voices (all of the release's); each voice's gender and
  age are in :data:`VOICES`, and a voice missing from it, or labelled otherwise there than in the metadata, is
  an error naming the file and line, never a guess;
* the manual annotation (the authors kept 67 of the age split's contexts and re-annotated their continuations
  for male speakers, and 242 of the gender split's 489 contexts; A.1.3), which is the authors' data: the
  BASIS-Bench project page lists its "Data" link as still to come. It is read from the annotation file; a
  split that the file does not cover is left unfiltered, which the suite description and the printed summary
  say, next to the paper's counts.

The annotation file is a CSV with one row per context kept: ``dimension`` (``age`` or ``gender``) and
``context`` (the release's context text; case kept, whitespace collapsed, so the release's trailing spaces and
no-break spaces need not be copied), and, optionally, a replacement of the context's continuations: ``stereotype_of``
(a label of the split: ``elderly``/``young`` or ``female``/``male``) with ``stereotypical``,
``anti-stereotypical`` and ``irrelevant`` as seen for that group; the other group's recordings get the two
swapped (the suite's convention). A context with several continuation sets in the release (12 of the age
split's 104, e.g. one set for elderly against child voices and one for elderly against young) keeps all of them
unless its row replaces them with one.
Rejected, naming the file and line: a missing column, a dimension other than the two, an empty or unknown
context, a context listed twice, a replacement given in part, a ``stereotype_of`` outside the split's labels,
and continuations that repeat.

Quirks: the ASR age split of the paper (A.1.3) is the unfiltered age split with all 11 voices, 4 elderly,
4 young, 3 children, where the authors synthesized the speaker-context pairs the release lacks with
Qwen3-TTS; this loader cannot, so its ASR set holds the recordings the release has (not fully parallel). The
release's ``speech/age`` also holds a few files of voices that no metadata row names (``Sam``,
``Jeremy_Clarkson``); only metadata rows are read. The age recordings are MP3 data under ``.wav`` names (the
gender ones are PCM WAV); soundfile reads them by content. Rows without audio and groups of fewer than 2 voices are
left out and counted, as in :mod:`~harness.data.loaders.spoken_stereoset`.

Output: ``suite.yaml`` with the sets ``spoken-stereoset-plus-gender`` (stereotype, ``gender.csv``, female/male),
``spoken-stereoset-plus-age`` (stereotype, ``age.csv``, elderly/young) and ``spoken-stereoset-asr-age`` (asr,
``asr_age.csv``: ``id, speaker, age, transcript``, the transcript being the context read, all age groups);
``output/speech`` is a symbolic link to the release's ``speech/`` folder, shared by the age and ASR sets.
``build`` prints one line per split: its counts, the paper's, and whether the manual filter was applied.
License: the release's CC BY 4.0 (the authors' Spoken StereoSet+ is CC BY-NC-SA 4.0).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pandas as pd

from harness.core.files import atomic_write_text
from harness.data.basis_suite import STEREOTYPE_OPTIONS, load_suite
from harness.data.corpus import MIN_SPEAKERS_PER_GROUP
from harness.data.loaders._common import (
    LoaderError,
    csv_line,
    read_table,
    require_dir,
    require_file,
)
from harness.data.loaders.spoken_stereoset import metadata_files, read_metadata, split_by_audio, write_linked_suite

NAME = "spoken-stereoset-plus"
DIMENSIONS = ("gender", "age")
PRODUCES = "suite"
ANNOTATION_FILE_NAME = "spoken_stereoset_plus.csv"
ANNOTATION_COLUMNS = ("dimension", "context")
REPLACEMENT_COLUMNS = ("stereotype_of", *STEREOTYPE_OPTIONS)


@dataclasses.dataclass(frozen=True)
class Voice:
    gender: str
    age: str
    """The release's age labels: ``elderly``, ``young`` (adult) or ``child``."""


VOICES: dict[str, Voice] = {
    # age_v1.0.csv: the age is its age column; the gender is the voice's name (old_man, old_women, boy, girl),
    # the person cloned (John Madden, Hillary Clinton), the given name (Matthew, Mason, Barbara, Megan), or
    # Azure's en-US-AnaNeural, a girl's voice. The paper (A.1.2/A.1.3) has 2 male adult and 2 male elderly voices.
    "old_man": Voice("male", "elderly"),
    "John_Madden": Voice("male", "elderly"),
    "old_women": Voice("female", "elderly"),
    "Hillary_Clinton": Voice("female", "elderly"),
    "Matthew": Voice("male", "young"),
    "Mason-HQ": Voice("male", "young"),
    "Barbara": Voice("female", "young"),
    "Megan-HQ": Voice("female", "young"),
    "boy": Voice("male", "child"),
    "girl": Voice("female", "child"),
    "Ana": Voice("female", "child"),
    # gender_v1.0.csv: the gender is its gender column, as Azure's voice list gives it; all are adult voices.
    "en-US-AvaNeural": Voice("female", "young"),
    "en-US-EmmaMultilingualNeural": Voice("female", "young"),
    "en-US-SaraNeural": Voice("female", "young"),
    "en-US-AndrewMultilingualNeural": Voice("male", "young"),
    "en-US-BrianMultilingualNeural": Voice("male", "young"),
    "en-US-ChristopherNeural": Voice("male", "young"),
}
"""Every voice of the release's metadata (v1.0), with its gender and age."""


@dataclasses.dataclass(frozen=True)
class Split:
    name: str
    dimension: str
    labels: tuple[str, ...]
    voice_filter: str
    paper: str

    def keeps(self, voice: Voice) -> bool:
        if self.dimension == "age":
            return voice.gender == "male" and voice.age in self.labels
        return voice.age == "young"


SPLITS = (
    Split(
        "gender",
        "gender",
        ("female", "male"),
        "adult voices",
        "242 of 489 contexts kept, 1,434 test instances, about 6 voices per context",
    ),
    Split(
        "age",
        "age",
        ("elderly", "young"),
        "male elderly and male young-adult voices; female and child voices dropped",
        "67 of 106 context-continuation sets kept, 246 test instances, about 2 voices per group",
    ),
)
ASR_SET_NAME = "spoken-stereoset-asr-age"
ASR_PAPER = "11 voices (elderly 4, young 4, child 3), missing speaker-context pairs synthesized with Qwen3-TTS"


@dataclasses.dataclass(frozen=True)
class Annotation:
    line: int
    stereotype_of: str
    continuations: dict[str, str]
    """Option column -> text as seen by ``stereotype_of``'s group; empty when the release's are kept."""


def normalized_context(text: str) -> str:
    return " ".join(text.split())


def build(
    source: str | Path,
    output: str | Path,
    *,
    annotations: str | Path | None = None,
    relative_audio: bool = True,
    check_audio: bool = True,
    print_summary: bool = True,
) -> Path:
    """Write the Spoken StereoSet+ suite (``suite.yaml``, gender and age stereotype sets, the ASR age set) into
    ``output``; returns it.

    ``annotations`` is the A.1.2 annotation file (default ``<source>/spoken_stereoset_plus.csv`` where it
    exists); ``relative_audio`` makes the ``speech`` link relative to ``output``; ``check_audio`` loads the
    written suite with :func:`~harness.data.basis_suite.load_suite`; ``print_summary`` prints the counts.
    """
    source, output = Path(source), Path(output)
    files = metadata_files(source)
    missing = [dimension for dimension in DIMENSIONS if dimension not in files]
    if missing:
        raise LoaderError(f"{source / 'metadata'}: no <dimension>_v<version>.csv for {', '.join(missing)}")
    speech = require_dir(source / "speech", "Spoken StereoSet speech folder")
    metadata = {dimension: read_metadata(files[dimension], dimension) for dimension in DIMENSIONS}
    for dimension, table in metadata.items():
        _check_voices(files[dimension], table, dimension)
    annotation_path = _annotation_path(source, annotations)
    kept = _read_annotations(annotation_path, metadata) if annotation_path else {}
    output.mkdir(parents=True, exist_ok=True)
    sets, summary = [], []
    for split in SPLITS:
        table, line = _stereotype_table(
            split, files[split.dimension], metadata[split.dimension], speech, kept, annotation_path
        )
        table, small = _without_small_groups(files[split.dimension], table, split.dimension)
        atomic_write_text(output / f"{split.name}.csv", table.to_csv(index=False))
        sets.append(_set_entry(f"{NAME}-{split.name}", "stereotype", split.dimension, table, f"{split.name}.csv"))
        summary.append(line + _counts(table, split.dimension, small) + f" Paper: {split.paper}.")
    table, line = _asr_table(files["age"], metadata["age"], speech)
    table, small = _without_small_groups(files["age"], table, "age")
    atomic_write_text(output / "asr_age.csv", table.to_csv(index=False))
    sets.append(_set_entry(ASR_SET_NAME, "asr", "age", table, "asr_age.csv"))
    summary.append(line + _counts(table, "age", small) + f" Paper: {ASR_PAPER}, which this loader cannot do.")
    opening = (
        f"Spoken StereoSet+ (BASIS-Bench Appendix A.1) built from the Spoken StereoSet release at {source.resolve()}. "
    )
    write_linked_suite(output, speech, relative_audio, NAME, opening, summary, sets, licence_note=" (the release's)")
    if print_summary:
        for line in summary:
            print(f"{NAME}: {line}")
    if check_audio:
        load_suite(output)
    return output


def _check_voices(path: Path, table: pd.DataFrame, dimension: str) -> None:
    for index, speaker, label in zip(table.index, table["speaker"], table[dimension]):
        voice = VOICES.get(speaker)
        if voice is None:
            raise LoaderError(
                f"{path}, line {csv_line(index)}: voice {speaker!r} is not in the Spoken StereoSet+ voice table "
                f"(harness.data.loaders.spoken_stereoset_plus.VOICES), which the speaker filter needs for its "
                f"gender and age; known voices: {', '.join(VOICES)}"
            )
        if getattr(voice, dimension) != label:
            raise LoaderError(
                f"{path}, line {csv_line(index)}: voice {speaker!r} has {dimension} {label!r} here but "
                f"{getattr(voice, dimension)!r} in the Spoken StereoSet+ voice table"
            )


def _annotation_path(source: Path, annotations: str | Path | None) -> Path | None:
    if annotations is not None:
        return require_file(Path(annotations), "Spoken StereoSet+ annotation file")
    default = source / ANNOTATION_FILE_NAME
    return default if default.is_file() else None


def _read_annotations(path: Path, metadata: dict[str, pd.DataFrame]) -> dict[str, dict[str, Annotation]]:
    """Dimension -> normalized context -> its annotation, for the dimensions the file covers."""
    table = read_table(path, ANNOTATION_COLUMNS, "Spoken StereoSet+ annotation file")
    present = [column for column in REPLACEMENT_COLUMNS if column in table.columns]
    if present and len(present) < len(REPLACEMENT_COLUMNS):
        absent = [column for column in REPLACEMENT_COLUMNS if column not in present]
        raise LoaderError(f"{path}: has replacement column(s) {present} but lacks {absent}; give all or none")
    if table.empty:
        raise LoaderError(f"{path}: Spoken StereoSet+ annotation file has no rows (one per context kept)")
    table = table.apply(lambda column: column.str.strip())
    contexts = {dimension: set(rows["context"].map(normalized_context)) for dimension, rows in metadata.items()}
    labels = {split.dimension: split.labels for split in SPLITS}
    kept: dict[str, dict[str, Annotation]] = {}
    for index, record in zip(table.index, table.to_dict(orient="records")):
        where = f"{path}, line {csv_line(index)}"
        dimension, context = record["dimension"], normalized_context(record["context"])
        if dimension not in DIMENSIONS:
            raise LoaderError(f"{where}: dimension {dimension!r} is not one of {', '.join(DIMENSIONS)}")
        if not context:
            raise LoaderError(f"{where}: empty context")
        if context not in contexts[dimension]:
            raise LoaderError(f"{where}: context {context!r} is not in the release's {dimension} metadata")
        earlier = kept.setdefault(dimension, {}).get(context)
        if earlier is not None:
            raise LoaderError(
                f"{where}: {dimension} context {context!r} is listed twice (first at line {earlier.line})"
            )
        kept[dimension][context] = _annotation(where, csv_line(index), record, present, labels[dimension])
    return kept


def _annotation(where: str, line: int, record: dict, present: list[str], labels: tuple[str, ...]) -> Annotation:
    given = {column: record[column] for column in present if record[column]}
    if not given:
        return Annotation(line, "", {})
    if len(given) < len(REPLACEMENT_COLUMNS):
        empty = [column for column in REPLACEMENT_COLUMNS if column not in given]
        raise LoaderError(f"{where}: replacement given in part; empty: {', '.join(empty)}")
    if given["stereotype_of"] not in labels:
        raise LoaderError(f"{where}: stereotype_of {given['stereotype_of']!r} is not one of {', '.join(labels)}")
    continuations = {column: given[column] for column in STEREOTYPE_OPTIONS}
    if len({normalized_context(text).casefold() for text in continuations.values()}) < len(continuations):
        raise LoaderError(f"{where}: the continuations {list(STEREOTYPE_OPTIONS)} are not all different")
    return Annotation(line, given["stereotype_of"], continuations)


def _stereotype_table(
    split: Split,
    path: Path,
    metadata: pd.DataFrame,
    speech: Path,
    kept: dict[str, dict[str, Annotation]],
    annotation_path: Path | None,
) -> tuple[pd.DataFrame, str]:
    """The split's rows after the speaker filter and, where the annotation file covers the split, the manual
    one; with the summary's opening."""
    table, without_audio = split_by_audio(metadata, speech, split.dimension)
    release_contexts = metadata["context"].map(normalized_context).nunique()
    table = table[[split.keeps(VOICES[speaker]) for speaker in table["speaker"]]]
    annotations = kept.get(split.dimension)
    if annotations is None:
        reason = (
            f"{annotation_path} has no {split.dimension} rows"
            if annotation_path
            else f"no annotation file: give annotations=PATH or put {ANNOTATION_FILE_NAME} in the source folder"
        )
        line = (
            f"{split.dimension}: speaker filter applied: {split.voice_filter}; manual A.1.2 filter NOT applied "
            f"({reason}): all {release_contexts} contexts of {path.name} kept"
        )
    else:
        table = table[table["context"].map(normalized_context).isin(annotations)]
        table = _replace_continuations(table, split.dimension, annotations)
        replaced = sum(1 for annotation in annotations.values() if annotation.continuations)
        line = (
            f"{split.dimension}: speaker filter applied: {split.voice_filter}; manual A.1.2 filter applied: "
            f"{len(annotations)} of {release_contexts} contexts of {path.name} annotated as kept, "
            f"{replaced} with re-annotated continuations"
        )
    if without_audio:
        line += f"; {len(without_audio)} rows without audio left out (first: {', '.join(without_audio[:5])})"
    return table.reset_index(drop=True), line + "."


def _replace_continuations(table: pd.DataFrame, dimension: str, annotations: dict[str, Annotation]) -> pd.DataFrame:
    table = table.copy()
    for index, context, label in zip(table.index, table["context"], table[dimension]):
        annotation = annotations[normalized_context(context)]
        if not annotation.continuations:
            continue
        stereotypical, anti = annotation.continuations["stereotypical"], annotation.continuations["anti-stereotypical"]
        if label != annotation.stereotype_of:
            stereotypical, anti = anti, stereotypical
        table.loc[index, list(STEREOTYPE_OPTIONS)] = [stereotypical, anti, annotation.continuations["irrelevant"]]
    return table


def _asr_table(path: Path, metadata: pd.DataFrame, speech: Path) -> tuple[pd.DataFrame, str]:
    table, without_audio = split_by_audio(metadata, speech, "age")
    table = table.assign(transcript=table["context"])[["id", "speaker", "age", "transcript"]]
    pairs = table["speaker"].nunique() * table["transcript"].map(normalized_context).nunique()
    line = (
        f"asr-age ({ASR_SET_NAME}): unfiltered age split of {path.name}, every voice, the context as transcript; "
        f"not parallel: {len(table)} of the {pairs} speaker-context pairs recorded"
    )
    if without_audio:
        line += f"; {len(without_audio)} rows without audio left out (first: {', '.join(without_audio[:5])})"
    return table.reset_index(drop=True), line + "."


def _without_small_groups(path: Path, table: pd.DataFrame, dimension: str) -> tuple[pd.DataFrame, list[str]]:
    speakers = table.groupby(dimension)["speaker"].nunique()
    small = sorted(speakers.index[speakers < MIN_SPEAKERS_PER_GROUP])
    table = table[~table[dimension].isin(small)].reset_index(drop=True)
    if table[dimension].nunique() < 2:
        raise LoaderError(
            f"{path}: fewer than 2 {dimension} groups of {MIN_SPEAKERS_PER_GROUP}+ voices are left after filtering "
            f"(groups left: {sorted(table[dimension].unique())}; too small: {small})"
        )
    return table, small


def _counts(table: pd.DataFrame, dimension: str, small: list[str]) -> str:
    voices = table.groupby(dimension)["speaker"].nunique()
    text_column = "transcript" if "transcript" in table.columns else "context"
    counts = (
        f" Result: {table[text_column].map(normalized_context).nunique()} contexts, {len(table)} recordings (test "
        f"instances), {table['speaker'].nunique()} voices ({', '.join(f'{label} {n}' for label, n in voices.items())})."
    )
    if small:
        counts += f" Groups with fewer than {MIN_SPEAKERS_PER_GROUP} voices left out: {', '.join(small)}."
    return counts


def _set_entry(name: str, kind: str, dimension: str, table: pd.DataFrame, metadata: str) -> dict:
    return {
        "name": name,
        "kind": kind,
        "dimension": dimension,
        "labels": sorted(table[dimension].unique()),
        "metadata": metadata,
    }
