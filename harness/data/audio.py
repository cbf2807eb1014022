"""Audio reading: any file soundfile reads, as float32 mono at 16 kHz; and the load-time check of a file.

:func:`inspect_audio` decodes a file completely and says what makes it unusable (unreadable, no samples,
truncated, non-finite samples) or merely doubtful (silent, very short); :class:`AudioChecks` memoizes its
results, and the content hash of the file's 16 kHz audio (the hash the output cache keys requests by), by the
file's content (SHA-256 of its bytes), and that SHA-256 by the file's (path, size, modification time), in a small
JSON file; so a re-run reads no audio file, and a request's audio (:class:`FileAudio`) is decoded only when a
model has to hear it.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import hashlib
import json
import os
import stat
import threading
from collections.abc import Iterable, Sequence
from math import gcd
from pathlib import Path

import numpy as np

from harness.core.files import atomic_write_text
from harness.core.requests import SAMPLE_RATE, Audio

SILENT_PEAK_DBFS = -60.0
"""A clip whose largest sample stays below this level (dB relative to full scale, 1.0) is reported as silent."""
MIN_DURATION_S = 0.5
"""A clip shorter than this (seconds) is reported as very short."""
AUDIO_CHECKS_FILE = "audio_checks.json"
"""Name of the :class:`AudioChecks` memo inside the output cache folder."""
AUDIO_CHECKS_VERSION = 2
BUNDLED_AUDIO_CHECKS = Path(__file__).resolve().parent / "bundled_audio_checks.json"
"""The :class:`AudioChecks` entries of the recordings the harness ships (the demo corpus, the BASIS demo suite), by
the SHA-256 of each file's bytes: a first run on a fresh cache hashes those files but decodes none of them.
``python scripts/build_bundled_audio_checks.py`` writes it; ``tests/data/test_bundled_audio_checks.py`` holds it to
a fresh decode of every bundled file."""
BUNDLED_AUDIO_GLOBS = ("demo/audio/*.flac", "basis_demo/*/speech/*/*.flac")
"""The shipped recordings, relative to ``harness/data``."""
_DECODE_BLOCK_FRAMES = 65536
_GIT_LFS_POINTER = b"version https://git-lfs"
_UNKNOWN_RIFF_SIZES = (0, 0xFFFFFFFF)


class AudioError(ValueError):
    """An audio file is missing, unreadable or empty; the message names the file."""


def read_audio(path: str | Path, target_rate: int = SAMPLE_RATE) -> Audio:
    """Read ``path``, mix down to mono (mean of channels) and resample to ``target_rate`` (polyphase).
    Samples that are not finite (NaN, infinity) are an error: no backend could send them faithfully."""
    import soundfile

    path = Path(path)
    if not path.is_file():
        raise AudioError(f"{path}: audio file does not exist")
    try:
        samples, rate = soundfile.read(str(path), dtype="float32", always_2d=True)
    except Exception as exc:  # soundfile raises LibsndfileError, RuntimeError or TypeError by format
        raise AudioError(f"{path}: audio file cannot be read ({exc})") from exc
    if samples.size == 0:
        raise AudioError(f"{path}: audio file has no samples")
    non_finite = samples.size - int(np.count_nonzero(np.isfinite(samples)))
    if non_finite:
        raise AudioError(f"{path}: audio file {_non_finite_problem(non_finite, samples.size)}")
    mono = samples.mean(axis=1, dtype=np.float32)
    return Audio(resample(mono, rate, target_rate), target_rate)


def resample(samples: np.ndarray, source_rate: int, target_rate: int) -> np.ndarray:
    """Polyphase resampling (``scipy.signal.resample_poly``, its default Kaiser window, beta 5) by the reduced
    ratio up/down = target/gcd : source/gcd, with the anti-aliasing filter of :func:`resampling_filter`."""
    if source_rate == target_rate:
        return np.ascontiguousarray(samples, dtype=np.float32)
    from scipy.signal import resample_poly

    divisor = gcd(int(source_rate), int(target_rate))
    up, down = target_rate // divisor, source_rate // divisor
    samples = np.asarray(samples, dtype=np.float32)
    return resample_poly(samples, up, down, window=resampling_filter(up, down)).astype(np.float32)


@functools.lru_cache(maxsize=16)
def resampling_filter(up: int, down: int) -> np.ndarray:
    """The low-pass FIR filter ``resample_poly`` designs for up/down, designed once per rate pair: ``firwin`` of
    2 * 10 * max(up, down) + 1 taps, cutoff 1 / max(up, down) of Nyquist, Kaiser window (beta 5), in float32 as
    ``resample_poly`` casts it for float32 samples; so the output equals ``resample_poly``'s own. Read-only."""
    from scipy.signal import firwin

    half_length = 10 * max(up, down)
    taps = firwin(2 * half_length + 1, 1.0 / max(up, down), window=("kaiser", 5.0)).astype(np.float32)
    taps.flags.writeable = False
    return taps


