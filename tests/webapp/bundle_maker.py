"""Wire-form test bundles: valid by construction, with real metric names.

make_bundle(cells=3, samples=4) gives 3 cells of one repetition each, every
repetition with 4 samples and one raw artifact (a fio-like JSON text).
"""
from __future__ import annotations

import hashlib
import itertools
import json
import uuid

from iowatch.metrics import METRICS

# Metrics that are counts, rates or times: a positive value fits every one.
METRIC_NAMES = sorted(n for n, m in METRICS.items() if m.nonnegative)


def make_bundle(cells: int = 2, samples: int = 5, repetitions: int = 1, *,
                run_id: str | None = None, host: str = "lab-1", study: str = "f2fs-dio-write",
                seed: int = 0) -> dict:
    """A valid wire-form bundle: `cells` cells × `repetitions` repetitions ×
    `samples` samples each; values differ with `seed` so two bundles differ."""
    values = itertools.count(1)
    doc = {
        "schema_version": 1,
        "run_id": run_id or str(uuid.uuid4()),
        "status": "passed",
        "published": False,
        "label": "patched",
        "started_at": "2024-05-01T10:00:00Z",
        "finished_at": "2024-05-01T10:30:00+00:00",
        "matrix": "smoke",
        "command": "iowatch run jobs/smoke.yml",
        "kernel": {
            "release": "6.12.0-iowatch", "git_commit": "0123456789abcdef",
            "config_hash": "c0ffee", "config": {"CONFIG_XFS_DEBUG": "n"},
            "cmdline": "console=ttyS0 quiet",
            "series": {"name": "f2fs: dio write lock", "message_id": "<1@example.org>",
                       "base": "v6.12", "patch_count": 2},
            "patch": {"index": 1, "subject": "f2fs: drop the lock", "commit": "abcdef0"},
        },
        "host": {"name": host, "kind": "qemu", "cpus": 2},
        "devices": [{"name": "sd0", "class": "sdcard", "path": "/dev/mmcblk0",
                     "model": "QEMU SD", "size_bytes": 1 << 30, "rotational": False}],
        "tools": {"fio": "fio-3.33"},
        "environment": {"scheduler": "mq-deadline", "governor": "performance"},
        "cells": [],
    }
    for c in range(cells):
        reps = []
        for r in range(1, repetitions + 1):
            raw = json.dumps({"fio version": "fio-3.33", "cell": c, "rep": r, "seed": seed})
            reps.append({
                "index": r, "status": "passed", "error": None,
                "samples": [{"metric": METRIC_NAMES[(c + s) % len(METRIC_NAMES)],
                             "value": float(next(values) + seed) + 0.25,
                             "group": "0", "job": None if s % 2 else f"job{s}"}
                            for s in range(samples)],
                "failures": [],
                "artifacts": [{"name": "fio.json", "content": raw,
                               "sha256": hashlib.sha256(raw.encode()).hexdigest()}],
            })
        doc["cells"].append({
            "id": f"{study}/sd0/f2fs/c{c}", "study": study, "device": "sd0",
            "filesystem": "f2fs", "mkfs_options": "", "mount_options": "noatime",
            "params": {"numjobs": 10, "bs": "2m"}, "status": "passed", "reason": None,
            "repetitions": reps,
        })
    return doc


def wire(doc: dict) -> bytes:
    return json.dumps(doc, separators=(",", ":")).encode()


def planted_bundle(values: dict[str, list[float]], *, kernel: dict | None = None,
                   started_at: str = "2024-05-01T10:00:00Z", cells: int = 1,
                   published: bool = False, matrix: str = "smoke", group: str = "seqw",
                   **kwargs) -> dict:
    """A bundle whose every cell has, per repetition r, one group-level sample
    of each metric with the value values[metric][r - 1] (so two bundles can
    differ by a planted factor). `kernel` replaces the bundle's kernel entry.
    The group is f2fs-dio-write's, whose deciding metric is write.bw_kib_s."""
    reps = len(next(iter(values.values())))
    doc = make_bundle(cells=cells, samples=0, repetitions=reps, **kwargs)
    doc.update(started_at=started_at, finished_at=None, published=published, matrix=matrix)
    if kernel is not None:
        doc["kernel"] = kernel
    # One device a cell, as the runner makes them: a cell is study/device/filesystem.
    doc["devices"] = [{**doc["devices"][0], "name": f"sd{c}", "path": f"/dev/mmcblk{c}"}
                      for c in range(cells)]
    for c, cell in enumerate(doc["cells"]):
        cell.update(id=f"{cell['study']}/sd{c}/f2fs", device=f"sd{c}")
        for rep in cell["repetitions"]:
            rep["samples"] = [{"metric": m, "value": float(v[rep["index"] - 1]), "group": group,
                               "job": None} for m, v in values.items()]
    return doc


# A lab host in service has booted kernels before: a calibration (iowatch run
# --calibration) or a check's rounds record the noise between its boots, which
# a comparison of one boot a side reads (iowatch.judging.boots). These offsets
# (about 0.8% a boot) are that record for the tests' planted bundles.
CALIBRATION_OFFSETS = (1.0, 1.01, 0.99, 1.005)


def calibration_bundles(doc: dict, offsets=CALIBRATION_OFFSETS) -> list[dict]:
    """One calibration boot per offset of a kernel of its own on doc's host and
    cells: doc's values times the offset, trigger "calibration" (never compared)."""
    out = []
    for i, f in enumerate(offsets):
        boot = json.loads(json.dumps(doc))
        boot.update(schema_version=2, run_id=str(uuid.uuid4()), trigger={"kind": "calibration"},
                    label="calibration",
                    started_at=f"2024-04-01T{i:02d}:00:00Z", finished_at=None, published=False)
        boot["kernel"] = {"release": "6.12.0-calibration", "git_commit": "ca11b7a7e0000000",
                          "config_hash": "ca11b"}
        for cell in boot["cells"]:
            for rep in cell["repetitions"]:
                for s in rep["samples"]:
                    s["value"] = s["value"] * f
        out.append(boot)
    return out


def recorded_boots() -> list[dict]:
    """Real boots of the end-to-end check's host (vlab) and cell: one kernel
    booted six times (tests/fixtures/e2e-boots/aabb), as the host's calibration
    runs, for comparisons of the one-boot bundles of tests/fixtures/e2e-check."""
    from pathlib import Path

    from iowatch import bundle
    root = Path(__file__).resolve().parents[1] / "fixtures" / "e2e-boots" / "aabb"
    docs = []
    for path in sorted(root.glob("*/bundle")):
        doc = bundle.upgrade(json.loads(bundle.to_wire(path)))
        doc["trigger"] = {"kind": "calibration"}
        docs.append(doc)
    return docs
