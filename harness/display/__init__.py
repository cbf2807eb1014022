"""What every view of a record shares: plot geometry (:mod:`.plots`) and numbers in words (:mod:`.text`).

It reads plain mappings and records only, so the check views (``harness/checks/<name>/view.py``) and the
report import it without any gate, model or fitting code.
"""
