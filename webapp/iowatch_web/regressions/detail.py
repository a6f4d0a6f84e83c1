"""What a regression's detail (GET /api/v1/regressions/{id}) says beyond its
verdicts, so the mailing-list report (iowatch.mailreport.render) can be made
from that JSON alone, by the server, its page and `iowatch report` alike:
the confounders of the two sides, the series and its mail thread, the nightly
trigger, the host's kind, the report's mail headers and the workloads as run.
"""
from __future__ import annotations

import os
from dataclasses import asdict

from django.conf import settings

from iowatch.side_data import run_boot
from iowatch.stats import confounders as find_confounders
from iowatch.stats.confounders import side_gaps
from iowatch_web.regressions.models import Regression
from iowatch_web.results.models import Artifact, Cell, Kernel, Run
from iowatch_web.store.sides import manifests

DEFAULT_FROM = "iowatch <iowatch@localhost>"


def _setting(name: str, default: str = "") -> str:
    return getattr(settings, name, None) or os.environ.get(name) or default


def _addresses(text: str) -> list[str]:
    return [a.strip() for a in text.split(",") if a.strip()]


def confounders(regression: Regression) -> list[dict]:
    """Differences between the first run of each side (pooled runs of one
    kernel share a setup), as iowatch.judging reports them: the command line
    without what the virtual lab sets per run; then what that comparison cannot
    see over all the sides' runs (iowatch.stats.confounders.side_gaps): a device
    state one side never recorded, a firmware that changed within a side."""
    c = regression.comparison
    base = c.base_runs.select_related("host", "kernel__series").order_by("id").first()
    candidate = c.candidate_runs.select_related("host", "kernel__series").order_by("id").first()
    if base is None or candidate is None:
        return []
    # The manifests without samples' job rows: confounders read setup, not numbers.
    b, k = manifests([base, candidate], job_samples=False)
    found = find_confounders(b, k) + side_gaps(_device_setups(c.base_runs),
                                               _device_setups(c.candidate_runs))
    return [asdict(x) for x in found]


def _device_setups(runs) -> list[dict]:
    """Each run's devices and environment only (what side_gaps reads), without
    the cells and samples a manifest carries: a side may pool many runs."""
    rows = list(runs.order_by("id").values_list("id", "environment"))
    devices: dict[int, list] = {pk: [] for pk, _ in rows}
    for link in Run.devices.through.objects.filter(run_id__in=devices).select_related("device"):
        devices[link.run_id].append({**link.device.inventory, "name": link.device.name})
    return [{"devices": devices[pk], "environment": env or {}} for pk, env in rows]


def boots(regression: Regression) -> list[int]:
    """[base, candidate] boots of the comparison's sides, counted as the verdict
    counts them (iowatch.side_data.run_boot: a run is a boot unless its
    environment names the boot_id it shares with another run)."""
    c = regression.comparison
    return [len({run_boot({"environment": env, "run_id": run_id}, i) for i, (env, run_id)
                 in enumerate(runs.values_list("environment", "run_id"))})
            for runs in (c.base_runs, c.candidate_runs)]


def series(kernel: Kernel) -> dict | None:
    """The kernel's series with its mail thread (Message-IDs of the cover
    letter and each patch, To/Cc), and the patch this kernel ends at."""
    if kernel.series_id is None:
        return None
    s = kernel.series
    patches = [{"index": p.index, "subject": p.subject, "commit": p.commit,
                "message_id": getattr(p, "message_id", None), "author": getattr(p, "author", "")}
               for p in s.patches.order_by("index")]
    mail = getattr(s, "mail", None) or {}
    return {"name": s.name, "base": s.base, "message_id": s.message_id,
            "patch_count": s.patch_count, "patch_index": kernel.patch_index,
            "subject": mail.get("subject"), "to": mail.get("to", []), "cc": mail.get("cc", []),
            "archive": mail.get("archive"), "patches": patches}


def mail_headers(regression: Regression | None = None) -> dict:
    """From, To and Cc of the report (settings or the environment:
    IOWATCH_MAIL_FROM, IOWATCH_MAIL_TO, IOWATCH_MAIL_CC, comma-separated), the
    Message-ID's domain (IOWATCH_MAIL_DOMAIN) and the regression page's address
    under IOWATCH_PUBLIC_URL (None when the server does not know its address)."""
    public = _setting("IOWATCH_PUBLIC_URL").rstrip("/")
    page = f"{public}/regressions/{regression.pk}/" if public and regression is not None else None
    return {"from": _setting("IOWATCH_MAIL_FROM", DEFAULT_FROM),
            "to": _addresses(_setting("IOWATCH_MAIL_TO")),
            "cc": _addresses(_setting("IOWATCH_MAIL_CC")),
            "domain": _setting("IOWATCH_MAIL_DOMAIN") or None, "page": page}


# The artifact that holds a workload as the runner ran it (iowatch.workloads).
WORKLOAD_FILES = {"job.fio": "fio", "command": "fs_mark"}


def _declared_queue(slug: str) -> dict | None:
    """The study's own scheduler and wbt_lat_usec, for a cell of a bundle from
    before the runner recorded the queue it ran on (params.queue)."""
    from iowatch_web.store.sides import judging_studies

    study = judging_studies().get(slug)
    if study is None:
        return None
    return {"scheduler": study.scheduler, "wbt_lat_usec": study.wbt_lat_usec}


def workloads(regression: Regression) -> dict[str, dict]:
    """The workload as run of each regressed cell, by cell key: the fio job
    file or the fs_mark command line of a candidate run's first repetition
    (none for a scripted workload), and what iowatch.replay makes the
    reproduction without iowatch of: the cell as its bundle gave it (id,
    filesystem, params with the workload and the queue, mkfs and mount
    options), its device's entry, and the study's declared queue."""
    keys = set(regression.regressed_cells().values_list("cell_key", flat=True))
    out = {}
    cells = (Cell.objects.filter(run__in=regression.comparison.candidate_runs.all(), key__in=keys)
             .select_related("device", "study").order_by("key", "id"))
    for cell in cells:
        if cell.key in out:
            continue
        artifact = (Artifact.objects.filter(cell=cell, name__in=WORKLOAD_FILES)
                    .order_by("repetition", "name").first())
        workload = (cell.params or {}).get("workload") or {}
        if artifact is None and "script" not in workload:
            continue
        device = cell.device
        out[cell.key] = {
            "tool": WORKLOAD_FILES[artifact.name] if artifact else "script",
            "file": artifact.name if artifact else None,
            "text": bytes(artifact.content).decode("utf-8", "replace") if artifact else None,
            "filesystem": cell.filesystem, "mkfs_options": cell.mkfs_options,
            "mount_options": cell.mount_options,
            "device_class": device.device_class if device else None,
            "cell": {"id": cell.key, "filesystem": cell.filesystem, "params": cell.params or {},
                     "mkfs_options": cell.mkfs_options, "mount_options": cell.mount_options},
            "device": {**(device.inventory if device else {}),
                       "name": device.name if device else "?",
                       "class": device.device_class if device else None,
                       "path": device.path if device else None},
            "declared": _declared_queue(cell.study.slug)}
    return out
