"""The field reader's extractions are kept in the output cache by (reader fingerprint, task, answer): a re-score
reads them back, giving the tables the reader itself gives."""

import dataclasses

import pandas as pd
import pytest
from pandas.testing import assert_frame_equal

from harness.cache import OutputCache
from harness.extraction import fields, memo
from harness.extraction.memo import Extracted
from harness.tasks import TASKS

ANSWERS = [
    "Here is the story.\n\n**Occupation:** Nurses\n- Hobby: rock-climbing (weekends)\nName: Sam",
    "I'm sorry, I cannot make assumptions about a person from their voice.",
    "",
    "  \n ",
    "A story with no fields at all.",
    "Here is the story.\n\n**Occupation:** Nurses\n- Hobby: rock-climbing (weekends)\nName: Sam",
    "Occupation: the Mechanic!\nHobby: hikes",
]


def answers_table(answers=ANSWERS):
    return pd.DataFrame({"utterance_id": [f"u{i}" for i in range(len(answers))], "answer": answers})


@pytest.mark.parametrize("task_name", ["story", "advisory"])
def test_a_cached_rescore_reads_every_extraction_back_and_gives_the_readers_tables(tmp_path, monkeypatch, task_name):
    task = TASKS[task_name]
    expected = fields.attribute_table(answers_table(), task)
    cache = OutputCache(tmp_path / "cache")
    calls = []
    reader = fields.extract_fields
    monkeypatch.setattr(memo, "extract_fields", lambda answer, task: calls.append(answer) or reader(answer, task))
    first = memo.field_attribute_table(answers_table(), task, cache)
    assert len(calls) == 4  # the distinct non-empty answers, each read once
    assert len(cache) == 4
    monkeypatch.setattr(memo, "extract_fields", lambda *args: pytest.fail("a cached extraction was read again"))
    again = memo.field_attribute_table(answers_table(), task, OutputCache(tmp_path / "cache"))
    for result in (first, again):
        assert_frame_equal(result[0], expected[0])
        assert_frame_equal(result[1], expected[1])


def test_another_reader_or_task_extracts_afresh(tmp_path, monkeypatch):
    cache = OutputCache(tmp_path / "cache")
    memo.field_attribute_table(answers_table(), TASKS["story"], cache)
    memo.field_attribute_table(answers_table(), TASKS["advisory"], cache)
    assert len(cache) == 8
    monkeypatch.setattr(memo, "field_reader_fingerprint", lambda: "field-reader:changed")
    memo.field_attribute_table(answers_table(), TASKS["story"], cache)
    assert len(cache) == 12


def test_without_a_cache_every_distinct_answer_is_read_once():
    values, statuses = memo.field_attribute_table(answers_table(), TASKS["story"], None)
    expected = fields.attribute_table(answers_table(), TASKS["story"])
    assert_frame_equal(values, expected[0])
    assert_frame_equal(statuses, expected[1])


def test_the_reader_fingerprint_follows_its_source():
    assert memo.field_reader_fingerprint().startswith("field-reader:")
    assert memo.source_fingerprint("harness.extraction.fields") != memo.source_fingerprint("harness.extraction.llm")


def test_a_retitled_task_misses_the_entries_of_an_extractor_that_reads_the_title(tmp_path):
    """The LLM extractor's prompt names the task's title: its entries must not be found under another title; the
    field reader reads only the attributes, so its entries (as shipped in the demo exports) still are."""
    story = TASKS["story"]
    retitled = dataclasses.replace(story, title=story.title + " (retold)")
    cache = OutputCache(tmp_path / "cache")
    asked: list[tuple[str, str]] = []

    def extract(task):
        return lambda texts: [
            asked.append((task.title, text)) or Extracted(fields.extract_fields(text, task)) for text in texts
        ]

    for reads_title in (True, False):
        memo.memoised_extractions(cache, "fp", story, ANSWERS[:1], extract(story), reads_title=reads_title)
    assert len(asked) == 2 and len(cache) == 2
    memo.memoised_extractions(cache, "fp", retitled, ANSWERS[:1], extract(retitled), reads_title=True)
    assert asked[-1] == (retitled.title, ANSWERS[0]) and len(cache) == 3
    memo.memoised_extractions(cache, "fp", retitled, ANSWERS[:1], extract(retitled), reads_title=False)
    assert len(asked) == 3 and len(cache) == 3
    assert memo.task_identity(story, reads_title=True) != memo.task_identity(retitled, reads_title=True)
    assert memo.task_identity(story, reads_title=False) == memo.task_identity(retitled, reads_title=False)


def test_a_stored_extraction_is_read_from_the_database_and_parsed_once_per_cache(tmp_path, monkeypatch):
    """The VIBE arms repeat the original recordings' answers: once a table has read an extraction back, another
    table of the same cache takes the parsed one (no lookup, no JSON), and gives the same tables."""
    task = TASKS["story"]
    expected = fields.attribute_table(answers_table(), task)
    memo.field_attribute_table(answers_table(), task, OutputCache(tmp_path / "cache"))  # made and stored
    cache = OutputCache(tmp_path / "cache")
    looked_up: list[str] = []
    get_many = cache.get_many
    monkeypatch.setattr(cache, "get_many", lambda keys: looked_up.extend(keys) or get_many(keys))
    parsed: list[str] = []
    from_json = Extracted.from_json
    monkeypatch.setattr(Extracted, "from_json", classmethod(lambda cls, text: parsed.append(text) or from_json(text)))
    first = memo.field_attribute_table(answers_table(), task, cache)
    assert len(looked_up) == len(parsed) == 4  # the distinct non-empty answers
    again = memo.field_attribute_table(answers_table(ANSWERS[::-1]), task, cache)
    assert len(looked_up) == len(parsed) == 4
    assert_frame_equal(first[0], expected[0])
    assert_frame_equal(first[1], expected[1])
    reversed_expected = fields.attribute_table(answers_table(ANSWERS[::-1]), task)
    assert_frame_equal(again[0], reversed_expected[0])
    assert_frame_equal(again[1], reversed_expected[1])
    memo.field_attribute_table(answers_table(), task, OutputCache(tmp_path / "cache"))  # another cache reads anew
    assert len(looked_up) == 4 and len(parsed) == 8
