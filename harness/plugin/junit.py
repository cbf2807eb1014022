"""pytest plugin part: the ``--junitxml`` file is written atomically, like results.json and report.html.

pytest's junit writer opens its path and writes in place, so a kill during that write would leave a partial
file. Around ``pytest_sessionfinish`` this wrapper points the writer at a temporary file beside the
requested path and, once pytest has written it, renames it onto that path with
:func:`harness.core.files.commit_temporary` (fsync, rename, fsync of the folder). The terminal line
``generated xml file: <path>`` still names the requested path.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.core.files import commit_temporary, temporary_path

try:  # pytest's own junit writer; a private key, so tolerate its absence (then nothing is wrapped)
    from _pytest.junitxml import xml_key
except ImportError:  # pragma: no cover - older/newer pytest without the key
    xml_key = None


class AtomicJunitXml:
    def __init__(self, config: pytest.Config):
        self.config = config

    @pytest.hookimpl(hookwrapper=True, trylast=True)  # inside the terminal reporter's wrapper, which prints the path
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int):
        xml = self.config.stash.get(xml_key, None) if xml_key is not None else None
        if xml is None or not getattr(xml, "logfile", None):
            yield
            return
        target = Path(xml.logfile)
        target.parent.mkdir(parents=True, exist_ok=True)
        temp = temporary_path(target)
        xml.logfile = str(temp)
        try:
            outcome = yield
        finally:
            xml.logfile = str(target)
        if outcome.excinfo is None and temp.exists() and temp.stat().st_size > 0:
            commit_temporary(temp, target)
        else:
            temp.unlink(missing_ok=True)
