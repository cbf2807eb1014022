"""Does this machine give the demo model's shipped answers? Regenerate a sample and measure the drift.

    python -m harness.reproducibility [--threads N] [--out drift.json]

The demo model's outputs are shipped (``harness/data/demo_outputs/``) and served on every machine, so they
must be what the model answers on every machine: :mod:`harness.models.numerics` pins the settings that make
it so on x86-64. This command regenerates a sample of shipped entries through the real models (the
``[demo]`` extra) in this process and compares, item by item:

* ``identical``: the share of outputs with exactly the shipped text;
* ``transcript_wer``: the word error rate of the regenerated transcripts against the shipped ones (0 when
  identical), over every transcript of the sample;
* ``fields_identical``: the share of extracted ``Label: value`` fields (rule reader, after normalisation)
  that are the same in both, over the VIBE answers of the sample;
* ``voices_identical``: the share of the voice stage's descriptions (``[voice] ...``, Praat's pitch put into
  words) that are the same in both, over the cascade answers of the sample that carry one.

The shipped side is read under the contract's own fingerprint (:func:`harness.models.numerics.as_shipped`),
the regenerated side under this machine's. Where both engines run *verified* under the contract the
tolerance is none: the contract fixes every kernel choice, so any difference is a defect (a changed
engine, or engines initialised before the pin), not noise. Where the contract is *unverified* here
(another architecture, an MKL that ignores the branch), the engines choose for the machine, the
regenerated outputs carry their own fingerprint, and :data:`TOLERANCE` states how far the sample may
drift; the README says why.

The sample: one recording of each of the demo corpus's sentences (voices in turn) through the ASR stage;
three of them through two VIBE tasks (the whole cascade); two spoken BASIS items.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness.core.requests import GenerationRequest
from harness.extraction.fields import extract_fields
from harness.metrics.wer import word_errors
from harness.models.cascade import DEMO_MODEL, split_voice
from harness.models.numerics import ENGINES, VERIFIED, as_shipped, compute_environment, engine_numerics
from harness.tasks import TASKS

VIBE_SAMPLE_TASKS = ("personal_shopper", "advisory")
VIBE_SAMPLE_SIZE = 3
BASIS_SAMPLE_SIZE = 2
# Where the contract is unverified, the largest drift a regeneration may show: a few words of a few
# transcripts, and through them a few fields. Measured between instruction sets on one x86-64 machine
# (unpinned), 10 of 36 transcripts differed, by a word or two each; between contract 1's Intel outputs and
# an AMD EPYC (MKL's AUTO branch), 2 of 20 sampled outputs, transcript WER 6.2%, every field the same; between
# contract 2's AMD outputs and an Intel Xeon, both verified, 3 of 20 (WER 8.7%), from Whisper's CPU-dependent
# float32 features, since computed portably (harness/models/whisper_features.py).
# The voice stage's words change only where a measure crosses a threshold; Praat computes without BLAS or threads,
# so few descriptions may differ.
TOLERANCE = {"identical": 0.6, "transcript_wer": 0.10, "fields_identical": 0.6, "voices_identical": 0.9}


@dataclasses.dataclass(frozen=True)
class Drift:
    """How far regenerated outputs are from the shipped ones (see the module docstring)."""

    items: int
    identical: float
    transcripts: int
    transcript_wer: float
    fields: int
    fields_identical: float
    voices: int
    voices_identical: float
    differing: tuple[tuple[str, str], ...]

    def within(self, tolerance: dict[str, float] | None) -> bool:
        """Identity when ``tolerance`` is ``None``; else every figure on the right side of its bound."""
        if tolerance is None:
            return self.identical == 1.0
        return (
            self.identical >= tolerance["identical"]
            and self.transcript_wer <= tolerance["transcript_wer"]
            and self.fields_identical >= tolerance["fields_identical"]
            and self.voices_identical >= tolerance["voices_identical"]
        )

    def summary(self) -> str:
        shown = "; ".join(f"{shipped!r} -> {fresh!r}" for shipped, fresh in self.differing[:3])
        return (
            f"{self.identical:.1%} of {self.items} outputs identical, transcript WER {self.transcript_wer:.2%} over "
            f"{self.transcripts} transcripts, {self.fields_identical:.1%} of {self.fields} fields identical"
            + (f", {self.voices_identical:.1%} of {self.voices} voice descriptions identical" if self.voices else "")
            + (f"; e.g. {shown}" if shown else "")
        )


def output_drift(shipped: Sequence[str], regenerated: Sequence[str], tasks: Sequence[str | None]) -> Drift:
    """Compare outputs pairwise; ``tasks[i]`` names the VIBE task whose fields output ``i`` carries (or ``None``).

    An output is a transcript, a cascade answer (``[transcript] ...`` then the answer), or any other text;
    transcripts are compared by word error rate, pooled (Whisper's normaliser, :func:`harness.metrics.wer.word_errors`).
    """
    if not (len(shipped) == len(regenerated) == len(tasks)):
        raise ValueError(
            f"output_drift: {len(shipped)} shipped, {len(regenerated)} regenerated and {len(tasks)} task entries"
        )
    if not shipped:
        raise ValueError("output_drift: no outputs to compare")
    references, hypotheses, same_fields, fields, same_voices, voices = [], [], 0, 0, 0, 0
    for old, new, task in zip(shipped, regenerated, tasks):
        old_transcript, old_voice, old_answer = split_voice(old)
        new_transcript, new_voice, new_answer = split_voice(new)
        if old_voice is not None:
            voices += 1
            same_voices += old_voice == new_voice
        if task is None and old_transcript is None:
            old_transcript, new_transcript = old, new
        if old_transcript is not None:
            references.append(old_transcript)
            hypotheses.append(new_transcript or "")
        if task is not None:
            old_values = extract_fields(old_answer, TASKS[task]).values
            new_values = extract_fields(new_answer, TASKS[task]).values
            for attribute in TASKS[task].attributes:
                fields += 1
                same_fields += old_values.get(attribute.name) == new_values.get(attribute.name)
    differing = tuple((old, new) for old, new in zip(shipped, regenerated) if old != new)
    return Drift(
        items=len(shipped),
        identical=1.0 - len(differing) / len(shipped),
        transcripts=len(references),
        transcript_wer=pooled_wer(references, hypotheses),
        fields=fields,
        fields_identical=same_fields / fields if fields else 1.0,
        voices=voices,
        voices_identical=same_voices / voices if voices else 1.0,
        differing=differing,
    )


def pooled_wer(references: Sequence[str], hypotheses: Sequence[str]) -> float:
    """Errors over reference words, all pairs pooled, as a fraction (0 for no words)."""
    counts = [word_errors(reference, hypothesis) for reference, hypothesis in zip(references, hypotheses)]
    words = sum(count.n_ref_words for count in counts)
    errors = sum(count.substitutions + count.deletions + count.insertions for count in counts)
    return errors / words if words else 0.0


def regenerate_sample(threads: int, cache_root: str | Path) -> dict[str, Any]:
    """Regenerate the sample through the real models and compare it with the shipped outputs."""
    from harness.checks.basis_common.requests import choice_requests
    from harness.checks.ntvd.tables import audio_requests as task_requests
    from harness.gate import Gate, GateConfig

    options = {DEMO_MODEL: {"asr": {"cpu_threads": threads}, "llm": {"threads": threads}}}
    root = Path(cache_root)
    with as_shipped():
        shipped = Gate(
            GateConfig(
                models=(DEMO_MODEL,),
                cache_dir=str(root / "shipped"),
                progress=False,
                offline=True,
                model_options=options,
            )
        ).context
        shipped_transcriber, _ = shipped.transcriber(DEMO_MODEL)
        shipped_model = shipped.model(DEMO_MODEL)
    fresh = Gate(
        GateConfig(
            models=(DEMO_MODEL,),
            cache_dir=str(root / "fresh"),
            bundled_exports={},
            progress=False,
            model_options=options,
        )
    ).context
    table = fresh.corpora["demo"].table.reset_index(drop=True)
    groups = table.groupby("content_id", sort=True).groups.values()
    rows = [int(group[i % len(group)]) for i, group in enumerate(groups)]
    old, new, tasks = [], [], []
    transcriber, _ = fresh.transcriber(DEMO_MODEL)
    audio_requests = task_requests(fresh, "demo", "story")
    asr_requests = [GenerationRequest(prompt="", audio=audio_requests[row].audio) for row in rows]
    old += shipped_transcriber.generate(asr_requests)
    new += transcriber.generate(asr_requests)
    tasks += [None] * len(asr_requests)
    for task in VIBE_SAMPLE_TASKS:
        requests = [task_requests(fresh, "demo", task)[row] for row in rows[:VIBE_SAMPLE_SIZE]]
        old += shipped_model.generate(requests)
        new += fresh.model(DEMO_MODEL).generate(requests, label=f"demo/{task}")
        tasks += [task] * len(requests)
    basis = list(choice_requests(fresh.basis.item_set("stereoset-gender"), "speech-implicit").requests)[
        :BASIS_SAMPLE_SIZE
    ]
    old += shipped_model.generate(basis)
    new += fresh.model(DEMO_MODEL).generate(basis)
    tasks += [None] * len(basis)
    drift = output_drift(old, new, tasks)
    numerics = {engine: engine_numerics(engine) for engine in ENGINES}
    verified = all(state["status"] == VERIFIED for state in numerics.values())
    tolerance = None if verified else TOLERANCE
    return {
        "threads": threads,
        "drift": dataclasses.asdict(drift),
        "summary": drift.summary(),
        "tolerance": tolerance if tolerance is not None else "identity",
        "within_tolerance": drift.within(tolerance),
        "model_calls": fresh.model(DEMO_MODEL).calls,
        "numerics": numerics,
        "fingerprints": {"shipped": shipped_model.fingerprint, "regenerated": fresh.model(DEMO_MODEL).fingerprint},
        "compute_environment": compute_environment(),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=2, help="CPU threads of each stage (default 2)")
    parser.add_argument("--out", default=None, help="also write the report as JSON to this file")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="lalm-regenerate-") as cache_root:
        report = regenerate_sample(args.threads, cache_root)
    text = json.dumps(report, indent=2)
    if args.out:
        Path(args.out).write_text(text + "\n")
    print(report["summary"])
    print("within tolerance" if report["within_tolerance"] else f"OUT OF TOLERANCE ({report['tolerance']})")
    return 0 if report["within_tolerance"] else 1


if __name__ == "__main__":
    sys.exit(main())
