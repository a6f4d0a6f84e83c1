"""A recorded bundle as if the machine ran `speed` times as fast: the platform
drift the rounds-as-blocks tests put on top of real recorded rounds
(tests/kernel/test_check_drift.py, tests/webapp/test_check_rounds.py)."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

from iowatch import bundle
from iowatch.metrics import HIGHER, LOWER, METRICS


def faster(src: Path, dst: Path, speed: float, **extra) -> Path:
    """A copy of the bundle at src in dst, each higher-is-better sample times
    speed and each lower-is-better one divided by it (the ratio metrics, one
    value over another of the same boot, left as they are); `extra` top-level
    fields set in its manifest. Still a valid bundle."""
    shutil.copytree(src, dst)
    doc = json.loads((dst / bundle.MANIFEST).read_text())
    for cell in doc["cells"]:
        for rep in cell["repetitions"]:
            for s in rep["samples"]:
                metric = METRICS.get(s["metric"])
                if metric is None or s["metric"].startswith("ratio."):
                    continue
                if metric.direction == HIGHER:
                    s["value"] *= speed
                elif metric.direction == LOWER:
                    s["value"] /= speed
    doc.update(extra)
    (dst / bundle.MANIFEST).write_text(json.dumps(doc))
    bundle.load(dst)
    return dst
