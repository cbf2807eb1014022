"""The per-request hot path of a cached re-score (issue 46, item 3), old code next to new, one run.

    .venv/bin/python benchmarks/bench_request_path.py [--repeats 3]

On synthetic inputs of a CREMA-D-sized run (6,552 clips), times each piece as it was (the old code, kept in
``tests/support/request_path_reference.py``) and as it is, checks that both give the same result, and prints
the best of ``--repeats`` timings and the ratio old / new:

* ``flip_rates``: one arm table of 6,552 recordings (two per speaker) in three arms (5% of answers missing),
  three attributes with 0-3 values each; the identity/swap comparison ("old" runs today's ``_arm_rows``, a
  little faster than the old one, so the ratio is if anything understated);
* cache keys: :meth:`harness.generation.cached_model.CachedModel.keys` of 50,000 requests (12 prompts with non-ASCII text,
  distinct recipe-named audio, system None or text) against ``cache_key`` one request at a time;
* ``word_errors``: 13,000 (reference, hypothesis) pairs, references the 12 CREMA-D sentences, hypotheses copies
  with words dropped, changed or added, from a cold pair memo (Whisper's normalisation warm for both, as the
  old code memoised it too); and the same pairs again, warm (a second arm or model scoring equal transcripts);
* request building (extra; "old" is today's per-utterance :meth:`~harness.tasks.base.Task.request`, already
  without its per-call path building): 6,552 requests of one task, one by one against
  :meth:`~harness.tasks.base.Task.requests`.

The machine's other load moves the numbers; the ratios are what to compare.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from harness.cache import OutputCache  # noqa: E402
from harness.core.requests import Audio, DecodingParams, GenerationRequest  # noqa: E402
from harness.generation.cached_model import NAMESPACE, CachedModel  # noqa: E402
from harness.metrics import wer  # noqa: E402
from harness.metrics.counterfactual import flip_rates  # noqa: E402
from harness.tasks import TASKS  # noqa: E402

from support.request_path_reference import (  # noqa: E402
    cache_key_reference,
    flip_rates_reference,
    word_errors_reference,
)

CLIPS = 6_552
SENTENCES = [
    "It's eleven o'clock.", "That is exactly what happened.", "I'm on my way to the meeting.",
    "I wonder what this is about.", "The airplane is almost full.", "Maybe tomorrow it will be cold.",
    "I would like a new alarm clock.", "I think I have a doctor's appointment.", "Don't forget a jacket.",
    "I think I've seen this before.", "The surface is slick.", "We'll stop in a couple of minutes.",
]  # fmt: skip
VALUES = ["nurse", "engineer", "teacher", "doctor", "golf", "chess", "painting", "Paris", "Lagos", "Seoul"]


def arm_table(rng: np.random.Generator) -> pd.DataFrame:
    rows = []
    for index in range(CLIPS):
        speaker, recording = f"s{index // 2:04d}", f"r{index:05d}"
        for arm in ("original", "identity", "swap"):
            if rng.random() < 0.05:
                continue
            for attribute in ("occupation", "hobby", "city"):
                for _ in range(rng.integers(0, 4)):
                    rows.append((speaker, recording, arm, attribute, VALUES[rng.integers(len(VALUES))]))
    return pd.DataFrame(rows, columns=["speaker", "recording", "arm", "attribute", "value"])


def generation_requests(count: int) -> list[GenerationRequest]:
    prompts = [f"Listen to the speaker ({i}) and write the story of their day — «{SENTENCES[i]}»" for i in range(12)]
    requests = []
    for index in range(count):
        audio = Audio(np.zeros(4, dtype=np.float32), recipe=f"{index:064x}|swap@1")
        requests.append(GenerationRequest(prompts[index % 12], audio, None if index % 3 else "You are helpful."))
    hashes = {request.audio.content_hash for request in requests}  # computed once per clip in a run, before its keys
    assert len(hashes) == count
    return requests


def transcript_pairs(rng: np.random.Generator, count: int) -> list[tuple[str, str]]:
    words = [word for sentence in SENTENCES for word in sentence.split()]
    pairs = []
    for index in range(count):
        reference = SENTENCES[index % len(SENTENCES)]
        hypothesis = [w for w in reference.split() if rng.random() > 0.1]
        hypothesis = [str(rng.choice(words)) if rng.random() < 0.1 else w for w in hypothesis]
        if rng.random() < 0.2:
            hypothesis.insert(int(rng.integers(len(hypothesis) + 1)), str(rng.choice(words)))
        pairs.append((reference, " ".join(hypothesis)))
    return pairs


def best(
    function: Callable[[], object], repeats: int, before: Callable[[], None] = lambda: None
) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeats):
        before()
        start = time.perf_counter()
        result = function()
        times.append(time.perf_counter() - start)
    return min(times), result


def cold_memo() -> None:
    wer._word_errors.cache_clear()
    wer._words.cache_clear()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    repeats = parser.parse_args().repeats
    rng = np.random.default_rng(0)
    rows = []

    table = arm_table(rng)
    old_time, old = best(lambda: flip_rates_reference(table), repeats)
    new_time, new = best(lambda: flip_rates(table), repeats)
    pd.testing.assert_frame_equal(new, old, check_exact=True)
    rows.append((f"flip_rates ({len(table):,} rows)", old_time, new_time))

    requests = generation_requests(50_000)
    model = CachedModel("sim:fair", OutputCache(tempfile.mkdtemp()), DecodingParams(), {}, progress=False)

    def old_keys() -> list[str]:
        params = model.decoding.as_dict()
        return [cache_key_reference(NAMESPACE, model.fingerprint, params, r.cache_identity()) for r in requests]

    old_time, old = best(old_keys, repeats)
    new_time, new = best(lambda: model.keys(requests), repeats)
    assert old == new
    rows.append(("cache keys (50,000 requests)", old_time, new_time))

    pairs = transcript_pairs(rng, 13_000)
    for text in {text for pair in pairs for text in pair}:
        wer.normalise_text(text)
    old_time, old = best(lambda: [word_errors_reference(r, h) for r, h in pairs], repeats)
    new_time, new = best(lambda: [wer.word_errors(r, h) for r, h in pairs], repeats, before=cold_memo)
    assert old == new
    rows.append(("word_errors (13,000 pairs, cold memo)", old_time, new_time))
    warm_time, warm = best(lambda: [wer.word_errors(r, h) for r, h in pairs], repeats)
    assert warm == old
    rows.append(("word_errors (13,000 pairs, warm memo)", old_time, warm_time))

    task, clips = TASKS["story"], [request.audio for request in requests[:CLIPS]]
    transcripts = [SENTENCES[index % len(SENTENCES)] for index in range(CLIPS)]
    old_time, old = best(lambda: tuple(task.request(t, clip) for t, clip in zip(transcripts, clips)), repeats)
    new_time, new = best(lambda: task.requests(transcripts, clips), repeats)
    assert old == new
    rows.append(("task requests (6,552; old = today's request())", old_time, new_time))

    width = max(len(name) for name, _, _ in rows)
    print(f"{'piece':<{width}}  {'old s':>8}  {'new s':>8}  {'old/new':>8}   (best of {repeats}; results equal)")
    for name, old_time, new_time in rows:
        print(f"{name:<{width}}  {old_time:8.4f}  {new_time:8.4f}  {old_time / new_time:8.1f}")


if __name__ == "__main__":
    main()
