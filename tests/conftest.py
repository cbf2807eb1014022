"""The harness's own tests, laid out as the package is (tests/<package>/test_*.py).

Helpers the tests share are the package :mod:`support` (tests/support/): pytest puts this folder on
``sys.path`` when it loads this conftest, so a test anywhere below imports ``from support.gate import ...``.
"""


def pytest_collection_modifyitems(config, items):
    """The modules that hold a test marked ``slow`` run first, each module whole and in its collected order.

    pytest-xdist's load scheduler hands the first quarter of the suite to the workers in turn and the rest to
    whichever finishes first. With the minute-long tests up front, the two workers start on them together and the
    short tests fill in behind; collected in path order, a three-minute test could start last and leave the other
    worker idle. Keeping a module whole keeps its module-scoped fixtures to one set-up per worker."""
    slow_modules = {item.module.__name__ for item in items if item.get_closest_marker("slow") is not None}
    items.sort(key=lambda item: item.module.__name__ not in slow_modules)
