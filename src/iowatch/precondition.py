"""Bringing an SSD to a steady state before a study's cells (docs/device-state.md).

A fresh-out-of-box SSD and one after hours of writes differ by more than the
effects iowatch looks for: the flash translation layer has free blocks, then
none, and garbage collection starts. A study that asks for it (`precondition:`
in its file, iowatch.studies.Precondition) gets, on each ssd, ssd-raid0 or
nvme device, once per run before its first cell there:
  - `fill` sequential passes of 128k direct writes over the whole device, then
  - rounds of `round_s` seconds of direct random writes (`bs`, `iodepth`,
    libaio) until the last `window` rounds' IOPS meet the SNIA PTS steady-state
    rule (iowatch.stats.steady_state) or `rounds_max` rounds ran.
The record (rounds' IOPS, the slope, held or not) goes into the bundle at
environment.devices.<name>.precondition.<study>. A failing fio is recorded,
not raised: the cells then run on a device whose state the record describes.
"""
from __future__ import annotations

import time
from dataclasses import asdict

from iowatch.parsers import parse_text
from iowatch.samples import ParseError
from iowatch.stats.steady_state import steady_state
from iowatch.studies import PRECONDITION_CLASSES, Precondition
from iowatch.workloads import run_tool


def applies(device_class: str, precondition: Precondition | None) -> bool:
    return precondition is not None and device_class in PRECONDITION_CLASSES


def fill_argv(dev_path: str) -> list[str]:
    return ["fio", "--name=fill", f"--filename={dev_path}", "--rw=write", "--bs=128k",
            "--ioengine=libaio", "--iodepth=16", "--direct=1", "--output-format=json"]


def round_argv(dev_path: str, pre: Precondition) -> list[str]:
    return ["fio", "--name=precondition", f"--filename={dev_path}", "--rw=randwrite",
            f"--bs={pre.bs}", "--ioengine=libaio", f"--iodepth={pre.iodepth}", "--direct=1",
            "--norandommap", "--randrepeat=0", "--time_based", f"--runtime={pre.round_s}",
            "--output-format=json"]


def _write_iops(stdout: str, argv: list[str]) -> float:
    parsed = parse_text(stdout, "fio-json", path=" ".join(argv[:3]))
    found = [s.value for s in parsed.samples if s.metric == "write.iops" and s.job is None]
    if not found:
        raise ParseError(" ".join(argv[:3]), None, "a write.iops figure", "none in fio's JSON")
    return found[0]


def _fio(argv: list[str]) -> tuple[float | None, str | None]:
    """fio's write IOPS, or None and why fio failed."""
    out = run_tool(argv)
    if out.returncode != 0:
        return None, f"fio exited {out.returncode}: {out.stderr.strip()[-400:]}"
    try:
        return _write_iops(out.stdout, argv), None
    except ParseError as e:
        return None, f"fio's output unreadable: {e}"


def run(dev_path: str, pre: Precondition) -> dict:
    """Precondition the device at dev_path; the bundle's record of it."""
    t0 = time.monotonic()
    record: dict = {"settings": asdict(pre), "device_path": dev_path, "rounds_iops": []}
    for i in range(pre.fill):
        _, error = _fio(fill_argv(dev_path))
        if error:
            return {**record, "held": False, "error": f"fill pass {i + 1}: {error}",
                    "wall_s": round(time.monotonic() - t0, 3)}
    record["fill_s"] = round(time.monotonic() - t0, 3)
    decision = steady_state([], pre.window, pre.slope_pct_max, pre.excursion_pct_max)
    for n in range(1, pre.rounds_max + 1):
        iops, error = _fio(round_argv(dev_path, pre))
        if error:
            record["error"] = f"round {n}: {error}"
            break
        record["rounds_iops"].append(round(iops, 3))
        decision = steady_state(record["rounds_iops"], pre.window, pre.slope_pct_max,
                                pre.excursion_pct_max)
        if decision.held:
            break
    return {**record, "held": decision.held, "steady_state": decision.to_dict(),
            "wall_s": round(time.monotonic() - t0, 3)}
