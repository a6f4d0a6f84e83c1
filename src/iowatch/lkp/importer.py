"""LKP result roots as result bundles: LKP users bring their history.

One bundle per testbox and kernel commit; a cell per LKP job (suite and
parameters) on its disk and filesystem; a repetition per LKP iteration with
LKP's numbers mapped onto iowatch's metric table (mapping.py) and the raw
iteration directory kept as artifacts. A job whose parameters are exactly
what `iowatch run --harness lkp` writes for a study is filed under that
study; any other becomes the study lkp-<suite>-<params>, so different LKP
parameters never pool in one comparison.
"""
from __future__ import annotations

import json
import re
import uuid
from pathlib import Path

from iowatch.bundle import BundleWriter
from iowatch.inventory import parse_size
from iowatch.lkp import jobs, mapping
from iowatch.lkp.result_root import ResultRoot, ResultRootError, artifacts, find, mkfs_and_mount
from iowatch.studies import Study

# LKP's `disk: 1HDD` / `1SSD` / `1NVMe` -> iowatch's device class.
DISK_CLASSES = {"hdd": "hdd", "ssd": "ssd", "nvme": "nvme"}
DEFAULT_GROUPS = {"0": "fio", "fsmark": "fsmark"}
# A fixed namespace: importing the same result roots again gives the same run id (idempotent).
RUN_NAMESPACE = uuid.UUID("5b0f6a43-1f7e-4c36-9d55-6c1a3c0d2b7e")
_SIZE_KEYS = {"test_size", "filesize", "io_size"}


def device_class(root: ResultRoot, override: str | None) -> str:
    if override:
        return override
    disk = str(root.job.get("disk", ""))
    m = re.fullmatch(r"\d*([A-Za-z]+)", disk)
    cls = DISK_CLASSES.get(m.group(1).lower()) if m else None
    if cls is None:
        raise ResultRootError(f"{root.path}: job.yaml field disk {disk!r} names no device class "
                              f"iowatch knows ({', '.join(DISK_CLASSES)}); give --device-class")
    return cls


def _norm(key: str, value) -> str:
    if key in _SIZE_KEYS:
        try:
            return str(parse_size(str(value).upper().rstrip("B") if isinstance(value, str) else value))
        except ValueError:
            pass
    return str(value).lower()


def _program_params(job: dict) -> dict:
    program = "fio-setup-basic" if job.get("suite") == "fio-basic" else "fsmark"
    keys = ("runtime", "nr_task", "test_size") if program == "fio-setup-basic" else ("nr_threads", "iterations")
    params = {k: job[k] for k in keys if k in job}
    params.update(job.get(program) or {})
    return {k: _norm(k, v) for k, v in params.items()}


def match_study(root: ResultRoot, cls: str, studies: dict[str, Study]) -> tuple[str, dict, str | None]:
    """(study slug, groups, profile) the LKP job is an exact translation of, else lkp-<suite>-<params>."""
    want = _program_params(root.job)
    fs = root.job.get("fs")
    for slug, study in sorted(studies.items()):
        # A canary is iowatch's own platform check, never an LKP job's translation.
        if study.canary or cls not in study.device_classes or fs not in study.filesystems:
            continue
        for profile in study.profiles:
            try:
                job = jobs.atomic_job(study.workload(profile, cls), fs, "-", where=slug)
            except jobs.NotTranslatable:
                continue
            if job["suite"] == root.suite and _program_params(job) == want:
                return slug, study.groups, profile
    slug = re.sub(r"[^a-z0-9]+", "-", f"lkp-{root.suite}-{root.params}".lower()).strip("-")[:100]
    return slug.rstrip("-"), DEFAULT_GROUPS, None


def _kernel(commit: str) -> dict:
    kernel = {"release": commit}
    if re.fullmatch(r"[0-9a-f]{7,64}", commit):
        kernel["git_commit"] = commit
    return kernel


def import_roots(paths: list[str | Path], out_dir: Path, *, studies: dict[str, Study],
                 device_class_override: str | None = None, host_kind: str = "bare-metal",
                 label: str | None = None) -> list[Path]:
    """Write a bundle per (testbox, commit) under out_dir; return their directories."""
    roots = find(paths)
    by_run: dict[tuple[str, str], list[ResultRoot]] = {}
    for r in roots:
        testbox = str(r.job.get("testbox") or r.job.get("tbox_group") or "")
        commit = str(r.job.get("commit") or "")
        if not testbox or not commit:
            raise ResultRootError(f"{r.path}: job.yaml has no testbox or commit: LKP's `lkp run` "
                                  "writes both; this is not a finished result root")
        by_run.setdefault((testbox, commit), []).append(r)
    made = []
    for (testbox, commit), group in sorted(by_run.items()):
        # From the content, not the path: the same result roots copied elsewhere are the same run.
        content = json.dumps([testbox, commit, sorted([r.suite, r.params, [it.stats for it in r.iterations]]
                                                      for r in group)], sort_keys=True)
        run_id = str(uuid.uuid5(RUN_NAMESPACE, content))
        out = out_dir / f"lkp-{re.sub(r'[^A-Za-z0-9._-]', '_', testbox)}-{re.sub(r'[^A-Za-z0-9._-]', '_', commit)}"
        devices: dict[str, dict] = {}
        writer = BundleWriter(out, run_id=run_id, kernel=_kernel(commit),
                              host={"name": testbox, "kind": host_kind}, devices=[],
                              tools={"lkp-tests": "result root"}, label=label,
                              # No local paths in the manifest: the same result roots read from
                              # elsewhere make the same bundle, which the store then keeps once.
                              matrix="lkp-import", command="iowatch import-lkp",
                              environment={"lkp": {}})
        for r in group:
            cls = device_class(r, device_class_override)
            disk = r.env.get("partitions") or str(r.job.get("hdd_partitions") or "disk")
            name = re.sub(r"[^A-Za-z0-9._-]", "_", Path(disk.split()[0]).name) or "disk"
            devices.setdefault(name, {"name": name, "class": cls, "path": disk.split()[0],
                                      "model": None, "size_bytes": None, "rotational": cls == "hdd"})
            fs = str(r.job.get("fs") or "raw")
            slug, groups, profile = match_study(r, cls, studies)
            cell_id = f"{slug}/{name}/{fs}"
            first = next((it.dir for it in r.iterations if it.dir), None)
            mkfs, mount = mkfs_and_mount(first) if first else (None, None)
            writer.doc["environment"]["lkp"][cell_id] = {
                "result_root": "/".join(r.path.parts[-7:]), "suite": r.suite, "params": r.params,
                "kconfig": r.job.get("kconfig"), "compiler": r.job.get("compiler"),
                "rootfs": r.job.get("rootfs"), "profile": profile}
            for it in r.iterations:
                samples = [s.to_dict() for s in mapping.samples(it.stats, groups)]
                writer.add_repetition(
                    cell_id, slug, it.index, samples, artifacts(it.dir),
                    status="passed" if samples else "failed",
                    error=None if samples else f"{it.dir or r.path}: no stat iowatch maps",
                    device=name, filesystem=fs, mkfs_options=mkfs, mount_options=mount,
                    params={"harness": "lkp", "suite": r.suite, "lkp_params": r.params,
                            "job": {k: r.job.get(k) for k in (r.suite, "fio-setup-basic", "runtime",
                                                              "nr_task", "test_size", "nr_threads",
                                                              "iterations", "disk", "fs") if k in r.job}})
        writer.doc["devices"] = list(devices.values())
        failed = any(c["status"] == "failed" for c in writer.doc["cells"])
        writer.close("failed" if failed else "passed")
        made.append(out)
    return made
