"""Differences between two runs that can explain a change (docs/verdicts.md).

Reported beside a verdict, never folded into it: kernel debug options and the
preemption model, the command line, tool versions, the CPU governor, and per
device the I/O scheduler, model, rotational flag and loop direct I/O, and per
cell the mkfs and mount options, and per device the state it reports
(iowatch.devstate: serial, firmware, wear, temperature, health). Input: two bundle manifests, or the same
shape rebuilt from the read API. A value one side does not record is not a
confounder (a published run records almost nothing). The command line is
compared without the boot parameters the virtual lab sets anew for each run.
kernel_flags names the debug and preemption options one kernel has on, for
a page that shows a single run.
"""
from __future__ import annotations

import re
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
_DEBUG_WHY = "kernel debugging code adds checks to the paths under test"
# Boot parameters the virtual lab's harness sets anew for every guest: virtme-ng's
# command to run (base64 of the guest's `iowatch run`, which names the run's own
# output directory and label) and the host directory the guest mounts. They name
# the run, not how the kernel behaves, so they are no confounder. On a lab host
# the kernel role names the commit it booted (iowatch.commit=, ansible/roles/
# kernel) and grub the image (BOOT_IMAGE=): they differ between any two kernels.
_PER_RUN_PARAMETERS = re.compile(r"(virtme\.exec|virtme_initmount\d+|iowatch\.commit|BOOT_IMAGE)=")
# A boot parameter: quoted values (virtme-ng quotes with backticks) stay one token.
_PARAMETER = re.compile(r'(?:"[^"]*"|`[^`]*`|\S)+')


def option_why(option: str) -> str | None:
    """Why a kernel option biases storage numbers, or None for one that does not."""
    if option in _KERNEL_OPTIONS:
        return _KERNEL_OPTIONS[option]
    if option.startswith("CONFIG_PREEMPT"):
        return _PREEMPT_WHY
    if option.startswith("CONFIG_DEBUG_") or option.endswith(("_DEBUG", "_CHECK_FS")) \
            or option in ("CONFIG_LOCKDEP", "CONFIG_KMEMLEAK"):
        return _DEBUG_WHY
    return None


@dataclass(frozen=True)
class KernelFlag:
    option: str
    value: str
    why: str
    kind: str  # "debug" (slows what is measured) or "preemption" (the model in force)


def kernel_flags(config: dict) -> list[KernelFlag]:
    """The debug and preemption options a kernel has on (=y or =m), with why they matter."""
    out = []
    for option, value in sorted((config or {}).items()):
        why = option_why(option)
        if why and value in ("y", "m") and option != "CONFIG_HZ":
            out.append(KernelFlag(option, value, why,
                                  "preemption" if why == _PREEMPT_WHY else "debug"))
    return out


def normalised_cmdline(cmdline: str | None) -> str | None:
    """The command line without the parameters the harness varies per run."""
    if not cmdline:
        return cmdline
    return " ".join(p for p in _PARAMETER.findall(cmdline) if not _PER_RUN_PARAMETERS.match(p))


def shown(c: Confounder) -> tuple[str, str]:
    """A confounder's two sides as a report prints them: the command lines
    only by the parameters in which they differ (each is hundreds of
    characters, mostly the same)."""
    if c.name == "kernel cmdline":
        base, cand = _PARAMETER.findall(str(c.base)), _PARAMETER.findall(str(c.candidate))
        return (" ".join(p for p in base if p not in cand) or "(none)",
                " ".join(p for p in cand if p not in base) or "(none)")
    return str(c.base), str(c.candidate)


def _kernel_config(doc: dict) -> dict:
    kernel = doc.get("kernel") or {}
    return (kernel.get("config") or doc.get("kernel_config")
            or (doc.get("environment") or {}).get("host", {}).get("kernel_config") or {})


def _cmdline(doc: dict) -> str | None:
    kernel = doc.get("kernel") or {}
    return normalised_cmdline(kernel.get("cmdline") or doc.get("cmdline")
                              or (doc.get("environment") or {}).get("host", {}).get("cmdline"))


def _differs(a: Any, b: Any) -> bool:
    return a not in (None, "") and b not in (None, "") and a != b


