"""What every corpus loader shares: errors naming the file, audio references and checks, writing the corpus."""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from harness.core.files import atomic_write_text
from harness.data.audio import unreadable_audio_problem
from harness.data.corpus import MIN_SPEAKERS_PER_GROUP, REQUIRED_COLUMNS, CorpusError, load_corpus


class LoaderError(CorpusError):
    """A corpus distribution cannot be turned into a manifest; the message names the file (and line)."""


def require_file(path: Path, what: str) -> Path:
    if not path.is_file():
        raise LoaderError(f"{path}: {what} does not exist")
    return path


def require_dir(path: Path, what: str) -> Path:
    if not path.is_dir():
        raise LoaderError(f"{path}: {what} does not exist or is not a folder")
    return path


def read_table(path: Path, required: Sequence[str], what: str, **read_csv_options) -> pd.DataFrame:
    """A CSV as strings, with its ``required`` columns checked; errors name the file."""
    require_file(path, what)
    try:
        table = pd.read_csv(path, dtype=str, keep_default_na=False, **read_csv_options)
    except (ValueError, pd.errors.ParserError) as exc:
        raise LoaderError(f"{path}: {what} cannot be parsed as CSV ({exc})") from exc
    table.columns = [str(column).strip() for column in table.columns]
    missing = [column for column in required if column not in table.columns]
    if missing:
        raise LoaderError(f"{path}: {what} lacks column(s) {missing}; it has {list(table.columns)}")
    return table


def csv_line(index: int) -> int:
    """The 1-based line of a CSV data row (the header is line 1)."""
    return int(index) + 2


def audio_reference(audio: Path, output: Path, relative: bool) -> str:
    """``audio`` as the manifest names it: relative to the output folder, or absolute."""
    absolute = audio.resolve()
    return os.path.relpath(absolute, output.resolve()) if relative else str(absolute)


def check_audio_files(paths: Iterable[Path]) -> None:
    """Every file exists and its header reads with soundfile and announces samples, else an error naming it."""
    import soundfile

    for path in paths:
        if not path.is_file():
            raise LoaderError(f"{path}: audio file does not exist")
        try:
            info = soundfile.info(str(path))
        except Exception as exc:  # soundfile raises LibsndfileError, RuntimeError or TypeError by format
            raise LoaderError(f"{path}: audio file {unreadable_audio_problem(path, exc)}") from exc
        if info.frames == 0:
            raise LoaderError(f"{path}: audio file has no samples")


def outside_audio_folder(references: Iterable[str], output: Path) -> str | None:
    """The deepest folder holding every referenced audio file that lies outside ``output`` (the corpus
    folder), as ``corpus.yaml``'s ``audio_folders`` entry: relative to ``output`` when the references are,
    else absolute; None when all lie inside."""
    root = output.resolve()
    references = list(references)
    parents = [Path(os.path.normpath(root / reference)).parent for reference in references]
    outside = [str(parent) for parent in parents if not parent.is_relative_to(root)]
    if not outside:
        return None
    common = os.path.commonpath(outside)
    return common if any(os.path.isabs(reference) for reference in references) else os.path.relpath(common, root)


def write_corpus(
    output: str | Path, table: pd.DataFrame, *, name: str, dimensions: Sequence[str], description: str
) -> Path:
    """Write ``manifest.csv`` and ``corpus.yaml`` into ``output``, check them with the corpus loader, and
    return ``output``. ``table`` must have the manifest's required columns and the dimension columns."""
    output = Path(output)
    missing = [column for column in (*REQUIRED_COLUMNS, *dimensions) if column not in table.columns]
    if missing:
        raise ValueError(f"manifest for {name!r} lacks column(s) {missing}")
    if table.empty:
        raise LoaderError(f"{output}: no utterance is left for corpus {name!r} after selection")
    output.mkdir(parents=True, exist_ok=True)
    columns = [*REQUIRED_COLUMNS, *dimensions, *[c for c in table.columns if c not in (*REQUIRED_COLUMNS, *dimensions)]]
    atomic_write_text(output / "manifest.csv", table[columns].to_csv(index=False))
    config = {"name": name, "manifest": "manifest.csv", "dimensions": list(dimensions), "description": description}
    outside = outside_audio_folder(table["audio"], output)
    if outside is not None:
        config["audio_folders"] = [outside]
    atomic_write_text(output / "corpus.yaml", yaml.safe_dump(config, sort_keys=False, width=100, allow_unicode=True))
    load_corpus(output, name=name, check_audio=False)
    return output


def age_group(ages: np.ndarray, edges: Sequence[int]) -> np.ndarray:
    """Age buckets ``<e0``, ``e0-(e1-1)``, ..., ``ek+``; e.g. edges (30, 40) give <30, 30-39, 40+."""
    labels = [f"<{edges[0]}", *(f"{low}-{high - 1}" for low, high in zip(edges[:-1], edges[1:])), f"{edges[-1]}+"]
    return np.asarray(labels, dtype=object)[np.searchsorted(np.asarray(edges), ages, side="right")]


_NOT_A_WORD = re.compile(r"[^\w']+")


def content_key(text: str) -> str:
    """A ``content_id`` shared by every reading of the same sentence: the first 12 hex digits of the SHA-256
    of the text case-folded, with punctuation dropped and whitespace collapsed."""
    normalized = " ".join(_NOT_A_WORD.sub(" ", text.casefold()).split())
    return hashlib.sha256(normalized.encode("utf-8")).hexdigest()[:12]


