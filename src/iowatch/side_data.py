"""A side's data: the one interface (Side), and pool, which pairs its runs' cells.

(Named for what it holds: it was iowatch.comparison, which holds no
comparison; the verdict on two sides is iowatch.judging's, and which stored
runs make a side is iowatch.judging.sides's rule.)

A side is what a maintainer names: a bundle directory, a run id, or a kernel
(release, commit or label) whose runs are in a store; or a study's published
result set. Every side is a Side: a list of bundle-shaped manifests (samples
inline), whatever it came from. The adapters that read one are above the
policy (iowatch.side_sources: a bundle directory, the HTTP read API, a study's
published numbers; webapp/iowatch_web/store/sides.py: the Django store); this
module is below it, plain data the policy reads, with no I/O. Several runs on
a side pool their repetitions per cell.

Cells pair by their PooledKey (iowatch.cells: study, device class, device,
filesystem, job group and metric), from group-level samples only (job null):
job groups stay separate, so a starving writer is a regression even while the
readers improve.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from iowatch.cells import CellLocation, PooledKey


@dataclass
class Side:
    spec: str  # what was asked for
    source: str  # where it was read: a directory, a server URL, "the local store", "published"
    runs: list[dict]  # bundle-shaped manifests with samples inline

    @property
    def title(self) -> str:
        kernels = sorted({kernel_title(r) for r in self.runs})
        return "; ".join(kernels)


def kernel_title(run: dict) -> str:
    k = run.get("kernel") or {}
    parts = [k.get("release", "?")]
    if k.get("git_commit"):
        parts.append(f"commit {k['git_commit'][:12]}")
    series, patch = k.get("series"), k.get("patch")
    if series:
        index = (patch or {}).get("index", k.get("patch_index"))
        count = series.get("patch_count")
        where = f", patch {index}/{count}" if index is not None and count else (
            f", patch {index}" if index is not None else "")
        parts.append(f"series {series['name']!r}{where}")
    if patch and patch.get("subject"):
        parts.append(f"\"{patch['subject']}\"")
    if run.get("label"):
        parts.append(f"label {run['label']}")
    return ", ".join(parts)


# --- the cells of a side ------------------------------------------------------------

@dataclass
class CellContext:
    """What the report says about a cell beside its numbers."""
    device_model: str | None = None
    candidate_cell: dict = field(default_factory=dict)


@dataclass
class PooledSide:
    """A side's cells with their runs pooled."""
    values: dict[PooledKey, list[float]]  # group-level values of passed repetitions
    # The boot each value came from (run_boot): a run is one boot of its kernel
    # unless its environment names the boot (the kernel's boot_id), which runs share.
    boots: dict[PooledKey, list[str]]
    cells: dict[CellLocation, dict]  # the bundle's cell that stands for each location
    hosts: str  # the hosts the runs came from, joined
    device_models: dict[str, str]  # device name -> model, where the inventory gave one
    # The round of a check each value came from (run_round: the CheckRound its
    # manifest records, as a check's bundle does or in_round marks it); None
    # for a run outside a check's rounds.
    rounds: dict[PooledKey, list] = field(default_factory=dict)


@dataclass(frozen=True, order=True)
class CheckRound:
    """A round of one `iowatch check` as its bundles record it (check_round):
    a side read from a store may pool the runs of several checks of a kernel,
    whose rounds of the same number are different blocks."""
    check: str
    index: int

    def __str__(self) -> str:
        return f"{self.index} of check {self.check[:8]}"


def in_round(run: dict, k: int | None, check: str = "") -> dict:
    """A run's manifest marked with the round (block) it was measured in, under
    the one name a check's bundle records it by (check_round: the check and
    the round; `check` "" for the rounds of one caller's sides, the check's
    variants or a bisect's steps); k None: the manifest as it is."""
    return run if k is None else {**run, "check_round": {"check": check, "round": k}}


def run_round(run: dict):
    """The round (block) a run was measured in: the check round its manifest
    records (check_round: a CheckRound, or the round's number alone for the
    rounds one caller marked, check ""), else the "round" a manifest was
    marked with before check_round was the one name, else None."""
    cr = run.get("check_round")
    if not cr:
        return run.get("round")
    return CheckRound(cr["check"], cr["round"]) if cr["check"] else cr["round"]


def run_boot(run: dict, index: int) -> str:
    """The boot a run was measured in: the kernel's boot_id its bundle records
    (environment.boot_id: runs of one boot are one boot), else the run itself
    (a bundle is one boot: a check's every boot is a bundle of its own)."""
    env = run.get("environment") or {}
    # The runner writes it under environment.host (iowatch.environment.host_environment).
    boot = env.get("boot_id") or (env.get("host") or {}).get("boot_id")
    return str(boot or run.get("run_id") or index)


def pool(side: Side) -> PooledSide:
    """Pool the side's runs: group-level values by PooledKey, one cell per location."""
    values: dict[PooledKey, list[float]] = defaultdict(list)
    boots: dict[PooledKey, list[str]] = defaultdict(list)
    rounds: dict[PooledKey, list] = defaultdict(list)
    cells: dict[CellLocation, dict] = {}
    models: dict[str, str] = {}
    hosts = set()
    for i, run in enumerate(side.runs):
        boot = run_boot(run, i)
        block = run_round(run)
        classes = {d["name"]: d.get("class") or d.get("device_class") for d in run.get("devices") or []}
        models.update({d["name"]: d.get("model") for d in run.get("devices") or [] if d.get("model")})
        hosts.add((run.get("host") or {}).get("name", "?"))
        for cell in run.get("cells") or []:
            if cell.get("status") == "skipped":
                continue
            where = CellLocation(cell["study"], classes.get(cell.get("device"), "?"),
                                 cell.get("device") or "", cell.get("filesystem") or "")
            if where not in cells or not cell_passed(cells[where]):
                cells[where] = cell  # pooled runs: a passed cell stands for the location
            for rep in cell.get("repetitions") or []:
                if rep.get("status", "passed") != "passed":
                    continue  # a failed repetition gives no performance result
                for s in rep["samples"]:
                    if s.get("job") is None:
                        key = PooledKey.at(where, s["group"], s["metric"])
                        values[key].append(float(s["value"]))
                        boots[key].append(boot)
                        rounds[key].append(block)
    return PooledSide(dict(values), dict(boots), cells, ", ".join(sorted(hosts)), models,
                      dict(rounds))


def cell_passed(cell: dict) -> bool:
    """At least one repetition of the cell passed: it has a performance result."""
    return any(r.get("status", "passed") == "passed" for r in cell.get("repetitions") or [])
