"""results.json: one typed :class:`RunResults`, read, validated and written here and nowhere else.

A results.json (schema :data:`harness.records.SCHEMA_VERSION`) holds the run's ``verdict``, its ``decision``
(:class:`harness.run_decision.RunDecision`: that verdict and each model's, made once by the gate), its ``summary``
(:class:`Summary`), its ``scope`` (:class:`harness.records.Scope`), its ``metadata`` (:class:`RunMetadata`),
its ``cases`` and, for a run stopped early, ``incomplete`` (:class:`Incomplete`). A case is the record class its
check's folder declares (its ``record.py``, :func:`harness.checks.check_part`), or an
:class:`~harness.records.UnmeasuredRecord`; both keep the case's check and identity
(:func:`harness.records.case_key`).

Files of schema 1 and 2 are read as schema 3 by :func:`parse_results`: their unmeasured cases (``check: error``)
get their check back from the pytest node id (:func:`check_of_nodeid`, the one node-id parser), and metadata keys
this version no longer writes are dropped. A file without a ``decision`` (written before it existed) gets one
derived once, at load, by the gate's own :func:`harness.run_decision.decide_run` (:func:`derived_decision`); a
file with one is read as it is, never re-derived. Every error is one ``ValueError`` naming the file, the case (its index
and id) and the key of whatever does not fit.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from harness.checks import CHECKS, check_part
from harness.core.files import atomic_write_text
from harness.core.json_records import JsonRecord, field_types, from_json_value
from harness.records import (
    RULE_JUDGES,
    RULE_JUDGES_DEVIATION,
    SCHEMA_VERSION,
    SPOT_CHECK,
    UNMEASURED,
    CaseRecord,
    Cause,
    Omitted,
    Record,
    Scope,
    UnmeasuredRecord,
    schema_version,
)
from harness.results.metadata import RunMetadata
from harness.run_decision import INCOMPLETE, VERDICTS, RunDecision, case_outcome, decide_run

NOT_RESULTS = "not a lalm-fairness results.json"
LEGACY_UNMEASURED = "error"
"""The ``check`` of an unmeasured case in files of schema 1 and 2."""


@dataclasses.dataclass(frozen=True)
class Summary(JsonRecord):
    """The run's counts: ``cases`` recorded, of which ``passed``, ``failed`` and ``unmeasured``; ``not_run``: the
    selected tests that never finished (a stopped run)."""

    cases: int
    passed: int
    failed: int
    unmeasured: int
    not_run: int = 0

    @classmethod
    def of(cls, cases: Iterable[Record], not_run: int = 0) -> Summary:
        outcomes = [case_outcome(case) for case in cases]
        failed, unmeasured = outcomes.count("failed"), outcomes.count("unmeasured")
        return cls(len(outcomes), len(outcomes) - failed - unmeasured, failed, unmeasured, not_run)

    def to_json(self) -> dict[str, Any]:
        """The counts, ``not_run`` only where a test did not finish."""
        counts = super().to_json()
        return counts if self.not_run else {key: value for key, value in counts.items() if key != "not_run"}


@dataclasses.dataclass(frozen=True)
class Incomplete(JsonRecord):
    """Why a run is incomplete: what stopped it, the tests ``selected`` and ``finished``, and those ``not_run``."""

    stopped_by: str
    selected: int | None
    finished: int
    not_run: list[str]


@dataclasses.dataclass(frozen=True)
class RunResults:
    """One run's results.json (module docstring): its :class:`~harness.run_decision.RunDecision` (:attr:`verdict`
    is the run's verdict in it), counts, metadata, cases, scope and what stopped it."""

    decision: RunDecision
    summary: Summary
    metadata: RunMetadata
    cases: tuple[Record, ...]
    scope: Scope | None = None
    incomplete: Incomplete | None = None

    @property
    def verdict(self) -> str:
        """The run's verdict, as the gate decided it (:attr:`decision`)."""
        return self.decision.verdict

    @property
    def measured(self) -> list[CaseRecord]:
        return [case for case in self.cases if isinstance(case, CaseRecord)]

    @property
    def decided(self) -> list[CaseRecord]:
        """Every record a decision was made on: the measured cases and what the cases unmeasured by design measured
        (issue 57: their design could not have failed them, but what they found is kept)."""
        return [case if isinstance(case, CaseRecord) else case.measured for case in self.cases
                if isinstance(case, CaseRecord) or case.measured is not None]  # fmt: skip

    @property
    def unmeasured(self) -> list[UnmeasuredRecord]:
        return [case for case in self.cases if isinstance(case, UnmeasuredRecord)]

    @property
    def models(self) -> list[str]:
        """The models under test (those of the cases), in order of appearance."""
        return [model for model in dict.fromkeys(case.model for case in self.cases) if model]

    def deviations(self) -> list[str]:
        """How the run departs from the papers' protocols, in words, when it has measured cases of the check
        concerned: VIBE's (``metadata.vibe.deviations``), each ratio case's semantic covariates not taken from the
        model under test (``semantics.deviation``) and BASIS open answers read by the rule judges; and each audio
        floor probe measured under a deviation (``metadata.audio_dependence``, e.g. a greedy replicate assumed for
        shipped outputs made before the replicate arm, issue 58), one line per model and deviation."""
        measured = self.decided
        deviations = []
        if any(case.check == "ntvd" for case in measured) and self.metadata.vibe is not None:
            deviations += self.metadata.vibe.deviations
        deviations += [(getattr(case, "semantics", None) or {}).get("deviation") for case in measured]
        deviations += counterfactual_sham_deviations(measured)
        if any(getattr(case, "judge", None) == RULE_JUDGES for case in measured):
            deviations.append(RULE_JUDGES_DEVIATION)
        for model, probes in sorted(self.metadata.audio_dependence.items()):
            by_deviation: dict[str, list[str]] = {}
            for probe, entry in sorted(probes.items()):
                if entry.deviation:
                    by_deviation.setdefault(entry.deviation, []).append(probe)
            deviations += [
                f"audio floor ({' and '.join(names)} probe{'s' if len(names) > 1 else ''} of {model}): {deviation}"
                for deviation, names in by_deviation.items()
            ]
        deviations += self.engine_confounds()
        return list(dict.fromkeys(filter(None, deviations)))

    def engine_confounds(self) -> list[str]:
        """A line per corpus or BASIS suite built with ``--allow-engine-confound`` and dimension it confounds
        (:mod:`harness.suite.spread`): its group differences may be its voice banks'."""
        sources = [(f"corpus {name}", entry.provenance) for name, entry in self.metadata.corpora.items()]
        if self.metadata.basis_suite is not None:
            sources.append((f"BASIS suite {self.metadata.basis_suite.path}", self.metadata.basis_suite.provenance))
        return [
            f"{source} was built with --allow-engine-confound: {line}; a group difference on it may be its voice banks'"
            for source, provenance in sources
            if provenance is not None
            for line in provenance.engine_confound or []
        ]

    def to_json(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "verdict": self.verdict,
            "decision": self.decision.to_json(),
            "summary": self.summary.to_json(),
            **({"scope": self.scope.to_json()} if self.scope is not None else {}),
            "metadata": self.metadata.to_json(),
            "cases": [case.to_json() for case in self.cases],
            **({"incomplete": self.incomplete.to_json()} if self.incomplete is not None else {}),
        }


