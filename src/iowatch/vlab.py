"""The virtual lab: boot a kernel variant in a QEMU guest with emulated device
classes and run `iowatch run` inside it (docs/architecture.md, "The virtual lab";
README, "Checking a patch series in the virtual lab").

The guest boots with virtme-ng on the host's root filesystem, so the same
iowatch, fio and fs_mark run inside; its bundle lands in a directory shared
with the host. Each device of a `qemu` host in the inventory becomes a QEMU
disk of its class: sdcard/emmc on sdhci-pci + sd-card (the guest sees mmcblk),
ssd and ssd-raid0 members on virtio-blk, hdd on scsi-hd with a rotation rate;
throttling figures come from the inventory. A boot watchdog notices a hung
boot (as KVM does here with mainline guests) and retries under TCG by itself;
a panic, a hang or a timeout marks the variant boot-failed with the console log.
"""
from __future__ import annotations

import contextlib
import json
import os
import random
import selectors
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from iowatch import paths
from iowatch.inventory import NULL_BLK, Device, Host, parse_size

BOOT_MARKER = "IOWATCH-GUEST-BOOTED"
PANIC_MARKERS = ("Kernel panic", "end Kernel panic")
# Without virtiofsd (Debian 12 has only QEMU's old C one, which virtme-ng will not
# use) the guest's root is the host's over 9p, uncached: under TCG every Python
# import then costs a round trip per stat, and an Ansible task took seconds. The
# root is read-only in the guest and nothing it runs changes while it runs, so
# the guest caches it (the last rootflags= on the command line wins).
ROOT_9P_FLAGS = "rootflags=version=9p2000.L,trans=virtio,access=any,msize=524288,cache=loose"
KVM_HANG_FILE = "kvm-hangs"
MODELS_RECORD = "device-models.json"   # in a boot's shared directory: what each device model served   # in the vlab dir: KVM was seen to hang on this machine


@dataclass
class BootResult:
    status: str                    # "passed" (the guest command ran), "boot-failed"
    accel: str                     # "kvm" or "tcg"
    boot_s: float | None           # kernel start to the guest's first command
    wall_s: float
    exit_code: int | None
    reason: str = ""
    console: Path | None = None
    attempts: list[str] = field(default_factory=list)


def vlab_dir() -> Path:
    d = paths.data_dir() / "vlab"
    d.mkdir(parents=True, exist_ok=True)
    return d


def _image(images: Path, name: str, size: int) -> Path:
    """A sparse raw image per guest disk, made fresh for every boot."""
    path = images / f"{name}.img"
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:
        f.truncate(size)
    return path


def throttling(q: dict) -> str:
    opts = [f"throttling.{k}={v}" for k, v in sorted(q.get("throttle", {}).items())]
    return ("," + ",".join(opts)) if opts else ""


def guest_disks(host: Host) -> list[tuple[str, Device, int]]:
    """(disk id, device, size) of each QEMU disk of the host: a device, or each
    member of a RAID0 (the guest kernel's null_blk is not a QEMU disk)."""
    out = []
    for dev in host.devices:
        q = dev.qemu or {}
        if q.get("bus") == NULL_BLK:
            continue
        size = parse_size(q.get("size", dev.size_bytes or "2GiB"))
        out += [(f"{dev.name}-{i}", dev, size) for i, _ in enumerate(dev.members)] or [(dev.name, dev, size)]
    return out


def guest_path(host: Host, dev: Device, sys_root: str = "/sys") -> str | None:
    """A device's /dev path inside a guest of a qemu host. An SD card's is found
    by its controller: each card sits on an sdhci-pci controller of its own,
    added in the inventory's order (qemu_device_args), so QEMU gives the k-th
    card's controller the k-th PCI slot of them. Neither the MMC host's number
    nor the mmcblk number is stable (controllers probe and cards are detected
    in parallel: in seed 000's boots on vlab-mech mmc0 was once the second
    controller, 0000:00:0f.0, and the eMMC model's card /dev/mmcblk0). Every
    other device: its path."""
    if host.kind != "qemu" or (dev.qemu or {}).get("bus") != "sd":
        return dev.path
    cards = [d.name for d in host.devices if (d.qemu or {}).get("bus") == "sd"]
    controllers = sorted(Path(sys_root, "class", "mmc_host").glob("mmc[0-9]*"),
                         key=lambda p: os.path.basename(os.path.realpath(p / "device")))
    if len(controllers) != len(cards):
        return dev.path  # not this host's guest (or not booted yet): the inventory's path, checked as ever
    disks = sorted(controllers[cards.index(dev.name)].glob("mmc*:*/block/mmcblk[0-9]*"))
    return f"/dev/{disks[0].name}" if disks else dev.path