def _devices(doc: dict) -> dict[str, dict]:
    """Per device name: its inventory entry merged with what the runner saw."""
    out: dict[str, dict] = {d["name"]: dict(d) for d in doc.get("devices") or [] if "name" in d}
    for name, seen in ((doc.get("environment") or {}).get("devices") or {}).items():
        out.setdefault(name, {}).update(seen)
    return out


# How far a device's state may move between the sides before it is named.
WEAR_BOUND_PCT = 5  # percentage points of rated life used (eMMC estimates move in steps of 10)
TEMPERATURE_BOUND_C = 10  # flash latency and throttling move with temperature


def _device_states(name: str, seen: dict) -> dict[str, dict]:
    """A device's state records by the name a confounder gives them: the device's
    own, or an md array's members' (each by its position in the array)."""
    state = seen.get("state") or {}
    members = state.get("members") or {}
    if members:
        return {f"{name} member {i}": s for i, s in enumerate(members.values()) if isinstance(s, dict)}
    return {name: state} if state else {}


def _state_confounders(name: str, a: dict, b: dict, a_after: dict, b_after: dict) -> list[Confounder]:
    """What differs in the state two sides' device reported (iowatch.devstate)."""
    out = []
    if _differs(a.get("serial"), b.get("serial")):
        out.append(Confounder(f"{name} serial", a["serial"], b["serial"],
                              "a different serial number is a different device: its wear, "
                              "firmware and flash are its own"))
        return out  # a different device: its firmware, wear and temperature differ as a matter of course
    if _differs(a.get("firmware"), b.get("firmware")):
        out.append(Confounder(f"{name} firmware", a["firmware"], b["firmware"],
                              "the device's firmware changed between the sides: its flash "
                              "translation layer, caching and garbage collection are part of what is measured"))
    wear_a, wear_b = a.get("wear_pct"), b.get("wear_pct")
    if isinstance(wear_a, (int, float)) and isinstance(wear_b, (int, float)) \
            and abs(wear_a - wear_b) > WEAR_BOUND_PCT:
        out.append(Confounder(f"{name} wear", f"{wear_a}% used", f"{wear_b}% used",
                              f"the device's wear moved by more than {WEAR_BOUND_PCT} points: a more "
                              "worn flash device has fewer spare blocks and collects garbage more"))
    for when, x, y in (("before the run", a, b), ("after the run", a_after, b_after)):
        ta, tb = x.get("temperature_c"), y.get("temperature_c")
        if isinstance(ta, (int, float)) and isinstance(tb, (int, float)) and abs(ta - tb) > TEMPERATURE_BOUND_C:
            out.append(Confounder(f"{name} temperature {when}", f"{ta} °C", f"{tb} °C",
                                  f"the temperatures differ by more than {TEMPERATURE_BOUND_C} °C: "
                                  "a hot device throttles, and flash latency moves with temperature"))
    if _differs(a.get("health"), b.get("health")):
        out.append(Confounder(f"{name} health", a["health"], b["health"],
                              "the device's own health report differs: a failing or end-of-life "
                              "device retries and remaps"))
    return out


