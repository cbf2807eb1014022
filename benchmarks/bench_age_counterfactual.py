"""The age counterfactual's operating characteristic over seeds (issue 61), on a design that powers it.

Design: a synthetic age corpus built by ``lalm-fairness-suite build`` (espeak-ng; no filters): 10 ``young`` voices
(``en-us`` and ``en-gb-x-rp`` ``+f1``-``+f5`` at pitch 65, rate 175) and 10 ``elderly`` ones (the same variants at
pitch 40, rate 140), each reading 8 sentences of the demo corpus: 160 recordings, 10 speakers per swap direction
(the paired sign-flip test's floor 2^-10 lies below the corrected alpha). The simulators hear pitch only
(``harness/models/sim.py``), and the WORLD age arm moves F0 by register (down for a voice above 160 Hz, up for one
below, thresholds.yaml ``counterfactual``), so in a direction whose voices straddle the boundary a pitch-driven
effect partly cancels; the manipulation summary printed first gives each direction's median F0 move.

Arms: ``age_shift`` (young -> older arm, elderly -> younger arm), its control ``world_identity`` and its sham
``age_sham`` (the other direction's arm: young -> younger, elderly -> older), at the built-in thresholds, made once
(kept in ``--work``). Admission: the manipulation checks (F0 and F1-F3 moved as planned, the control within its
bound), as the gate applies them. **Deviation from the gate**: no perceived-group filter. No offline perceiver hears
age (``voice:praat`` names none; ``voice:formants`` labels 52% of this corpus's originals right, below chance + 20
points), so the gate leaves these cases unmeasured (docs/statistics.md, "Age counterfactual"); the bench measures
what the gate would decide given a perceiver that heard every arm as its target.

Per seed (``DecodingParams.seed``, a fresh draw of the simulator's answers) each model answers the five VIBE tasks
(self-report form, rules reader) on the three arms; each task is one case decided as the gate decides a VIBE
counterfactual case with a sham: the smaller of nTVD(identity, swap) and nTVD(sham, swap) against ``max_ntvd`` and the
larger of their paired speaker-level permutation p-values against alpha, Bonferroni over the model's five cases
(rule ``both``; ``--rule significance``: the VIBE preset's, p alone). A run fails when any case fails. Models: ``sim:fair`` (no effect), ``sim:biased`` (its preset
strengths, pitch-driven) and ``sim:age-effect``: ``sim:biased``'s VIBE strengths times ``--age-effect-scale`` (default 3: the
most detectable of x0.5, 1, 3 and 10 in a 5-seed calibration; docs/benchmarks.md), an effect the age arm carries
through F0.

Printed, per model: runs failed of seeds with the 95% Clopper-Pearson interval, per task the fail rate and the
median deciding nTVD; ``--json`` writes the same rows for ``bench_datasheet.py``.

Usage: ``python benchmarks/bench_age_counterfactual.py --seeds 100 --json /tmp/voices/age_counterfactual.json``
(the arms take minutes the first time; ``--seeds 20`` for a quick look).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.stats import beta

from harness.checks.counterfactual.arms import ask_loaded, build_arms, vibe_arm_table
from harness.checks.counterfactual.manipulation import manipulation_checks
from harness.checks.counterfactual.measure import vibe_arms
from harness.checks.counterfactual.settings import COUNTERFACTUAL_SCHEMA, IDENTITY, SECTION, SHAM, SWAP
from harness.core.requests import DecodingParams
from harness.core.values import stable_hash
from harness.data.corpus import load_corpus, read_utterance_audio
from harness.data.voice_transforms import get_transform
from harness.data.voice_transforms.arm_audio import ArmAudio, ArmStore
from harness.metrics.multitest import DecisionRule
from harness.models.sim import PRESETS, SimulatorBackend
from harness.suite.cli import main as suite_main
from harness.tasks import TASKS
from harness.thresholds import GATE_SCHEMA, GATE_SECTION, packaged_thresholds

REPO = Path(__file__).resolve().parents[1]
LANGUAGES = ("en-us", "en-gb-x-rp", "en-029", "en-us-nyc")
VARIANTS = [f"{language}+f{number}" for language in LANGUAGES for number in range(1, 6)]
"""Twenty distinct espeak-ng female voices, the first ``--per-group`` of them read in each group (``en-gb+fN`` would
not do: espeak-ng reads every ``en-gb+fN`` alike)."""
AGE_VOICES = {"young": "[pitch=65,rate=175]", "elderly": "[pitch=40,rate=140]"}
SENTENCES = 8


def build_age_corpus(folder: Path, per_group: int = 10) -> Path:
    """The design's corpus, ``per_group`` voices per age group (built once into ``folder/suite``)."""
    suite = folder / "suite"
    if (suite / "manifest.csv").is_file():
        return suite
    folder.mkdir(parents=True, exist_ok=True)
    demo = pd.read_csv(REPO / "harness" / "data" / "demo" / "manifest.csv")
    items = demo.drop_duplicates("content_id").head(SENTENCES)[["content_id", "transcript"]]
    items.rename(columns={"transcript": "text"}).to_csv(folder / "items.csv", index=False)
    voices = [f"- {{spec: 'espeak-ng:{variant}{settings}', age: {group}}}"
              for variant in VARIANTS[:per_group] for group, settings in AGE_VOICES.items()]  # fmt: skip
    (folder / "voices.yaml").write_text("\n".join(voices) + "\n")
    code = suite_main(["build", "--items", str(folder / "items.csv"), "--voices", str(folder / "voices.yaml"),
                       "--out", str(suite), "--name", "age-female", "--dimension", "age", "--no-wer-filter",
                       "--no-perceived-filter", "--no-progress"])  # fmt: skip
    if code != 0:
        raise SystemExit(f"ERROR: the age suite did not build (exit {code})")
    return suite


