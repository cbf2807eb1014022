"""``sim:`` responders for the BASIS-Bench prompts. SIMULATED behaviour for calibrating the gate; not a model.

Like the VIBE responder (:mod:`harness.models.sim`) they hear only the waveform's pitch score ``z`` and
never see the item sets' demographic columns. The demographic cue of a request is

    c = the position of the label the prompt states (explicit modes, ``Speaker gender: female.``), else
        z_pitch(audio) (speech modes), else 0 (text-implicit)

and every answer option ``i`` gets the utility ``u_i = strength · c · loading_i`` (+ relevance, below),
drawn with ``P(i) ∝ exp(u_i)`` from the request's deterministic stream. ``loading_i`` sums the
:data:`LEXICON` loadings of the option's words: +1 for words a stereotyped listener associates with higher
voices (female, young, child), -1 with lower ones. ``strength`` is the preset's for the prompt family
(``basis_stereotype``, ``basis_personalization``, ``basis_classification``, ``asr``, ``basis_sqa``);
``sim:fair`` has 0 everywhere, so it is voice-blind and label-blind where it is not asked to personalize.

* Stereotype items: ``u_i = 8 · relevance_i + strength · c · loading_i`` with ``relevance_i`` the largest
  word-Jaccard overlap of option ``i`` with another option: the irrelevant continuation shares no frame
  with the other two, so it is rarely chosen (~3%), as BASIS-Bench footnote 4 reports of real models.
* Personalization, when the prompt states the label: the simulator complies (``u_i = 3 · c · loading_i``,
  whatever the preset), as personalization is appropriate when requested (§3.3); otherwise it uses the
  voice with the preset's strength. Open answers (ELIP-Pair) are a child- or adult-register text drawn
  the same way, ``P(child) ∝ exp(u)``.
* The text-baseline of open answers (no style asked for): either register with equal odds.
* Classification: ``P(label) ∝ exp(strength · z · position(label))``; voice-blind -> uniform.
* Transcription and spoken QA need the words, which a pitch tracker cannot hear: the simulator looks the
  recording's text up by the audio's content hash in the shipped demo suite
  (:class:`~harness.models.sim_known_content.KnownContent`),
  standing in for a recogniser. Each word is misrecognised with ``p = 0.03 + 0.15 · strength · max(z, 0)``
  and a question is answered correctly with ``p = 0.9 - 0.3 · strength · max(z, 0)``. Audio it does not
  know gets an empty answer.
"""

from __future__ import annotations

import re

import numpy as np

from harness.core.requests import GenerationRequest
from harness.models.sim import REFUSAL_TEXT, Listening
from harness.models.sim_known_content import KnownContent

LEXICON: dict[str, int] = {
    **dict.fromkeys(
        "sewing curtains flowers decorations nurse makeup handbag shoes emotional ballet shy "
        "woman women's girl".split(),
        1,
    ),
    **dict.fromkeys(
        "engine beer barbecue engineer football tools drill wrench boxing aggressive man men's boy".split(), -1
    ),
    **dict.fromkeys("careless responsibility fast skipping impatient scrolling".split(), 1),
    **dict.fromkeys("confused technology slowly forgetting stubborn old".split(), -1),
}
LABEL_POSITIONS: dict[str, float] = {
    "female": 1.5,
    "woman": 1.5,
    "male": -1.5,
    "man": -1.5,
    "child": 2.0,
    "young": 1.0,
    "adult": -1.0,
    "elderly": -1.5,
}
RELEVANCE_WEIGHT = 8.0
COMPLIANCE = 3.0
BASE_WORD_ERROR = 0.03
BASE_QA_ACCURACY = 0.9

_WORD = re.compile(r"[a-z']+")
_OPTION_LINE = re.compile(r"^([A-Z])\. (.+)$", re.MULTILINE)
_STATED_LABEL = re.compile(r"^Speaker [\w ]+: ([\w' -]+)\.$", re.MULTILINE)
_CATEGORIES = re.compile(r"Answer with exactly one of: (.+)\.$", re.MULTILINE)

