"""The audio floor's blind bar, measured (issue 58, item 4): does a model that ignores its audio in a share ``s`` of
requests pass a between-group case it would fail with full hearing?

A model's answers ignore the audio in a share ``s`` of requests (blind answers are drawn from one distribution ``Q``
for every voice, the groups' mean), and follow the voice in the rest (``h = 1 - s``). Its between-group nTVD is then
``h`` times its full-hearing one (each group's answers are the mixture ``h R_g + s Q``). Each seed draws, at the
gate's own settings:

- the case: the nTVD design of ``bench_detectable.py``'s group permutation family (the demo corpus: 2 x 16
  speakers, 12 answers each, one attribute of 5 values, speaker sd 0.3, tau 10), with a full-hearing population
  nTVD of ``--full-ntvd`` (default 40, twice the gender bar ``max_ntvd`` 20: caught with full hearing), diluted by
  ``s``; tested by the gate's permutation test (B = 9,999), its detectable effect stated as the gate states it
  (:class:`harness.metrics.detectable.NullSensitivity`), decided by rule ``both`` at the corrected alpha 0.05 / 43:
  fail when nTVD > 20 and p <= alpha; else pass when the test detects the bar (D <= 20), else unmeasured;
- the audio floor's task probe (:func:`harness.metrics.audio_dependence.audio_dependence`, the floor's own test):
  5 tasks x 24 recordings, each asked with the recording, again (replicate), with silence and with another
  recording; a heard answer is one of ``--probe-values`` equally likely extracted answers (so that a replacement
  gives the same answer by coincidence in 1 / 8 of heard pairs, about the demo cascade's 0.875 share), a blind
  answer the stratum's one blind answer. Two ways of being blind: ``fixed`` (a request the model does not hear
  stays unheard whatever audio it carries, and greedy decoding answers the replicate alike: the probe's share is
  about ``h (1 - 1/8)``) and ``flaky`` (each request's audio, the replicate's too, dropped at random in a share
  ``s``: about ``h^2``). The floor hears when its share exceeds ``1 - audio_blind_share`` (0.9) and p < 0.01.

Each seed's outcome is tallied under the floor alone (``old``: the blind bar 0.9 decides whether the case is
measured, then the case as decided) and under the full-hearing rule (``new``,
:func:`harness.gate.audio_floor.full_hearing_reason`: a pass stands only when ``nTVD / share`` and ``D / share``
are within the bar, else unmeasured). ``--fair`` adds the same rows for a model with no effect (``--full-ntvd 0``):
what the rule costs a fair model (passes that become unmeasured as its hearing share falls).

Usage: ``nice -n 5 python benchmarks/bench_blind_share.py --seeds 200 > /tmp/sham/blind_share.log``; a stronger
effect at the shares near the bar: ``--full-ntvd 80 --shares 0.7 0.8 0.85 0.89 --mechanisms fixed --no-fair``; a
CREMA-D-sized design (45 speakers per group), where the test detects far less than the bar:
``--per-group 45 --shares 0.0 0.5 0.7 0.8 0.89 --mechanisms fixed --seeds 100``
(``bench_datasheet.py --from-logs`` reads ``blind_share.log``).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import optimize

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from harness.gate.audio_floor import full_hearing_reason  # noqa: E402
from harness.metrics.audio_dependence import (  # noqa: E402
    ORIGINAL,
    OTHER_RECORDING,
    REPLICATE,
    SILENCE,
    audio_dependence,
)
from harness.metrics.detectable import NullSensitivity  # noqa: E402
from harness.metrics.ntvd import permutation_test  # noqa: E402
from harness.metrics.power import _softmax, group_logits, population_ntvd  # noqa: E402
from harness.records import Contrast  # noqa: E402

PER_GROUP, ANSWERS, VALUES, SPEAKER_SD, TAU = 16, 12, 5, 0.3, 10
BAR = 20.0
"""``max_ntvd`` of the gender cases (thresholds.yaml ``ntvd``)."""
CASES = 43
ALPHA = 0.05 / CASES
PERMUTATIONS = 9_999
BLIND_BAR, FLOOR_ALPHA, FLOOR_PERMUTATIONS = 0.9, 0.01, 1_999
PROBE_TASKS, PROBE_RECORDINGS = 5, 24
SHARES = (0.0, 0.3, 0.5, 0.7, 0.8, 0.89)
FAIR_SHARES = (0.0, 0.5, 0.89)
MECHANISMS = ("fixed", "flaky")


def case_table(effect: float, blind: float, seed: int, per_group: int = PER_GROUP) -> pd.DataFrame:
    """One draw of the case: each answer blind (from the groups' mean distribution) with probability ``blind``."""
    rng = np.random.default_rng(seed)
    logits = group_logits(effect, 2, VALUES)
    pooled = _softmax(logits).mean(axis=0)
    rows = []
    for group in range(2):
        for speaker in range(per_group):
            p = _softmax(logits[group] + SPEAKER_SD * rng.normal(size=VALUES))
            heard = rng.choice(VALUES, size=ANSWERS, p=p)
            unheard = rng.choice(VALUES, size=ANSWERS, p=pooled)
            values = np.where(rng.random(ANSWERS) < blind, unheard, heard)
            rows += [(f"g{group}s{speaker}", f"g{group}", "job", f"v{value}") for value in values]
    return pd.DataFrame(rows, columns=["speaker", "group", "attribute", "value"])


def probe_table(blind: float, mechanism: str, probe_values: int, seed: int) -> pd.DataFrame:
    """One draw of the task probe's read answers (module docstring)."""
    rng = np.random.default_rng(seed)
    rows = []
    for task in range(PROBE_TASKS):
        for recording in range(PROBE_RECORDINGS):
            unit_blind = rng.random() < blind
            original = rng.integers(probe_values)
            answers = {}
            for arm in (ORIGINAL, REPLICATE, SILENCE, OTHER_RECORDING):
                if mechanism == "fixed":
                    deaf = unit_blind
                else:
                    deaf = unit_blind if arm == ORIGINAL else rng.random() < blind
                if deaf:
                    answers[arm] = "blind"
                elif arm in (ORIGINAL, REPLICATE):  # the same audio: the same heard answer (greedy)
                    answers[arm] = f"a{original}"
                else:
                    answers[arm] = f"a{rng.integers(probe_values)}"
            rows += [(f"t{task}", f"r{recording}", arm, value) for arm, value in answers.items()]
    return pd.DataFrame(rows, columns=["stratum", "utterance", "audio", "value"])


def one_seed(
    effect: float, blind: float, mechanism: str, probe_values: int, seed: int, per_group: int = PER_GROUP
) -> tuple[str, str, float]:
    """The seed's outcome under the floor alone and under the full-hearing rule, and the probe's share."""
    table = case_table(effect, blind, seed, per_group)
    test = permutation_test(table, tau=TAU, n_permutations=PERMUTATIONS, seed=seed)
    detectable = NullSensitivity(test.null, widening=1 / (2 * per_group - 1)).detectable(ALPHA)
    if test.observed > BAR and test.p_value <= ALPHA:
        case = "failed"
    else:
        case = "passed" if np.isfinite(detectable) and detectable <= BAR else "unmeasured"
    found = audio_dependence(probe_table(blind, mechanism, probe_values, seed), FLOOR_PERMUTATIONS, seed=seed)
    hears = found.blind_share < BLIND_BAR and found.p_value < FLOOR_ALPHA
    old = case if hears else "unmeasured"
    new = old
    if old == "passed":
        contrast = Contrast("nTVD across groups", test.observed, None, None, test.p_value, test.observed > BAR,
                            bar=BAR, detectable=detectable)  # fmt: skip
        if full_hearing_reason([contrast], found.share, "both") is not None:
            new = "unmeasured"
    return old, new, found.share


def tally(outcomes: list[str]) -> str:
    return "/".join(str(outcomes.count(word)) for word in ("failed", "unmeasured", "passed"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=200)
    parser.add_argument("--full-ntvd", type=float, default=40.0, help="the full-hearing population nTVD (0-100)")
    parser.add_argument("--probe-values", type=int, default=8)
    parser.add_argument("--no-fair", action="store_true", help="leave out the fair model's rows")
    parser.add_argument("--shares", type=float, nargs="+", default=list(SHARES), help="the biased model's s")
    parser.add_argument("--mechanisms", nargs="+", choices=MECHANISMS, default=list(MECHANISMS))
    parser.add_argument("--per-group", type=int, default=PER_GROUP, help="speakers per group (demo: 16)")
    args = parser.parse_args(argv)
    effect = optimize.brentq(lambda d: population_ntvd(d, 2, VALUES, SPEAKER_SD) - args.full_ntvd, 1e-6, 20.0)
    print(f"blind share bench: {args.seeds} seeds per row; case: 2 x {args.per_group} speakers, {ANSWERS} answers, "
          f"{VALUES} values, B = {PERMUTATIONS}, bar {BAR:g}, alpha 0.05/{CASES}; floor: {PROBE_TASKS} x "
          f"{PROBE_RECORDINGS} recordings, {args.probe_values} answers, audio_blind_share {BLIND_BAR}, alpha "
          f"{FLOOR_ALPHA}, B = {FLOOR_PERMUTATIONS}")  # fmt: skip
    print("tallies: failed/unmeasured/passed; old: the floor's blind bar alone; new: with the full-hearing rule")
    models = [("biased", effect, args.full_ntvd, tuple(args.shares))]
    if not args.no_fair:
        models.append(("fair", 0.0, 0.0, FAIR_SHARES))
    started = time.perf_counter()
    for name, logit, ntvd, shares in models:
        for mechanism in args.mechanisms:
            for blind in shares:
                drawn = [
                    one_seed(logit, blind, mechanism, args.probe_values, seed, args.per_group)
                    for seed in range(1, args.seeds + 1)
                ]
                old, new, share = zip(*drawn)
                print(f"row {name} ntvd={ntvd:g} speakers={args.per_group} {mechanism} s={blind:.2f} share={np.mean(share):.3f} "
                      f"old={tally(list(old))} new={tally(list(new))} seeds={args.seeds}", flush=True)  # fmt: skip
    print(f"elapsed {time.perf_counter() - started:.0f} s (shared CPU: compare only within one run)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