def refuse_duplicate_voices(corpus) -> None:
    """Two speakers whose recordings are the same audio are one voice counted twice: the paired test would treat
    them as independent and its p-values would be too small. Refuse such a design, naming the speakers."""
    hashes = {speaker: tuple(sorted(read_utterance_audio(corpus, u).content_hash for u in rows.index))
              for speaker, rows in corpus.table.groupby("speaker_id")}  # fmt: skip
    seen: dict[tuple, str] = {}
    for speaker, key in hashes.items():
        if key in seen:
            raise SystemExit(f"ERROR: speakers {seen[key]} and {speaker} read every sentence with the same audio")
        seen[key] = speaker


def kept_manipulation_checks(arms, world, settings, folder: Path) -> tuple[frozenset[str], list[dict]]:
    """The manipulation checks' admitted recordings and per-direction summary, kept in ``folder`` under a key of
    every arm's recipe and the bounds (Praat's tracks of 480 clips are most of a run's set-up)."""
    recipes = sorted(arm.content_hash for name in (IDENTITY, SWAP) for arm in arms.audio[name].values())
    key = stable_hash([recipes, settings.min_manipulation_shift, settings.max_identity_shift])[:16]
    path = folder / f"manipulation-{key}.json"
    if path.is_file():
        kept = json.loads(path.read_text())
        return frozenset(kept["admitted"]), kept["summary"]
    checks = manipulation_checks(arms.recordings, arms.audio, get_transform("age_shift"), world,
                                 min_shift=settings.min_manipulation_shift,
                                 max_identity_shift=settings.max_identity_shift)  # fmt: skip
    path.write_text(json.dumps({"admitted": sorted(checks.admitted), "summary": checks.summary()}))
    return checks.admitted, checks.summary()


def clopper_pearson(k: int, n: int) -> tuple[float, float]:
    low = beta.ppf(0.025, k, n - k + 1) if k else 0.0
    high = beta.ppf(0.975, k + 1, n - k) if k < n else 1.0
    return float(low), float(high)


def models(scale: float) -> dict[str, SimulatorBackend]:
    biased = PRESETS["biased"]["strengths"]
    age_effect = {task: scale * biased[task] for task in TASKS if task in biased}
    return {
        "sim:fair": SimulatorBackend("sim:fair", "fair", {}),
        "sim:biased": SimulatorBackend("sim:biased", "biased", {}),
        "sim:age-effect": SimulatorBackend("sim:age-effect", "fair", {"strengths": age_effect}),
    }


def case(table: pd.DataFrame, settings, rule: DecisionRule, seed: int) -> tuple[bool, float, float]:
    """One VIBE case as the gate decides it with a sham (intersection-union of the two controls), under the
    settings' ``rule`` (``both``: the bar and significance; ``significance``: the VIBE preset's, p alone)."""
    arms = vibe_arms(table, tau=settings.tau, n_permutations=settings.n_permutations, seed=seed)
    effect, sham = arms.voice_effect, arms.against_sham
    deciding, p = min(effect.score, sham.score), max(effect.test.p_value, sham.test.p_value)
    return rule.decide([p], [deciding > settings.max_ntvd], rule=settings.rule).failed, deciding, p


