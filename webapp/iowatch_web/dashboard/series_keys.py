"""The history page's choosers: the values each part of a series key (study,
host, device, filesystem, group, metric) takes in the store, narrowed by the
parts already chosen, and a key to start from when none is given. Each list is
one small query: groups and metrics are read from the newest cells of the key
only, never from every sample."""
from __future__ import annotations

from django.db.models import Exists, OuterRef

from iowatch_web.dashboard.run_numbers import deciding_of
from iowatch_web.results.models import Cell, Device, Host, Run, Study
from iowatch_web.store.values import sample_values

# Groups and metrics are those of this many of the key's newest cells.
NEWEST_CELLS = 20


def _cells(key: dict, upto: str):
    """The measured, passed cells of the key's parts before `upto`."""
    cells = Cell.objects.filter(run__published=False, status="passed")
    for part, lookup in (("study", "study__slug"), ("host", "run__host__name"),
                         ("device", "device__name"), ("filesystem", "filesystem")):
        if part == upto:
            break
        if key.get(part):
            cells = cells.filter(**{lookup: key[part]})
    return cells


def choices(key: dict) -> dict[str, list[str]]:
    """Per part of the key, the values to choose from (the chosen one always among them)."""
    measured = Cell.objects.filter(run__published=False)
    out = {
        "study": list(Study.objects.filter(Exists(measured.filter(study=OuterRef("pk"))))
                      .order_by("slug").values_list("slug", flat=True)),
        "host": list(Host.objects.filter(Exists(Run.objects.filter(host=OuterRef("pk"),
                                                                   published=False)))
                     .order_by("name").values_list("name", flat=True)),
        "device": list(Device.objects.filter(host__name=key.get("host") or "")
                       .order_by("name").values_list("name", flat=True)),
        "filesystem": sorted(set(_cells(key, "filesystem").order_by()
                                 .values_list("filesystem", flat=True).distinct())),
    }
    newest = list(_cells(key, "group").order_by("-id").values_list("id", flat=True)[:NEWEST_CELLS])
    pairs = {(v.group, v.metric) for v in sample_values(newest)}
    out["group"] = sorted({g for g, _ in pairs})
    out["metric"] = sorted({m for g, m in pairs if not key.get("group") or g == key["group"]})
    for part, values in out.items():
        if key.get(part) and key[part] not in values:
            values.insert(0, key[part])
    return out


# The newest runs whose newest cell is looked at for a history of its own.
RUNS_LOOKED_AT = 20


def _with_history(cells):
    """The newest cell of the newest runs among `cells` whose place (study,
    host, device, filesystem) another kernel measured too; None if none has.
    One cell a run: a 100,000-cell run is one look, not 100,000."""
    runs = (Run.objects.filter(Exists(cells.filter(run=OuterRef("pk"))))
            .order_by("-received_at", "-id")[:RUNS_LOOKED_AT])
    for run in runs:
        cell = cells.filter(run=run).first()
        if Cell.objects.filter(run__published=False, status="passed", study_id=cell.study_id,
                               run__host_id=run.host_id, device_id=cell.device_id,
                               filesystem=cell.filesystem).exclude(
                                   run__kernel_id=run.kernel_id).exists():
            return cell
    return None


def starting_key(key: dict) -> dict:
    """The key with its empty parts filled from the newest measured cell that
    matches the chosen ones and has a history (its study, host, device and
    filesystem measured on another kernel too: a one-kernel series is one
    point, issue 28), else from the newest one; its study's first deciding
    metric by default. A key with a device keeps an empty filesystem: the
    device's raw cells."""
    if all(key.get(p) for p in ("study", "host", "device", "group", "metric")):
        return key
    cells = _cells(key, "group").select_related("study", "device", "run__host").order_by("-id")
    cell = _with_history(cells) or cells.first()
    if cell is None:
        return key
    filled = {**key, "study": key.get("study") or cell.study.slug,
              "host": key.get("host") or cell.run.host.name,
              "device": key.get("device") or (cell.device.name if cell.device else ""),
              "filesystem": key.get("filesystem") or cell.filesystem}
    if key.get("group") and key.get("metric"):
        return filled
    measured = {(v.group, v.metric) for v in sample_values([cell.pk])}
    fits = sorted(p for p in measured if (not key.get("group") or p[0] == key["group"])
                  and (not key.get("metric") or p[1] == key["metric"]))
    decides = [p for p in sorted(deciding_of(filled["study"])) if p in fits]
    group, metric = (decides or fits or [("", "")])[0]
    filled["group"] = key.get("group") or group
    filled["metric"] = key.get("metric") or metric
    return filled
