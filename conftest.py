"""Registers the lalm-fairness pytest entry point for everything run from this repository (it loads the gate's
plugin, harness.plugin, for a gate run)."""

pytest_plugins = ["lalm_fairness_pytest"]
