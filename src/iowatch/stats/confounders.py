"""Differences between two runs that can explain a change (docs/verdicts.md).

Reported beside a verdict, never folded into it: kernel debug options and the
preemption model, the command line, tool versions, the CPU governor, and per
device the I/O scheduler, model, rotational flag and loop direct I/O, and per
cell the mkfs and mount options. Input: two bundle manifests, or the same
shape rebuilt from the read API. A value one side does not record is not a
confounder (a published run records almost nothing).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Confounder:
    name: str
    base: Any
    candidate: Any
    why: str


# Kernel options and why a difference in them matters for storage numbers.
_KERNEL_OPTIONS = {
    "CONFIG_XFS_DEBUG": "XFS debug checks slow every XFS operation",
    "CONFIG_XFS_WARN": "XFS warnings add assertion checks",
    "CONFIG_EXT4_DEBUG": "ext4 debug code adds checks to ext4 paths",
    "CONFIG_BTRFS_DEBUG": "btrfs debug checks slow btrfs",
    "CONFIG_PROVE_LOCKING": "lockdep validates every lock taken: large slowdowns on I/O paths",
    "CONFIG_DEBUG_LOCK_ALLOC": "lock debugging adds work to every lock",
    "CONFIG_KASAN": "KASAN instruments every memory access (often 2x slower or more)",
    "CONFIG_KCSAN": "KCSAN instruments memory accesses",
    "CONFIG_UBSAN": "UBSAN adds checks to arithmetic and bounds",
    "CONFIG_DEBUG_KMEMLEAK": "kmemleak tracks every allocation",
    "CONFIG_DEBUG_PAGEALLOC": "page allocation debugging unmaps freed pages",
    "CONFIG_HZ": "the timer frequency changes scheduling and timer granularity",
}
_PREEMPT_WHY = "the preemption model changes latency and throughput of I/O-bound work"


def _kernel_config(doc: dict) -> dict:
    kernel = doc.get("kernel") or {}
    return (kernel.get("config") or doc.get("kernel_config")
            or (doc.get("environment") or {}).get("host", {}).get("kernel_config") or {})


def _cmdline(doc: dict) -> str | None:
    kernel = doc.get("kernel") or {}
    return (kernel.get("cmdline") or doc.get("cmdline")
            or (doc.get("environment") or {}).get("host", {}).get("cmdline"))


def _differs(a: Any, b: Any) -> bool:
    return a not in (None, "") and b not in (None, "") and a != b


def _devices(doc: dict) -> dict[str, dict]:
    """Per device name: its inventory entry merged with what the runner saw."""
    out: dict[str, dict] = {d["name"]: dict(d) for d in doc.get("devices") or [] if "name" in d}
    for name, seen in ((doc.get("environment") or {}).get("devices") or {}).items():
        out.setdefault(name, {}).update(seen)
    return out


def _cells(doc: dict) -> dict[str, dict]:
    return {f"{c.get('study')}/{c.get('device')}/{c.get('filesystem')}": c
            for c in doc.get("cells") or []}


def confounders(base_env: dict, candidate_env: dict) -> list[Confounder]:
    out: list[Confounder] = []

    def check(name: str, a: Any, b: Any, why: str) -> None:
        if _differs(a, b):
            out.append(Confounder(name, a, b, why))

    base_cfg, cand_cfg = _kernel_config(base_env), _kernel_config(candidate_env)
    for option in sorted(set(base_cfg) | set(cand_cfg)):
        why = _KERNEL_OPTIONS.get(option) or (_PREEMPT_WHY if option.startswith("CONFIG_PREEMPT")
                                              else "a kernel option recorded for confounders")
        check(f"kernel {option}", base_cfg.get(option), cand_cfg.get(option), why)
    check("kernel cmdline", _cmdline(base_env), _cmdline(candidate_env),
          "boot parameters (mitigations, schedulers, memory) change I/O performance")
    base_tools, cand_tools = base_env.get("tools") or {}, candidate_env.get("tools") or {}
    for tool in sorted(set(base_tools) & set(cand_tools)):
        if tool == "python":
            continue
        check(f"{tool} version", base_tools[tool], cand_tools[tool],
              "a different benchmark or mkfs version can measure or format differently")
    base_host = (base_env.get("environment") or {}).get("host") or {}
    cand_host = (candidate_env.get("environment") or {}).get("host") or {}
    check("cpu_governor", base_host.get("cpu_governor"), cand_host.get("cpu_governor"),
          "an unpinned CPU frequency moves CPU-bound and latency numbers")
    check("cpu_model", base_host.get("cpu_model"), cand_host.get("cpu_model"),
          "a different CPU runs the same kernel at a different speed")
    base_dev, cand_dev = _devices(base_env), _devices(candidate_env)
    for name in sorted(set(base_dev) & set(cand_dev)):
        a, b = base_dev[name], cand_dev[name]
        check(f"{name} scheduler", a.get("scheduler"), b.get("scheduler"),
              "the I/O scheduler decides dispatch order and merging")
        check(f"{name} model", a.get("model"), b.get("model"),
              "a different device model is different hardware")
        if a.get("rotational") is not None and b.get("rotational") is not None:
            check(f"{name} rotational", a["rotational"], b["rotational"],
                  "the block layer treats rotational devices differently")
        if a.get("loop_direct_io") is not None and b.get("loop_direct_io") is not None:
            check(f"{name} loop_direct_io", a["loop_direct_io"], b["loop_direct_io"],
                  "without direct I/O the backing file's page cache stands in for the device")
    base_cells, cand_cells = _cells(base_env), _cells(candidate_env)
    for cid in sorted(set(base_cells) & set(cand_cells)):
        for opt in ("mkfs_options", "mount_options"):
            check(f"{cid} {opt}", base_cells[cid].get(opt), cand_cells[cid].get(opt),
                  "a different filesystem layout or mount behaviour")
    return out