@dataclasses.dataclass(frozen=True)
class AudioInspection:
    """What a complete decode of one file found. ``problem`` (None when usable) completes the sentence
    "audio file X ..."; ``peak`` is the largest absolute finite sample over all channels."""

    frames: int
    sample_rate: int
    peak: float
    problem: str | None = None

    @property
    def duration_s(self) -> float:
        return self.frames / self.sample_rate if self.sample_rate else 0.0

    @property
    def silent(self) -> bool:
        """Every sample below :data:`SILENT_PEAK_DBFS`, i.e. ``peak < 10 ** (SILENT_PEAK_DBFS / 20)``."""
        return self.problem is None and self.peak < 10 ** (SILENT_PEAK_DBFS / 20)

    @property
    def short(self) -> bool:
        """Shorter than :data:`MIN_DURATION_S` seconds."""
        return self.problem is None and self.duration_s < MIN_DURATION_S


def inspect_audio(path: str | Path) -> AudioInspection:
    """Decode ``path`` completely (in blocks) and return what :class:`AudioInspection` records.

    Problems: the header cannot be read (with a hint when the file is a git-lfs pointer); no samples;
    truncated, when decoding stops with an error or yields fewer frames than the header announces, or when
    a WAV's ``data`` chunk announces more bytes than the file holds (libsndfile silently shortens such a
    file); samples that are NaN or infinite. A missing file raises :class:`AudioError`.
    """
    import soundfile

    path = Path(path)
    if not path.is_file():
        raise AudioError(f"{path}: audio file does not exist")
    try:
        sound = soundfile.SoundFile(str(path))
    except Exception as exc:  # soundfile raises LibsndfileError, RuntimeError or TypeError by format
        return AudioInspection(0, 0, 0.0, unreadable_audio_problem(path, exc))
    with sound:
        announced, rate = int(sound.frames), int(sound.samplerate)
        if announced == 0:
            return AudioInspection(0, rate, 0.0, "has no samples")
        decoded, peak, non_finite, failure = 0, 0.0, 0, None
        try:
            for block in sound.blocks(_DECODE_BLOCK_FRAMES, dtype="float32", always_2d=True):
                decoded += len(block)
                finite = np.isfinite(block)
                non_finite += block.size - int(np.count_nonzero(finite))
                if block.size:
                    peak = max(peak, float(np.max(np.abs(block, where=finite, out=np.zeros_like(block)))))
        except Exception as exc:  # libsndfile reports a cut FLAC as a lost sync or a failed seek
            failure = exc
    channels = int(sound.channels)
    if failure is not None:
        problem = f"is truncated or corrupt: decoding fails before the end of the {announced} frames its header announces ({failure})"
    elif decoded < announced:
        problem = f"is truncated: it decodes to {decoded} of the {announced} frames its header announces"
    elif (missing := _wav_missing_bytes(path)) is not None:
        problem = f"is truncated: its WAV data chunk announces {missing} more bytes than the file holds"
    elif non_finite:
        problem = _non_finite_problem(non_finite, decoded * channels)
    else:
        problem = None
    return AudioInspection(decoded, rate, peak, problem)


def _non_finite_problem(count: int, total: int) -> str:
    return f"has {count} of {total} samples that are not finite (NaN or infinity)"