def counterfactual_sham_deviations(records: list[CaseRecord]) -> list[str]:
    """One line per model and sham deviation of its counterfactual cases (``sham.deviation``, issue 58: the sham
    arm's answers not in the cached outputs, so the identity arm alone judged them; or a sham arm that could not be
    compared, ``decides`` True, so the case is undefined)."""
    by_model: dict[tuple[str, str, bool], int] = {}
    for case in records:
        sham = getattr(case, "sham", None) if case.check == "counterfactual" else None
        if sham is not None and sham.deviation:
            key = (case.model, sham.deviation, bool(sham.decides))
            by_model[key] = by_model.get(key, 0) + 1
    return [
        f"counterfactual ({count} case{'s' if count > 1 else ''} of {model}): {deviation}; "
        + ("the case is undefined (unmeasured), not judged against identity alone" if decides
           else "judged against the identity arm alone")
        for (model, deviation, decides), count in sorted(by_model.items())
    ]  # fmt: skip


def read_results(path: str | Path) -> RunResults:
    """The :class:`RunResults` of the file at ``path`` (:func:`read_results_bytes`)."""
    return read_results_bytes(path)[0]


def read_results_bytes(path: str | Path) -> tuple[RunResults, bytes]:
    """The :class:`RunResults` at ``path`` and the file's bytes; a file that cannot be read, is not JSON or does
    not fit the schema is one ``ValueError`` naming it."""
    path = Path(path)
    try:
        data = path.read_bytes()
        results = json.loads(data.decode("utf-8"))
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path}: {NOT_RESULTS} ({exc})") from exc
    return parse_results(results, str(path)), data


