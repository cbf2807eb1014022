"""The harness's own tests, laid out as the package is (tests/<package>/test_*.py).

Helpers the tests share are the package :mod:`support` (tests/support/): pytest puts this folder on
``sys.path`` when it loads this conftest, so a test anywhere below imports ``from support.gate import ...``.

Every gate run of the session (in-process, in xdist workers and in the subprocesses the tests start) keeps its
counterfactual arms in one shared store (``$LALM_ARM_STORE``, :func:`harness.data.voice_transforms.arm_audio.arm_folder`)
unless a test says otherwise: an arm depends on the recording and the transform only, and resynthesising the demo's
arms was 40% of a cold simulator gate run, which dozens of tests start. The tests of the store itself, and of a cold
run's arm counts, unset it. The simulators' F0 of each clip is kept beside it (``$LALM_SIM_F0_STORE``,
:func:`harness.models.sim.stored_f0_hz`): a fifth of a warm simulator gate run's CPU.
"""

import os
import shutil
import tempfile

from harness.data.voice_transforms.arm_audio import ARM_STORE_ENV
from harness.models.sim import F0_STORE_ENV
from harness.plugin.xdist_groups import register_xdist_groups


def pytest_configure(config):
    """The suite's ``xdist_group`` marks kept under ``--dist loadgroup`` (CI's engine stage: one engine per worker;
    :mod:`harness.plugin.xdist_groups`); the session's shared arm store, made by the process that starts the others
    (xdist's controller, or the only process) and removed when it ends, and so the simulators' F0 store; a store the
    caller named is used as it is."""
    register_xdist_groups(config)
    if hasattr(config, "workerinput") or os.environ.get(ARM_STORE_ENV):
        return
    store = tempfile.mkdtemp(prefix="lalm-test-arms-")
    os.environ[ARM_STORE_ENV] = store
    f0_store = None if os.environ.get(F0_STORE_ENV) else tempfile.mkdtemp(prefix="lalm-test-sim-f0-")
    if f0_store is not None:
        os.environ[F0_STORE_ENV] = f0_store

    def remove() -> None:
        os.environ.pop(ARM_STORE_ENV, None)
        shutil.rmtree(store, ignore_errors=True)
        if f0_store is not None:
            os.environ.pop(F0_STORE_ENV, None)
            shutil.rmtree(f0_store, ignore_errors=True)

    config.add_cleanup(remove)


def pytest_collection_modifyitems(config, items):
    """The modules that hold a test marked ``slow`` run first, each module whole and in its collected order.

    pytest-xdist's load scheduler hands the first quarter of the suite to the workers in turn and the rest to
    whichever finishes first. With the minute-long tests up front, the two workers start on them together and the
    short tests fill in behind; collected in path order, a three-minute test could start last and leave the other
    worker idle. Keeping a module whole keeps its module-scoped fixtures to one set-up per worker."""
    slow_modules = {item.module.__name__ for item in items if item.get_closest_marker("slow") is not None}
    items.sort(key=lambda item: item.module.__name__ not in slow_modules)
