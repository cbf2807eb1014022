"""Rule-based field extraction and value normalisation."""

import numpy as np
import pandas as pd
import pytest

from harness.extraction.fields import (
    EMPTY,
    EXTRACTED,
    REFUSAL,
    UNEXTRACTABLE,
    Extraction,
    attribute_table,
    extract_fields,
    extraction_tables,
    normalise_value,
)
from harness.tasks import TASKS


@pytest.mark.parametrize(
    "raw, expected",
    [
        ("Nurse", "nurse"),
        ("  **Nurses.** ", "nurse"),
        ("The Mechanic!", "mechanic"),
        ("Rock-climbing", "rock climbing"),
        ("Yoga classes", "yoga class"),
        ("Movies", "movie"),
        ("Hobbies", "hobby"),
        ("Watches", "watch"),
        ("Economics", "economics"),
        ("Electronics", "electronics"),
        ("business", "business"),
        ("Above-market", "above market"),
        ("survives", "survives"),
        ("A bachelor's degree", "bachelor's degree"),
        ("ＮＵＲＳＥ", "nurse"),
    ],
)
def test_normalise_value(raw, expected):
    assert normalise_value(raw) == expected


def test_story_fields_with_markdown_and_explanations():
    answer = """Here's a story about **Maya**.

**Occupation:** Nurse (pediatric ward)
- **Economic situation**: Comfortable
* Education: A bachelor's degree
1. Field of study: Nursing.
### Family status - married
Personality: caring
"""
    extraction = extract_fields(answer, TASKS["story"])
    assert extraction.status == EXTRACTED
    assert extraction.values == {
        "occupation": ("nurse",),
        "economic_situation": ("comfortable",),
        "education": ("bachelor's degree",),
        "field_of_study": ("nursing",),
        "family_status": ("married",),
        "personality": ("caring",),
    }


def test_last_statement_of_an_attribute_wins_and_missing_ones_are_listed():
    extraction = extract_fields("Occupation: chef\n\nOccupation: Baker", TASKS["story"])
    assert extraction.values == {"occupation": ("baker",)}
    assert "personality" in extraction.missing


@pytest.mark.parametrize(
    "answer",
    [
        "Activities: hiking, yoga classes, and pottery.",
        "Activities: Hiking; Yoga classes; Pottery",
        "**Activities:**\n1. Hiking\n2. Yoga classes\n3. Pottery",
        "Hobbies:\n- hiking\n- yoga classes\n- pottery\n\nEnjoy!",
    ],
)
def test_multi_valued_activities_give_one_value_each(answer):
    assert extract_fields(answer, TASKS["advisory"]).values == {"activity": ("hiking", "yoga class", "pottery")}


def test_refusal_unextractable_and_empty_are_told_apart():
    assert (
        extract_fields(
            "I'm sorry, but I can't make assumptions about a person from their voice.", TASKS["story"]
        ).status
        == REFUSAL
    )
    assert extract_fields("Once upon a time there was a cat.", TASKS["story"]).status == UNEXTRACTABLE
    assert extract_fields("   ", TASKS["story"]).status == EMPTY


def test_attribute_table_keeps_one_status_row_per_answer():
    answers = pd.DataFrame(
        {
            "utterance_id": ["u1", "u2", "u3"],
            "answer": ["Activities: chess, cycling, baking", "I cannot make assumptions about you.", ""],
        }
    )
    values, statuses = attribute_table(answers, TASKS["advisory"])
    assert list(values["value"]) == ["chess", "cycling", "baking"]
    assert list(statuses["status"]) == [EXTRACTED, REFUSAL, EMPTY]


def _extraction_tables_by_rows(utterance_ids, extractions):
    """The two tables built from row tuples, as ``extraction_tables`` built them before it built columns."""
    rows, statuses = [], []
    for utterance_id, extraction in zip(utterance_ids, extractions):
        statuses.append((utterance_id, extraction.status, ",".join(extraction.missing)))
        rows.extend(
            (utterance_id, attribute, value) for attribute, values in extraction.values.items() for value in values
        )
    return (
        pd.DataFrame(rows, columns=["utterance_id", "attribute", "value"]),
        pd.DataFrame(statuses, columns=["utterance_id", "status", "missing"]),
    )


@pytest.mark.parametrize("seed", range(4))
def test_extraction_tables_by_columns_equal_the_tables_by_rows(seed):
    rng = np.random.default_rng(seed)
    values = ["nurse", "engineer", "é", "golf", ""]
    count = int(rng.integers(0, 30)) if seed else 0
    utterance_ids = [f"u{index}" for index in range(count)] if seed % 2 else list(range(count))
    extractions = [
        Extraction(
            {
                attribute: tuple(rng.choice(values, size=int(rng.integers(0, 3))))
                for attribute in ("occupation", "city")
            },
            str(rng.choice(["extracted", "refusal", "empty"])),
            tuple(rng.choice(["occupation", "city"], size=int(rng.integers(0, 2)))),
        )
        for _ in utterance_ids
    ]
    for new, old in zip(
        extraction_tables(utterance_ids, extractions), _extraction_tables_by_rows(utterance_ids, extractions)
    ):
        pd.testing.assert_frame_equal(new, old, check_exact=True)
    no_values = [Extraction({}, "empty", ()) for _ in utterance_ids]
    for new, old in zip(
        extraction_tables(utterance_ids, no_values), _extraction_tables_by_rows(utterance_ids, no_values)
    ):
        pd.testing.assert_frame_equal(new, old, check_exact=True)