def write_results(path: str | Path, results: RunResults) -> Path:
    """Write ``results`` atomically (a reader never sees half a file)."""
    atomic_write_text(path, json.dumps(results.to_json(), indent=2, sort_keys=False))
    return Path(path)


def parse_results(data: Any, source: str = "results.json") -> RunResults:
    """The :class:`RunResults` of a parsed results.json of any schema this version reads (``source`` names it in
    errors)."""
    if not isinstance(data, Mapping) or not isinstance(data.get("cases"), list):
        raise ValueError(f"{source}: {NOT_RESULTS} (it has no list of 'cases')")
    version = schema_version(data, source)
    strict = version == SCHEMA_VERSION
    known = {"schema_version", "verdict", "decision", "summary", "scope", "metadata", "cases", "incomplete"}
    unknown = sorted(set(data) - known)
    if unknown and strict:
        raise ValueError(f"{source}: unknown key(s) {unknown}")
    cases = tuple(
        record_from_json(case, case_where(source, index, case), version) for index, case in enumerate(data["cases"])
    )
    summary = _summary(data.get("summary"), cases, source, strict)
    verdict = data.get("verdict")
    if verdict is None and not strict:
        verdict = "fail" if summary.failed else "unmeasured" if summary.unmeasured else "pass"
    if verdict not in VERDICTS:
        raise ValueError(f"{source}: key 'verdict' must be one of {list(VERDICTS)}, got {verdict!r}")
    metadata = data.get("metadata")
    scope = None if data.get("scope") is None else scope_from_json(data["scope"], source)
    incomplete = (
        None
        if data.get("incomplete") is None
        else Incomplete.from_json(data["incomplete"], f"{source}, incomplete", strict=True)
    )
    if data.get("decision") is None:
        decision = derived_decision(verdict, cases, scope, incomplete)
    else:
        decision = RunDecision.from_json(data["decision"], f"{source}, decision", strict=True)
        if decision.verdict != verdict:
            raise ValueError(
                f"{source}: key 'verdict' is {verdict!r} but its decision's verdict is {decision.verdict!r}"
            )
    return RunResults(
        decision=decision,
        summary=summary,
        metadata=RunMetadata() if metadata is None and not strict else RunMetadata.from_json(metadata, source, strict),
        cases=cases,
        scope=scope,
        incomplete=incomplete,
    )


def derived_decision(
    verdict: str, cases: Sequence[Record], scope: Scope | None, incomplete: Incomplete | None
) -> RunDecision:
    """The decision of a results.json written before the gate stored one, derived once, here at load: the run's
    ``verdict`` as the file states it (the gate that wrote it decided it, by that version's rules), and each
    model's by the gate's own :func:`~harness.run_decision.decide_run` from the file's cases, its scope and its
    ``incomplete`` block. Such a file does not say which model the cases that did not run were of, so in a stopped
    run every model reads ``incomplete`` (in a spot check, ``spot-check``)."""
    models = decide_run(
        cases,
        stopped=verdict == INCOMPLETE or incomplete is not None,
        spot_check=verdict == SPOT_CHECK or bool(scope and scope.spot_check),
        not_run={None: len(incomplete.not_run) if incomplete is not None else 0},
        left_out={None: len(scope.omitted) if scope is not None else 0},
    ).models
    return RunDecision(verdict, models)