@contextlib.contextmanager
def modelled_disks(host: Host, images: Path, record: Path | None = None,
                   accel: str = "kvm") -> Iterator[dict[str, Path]]:
    """Serve each disk whose device names a device model (`qemu.model`) through
    it (iowatch.mechanics): an nbdkit export over the disk's image, on a socket
    in `images`, for the life of one boot. Yields {disk id: socket}. Each model
    is seeded per boot (IOWATCH_MODEL_SEED fixes it) and runs at its profile's
    time scale for the guest's accelerator (under TCG a card or an SSD runs
    slower, every cost alike: device-models.yml's `tcg`). What it served (its
    requests, its seed, its time scale, the profile and the device it stands
    for) is written to `record` (JSON) after the guest stops."""
    from iowatch.mechanics import export, profiles

    seed = int(os.environ.get("IOWATCH_MODEL_SEED") or random.SystemRandom().randrange(1 << 31))
    sockets: dict[str, Path] = {}
    served: dict[str, dict] = {}
    with contextlib.ExitStack() as stack:
        for i, (disk_id, dev, size) in enumerate(guest_disks(host)):
            name = (dev.qemu or {}).get("model")
            if not name:
                continue
            profile = profiles.get(name)
            img = _image(images, disk_id, size)
            sock = images / f"{disk_id}.nbd"
            stats = images / f"{disk_id}.model.json"
            scale = profile.time_scale(accel)
            stack.enter_context(export.serve(profile, img, sock, seed=seed + i, stats=stats,
                                             log=images / f"{disk_id}.nbdkit.log", time_scale=scale))
            sockets[disk_id] = sock
            served[disk_id] = {"device": dev.name, "model": name, "stands_for": profile.stands_for,
                               "seed": seed + i, "accel": accel, "time_scale": scale, "stats": stats}
        try:
            yield sockets
        finally:
            stack.close()
            if record and served:
                for entry in served.values():
                    path = entry.pop("stats")
                    entry["served"] = json.loads(path.read_text()) if path.exists() else None
                record.write_text(json.dumps(served, indent=1, sort_keys=True) + "\n")


def note_device_models(shared: Path, doc: dict) -> str:
    """Each modelled device of a bundle gets what its model was in this boot
    (`device_model`: the profile, the device it stands for, the accelerator and
    the time scale, the seed) from the boot's device-models.json; returns a
    line saying which models ran slowed, "" when none was."""
    path = shared / MODELS_RECORD
    if not path.is_file():
        return ""
    served = {e["device"]: e for e in json.loads(path.read_text()).values()}
    slowed, accel = [], ""
    for dev in doc.get("devices", []):
        entry = served.get(dev.get("name"))
        if entry:
            dev["device_model"] = {k: entry.get(k) for k in ("model", "stands_for", "accel", "time_scale", "seed")}
            accel = entry.get("accel") or ""
            if (entry.get("time_scale") or 1) != 1:
                slowed.append(f"{dev['name']} ({entry['model']}) x{entry['time_scale']:g}")
                # The device's words on every page and mail that names it.
                dev["model"] = (f"{dev.get('model') or entry['model']}, every cost x{entry['time_scale']:g} "
                                f"under {accel.upper()}")[:300]
    return f"device models slowed under {accel.upper()}: {', '.join(slowed)}" if slowed else ""


