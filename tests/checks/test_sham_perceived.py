"""The sham's manipulation check (issue 58, item 6): the perceiver must hear the sham arm as its source group; a case
the sham decides is unmeasured when, in some direction, fewer than ``min_sham_source_share`` of the sham clips are
heard so, and the record reports the share per direction. Known truth: the shipped sham of a demo male voice is heard
as male; a "sham" that crosses the boundary (the swap's formant move and a female pitch) is heard as female and
caught."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

from harness.checks.counterfactual.check import SHAM_CROSSED_REASON, require_sham_heard_as_source
from harness.checks.counterfactual.settings import CounterfactualThresholds
from harness.core.errors import CaseNotMeasured
from harness.perception import perceived_filter


def sham_clips(heard: dict[str, list[str | None]]) -> pd.DataFrame:
    """The sham arm's labels per source group (its target is its source)."""
    rows = [
        (f"{group}-{index}", group, group, label)
        for group, labels in heard.items()
        for index, label in enumerate(labels)
    ]
    return pd.DataFrame(rows, columns=["recording", "source_group", "target_group", "perceived_group"])


def test_a_direction_whose_sham_is_heard_as_the_other_group_makes_the_case_unmeasured():
    crossed = perceived_filter(sham_clips({"male": ["male"] * 7 + ["female"] * 3, "female": ["female"] * 10}))
    with pytest.raises(CaseNotMeasured) as raised:
        require_sham_heard_as_source(crossed, 0.8, "m-story-gender-counterfactual", "voice:formants")
    assert str(raised.value) == (
        f"m-story-gender-counterfactual: {SHAM_CROSSED_REASON}: voice:formants heard too few sham clips as their "
        "source group (male: 7 of 10 (70%); min_sham_source_share 80%)"
    )
    kept = perceived_filter(sham_clips({"male": ["male"] * 9 + [None], "female": ["female"] * 10}))
    require_sham_heard_as_source(kept, 0.8, "m", "voice:formants")  # 90% and 100%: measured
    assert kept.excluded == {"female -> female": 0, "male -> male": 1}


def test_the_bar_is_a_validated_setting_of_the_counterfactual_section():
    assert CounterfactualThresholds().min_sham_source_share == 0.8
    assert "min_sham_source_share" in {field.name for field in dataclasses.fields(CounterfactualThresholds)}


def test_a_sham_that_crosses_the_group_boundary_is_heard_as_the_other_group():
    pytest.importorskip("parselmouth")
    from harness.data.corpus import load_corpus, read_utterance_audio
    from harness.data.voice_transforms import get_transform
    from harness.metrics.perceiver_fit import FEATURES, fit_discriminant
    from harness.perception import voice_features

    corpus = load_corpus("harness/data/demo", check_audio=False)
    table = corpus.table
    originals, rows = {}, []
    for group in ("male", "female"):
        for speaker in sorted(table.loc[table["gender"] == group, "speaker_id"].unique())[:6]:
            utterance = table.index[(table["speaker_id"] == speaker)][0]
            audio = read_utterance_audio(corpus, utterance)
            originals.setdefault(group, []).append(audio)
            rows.append((speaker, group, *voice_features(audio.samples, audio.sample_rate)))
    discriminant = fit_discriminant(pd.DataFrame(rows, columns=["speaker", "group", *FEATURES]))
    sham = get_transform("gender_sham")
    shipped = CounterfactualThresholds().sham_settings()
    crossing = dataclasses.replace(  # the swap's formant raise (1 / (1 / 1.18)) and a pitch in the female range
        shipped, male_to_female_formant_ratio=1 / 1.18, male_sham_pitch_low_hz=210.0, male_sham_pitch_high_hz=230.0
    )
    labels = {}
    for name, settings in (("shipped", shipped), ("crossing", crossing)):
        moved = [sham.apply(audio, "male", settings) for audio in originals["male"][:3]]
        features = np.array([voice_features(clip.samples, clip.sample_rate) for clip in moved])
        labels[name] = discriminant.predict(features)
    assert labels["shipped"] == ["male"] * 3
    assert labels["crossing"] == ["female"] * 3
    caught = perceived_filter(sham_clips({"male": labels["crossing"]}))
    with pytest.raises(CaseNotMeasured, match="male: 0 of 3 \\(0%\\)"):
        require_sham_heard_as_source(caught, 0.8, "case", "voice:formants")
