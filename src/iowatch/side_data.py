"""A side's data: the one interface (Side), the adapters that read one, and pool.

(Named for what it holds: it was iowatch.comparison, which holds no
comparison; the verdict on two sides is iowatch.judging's, and which stored
runs make a side is iowatch.judging.sides's rule. This module does the I/O
the policy package does not: bundle directories and the HTTP read API.)

A side is what a maintainer names: a bundle directory, a run id, or a kernel
(release, commit or label) whose runs are in a store; or a study's published
result set. Every side is a Side: a list of bundle-shaped manifests (samples
inline), whatever it came from. The adapters here read a bundle directory,
the HTTP read API (--server) and a study's published numbers; the Django
store's adapter lives in the web app (webapp/iowatch_web/store/sides.py), which the
runner side never imports. Several runs on a side pool their
repetitions per cell. The verdict on two sides is iowatch.judging's.

Cells pair by their PooledKey (iowatch.cells: study, device class, device,
filesystem, job group and metric), from group-level samples only (job null):
job groups stay separate, so a starving writer is a regression even while the
readers improve.
"""
from __future__ import annotations

import re
import uuid
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from iowatch import bundle
from iowatch.cells import CellLocation, PooledKey
from iowatch.ciapi import Client, ServerError
from iowatch.judging.sides import SideNotFound, SideQuery
from iowatch.studies import Study



@dataclass
class Side:
    spec: str  # what was asked for
    source: str  # where it was read: a directory, a server URL, "the local store", "published"
    runs: list[dict]  # bundle-shaped manifests with samples inline

    @property
    def title(self) -> str:
        kernels = sorted({_kernel_title(r) for r in self.runs})
        return "; ".join(kernels)


def _kernel_title(run: dict) -> str:
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


# --- reading a side -----------------------------------------------------------

def _is_run_id(spec: str) -> bool:
    try:
        uuid.UUID(spec)
        return True
    except ValueError:
        return False


def matches_kernel(run: dict, spec: str) -> bool:
    """A run (API summary or manifest) is of kernel `spec`: release, label or commit prefix."""
    kernel = run.get("kernel") or {}
    commit = kernel.get("git_commit") or ""
    return (spec in (kernel.get("release"), run.get("label"))
            or (len(spec) >= 7 and re.fullmatch(r"[0-9a-f]+", spec) is not None
                and commit.startswith(spec)))


def manifest_from_api(server: str | Client, run_id: str) -> dict:
    """Rebuild a run's manifest (samples inline, no artifacts) from the read API."""
    client = server if isinstance(server, Client) else Client(server)
    run = client.get(f"runs/{run_id}")
    cells = client.paged(f"runs/{run_id}/cells", 1000)
    # Through the reader the server judges with: a run retention summarised keeps its values.
    # The server's page (10,000): a larger one holds a web worker for seconds.
    samples = client.paged(f"runs/{run_id}/values", 10_000)
    by_cell: dict[int, dict[int, list]] = defaultdict(lambda: defaultdict(list))
    for s in samples:
        by_cell[s["cell_id"]][s["repetition"]].append(
            {"metric": s["metric"], "value": s["value"], "group": s["group"], "job": s["job"]})
    kernel = dict(run["kernel"])
    kernel.update(config=run.get("kernel_config") or {}, cmdline=run.get("cmdline"))
    # The series as the bundle had it: the patches with their Message-IDs and hashes.
    patches = [{k: v for k, v in p.items() if k != "commit" and v not in (None, "")}
               for p in run.get("patches") or []]
    if kernel.get("series"):
        kernel["series"] = {**{k: v for k, v in kernel["series"].items() if v not in (None, [])},
                            **({"patches": patches} if patches else {})}
    if kernel.get("patch_index") is not None:
        mine = next((p for p in patches if p["index"] == kernel["patch_index"]), {})
        kernel["patch"] = {"index": kernel["patch_index"],
                           **{k: mine[k] for k in ("subject", "message_id", "author") if k in mine}}
    return {
        "run_id": str(run["run_id"]), "status": run["status"], "published": run["published"],
        "label": run["label"], "matrix": run["matrix"], "command": run["command"],
        "kernel": kernel, "host": run["host"], "tools": run["tools"],
        "environment": run["environment"],
        "devices": [{**d, "class": d["device_class"]} for d in run["devices"]],
        "cells": [{"id": c["key"], "study": c["study"],
                   "device": c["device"]["name"] if c["device"] else None,
                   "filesystem": c["filesystem"], "mkfs_options": c["mkfs_options"],
                   "mount_options": c["mount_options"], "params": c["params"],
                   "status": c["status"],
                   "repetitions": [{"index": r["index"], "status": r["status"],
                                    "samples": by_cell[c["id"]].get(r["index"], [])}
                                   for r in c["repetitions"]]} for c in cells],
    }


