"""A suite build: items x voices -> clips by recipe -> admission filters -> the layout a gate run loads.

Order of writing, so that a killed build never leaves a suite that loads half made: the files that make the folder
loadable (``corpus.yaml`` and ``manifest.csv``, or ``suite.yaml``) are removed first; clips are made into the store
(:mod:`.clips`; whole files only); then the admitted clips are copied into the layout, ``provenance.json`` and
``build-report.txt`` written, the manifest (or metadata CSVs) written, and the loadable file last, each by a
temporary file renamed. The next build finds every clip already made and makes the rest.
"""

from __future__ import annotations

import contextlib
import csv
import dataclasses
import hashlib
import io
import json
from collections.abc import Callable
from pathlib import Path

from harness.core.files import atomic_write_bytes
from harness.suite.audio import PROCESSING
from harness.suite.banks import checked_bank, get_bank
from harness.suite.clips import Clip, ClipStore, clip_recipe
from harness.suite.errors import SuiteError
from harness.suite.filters import (
    VOICE_PRAAT_HEARS,
    ClipMeasures,
    Perceiver,
    Transcriber,
    measure_clips,
    outliers,
    perceived_voices,
    wer_filter,
)
from harness.suite.items import BasisSet, read_basis_items, read_sentences
from harness.suite.spread import check_engine_confound, dimension_spreads, gate_alpha, voice_warnings
from harness.suite.voices import VoiceSpec, voices_per_group

LAYOUTS = ("corpus", "basis")
MIN_VOICES_PER_GROUP = 2
CORPUS_COLUMNS = ("utterance_id", "audio", "speaker_id", "content_id", "transcript")
PROVENANCE = "provenance.json"
REPORT = "build-report.txt"
STORE = ".suite-build/clips"
TOOL = "lalm-fairness-suite build"


@dataclasses.dataclass
class Filters:
    """Which filters run, and with what: ``transcriber`` (None: the WER filter is off) named ``asr``; ``perceiver``
    (None: ``voice:praat``'s F0 classes, from the clips' measures) named ``perceiver_spec``; ``perceived`` off or on;
    ``outliers`` listed or not."""

    asr: str | None = None
    transcriber: Transcriber | None = None
    asr_fingerprint: str = ""
    perceived: bool = True
    perceiver_spec: str = "voice:praat"
    perceiver: Perceiver | None = None
    dimension: str = "gender"
    min_share: float = 0.8
    outliers: bool = True


@dataclasses.dataclass
class BuildResult:
    provenance: dict
    report: list[str]
    problems: list[str]


def check_voices(voices: list[VoiceSpec]) -> dict[str, dict]:
    """Every voice's bank is here and takes its spec, and every dimension has at least :data:`MIN_VOICES_PER_GROUP`
    voices per group; returns each voice's recipe parts (speaker -> its bank's ``recipe_parts``)."""
    parts = {voice.speaker: checked_bank(voice).recipe_parts(voice) for voice in voices}
    check_dimension_names(voices)
    for dimension, groups in voices_per_group(voices).items():
        short = {group: speakers for group, speakers in groups.items() if len(speakers) < MIN_VOICES_PER_GROUP}
        if short or len(groups) < 2:
            named = "; ".join(f"{group}: {', '.join(speakers)}" for group, speakers in (short or groups).items())
            raise SuiteError(
                f"--voices: dimension {dimension!r} needs at least {MIN_VOICES_PER_GROUP} voices in each of at least "
                f"2 groups ({named})"
            )
    missing = [voice.text for voice in voices if not set(voices_per_group(voices)) <= set(voice.label)]
    if missing:
        raise SuiteError(f"voice spec {missing[0]!r}: declares no label on {sorted(voices_per_group(voices))}")
    return parts


