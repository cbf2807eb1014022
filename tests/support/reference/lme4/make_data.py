"""Generate the LibriSpeech-test-clean-sized reference data set (``librispeech_like.csv.gz``).

40 speakers (20 F, 20 M), 2,620 utterances, 8 semantic-embedding-like covariates (x1 shifted by gender,
x2 tied to utterance length), N reference words in 5..60, and one speaker intercept shared by insertions
(Poisson, offset log N) and deletions+substitutions (Binomial(N)), as in eq. 1-5 of the paper. Run from
the repository root: ``python tests/support/reference/lme4/make_data.py``. The committed CSV, not this script, is
the reference: ``fit.R`` and the tests read it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

SEED = 20260817
N_SPEAKERS = 40
N_UTTERANCES = 2620
SIGMA = 0.45
INTERCEPT_INS, GENDER_M_INS = -4.3, -0.15
INTERCEPT_DEL, GENDER_M_DEL = -3.4, -0.25
THETA_INS = np.array([0.20, -0.10, 0.05, 0.0, 0.08, 0.0, -0.05, 0.0])
THETA_DEL = np.array([0.25, 0.10, -0.08, 0.05, 0.0, 0.04, 0.0, -0.03])
COVARIATE_SD = np.array([1.6, 1.3, 1.1, 1.0, 0.9, 0.8, 0.7, 0.6])


def make_table(seed: int = SEED) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    speakers = np.array([f"spk{k:02d}" for k in range(N_SPEAKERS)])
    gender = np.where(rng.permutation(N_SPEAKERS) < N_SPEAKERS // 2, "F", "M")
    extra = rng.multinomial(N_UTTERANCES - 30 * N_SPEAKERS, rng.dirichlet(np.full(N_SPEAKERS, 4.0)))
    per_speaker = 30 + extra
    speaker_of = np.repeat(np.arange(N_SPEAKERS), per_speaker)
    is_male = (gender[speaker_of] == "M").astype(float)
    n_words = np.clip(np.round(np.exp(rng.normal(np.log(17.0), 0.65, speaker_of.size))), 5, 60)
    x = rng.normal(size=(speaker_of.size, 8)) * COVARIATE_SD
    x[:, 0] -= 0.4 * is_male
    log_n = np.log(n_words)
    x[:, 1] += 0.5 * (log_n - log_n.mean())
    x = np.round(x, 4)
    r = rng.normal(0.0, SIGMA, N_SPEAKERS)[speaker_of]
    rate = n_words * np.exp(INTERCEPT_INS + GENDER_M_INS * is_male + x @ THETA_INS + r)
    prob = 1.0 / (1.0 + np.exp(-(INTERCEPT_DEL + GENDER_M_DEL * is_male + x @ THETA_DEL + r)))
    insertions = rng.poisson(rate)
    delsub = rng.binomial(n_words.astype(int), prob)
    deletions = rng.binomial(delsub, 0.3)
    table = pd.DataFrame(
        {
            "speaker": speakers[speaker_of],
            "gender": gender[speaker_of],
            "n_ref_words": n_words.astype(int),
            "insertions": insertions,
            "deletions": deletions,
            "substitutions": delsub - deletions,
        }
    )
    for k in range(8):
        table[f"x{k + 1}"] = x[:, k]
    return table


if __name__ == "__main__":
    out = Path(__file__).with_name("librispeech_like.csv.gz")
    make_table().to_csv(out, index=False, float_format="%.4f", compression={"method": "gzip", "mtime": 0})
    print(f"wrote {out}")
