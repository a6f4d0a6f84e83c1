"""A SIGTERM that lands between a tool's success and the runner's record of it
leaves nothing behind.

The runner turns SIGTERM into runner.Interrupted wherever Python is (the
handler of _signals_interrupt). Two windows were open: `mount` had mounted the
repetition's filesystem but make_and_mount had not returned, so the runner did
not know to unmount it and the loop device under it stayed busy and attached
(CI, test_sigterm_leaves_an_incomplete_bundle_that_a_rerun_finishes); and
`losetup --find --show` had attached an image but attach() had not returned.
Here the runner runs for real, in this process, and Interrupted is raised just
after the real command succeeded, as the signal handler would raise it.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from iowatch import bundle, filesystems, loopdev, runner
from loop_devices import loops_over

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(os.geteuid() != 0, reason="the runner needs root (losetup, mkfs, mount)"),
    pytest.mark.skipif(not shutil.which("fio"), reason="fio is not installed"),
]


def _interrupt_after(monkeypatch, module, name: str, when) -> dict:
    """Wrap module.name so that after the real call, the first time when(args)
    holds, Interrupted is raised as the SIGTERM handler would raise it."""
    real, seen = getattr(module, name), {"n": 0}

    def wrapped(*args, **kw):
        out = real(*args, **kw)
        if when(args) and not seen["n"]:
            seen["n"] += 1
            raise runner.Interrupted("stopped by signal SIGTERM")
        return out

    monkeypatch.setattr(module, name, wrapped)
    return seen


WINDOWS = {
    # filesystems._run(argv, what): the mount of the first repetition's ext4
    "after mount": (filesystems, "_run", lambda args: args[0][0] == "mount"),
    # loopdev._losetup(*args): the attachment of the run's image
    "after losetup attached": (loopdev, "_losetup", lambda args: "--show" in args),
}


@pytest.mark.parametrize("window", WINDOWS)
def test_an_interrupt_just_after_the_tool_succeeded_leaves_no_mount_and_no_loop(
        small_fio_lab, tmp_path, monkeypatch, window):
    host, matrix, data = small_fio_lab
    module, name, when = WINDOWS[window]
    seen = _interrupt_after(monkeypatch, module, name, when)
    out = tmp_path / "bundle"
    with pytest.raises(runner.Interrupted):
        runner.Runner(matrix, host, out, data_dir=data).run()

    assert seen["n"] == 1  # the window was reached
    assert bundle.loads((out / "bundle.json").read_text())["status"] == "incomplete"
    ours = f" {filesystems.mount_root(data)}/"
    mounts = [line for line in Path("/proc/mounts").read_text().splitlines() if ours in line]
    assert mounts == [], "filesystems left mounted"
    assert loops_over(data) == [], "loop devices left attached"