def check_dimension_names(voices: list[VoiceSpec]) -> None:
    """A label dimension that is no dimension the gate knows (:func:`harness.thresholds.known_dimensions`) but is
    one letter or two off one (``gendr``) is a typo, named as such, rather than a new dimension whose groups then
    lack voices (issue 59, item 9). A dimension of one's own far from every known one (``dialect``) is kept."""
    import difflib

    from harness.thresholds import known_dimensions

    known = known_dimensions()
    for dimension in voices_per_group(voices):
        close = difflib.get_close_matches(dimension, sorted(known), n=1, cutoff=0.8)
        if dimension not in known and close:
            voice = next(voice for voice in voices if dimension in voice.label)
            raise SuiteError(
                f"voice spec {voice.text!r}: dimension {dimension!r} is no dimension the gate knows; did you mean "
                f"{close[0]!r}?"
            )


def plan_clips(layout: str, items: Path, voices: list[VoiceSpec], parts: dict[str, dict]):
    """The clips of the build (layout key -> :class:`Clip`) and what the layout needs to write itself."""
    by_speaker = {voice.speaker: voice for voice in voices}
    clips: dict[str, Clip] = {}

    def add(key: str, text: str, voice: VoiceSpec, where: str) -> None:
        clip = Clip(key, text, voice, clip_recipe(text, parts[voice.speaker]))
        if key in clips and clips[key].text != text:
            raise SuiteError(f"{where}: {key} is read as {clips[key].text!r} and as {text!r}")
        clips[key] = clip

    if layout == "corpus":
        sentences = read_sentences(items)
        for voice in voices:
            for sentence in sentences:
                add(f"{voice.speaker}_{sentence.content_id}", sentence.text, voice, str(items))
        return clips, sentences
    config_text, sets = read_basis_items(items, by_speaker)
    for item_set in sets:
        for number, row in enumerate(item_set.rows, 1):
            add(item_set.audio_key(row), row[item_set.text_column()], by_speaker[row["speaker"]],
                f"{item_set.metadata}, row {number}")  # fmt: skip
    return clips, (config_text, sets)


def remove_loadable(out: Path, layout: str) -> None:
    for name in ("corpus.yaml", "manifest.csv") if layout == "corpus" else ("suite.yaml",):
        with contextlib.suppress(FileNotFoundError):
            (out / name).unlink()


