"""fio's unified_rw_reporting ("mixed") in both parsers: real fio 3.33 fixtures and a live run.

The fixtures are tests/fixtures/fio-3.33-mixed (its README gives the commands).
Expected numbers are read from fio's JSON by hand here, not by the parser.
"""

from __future__ import annotations

import json

import pytest

from iowatch.metrics import METRICS
from iowatch.parsers import parse_file, parse_text

from .conftest import FIXTURES, split_normal_json, values

MIXED = FIXTURES / "fio-3.33-mixed"


def doc(name: str) -> dict:
    return json.loads((MIXED / f"{name}.json").read_text())


def test_mixed_metrics_are_named_and_judged_like_read_and_write():
    for suffix in ("bw_kib_s", "iops", "io_kib", "runtime_max_ms", "clat_p99_us", "lat_mean_us"):
        mixed, read = METRICS[f"mixed.{suffix}"], METRICS[f"read.{suffix}"]
        assert (mixed.unit, mixed.direction) == (read.unit, read.direction)


def test_json_mixed_gives_job_and_group_samples():
    d = doc("mixed")
    v = values(parse_file(MIXED / "mixed.json"))
    jobs = d["jobs"]
    assert [j["jobname"] for j in jobs] == ["rw", "rw"] and all("read" not in j for j in jobs)
    for job, label in zip(jobs, ("rw#1", "rw#2")):
        m = job["mixed"]
        assert v["mixed.io_kib", "0", label] == m["io_kbytes"] == 4096
        assert v["mixed.bw_kib_s", "0", label] == m["bw"]
        assert v["mixed.iops", "0", label] == pytest.approx(m["iops"])
        assert v["mixed.runtime_ms", "0", label] == m["runtime"]
        assert v["mixed.clat_mean_us", "0", label] == pytest.approx(m["clat_ns"]["mean"] / 1000)
        assert v["mixed.clat_p99_us", "0", label] == pytest.approx(
            m["clat_ns"]["percentile"]["99.000000"] / 1000)
    # The group line, as fio's stat.c computes it: bytes summed over the longest runtime.
    ios = [j["mixed"]["io_bytes"] for j in jobs]
    runtimes = [j["mixed"]["runtime"] for j in jobs]
    assert v["mixed.io_kib", "0", None] == sum(ios) / 1024 == 8192
    assert v["mixed.bw_kib_s", "0", None] == sum(ios) * 1000 // max(runtimes) / 1024
    assert v["mixed.iops", "0", None] == pytest.approx(sum(j["mixed"]["iops"] for j in jobs))
    assert v["mixed.runtime_max_ms", "0", None] == max(runtimes)
    assert not any(metric.split(".")[0] in ("read", "write", "trim") for metric, _, _ in v)


def test_text_mixed_gives_the_json_figures_to_the_text_rounding():
    text = values(parse_file(MIXED / "mixed.txt"))
    exact = values(parse_file(MIXED / "mixed.json"))
    assert set(text) <= set(exact)
    for key in (("mixed.io_kib", "0", None), ("mixed.runtime_max_ms", "0", None),
                ("mixed.io_kib", "0", "rw#1"), ("mixed.runtime_ms", "0", "rw#2")):
        assert text[key] == exact[key], key
    # fio prints 3 significant figures ("174MiB/s", "44.5k").
    for key in (("mixed.bw_kib_s", "0", None), ("mixed.bw_kib_s", "0", "rw#1"),
                ("mixed.iops", "0", "rw#2"), ("mixed.clat_mean_us", "0", "rw#1")):
        assert text[key] == pytest.approx(exact[key], rel=0.01), key


def test_json_both_reports_mixed_beside_read_and_write():
    (job,) = doc("both")["jobs"]
    v = values(parse_file(MIXED / "both.json"))
    for ddir in ("read", "write", "mixed"):
        assert v[f"{ddir}.io_kib", "0", "rw"] == job[ddir]["io_kbytes"]
        assert v[f"{ddir}.clat_mean_us", "0", "rw"] == pytest.approx(job[ddir]["clat_ns"]["mean"] / 1000)
    assert v["mixed.io_kib", "0", "rw"] == v["read.io_kib", "0", "rw"] + v["write.io_kib", "0", "rw"]


def test_text_both_keeps_write_latency_and_skips_fios_zero_mixed_line():
    (job,) = doc("both")["jobs"]
    v = values(parse_file(MIXED / "both.txt"))
    # The mixed latency lines follow the write section: they are mixed's, not write's.
    assert v["write.clat_mean_us", "0", "rw"] == pytest.approx(
        job["write"]["clat_ns"]["mean"] / 1000, abs=0.01)
    assert v["read.clat_mean_us", "0", "rw"] == pytest.approx(
        job["read"]["clat_ns"]["mean"] / 1000, abs=0.01)
    # fio printed the job's mixed line as zeros: no job sample, and no group IOPS from it.
    assert not any(metric.startswith("mixed.") and job_ is not None for metric, _, job_ in v)
    assert v["mixed.io_kib", "0", None] == 4096
    assert ("mixed.iops", "0", None) not in v


def test_live_fio_mixed_json_and_text_agree(run_fio, tmp_path):
    out = run_fio("--name=rw", "--rw=randrw", "--bs=4k", "--size=2m", "--direct=1",
                  "--unified_rw_reporting=mixed", output_format="normal,json")
    json_part, text_part = split_normal_json(out)
    job = json.loads(json_part)["jobs"][0]["mixed"]
    from_json, from_text = values(parse_text(json_part)), values(parse_text(text_part))
    assert from_json["mixed.io_kib", "0", "rw"] == from_text["mixed.io_kib", "0", "rw"] == job["io_kbytes"]
    assert from_json["mixed.iops", "0", "rw"] == pytest.approx(from_text["mixed.iops", "0", "rw"], rel=0.01)
    assert from_json["mixed.runtime_max_ms", "0", None] == from_text["mixed.runtime_max_ms", "0", None]
