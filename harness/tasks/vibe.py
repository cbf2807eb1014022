"""The five open-ended VIBE tasks (VIBE §II-B), with prompts written by the team from the paper's
descriptions (``prompts/*.txt``, replaceable with ``--prompts DIR``)."""

from harness.tasks.base import Attribute, Task

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

VIBE_TASKS = (STORY, ADVISORY, CANDIDATE_REVIEW, HOLLYWOOD_CASTING, PERSONAL_SHOPPER)