def keep_testable_groups(
    table: pd.DataFrame, dimensions: Sequence[str], minimum: int = MIN_SPEAKERS_PER_GROUP
) -> tuple[pd.DataFrame, dict[str, list[str]]]:
    """Drop the rows of every group (on any of ``dimensions``) with fewer than ``minimum`` speakers, repeating
    until none is left, since dropping a speaker for one dimension can shrink a group of another.
    Returns the kept rows and, per dimension, the groups dropped (the corpus loader would refuse them)."""
    dropped: dict[str, list[str]] = {dimension: [] for dimension in dimensions}
    while True:
        small = {
            dimension: [group for group, n in table.groupby(dimension)["speaker_id"].nunique().items() if n < minimum]
            for dimension in dimensions
        }
        if not any(small.values()):
            return table, {dimension: sorted(groups) for dimension, groups in dropped.items() if groups}
        for dimension, groups in small.items():
            dropped[dimension].extend(groups)
            table = table[~table[dimension].isin(groups)]


def testable_rows_with_audio(
    table: pd.DataFrame, dimensions: Sequence[str], output: Path, *, relative_audio: bool, check_audio: bool
) -> tuple[pd.DataFrame, dict[str, list[str]]]:
    """The rows :func:`keep_testable_groups` keeps, their ``_path`` audio checked (``check_audio``) and
    replaced by the manifest's ``audio`` reference; with the groups dropped."""
    table, dropped = keep_testable_groups(table, dimensions)
    if check_audio:
        check_audio_files(table["_path"])
    audio = [audio_reference(path, output, relative_audio) for path in table["_path"]]
    return table.assign(audio=audio).drop(columns="_path"), dropped


def dropped_groups_note(dropped: dict[str, list[str]]) -> str:
    """`` Groups with fewer than 2 speakers left out: accent (welsh).`` or an empty string."""
    if not dropped:
        return ""
    listed = "; ".join(f"{dimension} ({', '.join(groups)})" for dimension, groups in dropped.items())
    return f" Groups with fewer than {MIN_SPEAKERS_PER_GROUP} speakers left out: {listed}."


def at_most_per_speaker(table: pd.DataFrame, limit: int, seed: int, *, speaker: str, order: str) -> pd.DataFrame:
    """At most ``limit`` rows per ``speaker``, drawn with ``seed`` from the rows sorted by ``order`` (so the
    draw does not depend on the order the files were listed in)."""
    rng = np.random.default_rng(seed)
    kept = [
        rows.iloc[np.sort(rng.choice(len(rows), size=min(limit, len(rows)), replace=False))]
        for _, rows in table.sort_values(order).groupby(speaker, sort=True)
    ]
    return pd.concat(kept) if kept else table


def testable_groups(table: pd.DataFrame, dimension: str) -> tuple[pd.DataFrame, list[str]]:
    """The rows of the groups with at least :data:`MIN_SPEAKERS_PER_GROUP` speakers, and the groups left out."""
    speakers = table.groupby(dimension)["speaker"].nunique()
    small = sorted(speakers.index[speakers < MIN_SPEAKERS_PER_GROUP])
    return table[~table[dimension].isin(small)].sort_values(["id", "speaker"]).reset_index(drop=True), small


def link_recordings(links: Mapping[Path, Path], folder: Path, relative: bool) -> None:
    """Make ``folder`` hold exactly the symbolic links ``links`` (link -> audio file; relative to the link's
    folder when ``relative``), replacing the links an earlier build left; any other file there is an error."""
    if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
        raise LoaderError(f"{folder}: exists and is not a folder of audio links")
    folder.mkdir(parents=True, exist_ok=True)
    for entry in folder.iterdir():
        if not entry.is_symlink():
            raise LoaderError(
                f"{entry}: is not an audio link; the suite folder holds only links to the release's audio"
            )
        entry.unlink()
    base = folder.resolve()
    for link, audio in links.items():
        target = audio.resolve()
        try:
            link.symlink_to(os.path.relpath(target, base) if relative else target)
        except OSError as exc:
            raise LoaderError(
                f"{link}: cannot link to {target} ({exc}); the suite needs its audio under speech/"
            ) from exc


def link_question_recordings(output: Path, dimension: str, table: pd.DataFrame, suffix: str, relative: bool) -> None:
    """Link every recorded question of ``table`` (columns ``id``, ``speaker``, ``audio``) as
    ``output/speech/<dimension>/<id:05d>_<speaker><suffix>``, the folder holding those links only
    (:func:`link_recordings`)."""
    folder = output / "speech" / dimension
    link_recordings(
        {
            folder / f"{record_id:05d}_{speaker}{suffix}": audio
            for record_id, speaker, audio in zip(table["id"], table["speaker"], table["audio"])
        },
        folder,
        relative,
    )


def write_suite_config(output: Path, name: str, description: str, sets: Sequence[Mapping]) -> Path:
    """``output/suite.yaml`` of a suite loader (:mod:`harness.data.basis_suite`): its name, description and sets."""
    config = {"name": name, "description": description, "sets": [dict(entry) for entry in sets]}
    text = yaml.safe_dump(config, sort_keys=False, width=100, allow_unicode=True)
    return atomic_write_text(output / "suite.yaml", text)
