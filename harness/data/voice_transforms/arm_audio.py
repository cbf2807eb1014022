"""Counterfactual arms made on demand and kept on disk, so that a run whose answers are cached makes none.

An arm's identity is its recipe (:meth:`VoiceTransform.apply`: the source recording's content hash, its group and
the transform's fingerprint), which needs no samples. :func:`lazy_arm` returns an :class:`ArmAudio` with that
recipe at once; its samples are made the first time something reads them (a model asked a question the cache
cannot answer, a perceiver labelling a clip it has not labelled), by the transform's own
:meth:`~VoiceTransform.resynthesise` with the seed :meth:`~VoiceTransform.apply` draws from the recipe, so that a
lazy arm is the eager arm, sample for sample.

An :class:`ArmStore` keeps made arms in a content-addressed folder (``<cache>/arms/ab/abcdef....npy``, float32,
named by the arm's :attr:`~harness.core.requests.Audio.content_hash`; ``$LALM_ARM_STORE`` names one folder for every
cache, :func:`arm_folder`), with what a model-free perceiver heard in each (:meth:`ArmStore.labels`), and a few
recently read ones in memory
(:data:`MEMORY_BYTES` for the whole process, so that another run of the process finds them without reading the
disk). An arm's samples are never held by the arm itself: a model that reads a corpus's arms one chunk at a time
holds one chunk, whatever the corpus's size. :meth:`ArmStore.make` makes many arms over the cores
(:func:`harness.core.parallel.map_in_processes`), the same samples as one process makes (the seed comes from
the recipe), and :meth:`ArmAudio.prepare_many` lets the output cache make the arms of its missing requests so.
"""

from __future__ import annotations

import contextlib
import functools
import os
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

from harness.core.parallel import map_in_processes
from harness.core.requests import Audio
from harness.core.values import stable_hash
from harness.data.audio import FileAudio, RecentSamples, read_audio
from harness.data.voice_transforms import ChangeGenderSettings, VoiceTransform, _remember_source, get_transform

ARM_FOLDER = "arms"
"""The arm store's folder inside an output cache's folder."""
LABEL_FOLDER = "labels"
"""The folder, inside an arm store, of the labels a perceiver without a model gave its arms (``voice:praat``'s):
like the arm, a label depends on the recipe and the labeller's code only, so caches that share the store share
them."""
ARM_STORE_ENV = "LALM_ARM_STORE"
"""An environment variable naming one arm store folder for every output cache (:func:`arm_folder`)."""
MEMORY_BYTES = 256 * 2**20
"""The samples of recently read arms the process keeps in memory, over every store (least recently read go first)."""


def arm_recipe(transform: VoiceTransform, source: Audio, source_group: str, fingerprint: str) -> str:
    """The recipe :meth:`VoiceTransform.apply` gives the arm: ``source hash | source group | fingerprint``."""
    return f"{source.content_hash}|{source_group}|{fingerprint}"


def arm_seed(recipe: str) -> int:
    """The seed :meth:`VoiceTransform.apply` resynthesises with: the first 48 bits of the recipe's stable hash."""
    return int(stable_hash(recipe)[:12], 16)


class ArmAudio(Audio):
    """The ``transform`` arm of ``source``, identified by its recipe; its :attr:`samples` come from its
    :class:`ArmStore`, which makes them the first time they are read."""

    def __init__(self, source: Audio, source_group: str, transform: str, settings: ChangeGenderSettings,
                 recipe: str, store: ArmStore):  # fmt: skip
        object.__setattr__(self, "source", source)
        object.__setattr__(self, "source_group", source_group)
        object.__setattr__(self, "transform", transform)
        object.__setattr__(self, "settings", settings)
        object.__setattr__(self, "sample_rate", source.sample_rate)
        object.__setattr__(self, "recipe", recipe)
        object.__setattr__(self, "store", store)

    @property
    def samples(self) -> np.ndarray:  # type: ignore[override]
        return self.store.samples(self)

    @classmethod
    def prepare_many(cls, arms: Sequence[ArmAudio], progress: bool = True) -> None:
        """Make, over the cores, the arms of ``arms`` that no store holds yet (the output cache calls this with the
        audio of the requests it is about to generate); ``progress`` shows a bar."""
        by_store: dict[int, tuple[ArmStore, list[ArmAudio]]] = {}
        for arm in arms:
            by_store.setdefault(id(arm.store), (arm.store, []))[1].append(arm)
        for store, group in by_store.values():
            store.make(group, progress)

    def __reduce__(self):
        # Pickled (a plan's audio, a pool's job) as plain audio with its recipe: the store stays in this process.
        return (Audio, (self.samples, self.sample_rate, self.recipe))

    def __repr__(self) -> str:
        return f"ArmAudio({self.transform}, {self.content_hash[:12]}, {self.sample_rate} Hz)"


