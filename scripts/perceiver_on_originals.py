"""The counterfactual perceivers on a corpus's originals and its gender swaps (issue 58): voice:formants' balanced
accuracy leaving one speaker out and voice:praat's, and the share of each direction's swaps each hears as the
target (docs/statistics.md, "The perceiver on the originals").

    python scripts/perceiver_on_originals.py [--corpus harness/data/demo]

About 80 s on the demo corpus (324 recordings) on one core.
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd

from harness.checks.counterfactual.settings import CounterfactualThresholds
from harness.data.corpus import load_corpus, read_utterance_audio
from harness.data.voice_transforms import get_transform
from harness.metrics.perceiver_fit import FEATURES, calibrate, labelled_calibration
from harness.perception import voice_features, voice_praat_group

OTHER = {"male": "female", "female": "male"}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", default="harness/data/demo")
    args = parser.parse_args(argv)
    corpus = load_corpus(args.corpus, check_audio=False)
    settings = CounterfactualThresholds().change_gender()
    swap = get_transform("gender_swap")
    rows = []
    for utterance in corpus.table.index:
        group = str(corpus.table.at[utterance, "gender"])
        original = read_utterance_audio(corpus, utterance)
        swapped = swap.apply(original, group, settings)
        rows.append(
            {
                "speaker": str(corpus.table.at[utterance, "speaker_id"]),
                "group": group,
                "original": voice_features(original.samples, original.sample_rate),
                "swap": voice_features(swapped.samples, swapped.sample_rate),
                "praat_original": voice_praat_group(original.samples, original.sample_rate),
                "praat_swap": voice_praat_group(swapped.samples, swapped.sample_rate),
            }
        )
    table = pd.DataFrame(rows)
    missing = (np.nan,) * len(FEATURES)
    features = pd.DataFrame([list(f or missing) for f in table["original"]], columns=list(FEATURES))
    discriminant, formants = calibrate(pd.concat([table[["speaker", "group"]], features], axis=1))
    praat = labelled_calibration(table["group"], table["praat_original"], table["speaker"], "voice:praat")
    swaps = np.array([list(f or missing) for f in table["swap"]])
    heard = discriminant.predict(swaps)
    print(f"{len(table)} recordings of {table['speaker'].nunique()} speakers ({args.corpus})")
    for name, calibration in (("voice:formants (leave one speaker out)", formants), ("voice:praat", praat)):
        recall = ", ".join(f"{group} {100 * value:.1f}%" for group, value in calibration.recall.items())
        print(f"{name}: balanced accuracy on the originals {100 * calibration.accuracy:.1f}% ({recall})")
    for group, target in OTHER.items():
        rows_of = table["group"] == group
        formant_share = np.mean([heard[i] == target for i in np.flatnonzero(rows_of)])
        praat_share = np.mean(table.loc[rows_of, "praat_swap"] == target)
        print(
            f"{group} -> {target} swaps heard as {target}: voice:formants {100 * formant_share:.1f}%, "
            f"voice:praat {100 * praat_share:.1f}%"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
