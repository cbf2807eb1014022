"""The four BASIS-Bench evaluation modes (speech/text x implicit/explicit, BASIS-Bench §3.4) and the content tasks of robustness."""

from __future__ import annotations

# The BASIS-Bench evaluation modes (§3.4: modality x marker) and robustness tasks (§3.1), in report order.
MODES = ("speech-implicit", "speech-explicit", "text-implicit", "text-explicit")


def mode_has_audio(mode: str | None) -> bool:
    """Whether a BASIS evaluation mode gives the model the recording (the speech modes) or only its text."""
    return str(mode).startswith("speech-")


ROBUSTNESS_TASKS = ("asr", "sqa")


PARETO_MODE = "speech-implicit"  # the mode of the personalization-versus-ICAT Pareto plot (BASIS-Bench Figure 2)
