"""A guest does not outlive the process that runs it. The guest runs in a
session of its own (a timeout kills vng and QEMU together), so a `kill` of
the check used to leave QEMU running: seed 000's check, stopped with SIGTERM
after its first round, left its guest booting. No QEMU here: the "guest" is a
shell that starts a child in its session, as vng starts QEMU, and prints the
child's pid."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

SCRIPT = """
import sys
from pathlib import Path
from iowatch import vlab
print("ready", flush=True)
vlab._boot_once(["sh", "-c", "sleep 300 & echo child $!; wait"], Path(sys.argv[1]),
                boot_timeout=600, run_timeout=600, echo=False)
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is gone for our purpose: it runs nothing.
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().split(")")[-1].split()[0] != "Z"


def _child_pid(console: Path, timeout: float = 30) -> int:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        for line in console.read_text().splitlines() if console.exists() else []:
            if line.startswith("child "):
                return int(line.split()[1])
        time.sleep(0.1)
    raise AssertionError(f"the fake guest never started: {console.read_text()!r}")


def test_sigterm_to_the_runner_stops_its_guest(tmp_path):
    console = tmp_path / "console.log"
    runner = subprocess.Popen([sys.executable, "-c", SCRIPT, str(console)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert runner.stdout.readline().strip() == "ready"
        child = _child_pid(console)
        assert _alive(child)
        runner.send_signal(signal.SIGTERM)
        runner.wait(timeout=30)
        assert "GuestStopped: stopped by signal SIGTERM" in runner.stderr.read()
        end = time.monotonic() + 10
        while _alive(child) and time.monotonic() < end:
            time.sleep(0.1)
        assert not _alive(child), "the guest's session outlived the runner"
    finally:
        if runner.poll() is None:
            runner.kill()
        try:
            os.kill(child, signal.SIGKILL)
        except (ProcessLookupError, UnboundLocalError):
            pass