def write_atomic(path: Path, data: bytes) -> None:
    """``path`` written whole by a temporary file renamed, with the umask's permissions
    (:func:`harness.core.files.atomic_write_bytes`)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(path, data)


def check_out_folder(out: Path, force: bool = False) -> None:
    """Refuse an ``--out`` that exists and holds files this builder did not make (no ``provenance.json`` of a
    build, no clip store): a build replaces ``manifest.csv``, ``corpus.yaml`` and ``audio/`` there, and a user's
    own files of those names would be lost. ``force`` builds into it all the same."""
    if out.exists() and not out.is_dir():
        raise SuiteError(f"--out {out}: a file, not a folder")
    if force or not out.is_dir() or made_by_a_build(out):
        return
    found = sorted(path.name for path in out.iterdir())
    if found:
        shown = ", ".join(found[:3]) + (f" and {len(found) - 3} more" if len(found) > 3 else "")
        raise SuiteError(
            f"--out {out}: the folder holds files this builder did not make ({shown}); a build replaces "
            "manifest.csv, corpus.yaml, suite.yaml and audio/ there: name a new or empty folder, or pass --force"
        )


def made_by_a_build(out: Path) -> bool:
    """A folder an earlier build wrote: its ``provenance.json`` names the builder, or its clip store is there."""
    if (out / STORE).is_dir():
        return True
    try:
        return json.loads((out / PROVENANCE).read_text()).get("tool") == TOOL
    except (OSError, ValueError, AttributeError):
        return False


def place(source: Path, target: Path) -> None:
    """``target`` becomes a copy of ``source`` (left alone when it already is one)."""
    if (
        target.is_file()
        and target.stat().st_size == source.stat().st_size
        and target.read_bytes() == source.read_bytes()
    ):
        return
    write_atomic(target, source.read_bytes())


def build_suite(
    layout: str,
    items: Path,
    voices: list[VoiceSpec],
    out: Path,
    filters: Filters,
    name: str | None = None,
    description: str | None = None,
    store_dir: Path | None = None,
    progress: bool = True,
    log: Callable[[str], None] = print,
    force: bool = False,
    allow_engine_confound: bool = False,
) -> BuildResult:
    """Build the suite (module docstring); bad input raises :class:`SuiteError` before anything is written, a
    non-empty ``out`` that no build made among it (:func:`check_out_folder`) unless ``force``; a dimension whose bank
    determines its group raises :class:`~harness.suite.spread.EngineConfoundError` unless ``allow_engine_confound``
    (:mod:`harness.suite.spread`)."""
    if layout not in LAYOUTS:
        raise SuiteError(f"--layout {layout!r}: one of {', '.join(LAYOUTS)}")
    check_out_folder(out, force)
    parts = check_voices(voices)
    spreads = dimension_spreads(voices)
    confounds = check_engine_confound(spreads, allow_engine_confound)
    alpha = gate_alpha()
    spread_warnings = voice_warnings(spreads, alpha)
    clips, layout_input = plan_clips(layout, items, voices, parts)
    unlabelled = [voice.text for voice in voices if filters.dimension not in voice.label]
    if (filters.perceived or filters.outliers) and unlabelled:
        raise SuiteError(
            f"--dimension {filters.dimension}: voice spec {unlabelled[0]!r} declares no {filters.dimension} label "
            "(the perceived-group filter and the outliers look at it): give another --dimension, or "
            "--no-perceived-filter --no-outliers"
        )
    if filters.perceived and filters.perceiver is None:
        labels = {voice.label[filters.dimension] for voice in voices}
        if not labels <= set(VOICE_PRAAT_HEARS):
            raise SuiteError(
                f"--perceiver voice:praat hears {'/'.join(VOICE_PRAAT_HEARS)} only, not the {filters.dimension} groups "
                f"{sorted(labels)}: give --perceiver SPEC, another --dimension, or "
                "--no-perceived-filter"
            )
    out.mkdir(parents=True, exist_ok=True)
    remove_loadable(out, layout)
    store = ClipStore(store_dir or out / STORE)
    log(f"{len(voices)} voices x items = {len(clips)} clips ({len({c.recipe for c in clips.values()})} recipes)")
    store.make(list(clips.values()), progress)
    log(f"synthesis: {store.made} clips made, {store.reused} found in {store.directory}")

    admitted = dict(clips)
    speaker_of = {key: clip.voice.speaker for key, clip in clips.items()}
    needs_measures = filters.outliers or (filters.perceived and filters.perceiver is None)
    measures: dict[str, ClipMeasures] = (
        dict(zip(clips, measure_clips([str(store.path(c.recipe)) for c in clips.values()], progress)))
        if needs_measures
        else {}
    )
    record: dict = {"wer": {"enabled": filters.transcriber is not None}}
    if filters.transcriber is not None:
        keys = list(clips)
        found = store.transcripts([clips[k].recipe for k in keys], filters.asr_fingerprint, filters.transcriber)
        transcripts = dict(zip(keys, found))
        result = wer_filter({key: clips[key].text for key in keys}, transcripts)
        for key in result.dropped:
            admitted.pop(key, None)
        record["wer"] = {
            "enabled": True,
            "asr": filters.asr,
            "asr_fingerprint": filters.asr_fingerprint,
            "rule": "WER = 0 after Whisper's English normaliser (BASIS-Bench A.1.3)",
            "checked": len(keys),
            "dropped": len(result.dropped),
            "dropped_clips": [
                {
                    "clip": key,
                    "speaker": speaker_of[key],
                    "text": clips[key].text,
                    "transcript": result.transcripts[key],
                    "wer": round(result.wer[key], 2),
                }
                for key in result.dropped
            ],  # fmt: skip
        }
    record["perceived_group"] = {"enabled": filters.perceived}
    if filters.perceived:
        declared = {
            voice.speaker: voice.label[filters.dimension] for voice in voices if filters.dimension in voice.label
        }
        if filters.perceiver is None:
            perceived = {key: measures[key].praat_group for key in clips}
        else:
            groups = sorted(set(declared.values()))
            keys = [key for key in clips if speaker_of[key] in declared]
            perceived = dict(zip(keys, filters.perceiver([store.samples(clips[k].recipe) for k in keys], groups)))
        owners = {key: speaker for key, speaker in speaker_of.items() if speaker in declared}
        rows = perceived_voices(declared, owners, perceived, filters.min_share)
        dropped_voices = [row.speaker for row in rows if not row.kept]
        dropped_clips = [key for key in admitted if speaker_of[key] in dropped_voices]
        for key in dropped_clips:
            admitted.pop(key)
        record["perceived_group"] = {
            "enabled": True,
            "perceiver": filters.perceiver_spec,
            "dimension": filters.dimension,
            "min_share": filters.min_share,
            "rule": "a voice is kept when at least min_share of its clips are perceived as its declared group",
            "voices": [dataclasses.asdict(row) for row in rows],
            "dropped_voices": dropped_voices,
            "dropped": len(dropped_clips),
        }
    record["outliers"] = {"enabled": filters.outliers}
    if filters.outliers:
        by_group = {
            key: clips[key].voice.label[filters.dimension]
            for key in admitted
            if filters.dimension in clips[key].voice.label
        }
        listed = outliers(by_group, measures, speaker_of)
        record["outliers"] = {
            "enabled": True,
            "dimension": filters.dimension,
            "rule": "per group, duration or median F0 outside [Q1 - 1.5 IQR, Q3 + 1.5 IQR]; listed, not dropped",
            "listed": listed,
        }

    kept_voices = [voice for voice in voices if any(speaker_of[key] == voice.speaker for key in admitted)]
    problems = []
    for dimension, groups in voices_per_group(voices).items():
        for group in groups:
            members = [v.speaker for v in kept_voices if v.label.get(dimension) == group]
            if len(members) < MIN_VOICES_PER_GROUP:
                problems.append(
                    f"{dimension}={group}: {len(members)} voice(s) admitted, fewer than {MIN_VOICES_PER_GROUP}"
                )
    if layout == "basis":
        problems += short_sets(layout_input[1], admitted)
    admitted_spreads = dimension_spreads(kept_voices)
    admitted_confounds = check_engine_confound(admitted_spreads, allowed=True)
    if not allow_engine_confound:
        problems += [f"after the filters, {line}" for line in admitted_confounds if line not in confounds]
    spread_warnings += [f"after the filters, {line}" for line in voice_warnings(admitted_spreads, alpha)
                        if line not in spread_warnings]  # fmt: skip
    counts = {
        dimension: {
            group: {
                "voices": sum(v.label.get(dimension) == group for v in kept_voices),
                "clips": sum(clips[k].voice.label.get(dimension) == group for k in admitted),
            }
            for group in groups
        }
        for dimension, groups in voices_per_group(voices).items()
    }
    provenance = {
        "tool": TOOL,
        "layout": layout,
        "items": items_record(items),
        "voices": [
            {
                "speaker": v.speaker,
                "spec": v.text,
                "bank": v.bank,
                "synthesiser": parts[v.speaker]["synthesiser"],
                "settings": v.setting,
                "labels": v.label,
                "package": package.to_json() if (package := get_bank(v.bank).package(v)) else None,
            }
            for v in voices
        ],  # fmt: skip
        "processing": PROCESSING,
        "filters": record,
        "groups": counts,
        "spread": {spread.dimension: spread.to_json() for spread in spreads},
        "spread_admitted": {spread.dimension: spread.to_json() for spread in admitted_spreads},
        "engine_confound": {
            "allowed": allow_engine_confound,
            "dimensions": list(dict.fromkeys(confounds + admitted_confounds)),
        },  # fmt: skip
        "voice_warnings": {"alpha": alpha, "warnings": spread_warnings},
        "clips": {"planned": len(clips), "admitted": len(admitted), "made": store.made, "reused": store.reused},
        "problems": problems,
    }
    report = report_lines(provenance)
    write_atomic(out / PROVENANCE, (json.dumps(provenance, indent=2, sort_keys=False) + "\n").encode())
    write_atomic(out / REPORT, ("\n".join(report) + "\n").encode())
    if problems:
        return BuildResult(provenance, report, problems)
    if layout == "corpus":
        write_corpus(out, clips, admitted, layout_input, voices, store, name, description)
    else:
        write_basis(out, admitted, layout_input, store)
    return BuildResult(provenance, report, problems)


def short_sets(sets: list[BasisSet], admitted: dict[str, Clip]) -> list[str]:
    """The item sets in which a label keeps fewer than :data:`MIN_VOICES_PER_GROUP` speakers once the filters dropped
    their clips (:mod:`harness.data.basis_suite` refuses such a set)."""
    problems = []
    for item_set in sets:
        speakers: dict[str, set[str]] = {}
        for row in item_set.rows:
            kept = speakers.setdefault(row[item_set.dimension], set())
            if item_set.audio_key(row) in admitted:
                kept.add(row["speaker"])
        for label, kept in speakers.items():
            if len(kept) < MIN_VOICES_PER_GROUP:
                problems.append(
                    f"set {item_set.entry.get('name', item_set.metadata)}: {item_set.dimension}={label}: {len(kept)} "
                    f"speaker(s) admitted, fewer than {MIN_VOICES_PER_GROUP}"
                )
    return problems


def items_record(items: Path) -> dict:
    """``provenance.json``'s ``items``: the path and the SHA-256 of the file's bytes (64 hex digits, what
    ``sha256sum`` prints); for a BASIS suite folder, ``files``: each file's path inside it -> its SHA-256."""
    if not items.is_dir():
        return {"path": str(items), "sha256": file_sha256(items)}
    files = {
        path.relative_to(items).as_posix(): file_sha256(path)
        for path in sorted(items.rglob("*"))
        if path.is_file() and not any(part.startswith(".") for part in path.relative_to(items).parts)
    }
    return {"path": str(items), "files": files}


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def write_corpus(out, clips, admitted, sentences, voices, store, name, description) -> None:
    """``audio/<utterance>.flac``, ``manifest.csv`` (a row per admitted clip: the corpus columns, the voices'
    dimensions, the voice's sound) and ``corpus.yaml`` last."""
    dimensions = list(voices_per_group(voices))
    audio = out / "audio"
    for stale in audio.glob("*.flac") if audio.is_dir() else []:
        if stale.stem not in admitted:
            stale.unlink()
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow([*CORPUS_COLUMNS, *dimensions, "voice"])
    content_of = {f"{v.speaker}_{s.content_id}": s.content_id for v in voices for s in sentences}
    for key, clip in clips.items():
        if key not in admitted:
            continue
        place(store.path(clip.recipe), audio / f"{key}.flac")
        label = clip.voice.label
        writer.writerow([key, f"audio/{key}.flac", clip.voice.speaker, content_of[key], clip.text,
                         *(label[d] for d in dimensions), clip.voice.sound])  # fmt: skip
    write_atomic(out / "manifest.csv", buffer.getvalue().encode())
    config = {"name": name or out.name, "manifest": "manifest.csv", "dimensions": dimensions}
    text = yaml_lines(config, description or f"Built by lalm-fairness-suite build; provenance in {PROVENANCE}.")
    write_atomic(out / "corpus.yaml", text.encode())


