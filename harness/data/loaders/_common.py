"""What every corpus loader shares: errors naming the file, audio references and checks, writing the corpus."""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path

import pandas as pd
import yaml

from harness.data.audio import unreadable_audio_problem
from harness.data.corpus import REQUIRED_COLUMNS, CorpusError, load_corpus


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
    table[columns].to_csv(output / "manifest.csv", index=False)
    config = {"name": name, "manifest": "manifest.csv", "dimensions": list(dimensions), "description": description}
    outside = outside_audio_folder(table["audio"], output)
    if outside is not None:
        config["audio_folders"] = [outside]
    (output / "corpus.yaml").write_text(yaml.safe_dump(config, sort_keys=False, width=100, allow_unicode=True), encoding="utf-8")
    load_corpus(output, name=name, check_audio=False)
    return output
