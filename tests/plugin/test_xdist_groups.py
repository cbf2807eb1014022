"""``--dist loadgroup`` keeps each ``xdist_group`` on one worker (harness/plugin/xdist_groups.py), whichever pytest
runs it: pytest 9.2's structured node ids dropped the suffix pytest-xdist 3.8 writes, and with it the grouping."""

from __future__ import annotations

import re
from collections import defaultdict

import pytest

pytest_plugins = ["pytester"]

GROUPED_TESTS = """
import pytest

@pytest.mark.xdist_group(name="engine-a")
@pytest.mark.parametrize("i", range(4))
def test_a(i):
    pass

@pytest.mark.xdist_group("engine-b")
@pytest.mark.parametrize("i", range(4))
def test_b(i):
    pass

def test_free():
    pass
"""


def workers_by_test(output: str) -> dict[str, set[str]]:
    """Per test function (``test_a``, ...), the workers that ran it, from ``-v`` lines ``[gwN] ... PASSED id``."""
    ran = defaultdict(set)
    for worker, node_id in re.findall(r"\[(gw\d+)\].*?PASSED (\S+)", output):
        ran[node_id.split("::")[-1].split("[")[0].split("@")[0]].add(worker)
    return ran


@pytest.fixture
def grouped(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeconftest(
        "from harness.plugin.xdist_groups import register_xdist_groups\n\n"
        "def pytest_configure(config):\n    register_xdist_groups(config)\n"
    )
    pytester.makepyfile(test_grouped=GROUPED_TESTS)
    return pytester


def test_under_loadgroup_each_group_runs_on_one_worker(grouped):
    result = grouped.runpytest_subprocess("-n", "2", "--dist", "loadgroup", "-v", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=9)
    output = result.stdout.str()
    assert (
        len(re.findall(r"PASSED \S+@engine-a\b", output)) == 4
        and len(re.findall(r"PASSED \S+@engine-b\b", output)) == 4
    )
    ran = workers_by_test(output)
    assert len(ran["test_a"]) == 1 and len(ran["test_b"]) == 1, dict(ran)


def test_other_distributions_keep_the_node_ids(grouped):
    result = grouped.runpytest_subprocess("-n", "2", "--dist", "load", "-v", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=9)
    assert "@engine" not in result.stdout.str()
