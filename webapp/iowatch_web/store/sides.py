"""The Django store's adapter to the one side interface (iowatch.side_data.Side).

A side read from the store is the same bundle-shaped manifests a bundle
directory or the HTTP API gives, so iowatch.judging judges it like any
other: the dashboard's compare, the verdicts stored when a run arrives and
`iowatch compare` on this machine (through the `store_side` management command)
all read their sides here, by the one rule of which runs make a side
(iowatch.judging.sides.SideQuery): `stored_runs` only turns it into SQL.
"""
import re
import uuid
from pathlib import Path

from django.db.models import Count, Max, Q
from django.db.models.functions import Coalesce

from iowatch.judging.boots import HISTORY_KERNELS, HISTORY_RUNS
from iowatch.side_data import Side
from iowatch.judging.sides import SideQuery
from iowatch_web.results.models import Cell, Repetition, Run
from iowatch_web.store.values import sample_values


def spec_query(spec: str) -> Q:
    """The runs a SPEC names: a run id, or a kernel's release, label or commit prefix."""
    try:
        return Q(run_id=uuid.UUID(spec))
    except ValueError:
        pass
    q = Q(kernel__release=spec) | Q(label=spec)
    if len(spec) >= 7 and re.fullmatch(r"[0-9a-f]+", spec):
        q |= Q(kernel__git_commit__startswith=spec)
    return q


def manifest(run: Run) -> dict:
    return manifests([run])[0]


def manifests(runs: list[Run], job_samples: bool = True) -> list[dict]:
    """The runs' manifests, read with a fixed number of queries whatever their count.
    Without job_samples, only the group-level samples (all that a verdict reads)."""
    ids = [r.pk for r in runs]
    samples: dict[tuple[int, int], list] = {}
    # Raw rows, or the summaries of a run that retention summarised (group-level only).
    for cell_id, rep, metric, value, group, job in sample_values(
            Cell.objects.filter(run_id__in=ids), jobs=job_samples, ordered=True):
        samples.setdefault((cell_id, rep), []).append(
            {"metric": metric, "value": value, "group": group, "job": job})
    # Repetitions as plain rows in (cell, index) order: the model's default order
    # would join cells and runs to sort by the run's time, for the same rows.
    repetitions: dict[int, list] = {}
    for cell_id, index, status in (Repetition.objects.filter(cell__run_id__in=ids)
                                   .order_by("cell_id", "index")
                                   .values_list("cell_id", "index", "status")):
        repetitions.setdefault(cell_id, []).append((index, status))
    cells: dict[int, list] = {r.pk: [] for r in runs}
    for c in (Cell.objects.filter(run_id__in=ids).select_related("study", "device")
              .order_by("run_id", "key")):
        cells[c.run_id].append({
            "id": c.key, "study": c.study.slug, "device": c.device.name if c.device else None,
            "filesystem": c.filesystem, "mkfs_options": c.mkfs_options,
            "mount_options": c.mount_options, "params": c.params, "status": c.status,
            "repetitions": [{"index": index, "status": status,
                             "samples": samples.get((c.id, index), [])}
                            for index, status in repetitions.get(c.id, [])]})
    devices: dict[int, list] = {r.pk: [] for r in runs}
    for link in Run.devices.through.objects.filter(run_id__in=ids).select_related("device"):
        d = link.device
        devices[link.run_id].append({**d.inventory, "name": d.name, "class": d.device_class,
                                     "model": d.model, "rotational": d.rotational})
    out = []
    for run in runs:
        k = run.kernel
        kernel = {"release": k.release, "git_commit": k.git_commit, "config_hash": k.config_hash,
                  "config": k.config, "cmdline": run.cmdline or None}
        if k.series_id:
            kernel["series"] = {"name": k.series.name, "base": k.series.base,
                                "patch_count": k.series.patch_count}
        if k.patch_index is not None:
            kernel["patch"] = {"index": k.patch_index}
        out.append({"run_id": str(run.run_id), "status": run.status, "published": run.published,
                    "label": run.label, "matrix": run.matrix, "command": run.command,
                    "kernel": kernel, "host": {"name": run.host.name, "kind": run.host.kind},
                    "tools": run.tools, "environment": run.environment,
                    "check_round": run.check_round or None,
                    "devices": sorted(devices[run.pk], key=lambda d: d["name"]),
                    "cells": cells[run.pk]})
    return out