# Said of a device's queue and of a cell's (params.queue): one reason each.
WHY_SCHEDULER = "the I/O scheduler decides dispatch order and merging"
WHY_WBT = "writeback throttling holds back buffered writes to keep reads within its target"


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
        why = option_why(option) or "a kernel option recorded for confounders"
        check(f"kernel {option}", base_cfg.get(option), cand_cfg.get(option), why)
    check("kernel cmdline", _cmdline(base_env), _cmdline(candidate_env),
          "boot parameters (mitigations, schedulers, memory) change I/O performance")
    base_tools, cand_tools = base_env.get("tools") or {}, candidate_env.get("tools") or {}
    for tool in sorted(set(base_tools) & set(cand_tools)):
        if tool == "python":
            continue
        check(f"{tool} version", base_tools[tool], cand_tools[tool],
              "a different benchmark or mkfs version can measure or format differently")
    check("host", (base_env.get("host") or {}).get("name"),
          (candidate_env.get("host") or {}).get("name"),
          "the sides ran on different machines: their devices, firmware and CPUs differ "
          "beside the kernel, so a change can be the machine's")
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
              WHY_SCHEDULER)
        check(f"{name} wbt_lat_usec", a.get("wbt_lat_usec"), b.get("wbt_lat_usec"),
              WHY_WBT)
        check(f"{name} model", a.get("model"), b.get("model"),
              "a different device model is different hardware")
        if a.get("rotational") is not None and b.get("rotational") is not None:
            check(f"{name} rotational", a["rotational"], b["rotational"],
                  "the block layer treats rotational devices differently")
        if a.get("loop_direct_io") is not None and b.get("loop_direct_io") is not None:
            check(f"{name} loop_direct_io", a["loop_direct_io"], b["loop_direct_io"],
                  "without direct I/O the backing file's page cache stands in for the device")
        a_states, b_states = _device_states(name, a), _device_states(name, b)
        a_after, b_after = _device_states(name, {"state": a.get("state_after")}), \
            _device_states(name, {"state": b.get("state_after")})
        for who in sorted(set(a_states) & set(b_states)):
            out += _state_confounders(who, a_states[who], b_states[who],
                                      a_after.get(who) or {}, b_after.get(who) or {})
    base_cells, cand_cells = _cells(base_env), _cells(candidate_env)
    for cid in sorted(set(base_cells) & set(cand_cells)):
        for opt in ("mkfs_options", "mount_options"):
            check(f"{cid} {opt}", base_cells[cid].get(opt), cand_cells[cid].get(opt),
                  "a different filesystem layout or mount behaviour")
        a_queue = (base_cells[cid].get("params") or {}).get("queue") or {}
        b_queue = (cand_cells[cid].get("params") or {}).get("queue") or {}
        if a_queue and b_queue:
            check(f"{cid} scheduler", a_queue.get("scheduler"), b_queue.get("scheduler"),
                  WHY_SCHEDULER)
            check(f"{cid} wbt_lat_usec", a_queue.get("wbt_lat_usec"), b_queue.get("wbt_lat_usec"),
                  WHY_WBT)
    return out


NOT_RECORDED = "not recorded"
WHY_UNRECORDED = ("one side recorded no state of the device, so its firmware, wear and "
                  "temperature cannot be compared: the devices are not known to agree")
# Device state fields that name the device itself: one side's runs should agree on them.
_IDENTITY_FIELDS = {"serial": "a different serial number within one side is a different device",
                    "firmware": "the device's firmware changed between one side's runs: "
                                "its flash translation layer is part of what is measured"}


def _read_states(name: str, seen: dict) -> dict[str, dict]:
    """The device's state records that hold a reading (iowatch.devstate: not
    "nothing" or "unavailable")."""
    return {who: s for who, s in _device_states(name, seen).items()
            if s.get("status", "read") == "read"}


def side_gaps(base_envs: list[dict], candidate_envs: list[dict]) -> list[Confounder]:
    """What comparing the two sides' first runs cannot see, over all their runs:
    a device whose state one side recorded and the other never did, and a
    device's serial or firmware that changed between the runs of one side."""
    out: list[Confounder] = []
    recorded = [{who for env in envs for name, seen in _devices(env).items()
                 for who in _read_states(name, seen)} for envs in (base_envs, candidate_envs)]
    named = {name for envs in (base_envs, candidate_envs) for env in envs for name in _devices(env)}
    for who in sorted(recorded[0] ^ recorded[1]):
        if who.split(" member ")[0] in named:
            seen = ("recorded", NOT_RECORDED) if who in recorded[0] else (NOT_RECORDED, "recorded")
            out.append(Confounder(f"{who} device state", *seen, WHY_UNRECORDED))
    for side, envs in (("base", base_envs), ("candidate", candidate_envs)):
        values: dict[tuple[str, str], list] = {}
        for env in envs:
            for name, seen in _devices(env).items():
                for who, state in _read_states(name, seen).items():
                    for field in _IDENTITY_FIELDS:
                        if state.get(field) not in (None, ""):
                            values.setdefault((who, field), []).append(state[field])
        for (who, field), seen_values in sorted(values.items()):
            distinct = list(dict.fromkeys(seen_values))
            if len(distinct) > 1:
                out.append(Confounder(f"{who} {field} within the {side} side's runs",
                                      distinct[0], distinct[-1], _IDENTITY_FIELDS[field]))
    return out
