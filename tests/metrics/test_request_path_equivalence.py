"""Issue 46, item 3: the vectorised per-request hot path gives exactly what the code it replaced gave
(support/request_path_reference.py keeps that code): flip rates, the arm nTVD, its largest shifts and the
per-speaker value counts on random arm tables (text columns as pandas' text, Python objects or categoricals, as
the counterfactual arm tables hold them), cache keys of requests of every shape, word error counts on random
strings, and the batch builders' requests."""

from __future__ import annotations

import enum
import os
import re
import string
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from harness.cache import OutputCache, cache_key, cache_keys, generation_cache_keys
from harness.checks.basis_common.tables import cells
from harness.core.requests import Audio, DecodingParams, GenerationRequest
from harness.generation.cached_model import CachedModel
from harness.metrics.counterfactual import _arm_rows, _value_counts_per_speaker, arm_ntvd, flip_rates, largest_shifts
from harness.metrics.wer import word_errors
from harness.tasks import TASKS
from harness.tasks.base import PAPER, PROMPTS_DIR, SELF_REPORT

from support.request_path_reference import (
    arm_ntvd_reference,
    cache_key_reference,
    flip_rates_reference,
    largest_shifts_reference,
    value_counts_per_speaker_reference,
    word_errors_reference,
)

COLUMNS = ["speaker", "recording", "arm", "attribute", "value"]


def random_arm_table(rng: np.random.Generator, recordings: int, values: list, arms=("original", "identity", "swap")):
    """Rows of ``recordings`` recordings (two per speaker) in random subsets of ``arms``, each answer naming 0-3
    values per attribute drawn from ``values`` with repeats (ties within a set), attributes missing at random."""
    rows = []
    for index in range(recordings):
        speaker, recording = f"s{index // 2}", f"r{index:03d}"
        answered = [arm for arm in arms if rng.random() < 0.85]
        for arm in answered:
            for attribute in ("occupation", "hobby", "city"):
                for _ in range(rng.integers(0, 4)):
                    rows.append((speaker, recording, arm, attribute, values[rng.integers(len(values))]))
    return pd.DataFrame(rows, columns=COLUMNS).sample(frac=1.0, random_state=int(rng.integers(1 << 31)))


def assert_same_table(new: pd.DataFrame, old: pd.DataFrame) -> None:
    pd.testing.assert_frame_equal(new, old, check_exact=True)
    assert list(new.dtypes) == list(old.dtypes) and new.index.dtype == old.index.dtype
    assert new.index.name == old.index.name and list(new.index) == list(old.index)


@pytest.mark.parametrize("seed", range(12))
def test_flip_rates_equal_the_set_comparison_on_random_tables(seed):
    """Random tables: recordings in one arm only, attributes answered in one arm only, repeated values (a set
    ignores them), mixed value types compared as text (1 and "1" are one value, 1.0 another), and both pairs of
    arms the check compares."""
    rng = np.random.default_rng(seed)
    values = ["nurse", "engineer", "golf", "chess", "Paris", 1, "1", 1.0, "é", ""] if seed % 2 else ["a", "b"]
    table = random_arm_table(rng, recordings=int(rng.integers(2, 60)), values=values)
    for arms in (("identity", "swap"), ("original", "identity"), ("swap", "identity")):
        for form in (table, table.astype(object)):  # text columns as pandas' str dtype and as Python objects
            assert_same_table(flip_rates(form, arms), flip_rates_reference(form, arms))


