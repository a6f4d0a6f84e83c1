"""A repetition whose tool output cannot be parsed fails alone: the runner goes on.

The runner is run for real, in this process, on a loop device with a fresh ext4
and the real fio. Only the output is damaged, after fio wrote it: repetition 1's
JSON gets a NaN figure (before the parsers were made robust, the ValueError it
raised aborted the whole matrix); repetition 2's ParseError is let out of the
workload call, as a workload that does not catch it would; repetition 3 is left
alone and must pass.
"""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from iowatch import bundle, runner, workloads
from iowatch.parsers import parse_text

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(os.geteuid() != 0, reason="the runner needs root (losetup, mkfs, mount)"),
    pytest.mark.skipif(not shutil.which("fio"), reason="fio is not installed"),
]


def test_unparsable_outputs_fail_their_repetitions_and_the_run_goes_on(small_fio_lab, tmp_path, monkeypatch):
    host, matrix, data = small_fio_lab
    calls = {"fio": 0}
    real_timed, real_run_fio = workloads._timed, runner.run_fio

    def timed(argv, cwd, stdout_path=None):
        out = real_timed(argv, cwd, stdout_path)
        if argv[0] == "fio" and calls["fio"] == 1:
            # What fio wrote, with one figure no fio prints.
            path = Path(next(a for a in argv if a.startswith("--output=")).removeprefix("--output="))
            doc = json.loads(path.read_text())
            doc["jobs"][0]["write"]["bw"] = "@nan@"
            path.write_text(json.dumps(doc, indent=2).replace('"@nan@"', "NaN"))
        return out

    def run_fio(workload, ctx):
        calls["fio"] += 1
        res = real_run_fio(workload, ctx)
        if calls["fio"] == 2:
            # fio's real output cut short, parsed by a caller that lets ParseError out.
            raw = res.artifacts["fio.json"].decode()
            parse_text(raw[:len(raw) // 2], "fio-json", path=str(ctx.workdir / "fio.json"))
        return res

    monkeypatch.setattr(workloads, "_timed", timed)
    monkeypatch.setattr(runner, "run_fio", run_fio)
    out = tmp_path / "bundle"
    doc = runner.Runner(matrix, host, out, data_dir=data).run()

    assert calls["fio"] == 3
    (cell,) = bundle.load(out)["cells"]
    assert doc["cells"][0]["id"] == cell["id"] == "odirect-vs-readers/loop-hdd/ext4"
    first, second, third = cell["repetitions"]
    assert first["status"] == second["status"] == "failed"
    assert "expected an integer from 0 to 2^64 at jobs[0].write.bw, found 'nan'" in first["error"]
    assert "fio.json:" in second["error"] and "expected fio JSON" in second["error"]
    # Never a performance result from an unreadable output; its raw output still travels.
    assert first["samples"] == [] and second["samples"] == []
    assert "fio.json" in {a["name"] for a in first["artifacts"]}
    assert third["status"] == "passed"
    assert any(s["metric"] == "write.bw_kib_s" and s["group"] == "writer" and s["job"] is None
               for s in third["samples"])