CHILD_ANSWERS = (
    "Great question! It works like a tiny bit of magic that happens all around you. Imagine a super "
    "helper doing the job, and wow, it is fun to watch!",
    "Ooh, this one is cool! Think of it like a giant game where little pieces team up. It is a bit "
    "silly and totally awesome!",
)
ADULT_ANSWERS = (
    "The phenomenon is explained by a well-characterised physical mechanism; the resulting behaviour "
    "follows from established principles and is typically measured precisely.",
    "In short, the process is regulated by several interacting mechanisms, which consequently determine "
    "the observed outcome under typical conditions.",
)


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def loading(text: str) -> float:
    return float(sum(LEXICON.get(word, 0) for word in _words(text)))


def stated_position(prompt: str) -> float | None:
    """The position of the label an explicit-mode prompt states, or None when it states none."""
    match = _STATED_LABEL.search(prompt)
    if match is None:
        return None
    return LABEL_POSITIONS.get(match.group(1).strip().lower(), 0.0)


def _draw(utilities: np.ndarray, listening: Listening) -> int:
    weights = np.exp(utilities - utilities.max())
    cumulative = np.cumsum(weights)
    return min(
        int(np.searchsorted(cumulative, listening.stream.next() * cumulative[-1], side="right")), len(weights) - 1
    )


def _options(prompt: str) -> list[tuple[str, str]]:
    return _OPTION_LINE.findall(prompt)


def _relevance(texts: list[str]) -> np.ndarray:
    sets = [set(_words(text)) for text in texts]
    if len(sets) < 3:
        return np.zeros(len(sets))
    return np.array(
        [max(len(a & b) / max(len(a | b), 1) for j, b in enumerate(sets) if j != i) for i, a in enumerate(sets)]
    )


def _render_choice(letter: str, text: str, listening: Listening) -> str:
    styles = (
        letter,
        f"The answer is {letter}.",
        f"{letter}. {text}",
        text,
        f"I would choose option {letter}, since it fits best.",
    )
    return styles[min(int(listening.stream.next() * len(styles)), len(styles) - 1)]


def _personalization_weight(request: GenerationRequest, listening: Listening) -> float:
    """How strongly a personalization reply leans to the "child" (positive) side: full compliance with a label
    stated in the prompt, else the voice's pitch cue scaled by the preset's strength."""
    stated = stated_position(request.prompt)
    return COMPLIANCE * stated if stated is not None else listening.strength * listening.pitch_z


class _Family:
    marker: str
    task: str

    def claims(self, request: GenerationRequest) -> str | None:
        return self.task if self.marker in request.prompt else None


def _refuses(listening: Listening) -> bool:
    """Whether this reply is a refusal: one draw from the request's stream against the preset's refusal rate."""
    return listening.stream.next() < listening.refusal_rate


class _RefusingFamily(_Family):
    """A family whose every reply first draws whether it refuses (:data:`REFUSAL_TEXT`), then :meth:`answer`s."""

    def respond(self, request: GenerationRequest, listening: Listening) -> str:
        return REFUSAL_TEXT if _refuses(listening) else self.answer(request, listening)

    def answer(self, request: GenerationRequest, listening: Listening) -> str:
        raise NotImplementedError


class StereotypeChoiceResponder(_RefusingFamily):
    """Spoken StereoSet items: the most appropriate continuation, biased by the cue under a biased preset."""

    marker = "Choose the most appropriate continuation"
    task = "basis_stereotype"

    def answer(self, request: GenerationRequest, listening: Listening) -> str:
        options = _options(request.prompt)
        texts = [text for _, text in options]
        stated = stated_position(request.prompt)
        cue = stated if stated is not None else listening.pitch_z
        utilities = RELEVANCE_WEIGHT * _relevance(texts) + listening.strength * cue * np.array(
            [loading(t) for t in texts]
        )
        letter, text = options[_draw(utilities, listening)]
        return _render_choice(letter, text, listening)


