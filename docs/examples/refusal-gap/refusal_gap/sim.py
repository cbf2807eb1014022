"""The simulators' answers to the refusal-gap prompt (entry point group ``lalm_fairness.responders``)."""

from .check import PROMPT


class RefusalResponder:
    """Answers :data:`~refusal_gap.check.PROMPT`: an empty answer for every third recording, by content hash."""

    def claims(self, request):
        return "refusal_gap" if request.prompt == PROMPT else None

    def respond(self, request, listening):
        return "" if int(request.audio.content_hash[:8], 16) % 3 == 0 else "Here is my answer."