def lazy_arm(transform: VoiceTransform, source: Audio, source_group: str, settings: ChangeGenderSettings,
             store: ArmStore, fingerprint: str | None = None) -> ArmAudio:  # fmt: skip
    """``transform.apply(source, source_group, settings)`` made when its samples are first read; ``fingerprint``
    (``transform.fingerprint(settings)``) may be passed when many arms share it. The source is remembered for
    :func:`~harness.data.voice_transforms.source_recording`, as :meth:`~VoiceTransform.apply` does."""
    fingerprint = fingerprint or transform.fingerprint(settings)
    arm = ArmAudio(source, source_group, transform.name, settings, arm_recipe(transform, source, source_group, fingerprint), store)  # fmt: skip
    _remember_source(arm, source)
    return arm


_MEMORY = RecentSamples(MEMORY_BYTES)


class ArmStore:
    """Made arms by content hash: in ``directory`` (None: in this store's memory only, every arm it made kept) and
    in the process's recent memory. ``made`` counts the arms this store resynthesised."""

    def __init__(self, directory: str | Path | None):
        self.directory = None if directory is None else Path(directory)
        self.made = 0
        self._kept: dict[str, np.ndarray] = {}

    def path(self, arm: Audio) -> Path | None:
        if self.directory is None:
            return None
        key = arm.content_hash
        return self.directory / key[:2] / f"{key}.npy"

    def stored(self, arm: Audio) -> np.ndarray | None:
        """The arm's samples if this store or the process's memory holds them, else None."""
        key = arm.content_hash
        samples = _MEMORY.get(key)
        if samples is None:
            samples = self._kept.get(key)
        path = self.path(arm)
        if samples is None and path is not None and path.is_file():
            samples = _load(path)
        if samples is not None:
            _MEMORY.put(key, samples)
        return samples

    def holds(self, arm: Audio) -> bool:
        path = self.path(arm)
        return (
            _MEMORY.get(arm.content_hash) is not None
            or arm.content_hash in self._kept
            or (path is not None and path.is_file())
        )

    def samples(self, arm: ArmAudio) -> np.ndarray:
        """The arm's samples: stored, or made now (and stored)."""
        samples = self.stored(arm)
        if samples is None:
            self.make([arm])
            samples = self.stored(arm)
        return samples

    def make(self, arms: Iterable[ArmAudio], progress: bool = False) -> int:
        """Resynthesise the arms this store does not hold (over the cores when there are many), store them, and
        return how many were made."""
        missing = list({arm.content_hash: arm for arm in arms if not self.holds(arm)}.values())
        if not missing:
            return 0
        jobs = [_job(arm, self.path(arm)) for arm in missing]
        label = f"voice transform {', '.join(sorted({arm.transform for arm in missing}))}"
        for arm, samples in zip(missing, map_in_processes(make_arm_samples, jobs, label, progress=progress)):
            if samples is not None:  # made in memory (no folder)
                self._kept[arm.content_hash] = samples
                _MEMORY.put(arm.content_hash, samples)
        self.made += len(missing)
        return len(missing)

    def label_path(self, arm: Audio, labeller: str) -> Path | None:
        """Where the store keeps ``labeller``'s label of ``arm`` (``labels/<labeller hash>/ab/abcdef....txt``)."""
        if self.directory is None:
            return None
        key = arm.content_hash
        return self.directory / LABEL_FOLDER / stable_hash(labeller)[:16] / key[:2] / f"{key}.txt"

    def labels(self, arms: Sequence[Audio], labeller: str) -> dict[str, str]:
        """The stored labels of ``arms`` by ``labeller``, by content hash (an arm not labelled is left out, and so is
        an empty label file: no label is empty, so it is one a crash cut short, measured again)."""
        found = {}
        for arm in arms:
            path = self.label_path(arm, labeller)
            if path is not None and path.is_file():
                with contextlib.suppress(OSError):
                    text = path.read_text(encoding="utf-8")
                    if text:
                        found[arm.content_hash] = text
        return found

    def keep_labels(self, labelled: Iterable[tuple[Audio, str]], labeller: str) -> None:
        """Store ``labeller``'s label of each arm as the arms are stored: written whole to a temporary file renamed
        onto its name (a reader never sees half a label), without ``fsync`` (the labels are also in the output
        cache, and this is only a speed-up for other caches: a label a crash lost is measured again, and a store it
        cannot write is skipped). A durable write per label (``fsync`` of the file and of its folder, and a scan of
        the folder for stale temporaries) cost a CREMA-D-sized cold run 13,104 of each."""
        for arm, label in labelled:
            path = self.label_path(arm, labeller)
            if path is not None:
                with contextlib.suppress(OSError):
                    _save_text(path, label)


