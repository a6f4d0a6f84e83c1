"""Where a side's runs come from: a bundle directory, the HTTP read API
(--server) and a study's published numbers, each read into a Side
(iowatch.side_data). The Django store's adapter is the web app's
(webapp/iowatch_web/store/sides.py), which the runner side never imports.

Which stored runs make a side is iowatch.judging.sides's rule (SideQuery),
applied here to the HTTP API's runs as the store applies it in SQL; the
adapters only read. They sit above the policy: judging reads a Side and
pools it (side_data), never these adapters.
"""
from __future__ import annotations

import re
import uuid
from collections import defaultdict
from pathlib import Path
from urllib.parse import quote

from iowatch import bundle
from iowatch.ciapi import Client, ServerError
from iowatch.judging.boots import HISTORY_KERNELS, HISTORY_RUNS
from iowatch.judging.sides import SideNotFound, SideQuery
from iowatch.side_data import Side, kernel_title
from iowatch.studies import Study


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
    return [Side(kernel_title(runs[0]), str(paths), runs) for runs in kernels.values()]


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
        seen = sorted({f"{kernel_title(r)} on {(r.get('host') or {}).get('name')}" for r in runs})
        raise SideNotFound(f"{role} {spec!r}: its bundles are of {len(kernels)} kernels on "
                           f"{len(hosts)} hosts ({'; '.join(seen)}); a side is one kernel on one "
                           "host: give a directory of that kernel's boots only")
    return Side(spec, spec, runs)


def server_history(server: str | Client, host: str):
    """A history of boots (iowatch.judging.boots) read through the server's API:
    the host's newest kernels measured in two runs or more, as the store's own
    adapter chooses them (store.sides.boot_history), read only when a
    comparison asks. For agents that judge on their side (a bisect)."""
    client = server if isinstance(server, Client) else Client(server)

    def read() -> list[Side]:
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