def runs_side(spec: str, runs, source: str = "the store") -> Side:
    """A side of these stored runs (a list or queryset of Run), for judging:
    cells pair on group-level samples only (iowatch.side_data)."""
    return Side(spec, source, manifests(list(runs), job_samples=False))


def judged_runs(runs):
    """Of these runs (a queryset), those a side may pool: SideQuery.admits as SQL
    (not a failed build or boot, not a bisect's step); `at` is when each ran."""
    return (runs.exclude(status__in=SideQuery.NOT_MEASURED)
            # Not .exclude(trigger__kind="bisect"): SQL's NOT on a missing key is NULL,
            # which would drop every run without a trigger too.
            .filter(Q(trigger__kind__isnull=True) | Q(trigger__kind__in=SideQuery.JUDGED_TRIGGERS))
            .annotate(at=Coalesce("started_at", "received_at")))


# What SideQuery.choose reads of a run: of store rows (values()), and of Run objects.
ROW_FACTS = {"published": lambda r: r["published"], "status": lambda r: r["status"],
             "trigger_kind": lambda r: r["trigger__kind"]}
RUN_FACTS = {"published": lambda r: r.published, "status": lambda r: r.status,
             "trigger_kind": lambda r: (r.trigger or {}).get("kind")}


def stored_runs(query: SideQuery) -> list[Run]:
    """The stored runs a side request names, chosen by SideQuery's rule, oldest first;
    [] when none."""
    runs = Run.objects.filter(Q(kernel_id=query.kernel_id) if query.kernel_id is not None
                              else spec_query(query.spec))
    if query.host is not None:
        runs = runs.filter(host_id=query.host)
    if query.matrix is not None:
        runs = runs.filter(matrix=query.matrix)
    # The rule reads two columns of every candidate; only the chosen are read whole.
    rows = list(judged_runs(runs).order_by("at", "id").values("id", "published", "status",
                                                                "trigger__kind"))
    chosen = [r["id"] for r in query.choose(rows, **ROW_FACTS)]
    by_id = Run.objects.select_related("host", "kernel__series").in_bulk(chosen)
    return [by_id[pk] for pk in chosen]


def boot_history(host_id: int | None):
    """The host's history of boots for iowatch.judging.boots, read only when a
    comparison asks: its newest HISTORY_KERNELS kernels measured in two runs or
    more, up to HISTORY_RUNS newest runs of each, one side a kernel. None (no
    history) for a side of several hosts."""
    if host_id is None:
        return None

    def read() -> list[Side]:
        # Every measured boot counts, whatever started it: a calibration, a
        # confirmation or a bisect's step is a boot of its kernel like any other.
        runs = (Run.objects.filter(host_id=host_id, published=False)
                .exclude(status__in=SideQuery.NOT_MEASURED)
                .annotate(at=Coalesce("started_at", "received_at")))
        kernels = (runs.values("kernel_id").annotate(n=Count("id"), last=Max("at"))
                   .filter(n__gte=2).order_by("-last", "-kernel_id")[:HISTORY_KERNELS])
        sides = []
        for row in kernels:
            ids = list(runs.filter(kernel_id=row["kernel_id"]).order_by("-at", "-id")
                       .values_list("id", flat=True)[:HISTORY_RUNS])
            chosen = Run.objects.select_related("host", "kernel__series").filter(id__in=ids)
            sides.append(runs_side(f"kernel:{row['kernel_id']}", chosen))
        return sides
    return read


def one_host(runs) -> int | None:
    """The host all these runs ran on; None when they ran on several."""
    hosts = {r.host_id for r in runs}
    return hosts.pop() if len(hosts) == 1 else None


def store_side(spec: str, role: str) -> Side:
    """A run id or a kernel (release, label or commit prefix) read from this
    machine's store, for `iowatch compare`."""
    query = SideQuery(spec, role)
    runs = stored_runs(query)
    if not runs:
        raise query.not_found("not a bundle directory, and this machine's store") from None
    return runs_side(spec, runs, "the local store")


def judging_studies() -> dict:
    """The study files that judge (settings.IOWATCH_STUDIES), read again when one changes."""
    from django.conf import settings

    from iowatch.studies import load_studies

    directory = Path(settings.IOWATCH_STUDIES)
    stamp = tuple(sorted((p.name, p.stat().st_mtime_ns) for p in directory.glob("*.yml")))
    key = (str(directory), stamp)
    if _STUDIES.get("key") != key:
        _STUDIES.update(key=key, studies=load_studies(directory))
    return _STUDIES["studies"]


_STUDIES: dict = {}