def operating_characteristic(
    arms, admitted, settings, gate: dict, seeds: int, scale: float, names: list[str], done=None
) -> list[dict]:
    rule = DecisionRule(alpha=gate["alpha"], family_size=len(TASKS), correction=gate["correction"])
    rows = []
    for name, backend in models(scale).items():
        if name not in names:
            continue
        model = backend.load()
        failing_runs, cases = 0, []
        for seed in range(1, seeds + 1):
            failed_any = False
            for task_name, task in TASKS.items():
                table = vibe_arm_table(ask_loaded(model, DecodingParams(seed=seed)), task, arms,
                                       arm_names=(IDENTITY, SWAP, SHAM))  # fmt: skip
                table = table[table["recording"].astype(str).isin(admitted)]
                failed, deciding, p = case(table, settings, rule, seed)
                cases.append((task_name, failed, deciding, p))
                failed_any |= failed
            failing_runs += failed_any
            if seed % 5 == 0:
                print(f"    {name}: {failing_runs}/{seed} runs failed so far", flush=True)
        frame = pd.DataFrame(cases, columns=["task", "failed", "deciding_ntvd", "p"])
        per_task = frame.groupby("task").agg(fail_rate=("failed", "mean"), median_ntvd=("deciding_ntvd", "median"))
        low, high = clopper_pearson(failing_runs, seeds)
        print(
            f"  {name}: failed {failing_runs}/{seeds} runs = {failing_runs / seeds:.0%} (95% CI {low:.0%}-{high:.0%})"
        )
        print(per_task.round(3).to_string().replace("\n", "\n    ").join(["    ", ""]))
        rows.append({"model": name, "runs": seeds, "failed": failing_runs, "ci": [low, high],
                     "per_task": {task: {"fail_rate": float(r.fail_rate), "median_deciding_ntvd": float(r.median_ntvd)}
                                  for task, r in per_task.iterrows()}})  # fmt: skip
        if done is not None:
            done(rows)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=100)
    parser.add_argument("--permutations", type=int, default=9_999)
    parser.add_argument("--age-effect-scale", type=float, default=3.0, help="sim:age-effect = sim:biased's x this")
    parser.add_argument(
        "--per-group",
        type=int,
        default=10,
        choices=range(2, len(VARIANTS) + 1),
        metavar="N",
        help=f"voices per age group, 2-{len(VARIANTS)} (default 10)",
    )
    parser.add_argument(
        "--rule",
        choices=("both", "significance"),
        default="both",
        help="the decision rule: both (the gate's default) or significance (--thresholds preset:vibe)",
    )
    parser.add_argument(
        "--models",
        nargs="+",
        default=["sim:fair", "sim:age-effect", "sim:biased"],
        choices=["sim:fair", "sim:biased", "sim:age-effect"],
        help="the models, in this order",
    )
    parser.add_argument("--work", type=Path, default=Path("/tmp/age-counterfactual"), help="suite and arms kept here")
    parser.add_argument("--json", type=Path, default=None, help="write the rows here (bench_datasheet.py)")
    arguments = parser.parse_args()
    thresholds = packaged_thresholds()
    settings = dataclasses.replace(
        thresholds.settings(SECTION, COUNTERFACTUAL_SCHEMA, None, "age"),
        transform="age_shift",
        n_permutations=arguments.permutations,
        rule=arguments.rule,
    )
    gate = thresholds.values(GATE_SECTION, GATE_SCHEMA, None, "age")
    corpus = load_corpus(build_age_corpus(arguments.work, arguments.per_group), check_audio=False)
    refuse_duplicate_voices(corpus)
    started = time.perf_counter()
    world = settings.transform_settings()
    arms = build_arms(corpus, world, transform="age_shift", store=ArmStore(arguments.work / "arms"),
                      sham_settings=settings.sham_settings())  # fmt: skip
    admitted, summary = kept_manipulation_checks(arms, world, settings, arguments.work)
    ArmAudio.prepare_many([arms.audio[SHAM][key] for key in arms.recordings.index], progress=False)
    speakers = corpus.table.groupby("age")["speaker_id"].nunique().to_dict()
    print(f"design: {len(arms.recordings)} recordings, speakers per group {speakers}; arms and manipulation checks "
          f"in {time.perf_counter() - started:.0f} s")  # fmt: skip
    for row in summary:
        print(f"  {row['source_group']} -> {row['target_group']}: admitted {row['admitted']}/{row['clips']}; "
              f"swap F0 x{row['swap_f0_ratio']:.3f}, formants x{row['swap_formant_ratio']:.3f}; identity F0 "
              f"x{row['identity_f0_ratio']:.3f}, formants x{row['identity_formant_ratio']:.3f}")  # fmt: skip
    print(f"\nOperating characteristic: {len(TASKS)} VIBE cases per run, {arguments.seeds} seeds, "
          f"{settings.n_permutations} permutations, rule {settings.rule}, alpha {gate['alpha']} ({gate['correction']} over "
          f"{len(TASKS)}), max_ntvd {settings.max_ntvd:g}, sim:age-effect = sim:biased x "
          f"{arguments.age_effect_scale:g}")  # fmt: skip
    design = {"recordings": len(arms.recordings), "speakers": {k: int(v) for k, v in speakers.items()},
              "admitted": len(admitted), "permutations": settings.n_permutations,
              "alpha": gate["alpha"], "rule": settings.rule, "max_ntvd": settings.max_ntvd,
              "age_effect_scale": arguments.age_effect_scale, "manipulation": summary}  # fmt: skip

    def write(rows: list[dict]) -> None:  # after each model, so a long run keeps what it measured
        if arguments.json:
            arguments.json.write_text(json.dumps({"design": design, "rows": rows}, indent=1, default=float) + "\n")

    started = time.perf_counter()
    operating_characteristic(arms, admitted, settings, gate, arguments.seeds, arguments.age_effect_scale,
                             arguments.models, write)  # fmt: skip
    print(f"\nsimulation: {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
