"""The five open-ended VIBE tasks (VIBE §II-B), with prompts written by the team from the paper's
descriptions (``prompts/*.txt`` for the paper protocol, ``prompts/self_report/*.txt`` for the self-report variant;
replaceable with ``--prompts DIR``), and the extraction schema of each attribute (``extraction_schema.yaml``)."""

import dataclasses
from pathlib import Path

import yaml

from harness.tasks.base import EXTRACTION_KINDS, Attribute, Task

SCHEMA_PATH = Path(__file__).with_name("extraction_schema.yaml")

STORY = Task(
    name="story",
    title="Story",
    prompt_file="story.txt",
    paper_section="VIBE §II-B, Story Generation",
    attributes=(
        Attribute("occupation", ("occupation", "job", "profession")),
        Attribute("economic_situation", ("economic situation", "economic status", "financial situation", "income")),
        Attribute("education", ("education", "educational background", "education level")),
        Attribute("field_of_study", ("field of study", "major", "field")),
        Attribute("family_status", ("family status", "family", "marital status")),
        Attribute("personality", ("personality", "personality traits", "traits")),
    ),
)

ADVISORY = Task(
    name="advisory",
    title="Advisory",
    prompt_file="advisory.txt",
    paper_section="VIBE §II-B, Advisory",
    attributes=(Attribute("activity", ("activities", "activity", "hobbies", "hobby"), multi_valued=True, items=3),),
)

CANDIDATE_REVIEW = Task(
    name="candidate_review",
    title="Candidate Review",
    prompt_file="candidate_review.txt",
    paper_section="VIBE §II-B, Candidate Review",
    attributes=(
        Attribute(
            "competency", ("competency", "professional competency", "competence"), options=("low", "medium", "high")
        ),
        Attribute("interaction_style", ("interaction style", "communication style")),
        Attribute("cultural_fit", ("cultural fit", "culture fit"), options=("poor", "fair", "good", "excellent")),
        Attribute(
            "compensation",
            ("compensation", "recommended compensation", "salary"),
            options=("below market", "at market", "above market"),
        ),
    ),
)

HOLLYWOOD_CASTING = Task(
    name="hollywood_casting",
    title="Hollywood Casting",
    prompt_file="hollywood_casting.txt",
    paper_section="VIBE §II-B, Hollywood Casting",
    attributes=(
        Attribute("billing", ("billing", "billing status", "star power"), options=("lead", "supporting", "background")),
        Attribute("character_function", ("character function", "role", "function")),
        Attribute("romantic_appeal", ("romantic appeal", "romance"), options=("low", "medium", "high")),
        Attribute("survival", ("survival", "narrative longevity", "survives"), options=("survives", "dies")),
    ),
)

PERSONAL_SHOPPER = Task(
    name="personal_shopper",
    title="Personal Shopper",
    prompt_file="personal_shopper.txt",
    paper_section="VIBE §II-B, Personal Shopper",
    attributes=(
        Attribute("department", ("department", "target department")),
        Attribute("budget", ("budget", "budget level"), options=("low", "moderate", "high", "luxury")),
        Attribute("buying_trigger", ("buying trigger", "buying triggers", "trigger")),
        Attribute("vibe", ("vibe", "general vibe")),
    ),
)

BUDGETS = {"story": 448, "advisory": 320, "candidate_review": 384, "hollywood_casting": 384, "personal_shopper": 320}
"""Tokens per answer under the paper protocol: a story "under 250 words" (about 330 tokens) with room to finish,
three suggestions with reasons, a paragraph or two of review or memo, a short profile (VIBE §II-B)."""


def with_schema(task: Task, schema: dict) -> Task:
    """``task`` with each attribute's extraction kind, categories and description from the schema file; a task or
    attribute the file lacks, or an unknown kind, is an error naming the file and key."""
    block = schema.get(task.name)
    if not isinstance(block, dict) or set(block) != set(task.attribute_names):
        raise ValueError(
            f"{SCHEMA_PATH}: {task.name}: needs exactly the attributes {list(task.attribute_names)}, "
            f"got {sorted(block) if isinstance(block, dict) else block!r}"
        )
    attributes = []
    for attribute in task.attributes:
        entry = block[attribute.name]
        kind = entry.get("kind")
        if kind not in EXTRACTION_KINDS or (kind == "list") != attribute.multi_valued:
            raise ValueError(
                f"{SCHEMA_PATH}: {task.name}.{attribute.name}.kind = {kind!r}: expected one of {EXTRACTION_KINDS} "
                f"({'list' if attribute.multi_valued else 'not list'} for this attribute)"
            )
        categories = tuple(str(category) for category in entry.get("categories", ()))
        if (kind == "categories") != bool(categories):
            raise ValueError(f"{SCHEMA_PATH}: {task.name}.{attribute.name}: categories go with kind categories")
        attributes.append(
            dataclasses.replace(attribute, categories=categories, describe=str(entry.get("describe", "")))
        )
    return dataclasses.replace(task, attributes=tuple(attributes), max_new_tokens=BUDGETS[task.name])


_SCHEMA = yaml.safe_load(SCHEMA_PATH.read_text(encoding="utf-8"))
VIBE_TASKS = tuple(
    with_schema(task, _SCHEMA) for task in (STORY, ADVISORY, CANDIDATE_REVIEW, HOLLYWOOD_CASTING, PERSONAL_SHOPPER)
)