def qemu_device_args(host: Host, images: Path, exports: dict[str, Path] | None = None) -> list[str]:
    """QEMU -drive/-device options for the host's devices, with ids of our own
    (an id such as sd0 clashes with one virtme-ng uses); the disk images go in
    `images`, one directory per boot, so two guests never share a disk. A
    null_blk device is the guest kernel's own (guest_kernel_args), not QEMU's.
    A disk in `exports` is the NBD export of its device model on that socket
    (modelled_disks): the guest keeps its driver path, the model its timing."""
    exports = exports or {}
    args: list[str] = []
    scsi = False
    for disk_id, dev, size in guest_disks(host):
        q = dev.qemu or {}
        drive = f"iow-{disk_id}"
        if disk_id in exports:
            args += ["-drive", f"driver=nbd,server.type=unix,server.path={exports[disk_id]},"
                               f"if=none,id={drive}{throttling(q)}"]
        else:
            img = _image(images, disk_id, size)
            args += ["-drive", f"file={img},if=none,id={drive},format=raw,cache=none,aio=threads"
                               f"{throttling(q)}"]
        args += device_args(q, disk_id, drive, first_scsi=not scsi)
        scsi = scsi or q.get("bus") == "scsi-hd"
    return args


def device_args(q: dict, disk_id: str, drive: str, first_scsi: bool) -> list[str]:
    """The QEMU -device options that put drive `drive` on the device's bus (the
    virtual lab's guests and LAVA's qemu boards, iowatch.lava.definition)."""
    bus = q.get("bus", "virtio-blk")
    if bus == "sd":
        # No bus=: QEMU names every SDHCI bus "sd-bus" and puts the card on a free one.
        return ["-device", f"sdhci-pci,id=iow-sdhci-{disk_id}", "-device", f"sd-card,drive={drive}"]
    if bus == "scsi-hd":
        rate = q.get("rotation_rate", 7200)
        return ((["-device", "virtio-scsi-pci,id=iowscsi"] if first_scsi else [])
                + ["-device", f"scsi-hd,drive={drive},bus=iowscsi.0,rotation_rate={rate},serial={drive}"])
    return ["-device", f"virtio-blk-pci,drive={drive},serial={drive}"]


def guest_kernel_args(host: Host) -> list[str]:
    """Kernel command-line words for the devices the guest kernel makes itself:
    a null_blk device (built in, kernels/config/iowatch.config) takes its module
    parameters from the command line. Memory-backed, so a filesystem survives on
    it; irqmode=2 completes each request from a timer after completion_nsec, with
    hw_queue_depth requests in flight: a device with a latency of its own that
    serves requests in parallel, which QEMU's throttling (rates, not latency)
    cannot give. The inventory allows one null_blk device a host (nullb0:
    null_blk's module parameters apply to every device it makes)."""
    words: list[str] = []
    for dev in host.devices:
        q = dev.qemu or {}
        if q.get("bus") != NULL_BLK:
            continue
        size = parse_size(q.get("size", dev.size_bytes or "1GiB"))
        words += ["null_blk.nr_devices=1", f"null_blk.gb={max(1, size >> 30)}",
                  "null_blk.memory_backed=1", "null_blk.irqmode=2",
                  f"null_blk.completion_nsec={int(q.get('completion_nsec', 100_000))}",
                  f"null_blk.hw_queue_depth={int(q.get('hw_queue_depth', 64))}"]
    return words


def kvm_usable() -> bool:
    if not os.access("/dev/kvm", os.R_OK | os.W_OK):
        return False
    marker = vlab_dir() / KVM_HANG_FILE
    # A hang seen in the last day: go straight to TCG instead of waiting again.
    return not (marker.exists() and time.time() - marker.stat().st_mtime < 86400)


