"""What the run page shows of one run: each cell's measured numbers per
group-level metric (median, spread and n, in the metric's unit, the study's
deciding metrics first), its environment as rows, each device's state and
preconditioning (in iowatch.devstate's words), and the kernel options that
bias storage numbers (iowatch.stats.confounders decides which)."""
from __future__ import annotations

import base64
import binascii
import json
import re
import statistics
from collections import defaultdict

from django.urls import reverse
from django.utils.http import urlencode

from iowatch import devstate
from iowatch.judging import deciding
from iowatch.metrics import METRICS
from iowatch.stats.confounders import kernel_flags
from iowatch.figures import amount
from iowatch.yamlfile import DataFileError
from iowatch_web.results.models import Repetition, Run
from iowatch_web.store.values import sample_values
from iowatch_web.store.sides import judging_studies

# Nested environment entries are shown down to this depth; deeper ones as their JSON text.
ENV_DEPTH = 4
# A device's entries the page shows in the device-state table, not as environment rows.
DEVICE_STATE_KEYS = ("state", "state_after", "precondition")


def deciding_of(study: str) -> set[tuple[str, str]]:
    """The study's deciding (group, metric) pairs; none while its files cannot be
    read (a broken study file fails the verdicts, which say so, not these pages)."""
    try:
        return deciding(judging_studies().get(study))
    except DataFileError:
        return set()


def _spread(values: list[float]) -> dict:
    values = sorted(values)
    if len(values) >= 4:
        q1, _, q3 = statistics.quantiles(values, n=4, method="inclusive")
    else:
        q1 = q3 = None
    return {"median": statistics.median(values), "low": values[0], "high": values[-1],
            "q1": q1, "q3": q3, "n": len(values)}


def cell_numbers(run: Run, cells: list) -> dict[int, list[dict]]:
    """Per cell id of `cells` (the page's cells of the run): a row per (group,
    metric) of its group-level samples from passed repetitions, deciding ones
    first, each with a link to its history."""
    ids = [c.pk for c in cells]
    failed = set(Repetition.objects.filter(cell_id__in=ids).exclude(status="passed")
                 .values_list("cell_id", "index"))
    values: dict[tuple, list[float]] = defaultdict(list)
    for v in sample_values(ids):
        if (v.cell_id, v.repetition) not in failed:
            values[v.cell_id, v.group, v.metric].append(v.value)
    by_cell = {c.pk: c for c in cells}
    decides = {slug: deciding_of(slug) for slug in {c.study.slug for c in cells}}
    out: dict[int, list[dict]] = defaultdict(list)
    for (cell_id, group, metric), vs in values.items():
        cell = by_cell[cell_id]
        unit = METRICS[metric].unit if metric in METRICS else ""
        s = _spread(vs)
        quartiles = (s["q1"], s["q3"]) if s["q1"] is not None else ()
        (median, low, high, *iqr), shown_unit = amount(
            (s["median"], s["low"], s["high"], *quartiles), unit, decide_on=(s["median"],))
        out[cell_id].append({
            **s, "group": group, "metric": metric, "unit": shown_unit,
            "shown": {"median": median, "low": low, "high": high, "iqr": iqr},
            "deciding": (group, metric) in decides[cell.study.slug],
            "history": reverse("dashboard:history") + "?" + urlencode({
                "study": cell.study.slug, "host": run.host.name,
                "device": cell.device.name if cell.device else "", "filesystem": cell.filesystem,
                "group": group, "metric": metric})})
    for rows in out.values():
        rows.sort(key=lambda r: (not r["deciding"], r["group"], r["metric"]))
    return out


# virtme-ng passes the guest's command as base64 between backquotes.
VIRTME_EXEC = re.compile(r"virtme\.exec=`([A-Za-z0-9+/=]*)`")


