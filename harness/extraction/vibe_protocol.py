"""Which VIBE protocol a run follows, and with which attribute extractor: the paper's by default, a declared variant
otherwise, reported as a deviation (the report's first screen and results.json ``metadata.vibe``).

The paper (VIBE §II-A/B) asks each task in free prose and maps the prose onto the task's attributes with an LLM
extractor (Qwen3-8B at temperature 0). The extractor belongs to the gate, not to the model under test: one setting,
fixed across checkpoints, recorded in results.json and in every nTVD record, and a ``--baseline`` extracted by
another is refused by name.

Each setting is taken from the first of: ``--extractor`` (extractor only; ``rules``, the field reader, implies the
self-report form unless a protocol is set); the thresholds file of the run (its ``vibe.defaults``, or its
``preset``); what every model of the run declares (:meth:`Backend.vibe_variant
<harness.models.base.Backend.vibe_variant>`: the simulators and the embedded demo name the variant they need);
the paper's defaults. Models that declare different settings need an explicit one.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from harness.tasks.base import PAPER, PROTOCOLS, SELF_REPORT
from harness.thresholds import ThresholdKey, ThresholdSchema, one_of

VIBE_SECTION = "vibe"
PAPER_EXTRACTOR = "vllm:Qwen/Qwen3-8B"
RULES = "rules"
"""The field reader (:mod:`harness.extraction.fields`): reads the self-report form, no model."""


def _spec_or_rules(value: Any) -> str | None:
    if value == RULES or (isinstance(value, str) and ":" in value.strip(": ")):
        return None
    return f"is neither {RULES!r} nor a model spec <backend>:<target>"


VIBE_SCHEMA = ThresholdSchema(
    keys={
        "protocol": ThresholdKey((str,), PAPER, one_of(*PROTOCOLS)),
        "extractor": ThresholdKey((str,), PAPER_EXTRACTOR, _spec_or_rules),
    }
)
"""The ``vibe`` section (only ``defaults`` apply): ``protocol`` (``paper`` or ``self-report``) and ``extractor`` (a
model spec, or ``rules`` for the field reader, which only the self-report form can be read by)."""


class VibeProtocolError(ValueError):
    """The run's VIBE settings conflict; the message says which and how to set them."""


@dataclasses.dataclass(frozen=True)
class VibeProtocol:
    """The run's VIBE protocol and extractor, where each came from, and why a variant was declared."""

    protocol: str = PAPER
    extractor: str = PAPER_EXTRACTOR
    sources: Mapping[str, str] = dataclasses.field(default_factory=dict)
    why: str | None = None

    @property
    def uses_rules(self) -> bool:
        return self.extractor == RULES

    def deviations(self) -> list[str]:
        """Each way this run departs from the paper's protocol, in words (empty when it follows it)."""
        found = []
        declared = {key for key, source in self.sources.items() if source.startswith("the model")}
        if self.protocol == SELF_REPORT:
            found.append(
                "VIBE protocol self-report: each prompt ends with a Label: form the model fills in itself, instead of "
                "the paper's free prose read by an LLM extractor (VIBE §II-A); set by "
                f"{self.sources.get('protocol', 'default')}"
                + (f" ({self.why})" if self.why and "protocol" in declared else "")
            )
        if self.extractor != PAPER_EXTRACTOR:
            what = "the field reader (no model)" if self.uses_rules else f"{self.extractor}"
            found.append(
                f"VIBE extractor {what} instead of the paper's Qwen3-8B ({PAPER_EXTRACTOR}); set by "
                f"{self.sources.get('extractor', 'default')}"
                + (f" ({self.why})" if self.why and declared == {"extractor"} else "")
            )
        return found

    def as_dict(self, extractor_fingerprint: str | None = None) -> dict[str, Any]:
        return {
            "protocol": self.protocol,
            "extractor": self.extractor,
            "extractor_fingerprint": extractor_fingerprint,
            "sources": dict(self.sources),
            "deviations": self.deviations(),
        }


def resolve_vibe_protocol(
    *,
    cli_extractor: str | None,
    explicit: Mapping[str, Any],
    explicit_source: str,
    declared: Mapping[str, Mapping[str, str] | None],
) -> VibeProtocol:
    """The run's settings from ``--extractor``, the thresholds file's explicit ``vibe.defaults`` (``explicit``, from
    ``explicit_source``), and each model's declared variant (``declared``: spec -> its declaration or None)."""
    values: dict[str, str] = {}
    sources: dict[str, str] = {}
    if cli_extractor is not None:
        values["extractor"], sources["extractor"] = cli_extractor, "--extractor"
    for key in ("protocol", "extractor"):
        if key not in values and key in explicit:
            values[key], sources[key] = str(explicit[key]), f"{explicit_source} (vibe.defaults.{key})"
    if values.get("extractor") == RULES and "protocol" not in values:
        values["protocol"], sources["protocol"] = SELF_REPORT, f"extractor {RULES} ({sources['extractor']})"
    why = None
    for key, default in (("protocol", PAPER), ("extractor", PAPER_EXTRACTOR)):
        if key in values:
            continue
        stated = {spec: (declaration or {}).get(key) for spec, declaration in declared.items()}
        distinct = set(stated.values())
        if len(distinct) > 1:
            listed = ", ".join(f"{spec}: {value or f'the paper ({default})'}" for spec, value in stated.items())
            raise VibeProtocolError(
                f"the models of this run need different VIBE {key}s ({listed}); the extractor and protocol are fixed "
                f"across the models of a run: set vibe.defaults.{key} in a thresholds file"
                + (" or pass --extractor SPEC" if key == "extractor" else "")
            )
        value = distinct.pop() if distinct else None
        if value is None:
            values[key], sources[key] = default, "default (the paper)"
        else:
            values[key], sources[key] = value, f"the model ({', '.join(stated)})"
            why = why or next(
                ((declaration or {}).get("why") for declaration in declared.values() if declaration), None
            )
    if values["protocol"] == PAPER and values["extractor"] == RULES:
        raise VibeProtocolError(
            f"VIBE extractor {RULES!r} (from {sources['extractor']}) reads the self-report form, but the protocol is "
            f"{PAPER!r} (from {sources['protocol']}): free prose needs an LLM extractor (the paper: {PAPER_EXTRACTOR}); "
            f"set vibe.defaults.protocol: {SELF_REPORT}, or name an extractor"
        )
    return VibeProtocol(values["protocol"], values["extractor"], sources, why)