def _kill(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


class GuestStopped(Exception):
    """SIGTERM reached the process that ran a guest; the guest was stopped first."""


@contextlib.contextmanager
def _guest_stops_with_us() -> Iterator[list]:
    """The guest runs in a session of its own (so a timeout can kill QEMU and
    vng together); it must not outlive us. SIGTERM becomes an exception while
    it runs, and on the way out, by any exception or Ctrl-C, the guest's
    session is killed: a check stopped in the middle left its QEMU running."""
    procs: list[subprocess.Popen] = []

    def handler(signum, frame):
        raise GuestStopped(f"stopped by signal {signal.Signals(signum).name}")

    main = threading.current_thread() is threading.main_thread()
    old = signal.signal(signal.SIGTERM, handler) if main else None
    try:
        yield procs
    finally:
        for proc in procs:
            if proc.poll() is None:
                _kill(proc)
        if main:
            signal.signal(signal.SIGTERM, old)


def _boot_once(argv: list[str], console: Path, boot_timeout: float, run_timeout: float,
               echo: bool, on_line: Callable[[str], None] | None = None,
               ) -> tuple[str, float | None, int | None, str]:
    """Run one guest; returns (state, boot seconds, exit code, reason) where state is
    ok, hung (no boot marker in time), panic or timeout. on_line gets the console
    a line at a time (iowatch.progress.GuestRelay)."""
    t0 = time.monotonic()
    booted_at = None
    partial = b""
    with open(console, "ab") as log, _guest_stops_with_us() as stop:
        log.write(("$ " + shlex.join(argv) + "\n").encode())
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
        stop.append(proc)
        sel = selectors.DefaultSelector()
        sel.register(proc.stdout, selectors.EVENT_READ)
        tail = b""
        try:
            while True:
                now = time.monotonic() - t0
                if booted_at is None and now > boot_timeout:
                    _kill(proc)
                    return "hung", None, None, f"no sign of the guest after {boot_timeout:.0f} s"
                if now > run_timeout:
                    _kill(proc)
                    return "timeout", booted_at, None, f"the guest ran past {run_timeout:.0f} s"
                if not sel.select(timeout=1.0):
                    if proc.poll() is not None:
                        break
                    continue
                chunk = os.read(proc.stdout.fileno(), 65536)
                if not chunk:
                    break
                log.write(chunk)
                log.flush()
                if echo:
                    sys.stderr.buffer.write(chunk)
                if on_line is not None:
                    *lines, partial = (partial + chunk).split(b"\n")
                    for line in lines:
                        on_line(line.decode("utf-8", "replace"))
                tail = (tail + chunk)[-4096:]
                text = tail.decode("utf-8", "replace")
                if booted_at is None and BOOT_MARKER in text:
                    booted_at = time.monotonic() - t0
                if any(m in text for m in PANIC_MARKERS):
                    time.sleep(1)
                    _kill(proc)
                    line = next((x for x in text.splitlines() if "Kernel panic" in x), "")
                    return "panic", booted_at, None, (line.split("]", 1)[-1].strip()
                                                      or "kernel panic") + " (see the console log)"
        finally:
            sel.close()
        rc = proc.wait()
    if booted_at is None:
        last = [x.strip() for x in tail.decode("utf-8", "replace").splitlines() if x.strip()][-2:]
        return "hung", None, rc, (f"the guest exited ({rc}) before running anything"
                                  + (": " + " ".join(last) if last else ""))
    return "ok", booted_at, rc, ""


def boot_and_run(bzimage: Path, host: Host, guest_command: list[str], shared: Path,
                 console: Path, *, memory: str = "2G", cpus: int = 2,
                 boot_timeout_kvm: float = 60, boot_timeout_tcg: float = 240,
                 run_timeout: float = 3600, echo: bool = False,
                 on_line: Callable[[str], None] | None = None) -> BootResult:
    """Boot bzImage with the host's emulated devices and run guest_command in it;
    the guest sees `shared` at the same path, read-write; on_line gets its console
    a line at a time."""
    shared.mkdir(parents=True, exist_ok=True)
    console.parent.mkdir(parents=True, exist_ok=True)
    console.write_bytes(b"")
    images = Path(tempfile.mkdtemp(prefix=f"{host.name}-disks-", dir=vlab_dir()))
    try:
        return _boot(bzimage, host, guest_command, shared, console, images, memory=memory,
                     cpus=cpus, boot_timeout_kvm=boot_timeout_kvm, boot_timeout_tcg=boot_timeout_tcg,
                     run_timeout=run_timeout, echo=echo, on_line=on_line)
    finally:
        shutil.rmtree(images, ignore_errors=True)


def _boot(bzimage: Path, host: Host, guest_command: list[str], shared: Path, console: Path,
          images: Path, *, memory: str, cpus: int, boot_timeout_kvm: float, boot_timeout_tcg: float,
          run_timeout: float, echo: bool, on_line: Callable[[str], None] | None) -> BootResult:
    inner = f"echo {BOOT_MARKER}; " + shlex.join(guest_command)
    # --force-9p: vng tries virtiofsd first for the root and again for --rwdir,
    # and with Debian 12's (QEMU's old C virtiofsd, whose options it does not
    # take) each try waits 3.1 s before falling back to 9p: 6 s of every boot.
    # The guest's root is 9p everywhere the virtual lab runs (ROOT_9P_FLAGS).
    base = ["vng", "--run", str(bzimage), "--cpus", str(cpus), "--memory", memory, "--force-9p",
            "--rwdir", str(shared), "--verbose", "--exec", inner,
            "--append", " ".join([ROOT_9P_FLAGS, *guest_kernel_args(host)])]
    env_path = f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}"
    os.environ["PATH"] = env_path  # vng finds virtme-ng-init and friends beside it
    # A second TCG try: 2 of about 15 TCG boots here oopsed early (int3 in
    # sched_clock_cpu) with a kernel that boots otherwise; a real panic repeats.
    attempts = (["kvm"] if kvm_usable() else []) + ["tcg", "tcg"]
    t0 = time.monotonic()
    tried = []
    for accel in attempts:
        timeout = boot_timeout_kvm if accel == "kvm" else boot_timeout_tcg
        # The device models start afresh for each try: their time scale is the accelerator's.
        with modelled_disks(host, images, record=shared / MODELS_RECORD, accel=accel) as exports:
            # With "=": argparse would take a value starting with "-drive" for an option.
            argv = base + ["--qemu-opts=" + " ".join(shlex.quote(a) for a in
                                                     qemu_device_args(host, images, exports))]
            argv += ["--disable-kvm"] if accel == "tcg" else []
            state, boot_s, rc, reason = _boot_once(argv, console, timeout, run_timeout, echo, on_line)
        tried.append(f"{accel}: {state}{' (' + reason + ')' if reason else ''}")
        if state == "hung" and accel == "kvm":
            (vlab_dir() / KVM_HANG_FILE).write_text(time.strftime("%Y-%m-%dT%H:%M:%S\n"))
            continue  # KVM here boots only PVM guests: fall back to TCG by itself
        wall = time.monotonic() - t0
        if state == "ok":
            return BootResult("passed", accel, boot_s, wall, rc, console=console, attempts=tried)
        if state == "panic" and boot_s is None and len(tried) < len(attempts):
            continue  # panicked before the guest ran anything: boot once more
        return BootResult("boot-failed", accel, boot_s, wall, rc, reason, console, tried)
    return BootResult("boot-failed", attempts[-1], None, time.monotonic() - t0, None,
                      "; ".join(tried), console, tried)


