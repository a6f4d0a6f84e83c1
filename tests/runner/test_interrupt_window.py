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
import signal
import subprocess
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


def test_a_sigterm_while_the_tool_starts_kills_the_tool(small_fio_lab, tmp_path, monkeypatch):
    """The third window: SIGTERM lands inside subprocess.Popen after fio was
    forked and before Popen returned, so run_tool had no process to kill and
    fio ran on, on a filesystem the runner could then only unmount lazily, its
    loop device held (test_runner's SIGTERM test, 1 run in 4 beside a guest).
    Here a real SIGTERM is sent from inside Popen, just after the fork: the
    signal waits until Popen has returned, and fio is killed, not finished."""
    host, matrix, data = small_fio_lab
    real, started = subprocess.Popen._execute_child, []

    def execute_child(self, args, *rest, **kw):
        real(self, args, *rest, **kw)
        # fio running a job (not `fio --version`), inside the run (its handler installed)
        if (os.path.basename(str(args[0])) == "fio" and len(args) > 2 and not started
                and signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL):
            started.append(self)
            os.kill(os.getpid(), signal.SIGTERM)  # the runner's handler raises Interrupted
            for _ in range(1000):  # Python runs the handler between bytecodes: here, unless held
                pass

    monkeypatch.setattr(subprocess.Popen, "_execute_child", execute_child)
    out = tmp_path / "bundle"
    with pytest.raises(runner.Interrupted):
        runner.Runner(matrix, host, out, data_dir=data).run()

    assert len(started) == 1  # the window was reached
    assert started[0].wait(timeout=60) == -signal.SIGKILL, "fio ran on after the interrupt"
    assert loops_over(data) == [], "loop devices left attached"
