"""The run's VIBE protocol and extractor: the paper's by default, a model's declared variant reported as a
deviation, a thresholds file or --extractor above both, conflicts refused, and a baseline of another extractor
refused by name."""

import pytest

from harness.extraction.vibe_protocol import (
    PAPER_EXTRACTOR,
    VibeProtocolError,
    resolve_vibe_protocol,
)
from harness.gate.baseline import refuse_other_extraction
from harness.models import build_backend
from harness.models.cascade import DEMO_MODEL

SELF_REPORT = {"protocol": "self-report", "extractor": "rules", "why": "a simulator"}


def resolve(cli=None, explicit=None, **declared):
    return resolve_vibe_protocol(
        cli_extractor=cli, explicit=explicit or {}, explicit_source="t.yaml", declared=declared or {"hf:x": None}
    )


def test_a_real_model_gets_the_papers_protocol_and_extractor_with_no_deviation():
    protocol = resolve(**{"hf:/ckpt": None})
    assert (protocol.protocol, protocol.extractor) == ("paper", PAPER_EXTRACTOR)
    assert protocol.deviations() == []


def test_a_declared_variant_is_used_and_named_as_a_deviation():
    protocol = resolve(**{"sim:fair": SELF_REPORT, "sim:biased": SELF_REPORT})
    assert (protocol.protocol, protocol.extractor) == ("self-report", "rules")
    deviations = protocol.deviations()
    assert len(deviations) == 2 and "self-report" in deviations[0] and "sim:fair, sim:biased" in deviations[0]
    assert "a simulator" in deviations[0] and "field reader" in deviations[1]


def test_the_thresholds_file_and_the_command_line_outrank_a_declaration():
    protocol = resolve(explicit={"protocol": "self-report"}, cli="smollm2:135m-instruct", **{"sim:fair": SELF_REPORT})
    assert protocol.extractor == "smollm2:135m-instruct" and protocol.sources["extractor"] == "--extractor"
    assert protocol.sources["protocol"] == "t.yaml (vibe.defaults.protocol)"
    assert any("smollm2:135m-instruct instead of the paper's Qwen3-8B" in line for line in protocol.deviations())


def test_models_that_need_different_settings_need_an_explicit_one():
    with pytest.raises(VibeProtocolError, match=r"different VIBE protocols .*sim:fair: self-report.*hf:/c: the paper"):
        resolve(**{"sim:fair": SELF_REPORT, "hf:/c": None})
    settled = resolve(
        explicit={"protocol": "paper"}, cli="vllm:Qwen/Qwen3-8B", **{"sim:fair": SELF_REPORT, "hf:/c": None}
    )
    assert settled.protocol == "paper"


def test_the_field_reader_cannot_read_free_prose_and_asking_for_it_implies_the_form():
    with pytest.raises(VibeProtocolError, match="free prose needs an LLM extractor"):
        resolve(cli="rules", explicit={"protocol": "paper"}, **{"hf:/c": None})
    mixed = resolve(cli="rules", **{"sim:fair": SELF_REPORT, "hf:/c": None})
    assert (mixed.protocol, mixed.sources["protocol"]) == ("self-report", "extractor rules (--extractor)")


def test_the_simulators_and_the_demo_declare_the_self_report_variant_and_a_real_backend_does_not():
    assert build_backend("sim:fair").vibe_variant()["protocol"] == "self-report"
    assert build_backend(DEMO_MODEL).vibe_variant()["extractor"] == "rules"
    assert build_backend("hf:/no/such/checkpoint").vibe_variant() is None


def test_a_baseline_of_another_extractor_or_protocol_is_refused_by_name():
    run = resolve(**{"hf:/c": None})
    refuse_other_extraction("b.json", {"protocol": "paper", "extractor": PAPER_EXTRACTOR}, run)
    with pytest.raises(
        ValueError, match=r"b.json: .*extractor 'smollm2:135m-instruct' \(this run: 'vllm:Qwen/Qwen3-8B'"
    ):
        refuse_other_extraction("b.json", {"protocol": "paper", "extractor": "smollm2:135m-instruct"}, run)
    with pytest.raises(ValueError, match=r"protocol 'self-report'"):
        refuse_other_extraction("b.json", {"protocol": "self-report", "extractor": "rules"}, run)
