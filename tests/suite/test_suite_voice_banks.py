"""Issue 61, item 2: the banks of every voice that installs offline from Debian (rhvoice, festival, pico, and the
foreign-accented MBROLA voices through espeak-ng). Each synthesises a clip inside a small accent suite shared with
espeak-ng voices (so that no accent is one engine's), and the suite's provenance.json records each voice's bank,
package, installed version and licence; a bank whose package is absent is skipped, saying how to install it
(``scripts/install_voice_banks.sh``)."""

from __future__ import annotations

import json

import pytest
import soundfile as sf

from harness.suite.banks import debian_version, get_bank
from harness.suite.cli import main as suite_main
from harness.suite.errors import SuiteError
from harness.suite.voices import parse_voice_spec

from support.suite_inputs import needs_espeak, write_items

pytestmark = needs_espeak
FILTERS_OFF = ["--no-wer-filter", "--no-perceived-filter", "--no-outliers", "--no-progress"]
# bank -> (its voice read as accent a, its voice read as accent b, the accent labels, the packages, a licence word)
CASES = {
    "rhvoice": ("rhvoice:slt", "rhvoice:lyubov[rate=110]", ("us", "russian"),
                ("rhvoice-english", "rhvoice-english"), ("LGPL-2.1+", "non-commercial")),
    "festival": ("festival:cmu_us_slt_arctic_hts", "festival:rab_diphone[stretch=1.1]", ("us", "gb"),
                 ("festvox-us-slt-hts", "festvox-rablpc16k"), ("BSD-3-clause", "Edinburgh")),
    "pico": ("pico:en-US", "pico:de-DE[speed=90,pitch=110]", ("us", "german"),
             ("libttspico-data", "libttspico-data"), ("Apache-2.0", "Apache-2.0")),
    "mbrola": ("mbrola:us1", "mbrola:de1-en", ("us", "german"),
               ("mbrola-us1", "mbrola-de1"), ("non-commercial", "non-commercial")),
}  # fmt: skip
ESPEAK = {"us": "en-us+f2", "russian": "ru+f3", "gb": "en-gb+m3", "german": "de+f4"}


def usable_or_skip(spec: str) -> None:
    voice = parse_voice_spec(spec, need_labels=False)
    bank = get_bank(voice.bank)
    reason = bank.unavailable()
    if reason:
        pytest.skip(reason)
    try:
        bank.check(voice)
    except SuiteError as exc:
        pytest.skip(str(exc))


@pytest.mark.parametrize("bank", list(CASES))
def test_each_debian_bank_reads_a_clip_and_records_its_package_version_and_licence(tmp_path, bank, capsys):
    first, second, accents, packages, licences = CASES[bank]
    for spec in (first, second):
        usable_or_skip(spec)
    voices = [f"{first}@accent={accents[0]}", f"espeak-ng:{ESPEAK[accents[0]]}@accent={accents[0]}",
              f"{second}@accent={accents[1]}", f"espeak-ng:{ESPEAK[accents[1]]}@accent={accents[1]}"]  # fmt: skip
    out = tmp_path / "suite"
    assert suite_main(["build", "--items", str(write_items(tmp_path, 1)), "--voices", ",".join(voices), "--out",
                       str(out), *FILTERS_OFF]) == 0, capsys.readouterr().err  # fmt: skip
    provenance = json.loads((out / "provenance.json").read_text())
    own = [voice for voice in provenance["voices"] if voice["bank"] == bank]
    assert [voice["package"]["package"] for voice in own] == list(packages)
    for voice, licence in zip(own, licences):
        assert voice["package"]["version"] == debian_version(voice["package"]["package"]) is not None
        assert licence in voice["package"]["licence"]
        assert voice["synthesiser"] == get_bank(bank).version() and "unknown" not in voice["synthesiser"]
        samples, rate = sf.read(out / "audio" / f"{voice['speaker']}_c1.flac")
        assert rate == 16_000 and len(samples) > rate and abs(samples).max() > 0.01
    assert provenance["spread"]["accent"][accents[1]]["banks"] == {bank: ["spk03"], "espeak-ng": ["spk04"]}
