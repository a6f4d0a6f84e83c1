"""A device model served as an NBD export by nbdkit, for a guest's disk or a
test's fio.

`serve(profile, image, socket, seed=...)` starts nbdkit's Python plugin with
iowatch.mechanics.nbdplugin over the image file, on a Unix socket, waits until
it answers, and stops it on leaving (nbdkit also exits with its parent, so a
killed iowatch leaves none behind). Each export keeps its model's state for
its own life: one guest boot, one test. The model's request counts are
written to `stats` when nbdkit stops.
"""
from __future__ import annotations

import contextlib
import functools
import json
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

from iowatch.mechanics import nbdplugin_path
from iowatch.mechanics.profiles import Profile

START_TIMEOUT_S = 20.0


class ExportError(RuntimeError):
    pass


def nbdkit_argv(profile: Profile, image: Path, socket: Path, seed: int, stats: Path | None,
                pidfile: Path, time_scale: float = 1.0) -> list[str]:
    exe = shutil.which("nbdkit")
    if not exe:
        raise ExportError("nbdkit is not installed: the device models need nbdkit and its Python "
                          "plugin (apt-get install nbdkit nbdkit-plugin-python; scripts/setup.sh does)")
    argv = [*priority(), exe, "--foreground", "--exit-with-parent", "--unix", str(socket),
            # written once the socket accepts connections
            "--pidfile", str(pidfile),
            # One thread a request in flight: the guest's queue depth, not the model, sets it.
            "--threads", "64",
            "python", str(nbdplugin_path()), f"file={image}", f"kind={profile.kind}",
            f"params={json.dumps(profile.params, sort_keys=True)}", f"seed={seed}", f"time_scale={time_scale:g}"]
    if stats:
        argv.append(f"stats={stats}")
    return argv


@functools.lru_cache(maxsize=None)
def priority() -> tuple[str, ...]:
    """A model keeps time only if its thread runs when its sleep ends: on a host
    busy with the guest's emulation (or a kernel build) a woken thread of normal
    priority waited milliseconds for a CPU (a 100 us read took 0.6 ms on average,
    31 ms at worst). nbdkit runs under the real-time round-robin policy where it
    may (root; the kernel still keeps 5% of each second for everything else),
    else at the highest nice it may take."""
    chrt = shutil.which("chrt")
    if chrt and subprocess.run([chrt, "--rr", "20", "true"], capture_output=True).returncode == 0:
        return (chrt, "--rr", "20")
    nice = shutil.which("nice")
    return (nice, "-n", "-10") if nice else ()


@contextlib.contextmanager
def serve(profile: Profile, image: Path, socket: Path, *, seed: int = 0, stats: Path | None = None,
          log: Path | None = None, time_scale: float = 1.0) -> Iterator[str]:
    """Serve `image` through `profile`'s model on `socket`, its time stretched by
    time_scale (models.Model); yields the export's NBD URI (nbd+unix:///?socket=...)."""
    socket = Path(socket)
    socket.unlink(missing_ok=True)
    pidfile = socket.with_name(socket.name + ".pid")
    pidfile.unlink(missing_ok=True)
    out = open(log, "ab") if log else subprocess.DEVNULL
    proc = subprocess.Popen(nbdkit_argv(profile, Path(image), socket, seed, stats, pidfile, time_scale),
                            stdout=out, stderr=subprocess.STDOUT if log else subprocess.PIPE)
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not pidfile.exists():
            if proc.poll() is not None:
                err = proc.stderr.read().decode(errors="replace").strip() if proc.stderr else f"see {log}"
                raise ExportError(f"nbdkit for device model {profile.name} over {image} exited "
                                  f"({proc.returncode}): {err}")
            if time.monotonic() > deadline:
                raise ExportError(f"nbdkit for device model {profile.name} did not answer on {socket} "
                                  f"within {START_TIMEOUT_S:.0f} s")
            time.sleep(0.05)
        yield f"nbd+unix:///?socket={socket}"
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if log:
            out.close()
        socket.unlink(missing_ok=True)
        pidfile.unlink(missing_ok=True)
