"""``--dist loadgroup`` as pytest-xdist documents it, whichever pytest runs it.

pytest-xdist sends the tests of one ``xdist_group`` to one worker by suffixing each marked test's node id with
``@<group>`` while a worker collects, and its scheduler reads the suffix back. pytest 9.2 keeps node ids as a
structured id, so the suffix xdist 3.8 writes (to ``item._nodeid``) no longer takes effect, and the groups are
silently dealt out test by test (pytest-xdist issue #1386). The gate marks each case with its model's group
(:func:`harness.models.placement.xdist_group_name`) so that a model loads on one worker, and the suite's engine
tests mark theirs, so :func:`keep_xdist_groups` writes the suffix where it is missing, as xdist's proposed fix
(pull request #1388) does: into the structured id where pytest has one. Where xdist's own suffix took effect it
does nothing.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest


def xdist_group(item: pytest.Item) -> str | None:
    """The item's group as pytest-xdist names it: its ``xdist_group`` marks' names (``default`` for a mark
    without one), sorted and joined by ``_``; None for an item without the mark."""
    names = {
        str(mark.args[0] if mark.args else mark.kwargs.get("name", "default"))
        for mark in item.iter_markers("xdist_group")
    }
    return "_".join(sorted(names)) if names else None


def set_node_id(item: pytest.Item, node_id: str) -> None:
    """Give ``item`` the node id ``node_id``: the structured id of pytest 9.2 and later, the string before."""
    if hasattr(item, "_id"):
        from _pytest.nodeid import NodeId

        item._id = NodeId.parse(node_id)
    else:
        item._nodeid = node_id


def keep_xdist_groups(config: pytest.Config, items: Sequence[pytest.Item]) -> int:
    """Under ``--dist loadgroup`` (in a worker), suffix the node id of each grouped item that lacks it with
    ``@<group>``; returns how many it suffixed."""
    if not getattr(config.option, "loadgroup", False):
        return 0
    suffixed = 0
    for item in items:
        group = xdist_group(item)
        if group is not None and not item.nodeid.endswith(f"@{group}"):
            set_node_id(item, f"{item.nodeid}@{group}")
            suffixed += 1
    return suffixed


class XdistGroups:
    """The plugin object: :func:`keep_xdist_groups` after every other collection hook (xdist's included)."""

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, config: pytest.Config, items: list[pytest.Item]) -> None:
        keep_xdist_groups(config, items)


PLUGIN_NAME = "lalm_fairness_xdist_groups"


def register_xdist_groups(config: pytest.Config) -> None:
    """Register :class:`XdistGroups` once, where pytest-xdist is installed."""
    manager = config.pluginmanager
    if manager.hasplugin("xdist") and not manager.has_plugin(PLUGIN_NAME):
        manager.register(XdistGroups(), PLUGIN_NAME)