def unreadable_audio_problem(path: Path, error: Exception) -> str:
    """The problem text "cannot be read (error)", with the remedy when the file is a git-lfs pointer (a
    clone made without ``git lfs pull``) rather than the audio it stands for."""
    with open(path, "rb") as handle:
        is_pointer = handle.read(len(_GIT_LFS_POINTER)) == _GIT_LFS_POINTER
    hint = "; it is a git-lfs pointer, not audio: run `git lfs pull` in the corpus clone" if is_pointer else ""
    return f"cannot be read ({error}){hint}"


def _wav_missing_bytes(path: Path) -> int | None:
    """For a RIFF/RIFX WAVE file: how many bytes its ``data`` chunk announces beyond the end of the file
    (None when none are missing, the file is no WAV, or the size is the 0 / 0xFFFFFFFF of a streaming writer)."""
    size = path.stat().st_size
    with open(path, "rb") as handle:
        header = handle.read(12)
        if len(header) < 12 or header[:4] not in (b"RIFF", b"RIFX") or header[8:12] != b"WAVE":
            return None
        byteorder = "big" if header[:4] == b"RIFX" else "little"
        offset = 12
        while offset + 8 <= size:
            handle.seek(offset)
            chunk = handle.read(8)
            length = int.from_bytes(chunk[4:8], byteorder)
            if chunk[:4] == b"data":
                present = size - offset - 8
                if length in _UNKNOWN_RIFF_SIZES or length <= present:
                    return None
                return length - present
            offset += 8 + length + (length & 1)
    return None


def as_path(path: str | Path) -> Path:
    """``path`` as a :class:`Path`; a ``Path`` as it is (making it again parses it again: corpus loads do this per
    recording)."""
    return path if isinstance(path, Path) else Path(path)


class RecentSamples:
    """Recently read samples by content hash, within ``limit`` bytes (the least recently read go first): what a
    process keeps of decoded recordings and made arms, so that its memory does not grow with a corpus's size."""

    def __init__(self, limit: int):
        self.limit = limit
        self.bytes = 0
        self.entries: collections.OrderedDict[str, np.ndarray] = collections.OrderedDict()
        self.lock = threading.Lock()

    def get(self, key: str) -> np.ndarray | None:
        with self.lock:
            samples = self.entries.get(key)
            if samples is not None:
                self.entries.move_to_end(key)
            return samples

    def put(self, key: str, samples: np.ndarray) -> None:
        with self.lock:
            if key in self.entries or samples.nbytes > self.limit:
                return
            self.entries[key] = samples
            self.bytes += samples.nbytes
            while self.bytes > self.limit:
                _, dropped = self.entries.popitem(last=False)
                self.bytes -= dropped.nbytes


RECORDINGS_MEMORY_BYTES = 256 * 2**20
RECENT_RECORDINGS = RecentSamples(RECORDINGS_MEMORY_BYTES)
"""The process's recently decoded recordings (:class:`FileAudio`), within :data:`RECORDINGS_MEMORY_BYTES`."""


class FileAudio(Audio):
    """The audio of a file whose :attr:`content_hash` is known (memoised by :class:`AudioChecks`): the samples are
    read (:func:`read_audio`) when used, so a request whose answer is cached never decodes its file. They are not
    kept by the object but in :data:`RECENT_RECORDINGS`, so that a corpus's recordings, all read once, do not all
    stay in memory."""

    def __init__(self, path: Path, content_hash: str, sample_rate: int = SAMPLE_RATE):
        object.__setattr__(self, "path", as_path(path))
        object.__setattr__(self, "sample_rate", sample_rate)
        object.__setattr__(self, "_content_hash", content_hash)

    @property
    def samples(self) -> np.ndarray:  # type: ignore[override]
        decoded = RECENT_RECORDINGS.get(self.content_hash)
        if decoded is None:
            decoded = read_audio(self.path, self.sample_rate).samples
            RECENT_RECORDINGS.put(self.content_hash, decoded)
        return decoded

    def __repr__(self) -> str:
        return f"FileAudio({str(self.path)!r}, {self.content_hash[:12]}, {self.sample_rate} Hz)"


