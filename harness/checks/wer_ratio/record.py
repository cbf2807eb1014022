"""The results.json record of a WER-ratio case: the ratio record of the semantic-aware checks."""

from harness.checks.semantic_aware.record import RatioRecord

RECORD = RatioRecord
