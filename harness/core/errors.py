"""The errors every layer raises: a model that cannot answer, a server's failure, a case that cannot be measured."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from types import ModuleType


class ModelError(RuntimeError):
    """A model could not be built, loaded or asked; the message says which and why, ``source`` (when known)
    names what failed: a server URL, a file, an option key."""

    def __init__(self, message: str = "", *, source: str | None = None):
        super().__init__(message)
        self.source = source


class ServerError(ModelError):
    """A model server could not be reached or answered with an error; ``source`` is its URL."""


class PartialGenerationError(ServerError):
    """Some requests of a batch failed; ``answers`` maps the position of each request that succeeded to its answer."""

    def __init__(self, message: str, answers: Mapping[int, str], *, source: str | None = None):
        super().__init__(message, source=source)
        self.answers = dict(answers)


class RequestsPlanned(ModelError):
    """A stage's requests that the cache does not hold were planned (``--plan``,
    :mod:`harness.generation.request_plan`): the case stops here until they are answered."""


class CaseNotMeasured(RuntimeError):
    """A case's data cannot support a bias verdict (e.g. nTVD undefined, no ratio fit converged, a large gap
    the design cannot test): the case is unmeasured, never a pass and never a bias fail; the message says
    why, and ``record`` (the case's results.json entry, where one was made) keeps what was computed."""

    kind = "input"
    """The cause's kind (:data:`harness.records.CAUSE_KINDS`)."""

    def __init__(self, message: str, record: object | None = None):
        super().__init__(message)
        self.record = record


class DesignCannotFail(CaseNotMeasured):
    """A measured case that did not fail while some contrast could not have failed it (issue 57): its estimate or p
    is undefined, its design cannot reach the corrected alpha, or it cannot detect its bar with 80% power."""

    kind = "design"


def import_extra(names: tuple[str, ...], missing: Callable[[ImportError], Exception]) -> ModuleType:
    """Import an optional extra's modules ``names`` (a package, then any of its submodules it needs loaded) and return
    the first; where one cannot be imported, raise ``missing(exc)`` (an error saying how to install it) from the
    ImportError."""
    try:
        modules = [importlib.import_module(name) for name in names]
    except ImportError as exc:
        raise missing(exc) from exc
    return modules[0]