def yaml_lines(config: dict, description: str) -> str:
    """corpus.yaml as the demo's: name, manifest, dimensions in flow style, the description folded (``>-``) at its
    own line breaks, or at 98 columns when it has none."""
    import textwrap

    lines = [
        f"name: {config['name']}",
        f"manifest: {config['manifest']}",
        f"dimensions: [{', '.join(config['dimensions'])}]",
        "description: >-",
    ]
    text = description.strip()
    lines += ["  " + line.strip() for line in (text.splitlines() if "\n" in text else textwrap.wrap(text, 98))]
    return "\n".join(lines) + "\n"


def write_basis(out, admitted, layout_input, store) -> None:
    """Each set's speech files and metadata CSV (the admitted rows; Python's csv dialect, as the demo's) and the
    source ``suite.yaml`` last."""
    config_text, sets = layout_input
    wanted = set()
    for item_set in sets:
        rows = [row for row in item_set.rows if item_set.audio_key(row) in admitted]
        for row in rows:
            key = item_set.audio_key(row)
            wanted.add(key)
            place(store.path(admitted[key].recipe), out / key)
        write_metadata(out / item_set.metadata, item_set, rows)
    for stale in out.glob("*/speech/*/*.flac"):
        if stale.relative_to(out).as_posix() not in wanted:
            stale.unlink()
    write_atomic(out / "suite.yaml", config_text.encode())


