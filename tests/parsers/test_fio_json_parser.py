"""fio JSON parser against outputs of the real fio, and fio 2.16's JSON fixtures.

Expected numbers are read from the JSON by hand in each test, not by the parser.
"""

from __future__ import annotations

import json

import pytest

from iowatch.parsers import detect_format, fio_json, parse_file, parse_text
from iowatch.parsers.fio_run import job_labels
from iowatch.samples import JobFailure, ParseError

from .conftest import FIXTURES, split_normal_json, values

SMALL = ("--bs=4k", "--size=2m", "--direct=1")


def group_line(jobs: list[dict], ddir: str) -> dict:
    """fio 3's "Run status group" numbers from its jobs, as stat.c computes them, in KiB."""
    ran = [j[ddir] for j in jobs if j[ddir]["runtime"] > 0]
    bws = [d["io_bytes"] * 1000 // d["runtime"] for d in ran]
    total = sum(d["io_bytes"] for d in ran)
    return {"io_kib": total / 1024,
            "bw_kib_s": total * 1000 // max(d["runtime"] for d in ran) / 1024,
            "bw_min_kib_s": min(bws) / 1024, "bw_max_kib_s": max(bws) / 1024,
            "runtime_min_ms": min(d["runtime"] for d in ran),
            "runtime_max_ms": max(d["runtime"] for d in ran),
            "iops": sum(d["iops"] for d in ran)}


def test_mixed_randrw_numjobs_without_group_reporting(run_fio):
    out = run_fio("--name=mix", "--rw=randrw", "--numjobs=2", *SMALL)
    doc = json.loads(out)
    v = values(parse_text(out))

    assert [j["jobname"] for j in doc["jobs"]] == ["mix", "mix"]
    for job, label in zip(doc["jobs"], ("mix#1", "mix#2")):
        for ddir in ("read", "write"):
            d = job[ddir]
            assert d["io_kbytes"] > 0, "randrw should have done both directions"
            assert v[f"{ddir}.io_kib", "0", label] == d["io_kbytes"]
            assert v[f"{ddir}.bw_kib_s", "0", label] == d["bw"]
            assert v[f"{ddir}.iops", "0", label] == pytest.approx(d["iops"])
            assert v[f"{ddir}.runtime_ms", "0", label] == d["runtime"]
            assert v[f"{ddir}.clat_mean_us", "0", label] == pytest.approx(d["clat_ns"]["mean"] / 1000)
            assert v[f"{ddir}.lat_max_us", "0", label] == pytest.approx(d["lat_ns"]["max"] / 1000)
            assert v[f"{ddir}.clat_p99_us", "0", label] == pytest.approx(
                d["clat_ns"]["percentile"]["99.000000"] / 1000)
            assert v[f"{ddir}.clat_p99_99_us", "0", label] == pytest.approx(
                d["clat_ns"]["percentile"]["99.990000"] / 1000)
            # psync has no submission latency: fio reports zeros, which are not samples.
            assert (f"{ddir}.slat_mean_us", "0", label) not in v
        assert v["cpu.sys_pct", "0", label] == pytest.approx(job["sys_cpu"])
        assert v["cpu.ctx", "0", label] == job["ctx"]
    for ddir in ("read", "write"):
        for name, expected in group_line(doc["jobs"], ddir).items():
            assert v[f"{ddir}.{name}", "0", None] == pytest.approx(expected), name
    assert not any(metric.startswith("trim.") for metric, _, _ in v)


def test_group_reporting_gives_one_job_per_group(run_fio):
    out = run_fio("--name=seqw", "--rw=write", "--bs=64k", "--size=2m", "--direct=1",
                  "--numjobs=3", "--group_reporting")
    doc = json.loads(out)
    v = values(parse_text(out))

    (job,) = doc["jobs"]
    w = job["write"]
    assert w["io_kbytes"] == 3 * 2048
    assert v["write.io_kib", "0", "seqw"] == w["io_kbytes"]
    assert v["write.bw_kib_s", "0", "seqw"] == w["bw"]
    # One entry per group: the group's minb and maxb are that entry's, as fio prints them.
    expected_bw = w["io_bytes"] * 1000 // w["runtime"] / 1024
    assert v["write.bw_min_kib_s", "0", None] == pytest.approx(expected_bw)
    assert v["write.bw_max_kib_s", "0", None] == pytest.approx(expected_bw)
    assert v["write.bw_kib_s", "0", None] == pytest.approx(expected_bw)
    assert not any(metric.startswith("read.") for metric, _, _ in v)


def test_two_groups_with_stonewall_and_new_group(run_fio):
    out = run_fio("--name=a", "--rw=randread", *SMALL,
                  "--name=b", "--rw=write", "--bs=64k", "--size=2m", "--direct=1",
                  "--stonewall", "--new_group")
    doc = json.loads(out)
    v = values(parse_text(out))

    a, b = doc["jobs"]
    assert (a["groupid"], b["groupid"]) == (0, 1)
    assert v["read.io_kib", "0", "a"] == a["read"]["io_kbytes"] == 2048
    assert v["write.io_kib", "1", "b"] == b["write"]["io_kbytes"] == 2048
    assert v["read.iops", "0", None] == pytest.approx(a["read"]["iops"])
    assert v["write.bw_kib_s", "1", None] == pytest.approx(
        b["write"]["io_bytes"] * 1000 // b["write"]["runtime"] / 1024)
    assert {g for _, g, _ in v} == {"0", "1", "disk"}
    assert ("write.io_kib", "0", None) not in v and ("read.io_kib", "1", None) not in v


def test_json_plus_bins_are_ignored(run_fio):
    out = run_fio("--name=r", "--rw=read", *SMALL, output_format="json+")
    doc = json.loads(out)
    clat = doc["jobs"][0]["read"]["clat_ns"]
    assert "bins" in clat
    v = values(parse_text(out))
    assert v["read.clat_p50_us", "0", "r"] == pytest.approx(clat["percentile"]["50.000000"] / 1000)
    assert v["read.clat_min_us", "0", "r"] == pytest.approx(clat["min"] / 1000)


def test_failed_job_is_a_failure_not_samples(run_fio, tmp_path):
    (tmp_path / "plain").write_text("a file, so plain/x cannot be created\n")
    out = run_fio("--name=ok", "--rw=write", "--size=1m",
                  "--name=bad", "--rw=write", "--size=1m", "--filename=plain/x",
                  expect_rc=1)
    doc = json.loads(out[out.index("{"):])
    assert [(j["jobname"], j["error"]) for j in doc["jobs"]] == [("ok", 0), ("bad", 20)]

    result = parse_text(out)
    assert result.failures == [JobFailure("0", "bad", 20, "Not a directory")]
    v = values(result)
    assert not any(job == "bad" for _, _, job in v)
    assert v["write.io_kib", "0", "ok"] == doc["jobs"][0]["write"]["io_kbytes"] == 1024
    assert v["write.io_kib", "0", None] == 1024


def test_text_before_and_after_the_json_is_skipped(run_fio):
    out = run_fio("--name=w", "--rw=write", *SMALL, output_format="normal,json")
    json_part, text_part = split_normal_json(out)
    assert "Run status group 0" in text_part and not out.startswith("{")
    assert detect_format(out) == "fio-json"
    assert parse_text(out).samples == parse_text(json_part).samples


def test_fio2_json_units(tmp_path):
    """fio 2.x: latencies already in µs under clat/lat, io_bytes in KiB."""
    result = parse_file(FIXTURES / "fio-2.16" / "seqw-group.json")
    v = values(result)
    assert result.tool_version == "2.16"
    assert v["write.io_kib", "0", "seqw"] == 131072         # io_bytes: 131072 (KiB)
    assert v["write.io_kib", "0", None] == 131072
    assert v["write.clat_mean_us", "0", "seqw"] == 4582.96875
    assert v["write.clat_p99_us", "0", "seqw"] == 6176
    assert v["write.lat_min_us", "0", "seqw"] == 1056
    assert v["write.bw_kib_s", "0", None] == 131072 * 1000 // 76
    assert ("write.slat_mean_us", "0", "seqw") not in v
    assert v["device.util_pct", "disk", "vda"] == 0.0


def test_fio2_minb_uses_fios_kib_arithmetic():
    """writer-vs-readers: fio 2 printed minb=297890KB/s (its text shows the job at 297891KB/s)."""
    v = values(parse_file(FIXTURES / "fio-2.16" / "writer-vs-readers.json"))
    assert v["read.bw_kib_s", "0", "seqread#1"] == 297890
    assert v["read.bw_min_kib_s", "0", None] == 297890
    assert v["read.bw_max_kib_s", "0", None] == 334367
    assert v["read.bw_kib_s", "0", None] == 595781
    assert v["write.bw_kib_s", "0", "seqwrite"] == 59632


def test_md_disk_util_with_members():
    v = values(parse_file(FIXTURES / "fio-3.33" / "md-raid0.json"))
    assert v["device.write_ios", "disk", "md0"] == 128
    assert v["device.write_ios", "disk", "md0/members"] == 64
    assert v["device.write_merges", "disk", "md0/members"] == 3   # from "aggr_write_merge"
    assert v["device.util_pct", "disk", "md0/members"] == 63.5
    assert v["device.write_ticks_ms", "disk", "sda"] == 43
    assert v["device.in_queue_ms", "disk", "sdb"] == 38


def test_job_labels_number_repeated_names_per_group():
    jobs = [("0", "a"), ("0", "b"), ("0", "a"), ("1", "a"), ("0", "a")]
    assert job_labels(jobs) == ["a#1", "b", "a#2", "a", "a#3"]


def test_json_without_jobs_names_the_line():
    with pytest.raises(ParseError) as e:
        fio_json.parse('fio: warning\n{"fio version": "fio-3.33"}\n', "run.json")
    assert (e.value.path, e.value.line) == ("run.json", 2)
    assert "'jobs' list" in str(e.value)


def test_truncated_json_names_the_line_where_decoding_failed():
    text = (FIXTURES / "fio-2.16" / "seqw-group.json").read_text()
    cut = "\n".join(text.splitlines()[:40])
    with pytest.raises(ParseError) as e:
        parse_text(cut, path="cut.json")
    assert e.value.path == "cut.json"
    assert e.value.line == 40
    assert str(e.value).startswith("cut.json:40: expected fio JSON")