def _job(arm: ArmAudio, path: Path | None) -> tuple:
    """What a worker needs to make ``arm``: the source as a file to read (a corpus's recording) or its samples."""
    source = arm.source
    if isinstance(source, FileAudio):
        origin: tuple = ("file", str(source.path), source.sample_rate)
    else:
        origin = ("samples", np.asarray(source.samples, dtype=np.float32), source.sample_rate)
    return (arm.transform, origin, arm.source_group, arm.settings, arm.recipe, None if path is None else str(path))


def make_arm_samples(job: tuple) -> np.ndarray | None:
    """Resynthesise one arm (a :func:`_job`) with the seed of its recipe; written to its path when it has one (and
    None returned), else returned."""
    transform_name, (kind, where, rate), source_group, settings, recipe, path = job
    source = read_audio(where, rate) if kind == "file" else Audio(where, rate)
    made = get_transform(transform_name).resynthesise(source, source_group, settings, seed=arm_seed(recipe))
    if made.sample_rate != rate:
        raise ValueError(f"voice transform {transform_name!r} returned {made.sample_rate} Hz for a {rate} Hz recording")
    samples = np.ascontiguousarray(made.samples, dtype=np.float32)
    if path is None:
        return samples
    _save(Path(path), samples)
    return None


def _save(path: Path, samples: np.ndarray) -> None:
    """Write atomically (a temporary file renamed), so that a reader never sees half an arm."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem[:12]}-", suffix=".npy")
    try:
        with os.fdopen(handle, "wb") as file:
            np.save(file, samples, allow_pickle=False)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def _save_text(path: Path, text: str) -> None:
    """Write ``text`` atomically, as :func:`_save` writes an arm."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem[:12]}-", suffix=".txt")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            file.write(text)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def _load(path: Path) -> np.ndarray | None:
    """A stored arm's samples; a file that is not one (cut short, overwritten) is removed and None returned, so the
    arm is made again."""
    try:
        samples = np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError):
        samples = None
    if samples is None or samples.dtype != np.float32 or samples.ndim != 1:
        with contextlib.suppress(OSError):
            path.unlink()
        return None
    return samples


def arm_folder(cache_directory: str | Path) -> Path:
    """Where a run whose output cache is ``cache_directory`` keeps its arms: the folder ``$LALM_ARM_STORE`` names,
    else the cache's own ``arms/``. An arm depends on its recording and the transform's recipe only, never on the
    model, so the caches of several checkpoints (or of every gate run of a test suite) can share one store; writes
    are atomic, so runs may share it at once."""
    shared = os.environ.get(ARM_STORE_ENV, "").strip()
    return Path(shared).expanduser() if shared else Path(cache_directory) / ARM_FOLDER


@functools.cache
def store_for(directory: str | None) -> ArmStore:
    """One store per folder in a process (the output cache's ``arms/`` folder), so that runs share it."""
    return ArmStore(directory)
