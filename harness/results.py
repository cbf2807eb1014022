"""results.json: the one module that writes it and reads it back, for the plugin, the gate, the series and the report.

A results.json holds ``schema_version`` (:data:`harness.records.SCHEMA_VERSION`), the ``verdict``, the run's
``metadata`` and its ``cases``: one record per case, of the record class its check's folder declares
(its folder's ``record.py``, :func:`harness.checks.check_part`), or :class:`~harness.records.ErrorRecord` for an unmeasured case. Every
error names the file, the case and the key of whatever does not fit.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from harness.checks import CHECKS, check_part
from harness.core.files import atomic_write_text
from harness.records import CaseRecord, Decision, ErrorRecord, schema_version

NOT_RESULTS = "not a lalm-fairness results.json"


def read_results(path: str | Path) -> tuple[dict[str, Any], bytes]:
    """The parsed results.json at ``path`` and its bytes; a file that cannot be read, is not JSON, has no list of
    ``cases`` or a schema this version cannot read is one ``ValueError`` naming it."""
    path = Path(path)
    try:
        data = path.read_bytes()
        results = json.loads(data.decode("utf-8"))
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path}: {NOT_RESULTS} ({exc})") from exc
    if not isinstance(results, dict) or not isinstance(results.get("cases"), list):
        raise ValueError(f"{path}: {NOT_RESULTS} (it has no list of 'cases')")
    schema_version(results, str(path))
    return results, data


def write_results(path: str | Path, results: Mapping[str, Any]) -> Path:
    """Write ``results`` atomically (a reader never sees half a file)."""
    atomic_write_text(path, json.dumps(results, indent=2, sort_keys=False))
    return Path(path)


def record_from_json(data: Any, where: str) -> CaseRecord | ErrorRecord:
    """The typed record of a results.json case; ``where`` (file and case) prefixes every error."""
    if not isinstance(data, Mapping):
        raise ValueError(f"{where}: a case is a JSON object, got {type(data).__name__}")
    check = data.get("check")
    if check != "error" and check not in CHECKS:
        raise ValueError(f"{where}: unknown check {check!r}; records are of {sorted(CHECKS)}")
    kind = ErrorRecord if check == "error" else check_part(check, "record")
    fields = {field.name: field for field in dataclasses.fields(kind)}
    missing = [
        name
        for name, field in fields.items()
        if field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING and name not in data
    ]
    if missing:
        raise ValueError(f"{where}: {data['check']} record lacks key(s) {missing}")
    unknown = sorted(set(data) - set(fields))
    if unknown:
        raise ValueError(f"{where}: {data['check']} record has unknown key(s) {unknown}")
    if not isinstance(data["passed"], bool):
        raise ValueError(f"{where}: key 'passed' must be true or false, got {data['passed']!r}")
    if data.get("decision") is not None and kind is not ErrorRecord:
        data = {**data, "decision": Decision.from_json(data["decision"], where)}
    return kind(**data)


def case_where(source: str, index: int, case: Any) -> str:
    """``<file>, case <index> (<id>)``: where a case lies, for errors."""
    return f"{source}, case {index}" + (f" ({case['id']})" if isinstance(case, Mapping) and "id" in case else "")


def records(results: Mapping[str, Any], source: str = "results.json") -> list[CaseRecord | ErrorRecord]:
    """The typed records of a results.json (``source`` names it in errors)."""
    schema_version(results, source)
    return [record_from_json(case, f"{source}, case {index}") for index, case in enumerate(results["cases"])]


__all__ = ["NOT_RESULTS", "case_where", "read_results", "record_from_json", "records", "write_results"]