class AudioChecks:
    """:func:`inspect_audio` memoized by file content (SHA-256 of the bytes), and that SHA-256 memoized by the
    file's path, size and modification time (ns), in the JSON file ``path``
    (``{"version": 2, "entries": {sha256: {frames, sample_rate, peak, problem, audio_hash}},
    "files": {absolute path: {size, mtime_ns, sha256}}}``); None keeps it in memory. ``audio_hash`` is the
    :attr:`~harness.core.requests.Audio.content_hash` of the file read as 16 kHz mono (:func:`read_audio`;
    None for an unusable file), so a run whose answers are all cached neither reads nor decodes any audio.
    A file whose size or modification time changed is read and hashed again.

    The memo holds measurements, not verdicts, so changing :data:`SILENT_PEAK_DBFS` or :data:`MIN_DURATION_S`
    needs no re-decode. A memo that cannot be parsed or has another version is ignored and rewritten (it is
    only a speed-up); :meth:`save` merges with what other processes saved meanwhile, writes atomically, and
    skips a folder it cannot write (the output cache names that problem itself). ``decoded`` counts the
    files this instance had to decode, ``hashed`` those it had to read to hash; ``digests`` the content hash of
    each path inspected; ``audio_hashes`` the 16 kHz audio hash of each usable one."""

    def __init__(self, path: str | Path | None = None, bundled: str | Path | None = BUNDLED_AUDIO_CHECKS):
        self.path = None if path is None else Path(path)
        self._entries, self._files = self._read()
        self._bundled = _read_entries(bundled)
        """Entries of the shipped recordings (:data:`BUNDLED_AUDIO_CHECKS`), looked up after this memo's own and
        never saved into it."""
        self._new: dict[str, dict] = {}
        self._new_files: dict[str, dict] = {}
        self.decoded = 0
        self.hashed = 0
        self.digests: dict[Path, str] = {}
        """The SHA-256 of every file inspected, by path (e.g. to find one recording listed for two speakers)."""
        self.audio_hashes: dict[Path, str] = {}
        """The content hash of every usable file's 16 kHz audio, by path (:class:`FileAudio`)."""

    def inspect(self, path: str | Path) -> AudioInspection:
        """:func:`inspect_audio` of ``path``, decoded only when no file of the same bytes was; a file that
        is missing or cannot be opened raises :class:`AudioError`."""
        path = as_path(path)
        digest = self._digest(path)
        self.digests[path] = digest
        entry = self._entries.get(digest) or self._bundled.get(digest)
        if entry is None:
            self.decoded += 1
            inspection = inspect_audio(path)
            audio_hash = read_audio(path).content_hash if inspection.problem is None else None
            entry = {**dataclasses.asdict(inspection), "audio_hash": audio_hash}
            self._entries[digest] = self._new[digest] = entry
        if entry["audio_hash"] is not None:
            self.audio_hashes[path] = entry["audio_hash"]
        return AudioInspection(**{key: value for key, value in entry.items() if key != "audio_hash"})

    def _digest(self, path: Path) -> str:
        """The SHA-256 of the file's bytes: from the memo when its path, size and mtime are those memoised."""
        try:
            status = path.stat()
        except OSError:
            status = None
        if status is None or not stat.S_ISREG(status.st_mode):
            raise AudioError(f"{path}: audio file does not exist")
        key = os.path.abspath(path)
        known = self._files.get(key)
        if known is not None and known["size"] == status.st_size and known["mtime_ns"] == status.st_mtime_ns:
            return known["sha256"]
        try:
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
        except OSError as exc:
            raise AudioError(f"{path}: audio file cannot be read ({exc})") from exc
        self.hashed += 1
        record = {"size": status.st_size, "mtime_ns": status.st_mtime_ns, "sha256": digest}
        self._files[key] = self._new_files[key] = record
        return digest

    def save(self) -> None:
        if self.path is None or not (self._new or self._new_files):
            return
        entries, files = self._read()
        content = {
            "version": AUDIO_CHECKS_VERSION,
            "entries": {**entries, **self._new},
            "files": {**files, **self._new_files},
        }
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_text(self.path, json.dumps(content, sort_keys=True))
        except OSError:
            return
        self._new, self._new_files = {}, {}

    def _read(self) -> tuple[dict[str, dict], dict[str, dict]]:
        content = _read_memo(self.path)
        if content is None or not isinstance(content.get("files"), dict):
            return {}, {}
        entries = _valid_entries(content)
        files = {
            key: record
            for key, record in content["files"].items()
            if isinstance(record, dict) and set(record) == {"size", "mtime_ns", "sha256"}
        }
        return entries, files


