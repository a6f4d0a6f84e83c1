import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).parent
# Test helpers that are modules of their own (live_server) import from here.
sys.path.insert(0, str(TESTS))

# The tests that use this machine's local target: its loop devices over image
# files, the mounts under /run/iowatch, LKP's fixed paths, Ansible's storage
# role run against this machine, fio and fs_mark matrices that measure. Each
# data directory has its own images and mount points (filesystems.mount_root),
# so two such tests do not take each other's devices, but more than two
# measuring at once on 2 cores makes their samples noise. Under pytest-xdist
# (scripts/test.sh: -n, --dist loadgroup) they are two groups, each run one
# test after another by one worker: the runner's own tests, and the rest.
# Every other file is a group of its own, so its module fixtures are made
# once, as with --dist loadfile.
LOCAL_TARGET = {"runner/": "local-target-runner",
                **dict.fromkeys(("compare/test_bundles.py", "devstate/test_precondition_run.py", "lab/",
                                 "lab_ops/", "lkp/test_lkp_harness.py", "nightly/test_nightly.py",
                                 "packaging/", "progress/"), "local-target")}


def _group(name: str) -> str:
    return next((group for prefix, group in LOCAL_TARGET.items() if name.startswith(prefix)), name)


# The group is marked as each item is collected, before any plugin's
# pytest_collection_modifyitems (pytest-xdist's worker reads the markers in its
# own). tests/test_suite_groups.py checks that the groups hold.
def pytest_itemcollected(item):
    item.add_marker(pytest.mark.xdist_group(_group(item.path.relative_to(TESTS).as_posix())))


def pytest_collection_modifyitems(items):
    # pytest-xdist schedules by node id: items that share one run once, and the
    # rest are lost without a word (schemathesis' 55 generated cases were 3).
    # Such a module is marked one_process, and scripts/test.sh runs it without xdist.
    seen, shared = set(), set()
    for item in items:
        if item.get_closest_marker("one_process") is None:
            (shared if item.nodeid in seen else seen).add(item.nodeid)
    if shared:
        raise pytest.UsageError("tests that share a node id, which pytest-xdist would run once: "
                                f"{', '.join(sorted(shared))}; mark their module one_process")