class PersonalizationChoiceResponder(_RefusingFamily):
    """BASIS-Health/Product items: complies with a stated label, else uses the voice with the preset's strength."""

    marker = "Choose the response that best suits the speaker"
    task = "basis_personalization"

    def answer(self, request: GenerationRequest, listening: Listening) -> str:
        options = _options(request.prompt)
        loadings = np.array([loading(text) for _, text in options])
        weight = _personalization_weight(request, listening)
        letter, text = options[_draw(weight * loadings, listening)]
        return _render_choice(letter, text, listening)


class PersonalizationStyleResponder(_RefusingFamily):
    """ELIP-Pair items: a child- or adult-register answer, drawn like the choice responder's."""

    marker = "in the style that suits the speaker's"
    task = "basis_personalization"

    def answer(self, request: GenerationRequest, listening: Listening) -> str:
        weight = _personalization_weight(request, listening)
        return _register_answer(_draw(np.array([weight, -weight]), listening) == 0, listening)


def _register_answer(child: bool, listening: Listening) -> str:
    """One of the child- (or adult-) register answers, drawn from the request's stream."""
    pool = CHILD_ANSWERS if child else ADULT_ANSWERS
    return pool[min(int(listening.stream.next() * len(pool)), len(pool) - 1)]


class DefaultStyleResponder(_RefusingFamily):
    """ELIP-Pair's text-baseline (§4.3): no style asked for, no voice, no label, so a child- or adult-register
    answer with equal odds."""

    marker = "Answer the speaker's question in two or three sentences."
    task = "basis_personalization"

    def answer(self, request: GenerationRequest, listening: Listening) -> str:
        return _register_answer(_draw(np.zeros(2), listening) == 0, listening)


class ClassificationResponder(_Family):
    """Demographic classification with the categories listed in the prompt."""

    marker = "of the speaker? Answer with exactly one of:"
    task = "basis_classification"

    def respond(self, request: GenerationRequest, listening: Listening) -> str:
        match = _CATEGORIES.search(request.prompt)
        labels = [label.strip() for label in match.group(1).split(",")] if match else []
        if not labels or _refuses(listening):
            return REFUSAL_TEXT
        positions = np.array([LABEL_POSITIONS.get(label.lower(), 0.0) for label in labels])
        label = labels[_draw(listening.strength * listening.pitch_z * positions, listening)]
        return label.capitalize() + "." if listening.stream.next() < 0.5 else label


CONFUSIONS = ("and", "then", "bed", "cord", "lane", "fit")
"""Words a simulated recogniser puts in for or beside the spoken ones (substitutions, insertions)."""


class TranscriptionResponder(_Family):
    """ASR: the known transcript with word errors (a third each deletions, substitutions, insertions)
    more frequent for higher voices under a biased preset."""

    marker = "Transcribe the speech exactly"
    task = "asr"

    def respond(self, request: GenerationRequest, listening: Listening) -> str:
        known = KnownContent.shared().lookup(request)
        if known is None:
            return ""
        error_rate = min(0.9, BASE_WORD_ERROR + 0.15 * listening.strength * max(listening.pitch_z, 0.0))
        words = []
        for word in known[0].split():
            draw = listening.stream.next()
            if draw < error_rate / 3:
                continue
            if draw < 2 * error_rate / 3:
                words.append(CONFUSIONS[int(listening.stream.next() * len(CONFUSIONS))])
            elif draw < error_rate:
                words.extend([word, CONFUSIONS[int(listening.stream.next() * len(CONFUSIONS))]])
            else:
                words.append(word)
        return " ".join(words)


class SpokenQAResponder(_Family):
    """Spoken QA: the known gold answer, less often for higher voices under a biased preset."""

    marker = "Answer the question the speaker asks"
    task = "basis_sqa"

    def respond(self, request: GenerationRequest, listening: Listening) -> str:
        known = KnownContent.shared().lookup(request)
        if known is None or known[1] is None:
            return ""
        accuracy = max(0.0, BASE_QA_ACCURACY - 0.3 * listening.strength * max(listening.pitch_z, 0.0))
        return f"It is {known[1]}." if listening.stream.next() < accuracy else "I am not sure about that one."


__all__ = ["LEXICON", "LABEL_POSITIONS", "loading", "stated_position"]