def write_metadata(path: Path, item_set: BasisSet, rows: list[dict]) -> None:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=item_set.columns)
    writer.writeheader()
    writer.writerows(rows)
    write_atomic(path, buffer.getvalue().encode())


def report_lines(provenance: dict) -> list[str]:
    """The build report: voices and clips per group, what each filter dropped, the outliers to look at."""
    lines = [f"suite build ({provenance['layout']}): {provenance['clips']['admitted']} of "
             f"{provenance['clips']['planned']} clips admitted"]  # fmt: skip
    for dimension, groups in provenance["groups"].items():
        cells = ", ".join(f"{group} {c['voices']} voice(s) / {c['clips']} clips" for group, c in groups.items())
        lines.append(f"  {dimension}: {cells}")
    for key, words in (("spread", "over banks"), ("spread_admitted", "over banks, admitted")):
        for dimension, groups in provenance[key].items():
            cells = "; ".join(
                f"{group} {len(cell['banks'])} bank(s) / {cell['voices']} voice(s) "
                f"({', '.join(f'{bank} {len(speakers)}' for bank, speakers in cell['banks'].items())})"
                for group, cell in groups.items()
            )
            lines.append(f"  {dimension} {words}: {cells}")
    lines += [f"ENGINE CONFOUND (built with --allow-engine-confound): {line}"
              for line in provenance["engine_confound"]["dimensions"]]  # fmt: skip
    lines += [f"WARNING: {line}" for line in provenance["voice_warnings"]["warnings"]]
    filters = provenance["filters"]
    wer = filters["wer"]
    lines.append(
        f"WER = 0 filter ({wer['asr']}): {wer['dropped']} of {wer['checked']} clips dropped"
        if wer["enabled"]
        else "WER = 0 filter: off"
    )
    for row in wer.get("dropped_clips", []):
        lines.append(f"  dropped {row['clip']}: heard {row['transcript']!r} for {row['text']!r} (WER {row['wer']})")
    perceived = filters["perceived_group"]
    if perceived["enabled"]:
        lines.append(
            f"perceived-group filter ({perceived['perceiver']}, {perceived['dimension']}, min share "
            f"{perceived['min_share']:.0%}): {len(perceived['dropped_voices'])} voice(s) dropped, {perceived['dropped']} clips"
        )
        for row in perceived["voices"]:
            if not row["kept"]:
                lines.append(
                    f"  dropped voice {row['speaker']} ({row['group']}): {row['perceived_as_group']} of {row['clips']} "
                    f"clips perceived as {row['group']} ({row['share']:.0%}); heard {row['perceived']}"
                )
    else:
        lines.append("perceived-group filter: off")
    listed = filters["outliers"].get("listed")
    if filters["outliers"]["enabled"]:
        lines.append(f"outliers to look at (not dropped): {len(listed)}")
        for row in listed:
            lines.append(
                f"  {row['clip']} ({row['group']}): {row['measure']} {row['value']} outside [{row['low']}, {row['high']}]"
            )
    else:
        lines.append("outlier listing: off")
    lines += [f"PROBLEM: {problem}" for problem in provenance["problems"]]
    return lines
