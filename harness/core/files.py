"""Atomic writes (a reader never sees half a file; a crash leaves the old file) and advisory file locks."""

from __future__ import annotations

import contextlib
import glob
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

_TEMP_SUFFIX = ".lalm-tmp"


@contextlib.contextmanager
def atomic_write(path: str | os.PathLike, mode: str = "wb", encoding: str | None = None, durable: bool = True):
    """Write ``path`` all at once: yield a file object on a temporary file in the same folder, then flush,
    ``fsync``, ``os.replace`` it onto ``path`` and ``fsync`` the folder.

    ``durable=False`` is for cache entries that can be measured again: the rename is still atomic (a reader
    sees the old entry or the whole new one), but nothing is ``fsync``-ed and the folder is not swept for
    temporaries of killed writers (a sweep lists the folder, which costs O(entries) per write in a store).

    A process killed at any point (``kill -9``) leaves either the previous file or the complete new one, never
    a partial file under ``path``. The temporary file is ``.<name>.<pid>.<random>.lalm-tmp``; when the block
    raises it is removed and ``path`` is untouched; one left by a killed process is removed by the next
    successful write of the same ``path`` (its pid is no longer running). ``mode`` is ``"wb"`` or ``"w"``
    (text, ``encoding`` default UTF-8).
    """
    if mode not in ("wb", "w"):
        raise ValueError(f"atomic_write: mode must be 'wb' or 'w', got {mode!r}")
    target = Path(path)
    temp = temporary_path(target)
    try:
        with open(temp, mode, encoding=(encoding or "utf-8") if mode == "w" else None) as handle:
            yield handle
    except BaseException:
        with contextlib.suppress(OSError):
            temp.unlink()
        raise
    commit_temporary(temp, target, durable=durable)


def temporary_path(target: str | os.PathLike) -> Path:
    """A new empty temporary file beside ``target`` (``.<name>.<pid>.<random>.lalm-tmp``), for
    :func:`commit_temporary` (writers that insist on a path of their own, e.g. pytest's junit XML)."""
    target = Path(target)
    fd, name = tempfile.mkstemp(prefix=f".{target.name}.{os.getpid()}.", suffix=_TEMP_SUFFIX, dir=target.parent)
    os.close(fd)
    return Path(name)


def commit_temporary(temp: str | os.PathLike, target: str | os.PathLike, durable: bool = True) -> None:
    """``fsync`` the finished ``temp``, rename it onto ``target`` (keeping ``target``'s permissions, else the
    umask's), ``fsync`` the folder and remove temporaries that killed writers of ``target`` left behind. On
    failure ``temp`` is removed and the error raised; ``target`` is then untouched. ``durable=False`` skips
    the ``fsync``-s and the sweep (see :func:`atomic_write`)."""
    temp, target = Path(temp), Path(target)
    try:
        if durable:
            with open(temp, "rb+") as handle:
                os.fsync(handle.fileno())
        mode = target.stat().st_mode & 0o7777 if target.exists() else 0o666 & ~_umask()
        os.chmod(temp, mode)
        os.replace(temp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            temp.unlink()
        raise
    if durable:
        _fsync_folder(target.parent)
        _remove_stale_temporaries(target)


def atomic_write_bytes(path: str | os.PathLike, data: bytes, durable: bool = True) -> Path:
    """Replace ``path`` by ``data`` atomically (:func:`atomic_write`); returns the path."""
    with atomic_write(path, "wb", durable=durable) as handle:
        handle.write(data)
    return Path(path)


def atomic_write_text(path: str | os.PathLike, text: str, encoding: str = "utf-8", durable: bool = True) -> Path:
    """Replace ``path`` by ``text`` atomically (:func:`atomic_write`); returns the path."""
    return atomic_write_bytes(path, text.encode(encoding), durable=durable)


def ensure_writable(path: str | os.PathLike) -> Path:
    """Make ``path``'s folder (and its parents) when missing and check that a file can be written there, so
    that an output path is refused before any work rather than after it; raises :class:`OSError` (naming
    the path) where it cannot."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.is_dir():
        raise IsADirectoryError(f"{target} is a folder")
    probe = target.parent / f".{target.name}.{os.getpid()}.probe.lalm-tmp"
    try:
        probe.write_bytes(b"")
    finally:
        probe.unlink(missing_ok=True)
    return target


class LockHeld(OSError):
    """:func:`file_lock` without waiting found the lock held; ``holder`` is what its holder wrote in it (its pid)."""

    def __init__(self, path: Path, holder: str):
        super().__init__(f"{path} is held by {holder or 'another process'}")
        self.path, self.holder = path, holder


@contextlib.contextmanager
def file_lock(path: str | os.PathLike, *, wait: bool = True) -> Iterator[None]:
    """An exclusive inter-process lock on ``path`` (``flock``), removed when released, so that no lock file stays
    behind. The holder writes its pid in it. A waiter that wakes on a file already removed (or replaced) by the
    holder retries on the current one. ``wait=False`` raises :class:`LockHeld` instead of waiting."""
    import fcntl

    path = Path(path)
    while True:
        handle = open(path, "a+")
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip()
            handle.close()
            raise LockHeld(path, holder) from None
        try:
            current = os.stat(path).st_ino
        except FileNotFoundError:
            current = None
        if current == os.fstat(handle.fileno()).st_ino:
            break
        handle.close()
    try:
        handle.truncate(0)
        handle.write(f"pid {os.getpid()}")
        handle.flush()
        yield
    finally:
        path.unlink(missing_ok=True)
        fcntl.flock(handle, fcntl.LOCK_UN)
        handle.close()


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _fsync_folder(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:  # not every platform opens folders
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _remove_stale_temporaries(target: Path) -> None:
    """Remove ``.<name>.<pid>.*.lalm-tmp`` beside ``target`` whose writing process is gone."""
    for temp in target.parent.glob(f".{glob.escape(target.name)}.*{_TEMP_SUFFIX}"):
        pid_text = temp.name[len(target.name) + 2 :].split(".", 1)[0]
        if not pid_text.isdigit() or _process_alive(int(pid_text)):
            continue
        with contextlib.suppress(OSError):
            temp.unlink()


def _process_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # exists, owned by someone else
        return True
    return True


def portable_path(path: str | Path, root: Path | None = None) -> str:
    """A path as results.json records it, naming no build machine's folders (issue 38): relative to ``root`` (the
    working folder pytest runs in, by default) when inside it, else relative to the installed package
    (``<harness>/...``), else with the home folder as ``~`` or the temporary folder as ``<tmp>``, else as given."""
    resolved = Path(path).resolve()
    places = [
        (Path.cwd() if root is None else root, None),
        (Path(__file__).resolve().parents[1], "<harness>"),
        (Path(tempfile.gettempdir()), "<tmp>"),
        (Path.home(), "~"),
    ]
    for place, label in places:
        try:
            relative = resolved.relative_to(place.resolve())
        except ValueError:
            continue
        return relative.as_posix() if label is None else f"{label}/{relative.as_posix()}"
    return str(resolved)


def portable_source(source: str) -> str:
    """A file's name as results.json records it (:func:`portable_path`); a description in angle brackets (such as
    ``<built-in defaults: ...>``) is kept as it is."""
    return source if source.startswith("<") else portable_path(source)
