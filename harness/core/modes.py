"""The four BASIS-Bench evaluation modes (speech/text x implicit/explicit, BASIS-Bench §3.4) and the content tasks of robustness."""

from __future__ import annotations

# The BASIS-Bench evaluation modes (§3.4: modality x marker) and robustness tasks (§3.1), in report order.
MODES = ("speech-implicit", "speech-explicit", "text-implicit", "text-explicit")
SPEECH_IMPLICIT = MODES[0]
"""The one mode where only the voice carries the group: the model must hear it (the gate's audio floor)."""


def mode_has_audio(mode: str | None) -> bool:
    """Whether a BASIS evaluation mode gives the model the recording (the speech modes) or only its text."""
    return str(mode).startswith("speech-")


BASELINE_MODE = "text-baseline"
"""Age personalization's fifth mode (§4.3, Table 7): the transcript asked with no response style named and no
label, so the judge reads the backbone's default register; only for open-answer (ELIP-Pair) sets."""
PERSONALIZATION_MODES = (*MODES, BASELINE_MODE)


ROBUSTNESS_TASKS = ("asr", "sqa")


PARETO_MODE = "speech-implicit"  # the mode of the personalization-versus-ICAT Pareto plot (BASIS-Bench Figure 2)
PARETO_MODES = (PARETO_MODE, "speech-explicit")
"""Figure 2 (centre) draws each model in speech-implicit (hollow) and speech-explicit (filled)."""
