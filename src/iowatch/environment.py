"""What a run records about the machine it ran on, so verdicts can name confounders.

Kernel release, command line, config hash and the config options that bias
storage results (debug options, preemption model), CPU governor, tool
versions, and per device its model, rotational flag and I/O scheduler.
"""
from __future__ import annotations

import gzip
import hashlib
import os
import platform
import re
import shutil
import subprocess
from pathlib import Path

# Kernel options that change storage results without being the change under test.
CONFOUNDING_OPTIONS = (
    "CONFIG_XFS_DEBUG", "CONFIG_XFS_WARN", "CONFIG_PROVE_LOCKING", "CONFIG_LOCKDEP",
    "CONFIG_DEBUG_LOCK_ALLOC", "CONFIG_KASAN", "CONFIG_KMEMLEAK", "CONFIG_DEBUG_PAGEALLOC",
    "CONFIG_PREEMPT", "CONFIG_PREEMPT_VOLUNTARY", "CONFIG_PREEMPT_NONE", "CONFIG_PREEMPT_RT",
    "CONFIG_PREEMPT_DYNAMIC", "CONFIG_HZ", "CONFIG_F2FS_CHECK_FS", "CONFIG_BTRFS_DEBUG",
    "CONFIG_EXT4_DEBUG", "CONFIG_DEBUG_KMEMLEAK", "CONFIG_UBSAN", "CONFIG_KCSAN",
)


def _read(path: str | Path) -> str | None:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return None


def kernel_config_text() -> str | None:
    try:
        with gzip.open("/proc/config.gz", "rt") as f:
            return f.read()
    except OSError:
        return _read(f"/boot/config-{platform.release()}")


def kernel_config_summary(text: str | None) -> tuple[str | None, dict[str, str]]:
    """(sha256 of the config, the confounding options as set or 'n')."""
    if not text:
        return None, {}
    options = {}
    for line in text.splitlines():
        m = re.match(r"^(CONFIG_\w+)=(.*)$", line) or re.match(r"^# (CONFIG_\w+) is not set$", line)
        if m and m.group(1) in CONFOUNDING_OPTIONS:
            options[m.group(1)] = m.group(2) if m.lastindex == 2 else "n"
    return hashlib.sha256(text.encode()).hexdigest(), options


def tool_version(argv: list[str]) -> str | None:
    if not shutil.which(argv[0]):
        return None
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    text = (out.stdout or out.stderr).strip().splitlines()
    return text[0].strip() if text else None


def fs_mark_version() -> str | None:
    # fs_mark has no --version; its usage text names the version on its first line.
    if not shutil.which("fs_mark"):
        return None
    out = subprocess.run(["fs_mark"], capture_output=True, text=True)
    m = re.search(r"[Vv]ersion\s*([\w.]+)", out.stdout + out.stderr)
    return f"fs_mark {m.group(1)}" if m else "fs_mark (version not printed)"


def tools() -> dict[str, str]:
    found = {
        "fio": tool_version(["fio", "--version"]),
        "fs_mark": fs_mark_version(),
        "mkfs.xfs": tool_version(["mkfs.xfs", "-V"]),
        "mkfs.ext4": tool_version(["mke2fs", "-V"]),
        "mkfs.btrfs": tool_version(["mkfs.btrfs", "--version"]),
        "mkfs.f2fs": tool_version(["mkfs.f2fs", "-V"]),
        "python": platform.python_version(),
    }
    return {k: v for k, v in found.items() if v}


def cpu_governors() -> str | None:
    govs = {g for g in (_read(p) for p in Path("/sys/devices/system/cpu").glob(
        "cpu[0-9]*/cpufreq/scaling_governor")) if g}
    return ",".join(sorted(govs)) if govs else None


def host_environment() -> dict:
    config_hash, options = kernel_config_summary(kernel_config_text())
    return {
        "uname": " ".join(platform.uname()),
        "release": platform.release(),
        "cmdline": _read("/proc/cmdline"),
        # The boot the run was measured in: two runs of one boot are one boot of
        # their kernel to the verdict (iowatch.side_data.run_boot).
        "boot_id": _read("/proc/sys/kernel/random/boot_id"),
        "kernel_config_hash": config_hash,
        "kernel_config": options,
        "cpu_governor": cpu_governors() or "not exposed (no cpufreq)",
        "cpu_count": os.cpu_count(),
        "cpu_model": next((line.split(":", 1)[1].strip() for line in
                           (_read("/proc/cpuinfo") or "").splitlines()
                           if line.startswith("model name")), None),
        "memory_kib": next((int(line.split()[1]) for line in
                            (_read("/proc/meminfo") or "").splitlines()
                            if line.startswith("MemTotal:")), None),
        "virtualization": _read("/sys/class/dmi/id/product_name"),
    }


# Where a block device's queue settings are (scheduler, wbt_lat_usec, rotational).
SYS_BLOCK = Path("/sys/block")


def block_name(dev_path: str) -> str:
    """/dev/loop3 or a /dev/disk/by-id link -> loop3 (the name in /sys/block)."""
    return os.path.basename(os.path.realpath(dev_path))


def device_queue(dev_path: str) -> dict:
    q = SYS_BLOCK / block_name(dev_path) / "queue"
    sched = _read(q / "scheduler") or ""
    m = re.search(r"\[([^\]]+)\]", sched)
    return {
        "scheduler": m.group(1) if m else (sched or None),
        "schedulers": sched.replace("[", "").replace("]", "").split() if sched else [],
        "rotational": _read(q / "rotational") == "1",
        # Writeback throttling's latency target: 0 off; None when the kernel has no wbt.
        "wbt_lat_usec": int(w) if (w := _read(q / "wbt_lat_usec")) not in (None, "") else None,
        "logical_block_size": int(_read(q / "logical_block_size") or 0) or None,
        "model": _read(SYS_BLOCK / block_name(dev_path) / "device" / "model"),
    }


def set_scheduler(dev_path: str, scheduler: str) -> str:
    """Select the I/O scheduler; returns the one in force (it may not exist here)."""
    q = SYS_BLOCK / block_name(dev_path) / "queue" / "scheduler"
    available = device_queue(dev_path)["schedulers"]
    if scheduler not in available:
        raise RuntimeError(f"{dev_path}: I/O scheduler {scheduler!r} is not available "
                           f"(this kernel offers {', '.join(available) or 'none'})")
    q.write_text(scheduler)
    return device_queue(dev_path)["scheduler"]


def set_wbt(dev_path: str, usec: int) -> int:
    """Set writeback throttling's latency target (0: off); returns the one in force."""
    q = SYS_BLOCK / block_name(dev_path) / "queue" / "wbt_lat_usec"
    if not q.exists():
        raise RuntimeError(f"{dev_path}: this kernel has no writeback throttling "
                           f"({q} is missing: CONFIG_BLK_WBT is not set)")
    q.write_text(str(usec))
    return device_queue(dev_path)["wbt_lat_usec"]


def set_rotational(dev_path: str, rotational: bool) -> None:
    (SYS_BLOCK / block_name(dev_path) / "queue" / "rotational").write_text(
        "1" if rotational else "0")