def _from_server(spec: str, server: str, role: str) -> Side:
    client = Client(server)
    try:
        if _is_run_id(spec):
            try:
                return Side(spec, server, [manifest_from_api(client, spec)])
            except ServerError as e:
                if e.status == 404:
                    raise SideNotFound(f"{role} {spec!r}: no run with that id on {server}") from None
                raise
        # The runs of the kernel, oldest first, for the one rule of which runs
        # make a side (the runs list carries each run's status and trigger).
        named = sorted((r for r in client.paged("runs", 1000) if matches_kernel(r, spec)),
                       key=lambda r: (r.get("started_at") or r["received_at"], r["received_at"]))
        runs = SideQuery(spec, role).choose(
            named, published=lambda r: bool(r.get("published")), status=lambda r: r.get("status"),
            trigger_kind=lambda r: (r.get("trigger") or {}).get("kind"))
        if not runs:
            raise SideNotFound(f"{role} {spec!r}: not a bundle directory, and no run of a kernel "
                               f"with that release, commit or label on {server}")
        return Side(spec, server, [manifest_from_api(client, str(r["run_id"])) for r in runs])
    except ServerError as e:
        raise SideNotFound(f"{role} {spec!r}: cannot read the store at {server}: {e}") from None


def _bundle_dirs(spec: str, role: str) -> list[Path]:
    """The bundles under `spec`: the bundle itself, or every bundle below it."""
    root = Path(spec)
    if not root.is_dir():
        raise SideNotFound(f"{role} {spec!r}: not a directory")
    found = [root] if (root / bundle.MANIFEST).is_file() else \
        sorted(p.parent for p in root.glob(f"**/{bundle.MANIFEST}"))
    if not found:
        raise SideNotFound(f"{role} {spec!r}: no bundle in it (no {bundle.MANIFEST})")
    return found


def _load_runs(paths: list[Path], role: str) -> list[dict]:
    runs = []
    for path in paths:
        try:
            runs.append(bundle.load(path))
        except bundle.BundleError as e:
            raise SideNotFound(f"{role} {str(path)!r}: not a readable bundle: {e}") from None
    return runs


def kernel_of(run: dict) -> tuple:
    """What makes two runs one kernel: its release, commit and config."""
    k = run.get("kernel") or {}
    return k.get("release"), k.get("git_commit"), k.get("config_hash")


def bundles_history(paths: list[str]) -> list[Side]:
    """A history of boots (iowatch.judging.boots) from bundle directories: each
    path a bundle, or a directory of bundles (a check's or `make run`'s output);
    their runs grouped by kernel (release, commit and config), one side a kernel."""
    kernels: dict[tuple, list[dict]] = defaultdict(list)
    for spec in paths:
        for run in _load_runs(_bundle_dirs(spec, "--history"), "--history"):
            kernels[kernel_of(run)].append(run)
    return [Side(_kernel_title(runs[0]), str(paths), runs) for runs in kernels.values()]


