"""Speech recognition as a gate task: the model under test is asked to transcribe each utterance.

Its transcripts feed the WER checks (semantic-aware expected-WER ratio; BASIS-Bench robustness).
"""

TRANSCRIPTION_PROMPT = "Transcribe the speech exactly. Answer with the transcript only."
