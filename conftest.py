"""Registers the lalm-fairness pytest plugin for everything run from this repository."""

pytest_plugins = ["harness.plugin"]