def guest_run_command(matrix: str, host: Host, inventory: Path, out: Path, *, profile: str | None,
                      reps: int | None, kernel_commit: str | None, label: str | None,
                      series: dict | None = None, cells: list[str] | None = None) -> list[str]:
    """The `iowatch run` the guest executes (the host's iowatch, seen through virtme-ng)."""
    argv = ["env", "IOWATCH_DATA_DIR=/tmp/iowatch", str(Path(sys.executable).parent / "iowatch"),
            "run", str(Path(matrix).resolve()), "--target", host.name, "--inventory",
            str(inventory.resolve()), "--out", str(out), "--no-progress"]
    if profile:
        argv += ["--profile", profile]
    if reps:
        argv += ["--reps", str(reps)]
    if cells:
        argv += ["--cells", ",".join(cells)]
    if kernel_commit:
        argv += ["--kernel-commit", kernel_commit]
    if label:
        argv += ["--label", label]
    if series:
        argv += ["--series-name", series["name"], "--patch-index", str(series["index"])]
        if series.get("subject"):
            argv += ["--patch-subject", series["subject"]]
        if series.get("base"):
            argv += ["--series-base", series["base"]]
        if series.get("record"):
            # A file, not JSON on the command line: the list's To/Cc can be long,
            # and this command travels base64 on the guest's kernel command line.
            argv += ["--series-record", str(series["record"])]
    return argv