def boots_side(spec: str, role: str = "side", leave_out: Path | None = None) -> Side:
    """A kernel measured in several boots: a directory of its bundles (a boot a
    bundle, as `iowatch run --boots DIR` writes them), every one of one kernel
    on one host; `leave_out`: a bundle below it that is not a boot of the side
    yet (the run in progress)."""
    paths = [p for p in _bundle_dirs(spec, role)
             if leave_out is None or p.resolve() != leave_out.resolve()]
    runs = _load_runs(paths, role)
    kernels = {kernel_of(r) for r in runs}
    hosts = {(r.get("host") or {}).get("name") for r in runs}
    if len(kernels) > 1 or len(hosts) > 1:
        seen = sorted({f"{_kernel_title(r)} on {(r.get('host') or {}).get('name')}" for r in runs})
        raise SideNotFound(f"{role} {spec!r}: its bundles are of {len(kernels)} kernels on "
                           f"{len(hosts)} hosts ({'; '.join(seen)}); a side is one kernel on one "
                           "host: give a directory of that kernel's boots only")
    return Side(spec, spec, runs)


def server_history(server: str | Client, host: str):
    """A history of boots (iowatch.judging.boots) read through the server's API:
    the host's newest kernels measured in two runs or more, as the store's own
    adapter chooses them (store.sides.boot_history), read only when a
    comparison asks. For agents that judge on their side (a bisect)."""
    from iowatch.judging.boots import HISTORY_KERNELS, HISTORY_RUNS
    client = server if isinstance(server, Client) else Client(server)

    def read() -> list[Side]:
        from urllib.parse import quote
        runs = [r for r in client.paged(f"runs?host={quote(host)}&published=false", 1000)
                if r.get("status") not in SideQuery.NOT_MEASURED]
        kernels: dict[int, list[dict]] = defaultdict(list)
        for r in runs:
            kernels[r["kernel"]["id"]].append(r)
        newest = lambda rs: max(r.get("started_at") or r["received_at"] for r in rs)  # noqa: E731
        chosen = sorted((rs for rs in kernels.values() if len(rs) >= 2), key=newest,
                        reverse=True)[:HISTORY_KERNELS]
        return [Side(f"kernel:{rs[0]['kernel']['id']}", client.server,
                     [manifest_from_api(client, str(r["run_id"])) for r in sorted(
                         rs, key=lambda r: r.get("started_at") or r["received_at"])[-HISTORY_RUNS:]])
                for rs in chosen]
    return read


class NeedsStore(SideNotFound):
    """A run id or kernel without --server: only the web app can read this
    machine's store (iowatch compare asks its `store_side` command for the side)."""


def load_side(spec: str, *, server: str | None = None, role: str = "side") -> Side:
    """A bundle directory, a directory of one kernel's bundles (its boots), or a
    run id or kernel read through --server's API."""
    path = Path(spec)
    if path.is_dir() and not (path / bundle.MANIFEST).is_file():
        return boots_side(spec, role)  # a kernel's boots, a bundle each
    if path.is_dir():
        try:
            return Side(spec, str(path), [bundle.load(path)])
        except bundle.BundleError as e:
            raise SideNotFound(f"{role} {spec!r}: a directory, but not a readable bundle: {e}") from None
    if server:
        return _from_server(spec, server, role)
    raise NeedsStore(f"{role} {spec!r}: not a bundle directory; a run id or kernel is read from "
                     "a store (pass --server URL, or run on the machine of the store)")


def published_side(study: Study, label: str, device_class: str | None, role: str) -> Side:
    """A study's published result set(s) under one label, as manifests (n = 1)."""
    entries = [e for e in study.published if e.label == label
               and (device_class is None or e.device_class == device_class)]
    if not entries:
        labels = sorted({e.label for e in study.published})
        where = f" on device class {device_class}" if device_class else ""
        raise SideNotFound(f"{role} {label!r}: study {study.slug} published nothing under that "
                           f"label{where}; its labels are {', '.join(labels)}")
    fs = study.filesystems[0]
    runs = []
    for e in entries:
        cls = e.device_class
        device = f"published-{cls}"
        runs.append({
            "run_id": None, "published": True, "label": e.label,
            "kernel": {"release": e.kernel}, "host": {"name": "published", "kind": "published"},
            "devices": [{"name": device, "class": cls, "model": e.setup}],
            "environment": {"setup": e.setup, "source": study.source},
            "command": None, "tools": {},
            "cells": [{"id": f"{study.slug}/{device}/{fs}", "study": study.slug, "device": device,
                       "filesystem": fs, "params": {"published": True},
                       "repetitions": [{"index": 1, "samples": e.samples()}]}]})
    return Side(label, "published", runs)


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