def _read_memo(path: str | Path | None) -> dict | None:
    """The memo file's content, or None where it is missing, unreadable, of another version or without entries."""
    if path is None or not Path(path).is_file():
        return None
    try:
        content = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if (
        not isinstance(content, dict)
        or content.get("version") != AUDIO_CHECKS_VERSION
        or not isinstance(content.get("entries"), dict)
    ):
        return None
    return content


def _valid_entries(content: dict) -> dict[str, dict]:
    fields = {field.name for field in dataclasses.fields(AudioInspection)} | {"audio_hash"}
    return {key: entry for key, entry in content["entries"].items() if isinstance(entry, dict) and set(entry) == fields}


@functools.cache
def _read_entries_once(path: str) -> dict[str, dict]:
    content = _read_memo(path)
    return {} if content is None else _valid_entries(content)


def _read_entries(path: str | Path | None) -> dict[str, dict]:
    """The entries of a memo file (read once per process), or none."""
    return {} if path is None else _read_entries_once(str(path))


def bundled_audio_files(data_folder: Path = BUNDLED_AUDIO_CHECKS.parent) -> list[Path]:
    """The shipped recordings (:data:`BUNDLED_AUDIO_GLOBS`), sorted."""
    return sorted(path for pattern in BUNDLED_AUDIO_GLOBS for path in data_folder.glob(pattern))


def bundled_audio_entries(files: Iterable[Path]) -> dict:
    """A memo of ``files`` decoded afresh (version and entries, no file records: paths and times are the
    machine's own), as :data:`BUNDLED_AUDIO_CHECKS` holds it."""
    checks = AudioChecks(bundled=None)
    for path in files:
        checks.inspect(path)
    return {"version": AUDIO_CHECKS_VERSION, "entries": dict(sorted(checks._new.items()))}


def inspect_audio_files(
    places: Iterable[tuple[str, Path, str]], audio_checks: AudioChecks, error: type[ValueError]
) -> list[str]:
    """Inspect every file of ``places`` (``where`` for an error, e.g. "manifest.csv, row 3"; the path; a
    short label for a warning) through ``audio_checks``, raise ``error`` naming ``where`` and the file on the
    first one missing or unusable, save the memo in any case, and return :func:`audio_warnings` of the rest."""
    findings = []
    try:
        for where, path, label in places:
            if not as_path(path).is_file():
                raise error(f"{where}: audio file {path} does not exist")
            try:
                inspection = audio_checks.inspect(path)
            except AudioError as exc:
                raise error(f"{where}: {exc}") from exc
            if inspection.problem is not None:
                raise error(f"{where}: audio file {path} {inspection.problem}")
            findings.append((label, inspection))
    finally:
        audio_checks.save()
    return audio_warnings(findings)


def audio_warnings(findings: Sequence[tuple[str, AudioInspection]], shown: int = 5) -> list[str]:
    """One line per kind of doubtful clip (silent, very short) among ``findings`` (where, inspection),
    naming the first ``shown`` places and counting the rest; the thresholds are stated in the line."""
    kinds = (
        ("silent", lambda i: i.silent, f"peak below {SILENT_PEAK_DBFS:g} dBFS"),
        ("very short", lambda i: i.short, f"shorter than {MIN_DURATION_S:g} s"),
    )
    lines = []
    for label, applies, rule in kinds:
        places = [where for where, inspection in findings if applies(inspection)]
        if places:
            more = f" and {len(places) - shown} more" if len(places) > shown else ""
            lines.append(f"{len(places)} {label} clip(s) ({rule}): {'; '.join(places[:shown])}{more}")
    return lines
