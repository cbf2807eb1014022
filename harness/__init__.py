"""lalm-fairness: a pytest regression harness that gates speech LLM releases on voice-induced bias.

Flow, in one direction: corpus -> model outputs (cached) -> extraction -> metrics -> verdicts -> report.
"""

__version__ = "0.1.0"
