"""The harness's own tests, laid out as the package is (tests/<package>/test_*.py).

Helpers the tests share are the package :mod:`support` (tests/support/): pytest puts this folder on
``sys.path`` when it loads this conftest, so a test anywhere below imports ``from support.gate import ...``.
"""