def _mapping(value: Any, source: str, key: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ValueError(f"{source}: {key!r} is a JSON object, got {type(value).__name__}")
    return value


def _summary(data: Any, cases: Sequence[Record], source: str, strict: bool) -> Summary:
    if data is None and not strict:
        return Summary.of(cases)
    data = _mapping(data, source, "summary")
    if "unmeasured" not in data:  # a file written before unmeasured cases were counted
        data = {**data, "unmeasured": Summary.of(cases).unmeasured}
    return Summary.from_json(data, f"{source}, summary", strict)


def scope_from_json(data: Any, source: str) -> Scope:
    """The scope block of a results.json."""
    where = f"{source}, scope"
    data = _mapping(data, source, "scope")
    for key in ("gate_cases", "ran"):
        if not isinstance(data.get(key), int):
            raise ValueError(f"{where}: key {key!r} must be a whole number, got {data.get(key)!r}")

    def entries(key: str) -> tuple[Omitted, ...]:
        values = data.get(key) or []
        if not isinstance(values, list):
            raise ValueError(f"{where}: key {key!r} must be a list of {{check, id, reason}} objects")
        return tuple(Omitted.from_json(value, f"{where}, {key}[{index}]", True) for index, value in enumerate(values))

    off = data.get("off") or []
    if not isinstance(off, list) or not all(isinstance(name, str) for name in off):
        raise ValueError(f"{where}: key 'off' must be a list of check names")
    return Scope(
        data["gate_cases"], data["ran"], entries("deselected"), entries("skipped"), entries("not_collected"), tuple(off)
    )


NODE_CHECK = re.compile(r"::test_(\w+)\[(.*)\]$")


def check_of_nodeid(nodeid: Any, where: str) -> str:
    """The check of a gate test's pytest node id (``<module>::test_<check>[<case id>]``): how a results.json of
    schema 1 or 2 names an unmeasured case's check."""
    found = NODE_CHECK.search(str(nodeid or ""))
    if found is None or found.group(1) not in CHECKS:
        raise ValueError(
            f"{where}: an unmeasured case whose key 'nodeid' ({nodeid!r}) names no check of {sorted(CHECKS)}"
        )
    return found.group(1)


def case_of_nodeid(nodeid: str) -> tuple[str, str]:
    """The check and case id of a gate test's node id (``<module>::test_<check>[<case id>]``)."""
    found = NODE_CHECK.search(nodeid)
    return check_of_nodeid(nodeid, nodeid), found.group(2)


def is_gate_nodeid(nodeid: str) -> bool:
    """Whether a pytest node id is a gate test's (``test_<check>[...]`` of a registered check)."""
    found = NODE_CHECK.search(nodeid)
    return found is not None and found.group(1) in CHECKS


def record_from_json(data: Any, where: str, version: int = SCHEMA_VERSION) -> Record:
    """The typed record of a results.json case of schema ``version``; ``where`` (file and case) prefixes every
    error."""
    if not isinstance(data, Mapping):
        raise ValueError(f"{where}: a case is a JSON object, got {type(data).__name__}")
    if version < SCHEMA_VERSION and data.get("check") == LEGACY_UNMEASURED:
        data = {**data, "check": check_of_nodeid(data.get("nodeid"), where), "status": UNMEASURED}
    check = data.get("check")
    if check not in CHECKS:
        raise ValueError(f"{where}: unknown check {check!r}; records are of {sorted(CHECKS)}")
    unmeasured = data.get("status") == UNMEASURED
    if "status" in data and not unmeasured:
        raise ValueError(
            f"{where}: key 'status' is {data['status']!r}; only an unmeasured case has one ({UNMEASURED!r})"
        )
    kind = UnmeasuredRecord if unmeasured else check_part(check, "record")
    fields = {field.name: field for field in dataclasses.fields(kind)}
    missing = [
        name
        for name, field in fields.items()
        if field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING and name not in data
    ]
    if missing:
        raise ValueError(f"{where}: {check} record lacks key(s) {missing}")
    unknown = sorted(set(data) - set(fields))
    if unknown:
        raise ValueError(f"{where}: {check} record has unknown key(s) {unknown}")
    if not isinstance(data["passed"], bool) or (unmeasured and data["passed"]):
        raise ValueError(
            f"{where}: key 'passed' must be {'false' if unmeasured else 'true or false'}, got {data['passed']!r}"
        )
    if unmeasured:
        cause = data.get("cause")
        if cause is not None and not isinstance(cause, Mapping):
            raise ValueError(f"{where}, cause: expected a JSON object, got {type(cause).__name__}")
        typed = {} if cause is None else {"cause": Cause.from_json({"source": None, **cause}, f"{where}, cause", True)}
        if data.get("measured") is not None:
            typed["measured"] = record_from_json(data["measured"], f"{where}, measured", version)
    else:
        typed = kind.typed_fields_from_json(data, where)
    hints = field_types(kind)
    read = {name: from_json_value(hints[name], value, where, name) for name, value in data.items() if name not in typed}
    return kind(**read | typed)


def case_where(source: str, index: int, case: Any) -> str:
    """``<file>, case <index> (<id>)``: where a case lies, for errors."""
    return f"{source}, case {index}" + (f" ({case['id']})" if isinstance(case, Mapping) and "id" in case else "")


__all__ = [
    "NOT_RESULTS",
    "VERDICTS",
    "Incomplete",
    "RunMetadata",
    "RunResults",
    "Summary",
    "case_where",
    "derived_decision",
    "case_of_nodeid",
    "check_of_nodeid",
    "is_gate_nodeid",
    "parse_results",
    "read_results",
    "read_results_bytes",
    "record_from_json",
    "scope_from_json",
    "write_results",
]
