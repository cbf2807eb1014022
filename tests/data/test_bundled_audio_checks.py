"""The shipped recordings' audio checks (harness/data/bundled_audio_checks.json): what a fresh decode of every
bundled file gives, so that a first run on a fresh cache decodes none of them and keys their audio the same."""

from __future__ import annotations

import json

from harness.data import resolve_corpus
from harness.data.audio import BUNDLED_AUDIO_CHECKS, AudioChecks, bundled_audio_entries, bundled_audio_files
from harness.data.basis_suite import resolve_suite


def test_the_bundled_memo_is_a_fresh_decode_of_every_shipped_recording():
    files = bundled_audio_files()
    assert len(files) > 400
    shipped = json.loads(BUNDLED_AUDIO_CHECKS.read_text())
    assert shipped == bundled_audio_entries(files), (
        "harness/data/bundled_audio_checks.json is not what the shipped recordings give: "
        "run python scripts/build_bundled_audio_checks.py"
    )


def test_a_fresh_cache_decodes_no_shipped_recording_and_keys_their_audio_as_a_decode_does(tmp_path):
    with_bundle = AudioChecks(tmp_path / "bundled.json")
    without = AudioChecks(tmp_path / "decoded.json", bundled=None)
    for checks in (with_bundle, without):
        resolve_corpus("demo", audio_checks=checks)
        resolve_suite(None, checks)
    assert with_bundle.decoded == 0 and without.decoded == len(bundled_audio_files())
    assert with_bundle.audio_hashes == without.audio_hashes and len(with_bundle.audio_hashes) == without.decoded
    # the cache's own memo records what was looked up, so a second run hashes nothing either
    assert json.loads((tmp_path / "bundled.json").read_text())["entries"] == {}


def test_a_changed_recording_is_decoded_not_taken_from_the_bundle(tmp_path):
    recording = bundled_audio_files()[0]
    changed = tmp_path / recording.name
    changed.write_bytes(recording.read_bytes())
    checks = AudioChecks(tmp_path / "memo.json")
    checks.inspect(changed)
    assert checks.decoded == 0  # the same bytes elsewhere: the bundle's entry
    data = bytearray(changed.read_bytes())
    data[-1] ^= 0xFF  # another file now (its last byte changed)
    changed.write_bytes(bytes(data))
    fresh = AudioChecks(tmp_path / "memo2.json")
    fresh.inspect(changed)
    assert fresh.decoded == 1