def readable_cmdline(cmdline: str) -> str:
    """The kernel command line as a person reads it: virtme-ng's base64
    `virtme.exec` decoded into the command the guest ran (kept as it is when
    it is not base64 of UTF-8 text)."""
    def decoded(m: re.Match) -> str:
        try:
            return f"virtme.exec=`{base64.b64decode(m[1], validate=True).decode('utf-8')}`"
        except (binascii.Error, UnicodeDecodeError):
            return m[0]
    return VIRTME_EXEC.sub(decoded, cmdline or "")


def shown_value(value) -> str:
    """A recorded value in words, never Python's repr: True as "yes", None as ""."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    return "" if value is None else str(value)


def environment_rows(run: Run) -> list[tuple[str, str]]:
    """The run's environment as (dotted name, value) rows, nested dicts flattened;
    without the kernel's options and command line, which the page shows on their own."""
    environment = run.environment or {}
    skip = {"host.kernel_config"}
    if ((environment.get("host") or {}).get("cmdline") or "") == run.cmdline:
        skip.add("host.cmdline")
    rows: list[tuple[str, str]] = []

    def walk(prefix: str, value, depth: int) -> None:
        if prefix in skip or (prefix.startswith("devices.")
                              and prefix.rsplit(".", 1)[-1] in DEVICE_STATE_KEYS and prefix.count(".") == 2):
            return
        if isinstance(value, dict) and value and depth < ENV_DEPTH:
            for k, v in value.items():
                walk(f"{prefix}.{k}" if prefix else str(k), v, depth + 1)
        elif isinstance(value, list) and not any(isinstance(v, (dict, list)) for v in value):
            rows.append((prefix, ", ".join(shown_value(v) for v in value)))
        elif isinstance(value, (dict, list)):
            rows.append((prefix, json.dumps(value, sort_keys=True)))
        else:
            rows.append((prefix, shown_value(value)))

    walk("", environment, 0)
    return rows


def lava_job(run: Run) -> dict | None:
    """The LAVA job a board class's run came from (environment.lava, written by
    iowatch.lava.host): its id, board and attempts, and LAVA's job page and log
    when they are http(s) URLs (an uploader's text never becomes another link)."""
    lava = (run.environment or {}).get("lava")
    if not isinstance(lava, dict):
        return None
    web = {k: v for k in ("job_url", "log_url")
           if isinstance(v := lava.get(k), str) and v.startswith(("http://", "https://"))}
    attempts = lava.get("attempts") if isinstance(lava.get("attempts"), list) else []
    return {"job": lava.get("job"), "board": lava.get("board"), "device_type": lava.get("device_type"),
            "attempts": len(attempts), **web}


def device_state_rows(run: Run) -> list[dict]:
    """Per device the run recorded: its state before the run as the device-state
    table shows it, the temperature after the run, and the preconditioning per study."""
    rows = []
    for name, seen in sorted(((run.environment or {}).get("devices") or {}).items()):
        if not isinstance(seen, dict) or not any(k in seen for k in DEVICE_STATE_KEYS):
            continue
        state, after = seen.get("state") or {}, seen.get("state_after") or {}
        # An md array's state is its members', each a row of its own.
        members = state.get("members") or {}
        parts = [(f"{name} ({m})", s, (after.get("members") or {}).get(m) or {})
                 for m, s in members.items()] if members else [(name, state, after)]
        for label, before, later in parts:
            rows.append({"device": label, **devstate.shown(before),
                         "temperature_after": devstate.shown(later)["temperature"] if later else "",
                         "serial": before.get("serial", "")})
        for study, pre in sorted((seen.get("precondition") or {}).items()):
            rows[-1].setdefault("preconditioning", []).append(
                {"study": study, "held": pre.get("held"), "rounds": len(pre.get("rounds_iops") or []),
                 "reason": (pre.get("steady_state") or {}).get("reason") or pre.get("error", "")})
    return rows


def kernel_options(run: Run) -> dict:
    """The run's recorded kernel options, and the debug and preemption ones it has on."""
    config = run.kernel.config or ((run.environment or {}).get("host") or {}).get("kernel_config") or {}
    flags = kernel_flags(config)
    return {"options": sorted(config.items()), "flags": flags,
            "debug": [f for f in flags if f.kind == "debug"]}