def table_forms(table: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """The table with its text columns as pandas' text, as Python objects, and as categoricals (the arm tables')."""
    text = [column for column in table.columns if column not in ("errors", "words")]
    return {"text": table, "object": table.astype(object), "category": table.astype(dict.fromkeys(text, "category"))}


@pytest.mark.parametrize("seed", range(12))
def test_flip_rates_of_categorical_tables_equal_the_set_comparison(seed):
    rng = np.random.default_rng(seed)
    table = random_arm_table(rng, recordings=int(rng.integers(2, 60)), values=["nurse", "engineer", "golf", "é", ""])
    for arms in (("identity", "swap"), ("original", "identity")):
        expected = flip_rates_reference(table, arms)
        for form in table_forms(table).values():
            assert_same_table(flip_rates(form, arms), expected)


def assert_same_arm_ntvd(new, old) -> None:
    assert new.score == old.score or (np.isnan(new.score) and np.isnan(old.score))
    assert new.per_direction == old.per_direction and new.per_attribute == old.per_attribute
    assert new.test.p_value == old.test.p_value and new.test.floor == old.test.floor
    np.testing.assert_array_equal(new.test.null, old.test.null)
    assert (new.recordings, new.unpaired_recordings) == (old.recordings, old.unpaired_recordings)
    pd.testing.assert_frame_equal(new.distributions, old.distributions, check_exact=True, check_index_type=False)
    assert new.distributions.index.to_list() == old.distributions.index.to_list()
    assert new.distributions.index.names == old.distributions.index.names


@pytest.mark.parametrize("seed", range(16))
def test_arm_ntvd_and_its_shifts_equal_the_grouping_on_text_keys(seed):
    """Random tables with one or two swap directions (or none named), values that some speakers repeat and others
    never give, recordings in one arm only; every form of the text columns; the same refusal when no value is
    retained."""
    rng = np.random.default_rng(seed)
    values = ["nurse", "engineer", "golf", "chess", "Paris", "é", "", "Zürich"] if seed % 2 else ["a", "b"]
    table = random_arm_table(rng, recordings=int(rng.integers(6, 90)), values=values)
    if seed % 3:
        groups = {
            speaker: ("female", "male")[int(rng.integers(2 if seed % 3 == 1 else 1))] for speaker in table["speaker"]
        }
        table["source_group"] = table["speaker"].map(groups)
    tau = int(rng.integers(1, 6))
    for arms in (("identity", "swap"), ("original", "identity"), ("swap", "identity")):
        for form in table_forms(table).values():
            try:
                expected = arm_ntvd_reference(form, arms, tau=tau, n_permutations=60, seed=seed)
            except ValueError as refusal:
                with pytest.raises(ValueError, match=re.escape(str(refusal))):
                    arm_ntvd(form, arms, tau=tau, n_permutations=60, seed=seed)
                continue
            measured = arm_ntvd(form, arms, tau=tau, n_permutations=60, seed=seed)
            assert_same_arm_ntvd(measured, expected)
            per_attribute = int(rng.integers(1, 4))
            pd.testing.assert_frame_equal(
                largest_shifts(measured.distributions, per_attribute),
                largest_shifts_reference(expected.distributions, per_attribute),
                check_exact=True,
            )


@pytest.mark.parametrize("seed", range(12))
def test_largest_shifts_equal_nsmallest_and_nlargest_per_group(seed):
    """Shares with ties (picked in the table's order), groups whose values all fell or all rose, and several
    directions and attributes."""
    rng = np.random.default_rng(seed)
    index = pd.MultiIndex.from_tuples(
        [(d, a, v) for d in ("female", "male")[: 1 + seed % 2] for a in ("job", "hobby", "city")[: 1 + seed % 3]
         for v in ("nurse", "golf", "Paris", "é", "chess")[: int(rng.integers(1, 6))]],
        names=["direction", "attribute", "value"],
    )  # fmt: skip
    shares = rng.choice([0.0, 0.1, 0.2, 0.25, 0.5], size=(len(index), 2))
    distributions = pd.DataFrame(shares, index=index, columns=["identity", "swap"])
    for per_attribute in (1, 2, 3):
        pd.testing.assert_frame_equal(
            largest_shifts(distributions, per_attribute),
            largest_shifts_reference(distributions, per_attribute),
            check_exact=True,
        )
    unchanged = distributions.assign(swap=distributions["identity"])
    assert largest_shifts(unchanged).empty and largest_shifts_reference(unchanged).empty


@pytest.mark.parametrize("seed", range(8))
def test_value_counts_per_speaker_equal_the_text_concatenation(seed):
    rng = np.random.default_rng(seed)
    table = random_arm_table(rng, recordings=int(rng.integers(2, 60)), values=["nurse", "golf", 1, "1", 1.0, ""])
    for form in table_forms(table).values():
        rows = _arm_rows(form, ("identity", "swap"), ("attribute", "value"), "test", drop_unpaired=True)
        expected = value_counts_per_speaker_reference(rows)
        counted = _value_counts_per_speaker(rows)
        assert counted.index.to_list() == expected.index.to_list() and counted.index.name == expected.index.name
        assert counted.columns.to_list() == expected.columns.to_list()
        np.testing.assert_array_equal(counted.to_numpy(), expected.to_numpy())


@pytest.mark.parametrize("dtype", [None, object])
def test_flip_rates_edge_cases_equal_the_reference(dtype):
    one = pd.DataFrame([("s0", "r0", "identity", "job", "nurse"), ("s0", "r0", "swap", "job", "nurse"),
                        ("s0", "r1", "identity", "job", "nurse")], columns=COLUMNS, dtype=dtype)  # fmt: skip
    assert_same_table(flip_rates(one), flip_rates_reference(one))  # r1 is in one arm only
    disjoint = pd.DataFrame([("s0", "r0", "identity", "job", "nurse"), ("s0", "r0", "swap", "city", "Paris")],
                            columns=COLUMNS, dtype=dtype)  # fmt: skip
    assert_same_table(flip_rates(disjoint), flip_rates_reference(disjoint))  # no attribute in both arms: no rows
    assert flip_rates(disjoint).empty
    numbered = pd.DataFrame([("s0", 7, "identity", 3, 1.5), ("s0", 7, "swap", 3, 1.5), ("s1", 8, "identity", 3, 2),
                             ("s1", 8, "swap", 3, 2.0), ("s1", 8, "swap", 2, 2)], columns=COLUMNS, dtype=dtype)  # fmt: skip
    assert_same_table(flip_rates(numbered), flip_rates_reference(numbered))  # numbers as keys; 2 != 2.0 as text
    missing = one.assign(value=["nurse", None, "nurse"])
    for implementation in (flip_rates, flip_rates_reference):
        with pytest.raises(ValueError, match="row 1 has a missing value"):
            implementation(missing)


class Mode(enum.StrEnum):
    SPEECH = "speech-implicit"
    TEXT = "text-ëxplicit"


PROMPTS = [
    "Describe the speaker.",
    "Ünïcödé — 说话人 🎙️ «quoted» \"double\" 'single'",
    "back\\slash\ttab\nnew\x00nul\u2028\x7f",
    "",
]


def sample_requests() -> list[GenerationRequest]:
    """Every combination of a prompt (ASCII, unicode, characters JSON escapes, empty), a system text (None, text)
    and audio (none, hashed by its samples, named by its recipe)."""
    audio = [None, Audio(np.linspace(-1, 1, 160, dtype=np.float32)), Audio(np.zeros(4, np.float32), recipe="ü|swap@1")]
    return [
        GenerationRequest(prompt, clip, system)
        for prompt in PROMPTS
        for system in (None, "You are a helpful assistant.", "Système «ß»")
        for clip in audio
    ]


def test_cached_model_keys_equal_the_old_formula(tmp_path):
    cached = CachedModel("sim:fair", OutputCache(tmp_path), DecodingParams(), {}, progress=False)
    requests = sample_requests()
    for decoding in (None, DecodingParams(max_new_tokens=96, do_sample=True, temperature=0.7, seed=3)):
        params = (decoding or cached.decoding).as_dict()
        old = [cache_key_reference("generate", cached.fingerprint, params, r.cache_identity()) for r in requests]
        assert cached.keys(requests, decoding) == old
    assert len(set(old)) == len(requests)


def test_generation_keys_equal_the_keys_of_their_identities_in_a_batch_sharing_fields():
    """Every request shape of :func:`sample_requests` three times over in a shuffled batch (prompts and system texts
    shared, each escaped once): the keys of the identities' mappings, and the old formula's."""
    requests = sample_requests() * 3
    np.random.default_rng(0).shuffle(requests)
    params = DecodingParams(max_new_tokens=64).as_dict()
    expected = cache_keys("generate", "fp@1", params, [request.cache_identity() for request in requests])
    assert generation_cache_keys("generate", "fp@1", params, requests) == expected
    assert expected == [cache_key_reference("generate", "fp@1", params, r.cache_identity()) for r in requests]


@pytest.mark.parametrize(
    "request_",
    [
        {"answer": 'Ünïcödé "x" \\ \n'},
        {"text": ""},
        {"z": None, "a": "first", "M": "upper sorts before lower"},
        {"design": {"speakers": [3, 4], "groups": ["f", "m"], "rate": 0.5}},  # nested: the general encoder
        {"embeddings": "abc", "shape": [2, 3]},
        {"number": 1, "flag": True, "float": 1.5, "nan": float("nan"), "path": Path("/tmp/x")},  # default=str
        {"flag": False},
        {"text": None},
        {3: "a number as key"},
        {"mode": Mode.SPEECH, Mode.TEXT: "enum key"},
        {},
    ],
)
def test_cache_key_equals_the_old_formula_for_every_request_shape(request_):
    params = {"n_simulations": 200, "seed": 0, "nested": {"b": [1, None], "a": "é"}}
    assert cache_key("power", "minimum_detectable_ntvd@1", params, request_) == cache_key_reference(
        "power", "minimum_detectable_ntvd@1", params, request_
    )
    assert cache_keys("ns", "fp", {}, [request_, {"text": "t"}]) == [
        cache_key_reference("ns", "fp", {}, request_),
        cache_key_reference("ns", "fp", {}, {"text": "t"}),
    ]


def test_cache_keys_of_requests_sharing_fields_equal_the_old_formula():
    """A batch repeats fields (one prompt for many clips): each is encoded once and reused, and a value equal to a
    kept text field but of another type (a number, a text enum) is still written as its own type writes."""
    shared = "Describe the speaker. " * 40 + "é «»"
    requests = [
        *({"prompt": shared, "system": None, "audio": f"{index:064x}"} for index in range(5)),
        {"text": "1"},
        {"text": 1},
        {"text": 1.0},
        {"text": True},
        {"text": "1"},
        {"mode": "speech-implicit"},
        {"mode": Mode.SPEECH},
        {"text": None},
        {"text": "null"},
        {"prompt": shared, "system": None, "audio": None},
        {"prompt": shared, "shape": [2, 3]},
    ]
    assert cache_keys("ns", "fp", {"seed": 0}, requests) == [
        cache_key_reference("ns", "fp", {"seed": 0}, request) for request in requests
    ]


@pytest.mark.parametrize("protocol", [PAPER, SELF_REPORT])
def test_task_requests_equal_one_request_per_utterance(protocol):
    """The batch builder gives what the prompt file, filled in per utterance, gives: the same prompts (one
    rendering per distinct transcript), audio and answer form, in order."""
    task = TASKS["story"]
    text = (PROMPTS_DIR / ("self_report" if protocol == SELF_REPORT else "") / task.prompt_file).read_text("utf-8")
    template = string.Template(text.strip())
    transcripts = ["The bus leaves at seven.", "", "Ünïcode $dollar", "The bus leaves at seven."]
    clips = [None, Audio(np.zeros(8, np.float32)), None, Audio(np.ones(8, np.float32))]
    built = task.requests(transcripts, clips, protocol=protocol)
    assert built == tuple(
        task.request(transcript, clip, protocol=protocol) for transcript, clip in zip(transcripts, clips)
    )
    form = task.answer_form if protocol == SELF_REPORT else None
    assert built == tuple(
        GenerationRequest(
            template.safe_substitute(transcript=t, answer_fields=task.answer_form.block()), clip, None, form
        )
        for t, clip in zip(transcripts, clips)
    )
    with pytest.raises(ValueError):
        task.requests(transcripts, clips[:2], protocol=protocol)


def test_a_prompt_file_edited_added_or_removed_between_runs_is_read_again(tmp_path):
    """``--prompts DIR``: each batch looks the file up again, so an edit (another modification time and size), a
    file added and a file removed between runs all show in the next run's requests."""
    task = TASKS["story"]
    shipped = task.requests(["hello"], [None])[0].prompt
    assert task.requests(["hello"], [None], tmp_path)[0].prompt == shipped  # no file in DIR: the shipped one
    override = tmp_path / task.prompt_file
    override.write_text("First version: $transcript\n", encoding="utf-8")
    assert [r.prompt for r in task.requests(["a", "b"], [None, None], tmp_path)] == [
        "First version: a",
        "First version: b",
    ]
    stamp = override.stat().st_mtime_ns
    override.write_text("Second, longer version: $transcript\n", encoding="utf-8")
    os.utime(override, ns=(stamp + 10**9, stamp + 10**9))
    assert task.request("a", None, tmp_path).prompt == "Second, longer version: a"
    assert task.render("a", tmp_path) == "Second, longer version: a"
    override.unlink()
    assert task.requests(["hello"], [None], tmp_path)[0].prompt == shipped
    with pytest.raises(ValueError, match="unknown VIBE protocol"):
        task.requests(["hello"], [None], protocol="nonsense")


WORDS = ["the", "The", "bus", "leaves", "at", "seven", "7", "twenty", "20", "colour", "color", "it's", "it", "is",
         "half-past", "Hello,", "world!", "naïve", "café", "Mr.", "don't", "a", "a", "a", "uh", "hmm", "—", "42nd"]  # fmt: skip
SPACES = [" ", " ", " ", "  ", "\t", "\n", "\u00a0", "\u2003"]


def random_text(rng: np.random.Generator, most: int) -> str:
    words = rng.choice(WORDS, size=int(rng.integers(0, most + 1)))
    return "".join(str(word) + SPACES[rng.integers(len(SPACES))] for word in words)


@pytest.mark.parametrize("normalise", [True, False])
def test_word_errors_equal_jiwers_on_random_strings(normalise):
    """Random word strings (repeats, so that several alignments tie; empty sides; every kind of whitespace;
    what the normaliser equates) and near-copies of a reference (a few words changed, dropped or added)."""
    rng = np.random.default_rng(7 if normalise else 8)
    references = [random_text(rng, 14) for _ in range(60)] + [random_text(rng, 150) for _ in range(3)] + ["", " \t "]
    pairs = [(reference, random_text(rng, 16)) for reference in references for _ in range(4)]
    for reference in references:
        words = reference.split()
        for _ in range(4):
            edited = [w for w in words if rng.random() > 0.15]
            edited = [str(rng.choice(WORDS)) if rng.random() < 0.15 else w for w in edited]
            edited.insert(int(rng.integers(len(edited) + 1)), str(rng.choice(WORDS)))
            pairs.append((reference, " ".join(edited)))
    pairs += [(reference, reference) for reference in references]
    for reference, hypothesis in pairs:
        expected = word_errors_reference(reference, hypothesis, normalise=normalise)
        assert word_errors(reference, hypothesis, normalise=normalise) == expected, (reference, hypothesis)
        assert word_errors(reference, hypothesis, normalise=normalise) == expected  # memoised: the same again
    assert any(word_errors_reference(r, h).substitutions and word_errors_reference(r, h).deletions for r, h in pairs)


def test_cells_give_what_at_gives():
    """The BASIS table builders' lookups (:func:`harness.checks.basis_common.tables.cells`) against ``.at``: text
    (pandas' str dtype and objects), numbers (NumPy scalars, as ``.at`` returns them) and a missing value."""
    table = pd.DataFrame(
        {"row": [4, 2, 9], "question": ["Why?", "Ünï", None], "score": [1.5, 2.0, np.nan], "n": [1, 2, 3]}
    )
    table["object"] = pd.Series(["a", 3, None], dtype=object)
    indexed, looked_up = table.set_index("row"), cells(table, ["question", "score", "n", "object"])
    for row in table["row"]:
        for column in ("question", "score", "n", "object"):
            expected, got = indexed.at[row, column], looked_up[column][row]
            assert type(got) is type(expected) and (got == expected or (pd.isna(got) and pd.isna(expected)))
