"""manage.py export_runs SPEC...: print stored runs as bundle-shaped manifests (JSON).

For `iowatch compare` on this machine without a server: the runner side never
imports Django, so it asks for the runs through this command. SPEC is a run id
or a kernel (release, label, or commit prefix of at least 7 hex digits); the
output is one JSON list of manifests with samples inline and no artifacts.
"""
import json
import re
import uuid

from django.core.management.base import BaseCommand
from django.db.models import Q

from results.models import Cell, Run, Sample


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


def manifests(runs: list[Run]) -> list[dict]:
    """The runs' manifests, read with a fixed number of queries whatever their count."""
    ids = [r.pk for r in runs]
    samples: dict[tuple[int, int], list] = {}
    for cell_id, rep, metric, value, group, job in (
            Sample.objects.filter(cell__run_id__in=ids).order_by("cell_id", "repetition", "id")
            .values_list("cell_id", "repetition", "metric_id", "value", "group", "job")):
        samples.setdefault((cell_id, rep), []).append(
            {"metric": metric, "value": value, "group": group, "job": job})
    cells: dict[int, list] = {r.pk: [] for r in runs}
    for c in (Cell.objects.filter(run_id__in=ids).select_related("study", "device")
              .prefetch_related("repetitions").order_by("run_id", "key")):
        cells[c.run_id].append({
            "id": c.key, "study": c.study.slug, "device": c.device.name if c.device else None,
            "filesystem": c.filesystem, "mkfs_options": c.mkfs_options,
            "mount_options": c.mount_options, "params": c.params, "status": c.status,
            "repetitions": [{"index": r.index, "status": r.status,
                             "samples": samples.get((c.id, r.index), [])}
                            for r in c.repetitions.all()]})
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
                    "devices": sorted(devices[run.pk], key=lambda d: d["name"]),
                    "cells": cells[run.pk]})
    return out


class Command(BaseCommand):
    help = "Print the runs matching run ids or kernels as bundle-shaped JSON manifests."

    def add_arguments(self, parser):
        parser.add_argument("specs", nargs="+", metavar="SPEC")

    def handle(self, specs, **options):
        q = Q()
        for spec in specs:
            q |= spec_query(spec)
        runs = Run.objects.filter(q).select_related("host", "kernel__series").order_by("received_at")
        self.stdout.write(json.dumps(manifests(list(runs))))
