"""The gate's test modules, shipped with the package: one test function per check, each ``assess(<check>_case)``.

In a model team's own repository, after ``pip install lalm-fairness``: ``pytest --pyargs harness.gate_tests``
(the pytest plugin is registered by the package's ``pytest11`` entry point; ``thresholds.yaml`` is read from
the directory pytest runs in). This repository's ``fairness_tests/`` collects these same functions.
"""
