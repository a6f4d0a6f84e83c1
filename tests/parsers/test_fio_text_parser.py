"""fio text parser: real fio 3.33 runs and fio 2.16 fixtures checked against their own JSON, and the seed's lines.

The text carries fio's display rounding, so text and JSON of one run agree
within it: fio 3 prints three or four significant figures; fio 2's num2str
printed a remainder in 1/1024ths as its "decimal" (1684 MiB + 215/1024 shows as
1684.3MB/s), so its figures are good to one unit of their prefix.
"""

from __future__ import annotations

import pytest

from iowatch.parsers import detect_format, fio_text, parse_file, parse_text
from iowatch.samples import JobFailure, ParseError

from .conftest import FIXTURES, split_normal_json, values

COMPARED = ("io_kib", "bw_kib_s", "bw_min_kib_s", "bw_max_kib_s", "iops",
            "runtime_ms", "runtime_min_ms", "runtime_max_ms")


def fio3_close(metric: str, text: float, exact: float) -> bool:
    if "runtime" in metric:
        return text == exact
    return text == pytest.approx(exact, rel=0.01, abs=0.01)  # 3 significant figures


def fio2_close(metric: str, text: float, exact: float) -> bool:
    if "runtime" in metric:
        return text == exact
    if metric.endswith("iops"):
        return abs(text - exact) <= 3      # printed as an integer, summed over up to 3 jobs
    # Up to 999999 KiB fio 2 printed KiB; above that MiB with a 1/1024ths "decimal".
    unit = 1024 if exact >= 1e6 else 1
    return abs(text - exact) <= unit


def assert_agree(text_values, json_values, close):
    compared = {k: v for k, v in json_values.items() if k[0].split(".")[-1] in COMPARED}
    assert compared, "nothing to compare"
    assert {k for k in text_values if k in compared or k[0].split(".")[-1] in COMPARED} == set(compared)
    for key, exact in compared.items():
        assert close(key[0], text_values[key], exact), f"{key}: text {text_values[key]} vs JSON {exact}"


FIO3_CASES = {
    "randrw-numjobs": ("--name=mix", "--rw=randrw", "--bs=4k", "--size=2m", "--direct=1", "--numjobs=2"),
    "group-reporting": ("--name=seqw", "--rw=write", "--bs=64k", "--size=2m", "--direct=1",
                        "--numjobs=3", "--group_reporting"),
    "two-groups": ("--name=a", "--rw=randread", "--bs=4k", "--size=2m", "--direct=1",
                   "--name=b", "--rw=write", "--bs=64k", "--size=4m", "--direct=1",
                   "--stonewall", "--new_group"),
    "read-percentiles": ("--name=r", "--rw=read", "--bs=16k", "--size=4m", "--direct=1",
                         "--percentile_list=50:90:99:99.9"),
}


@pytest.mark.parametrize("case", FIO3_CASES)
def test_fio3_text_agrees_with_its_json(run_fio, case):
    json_part, text_part = split_normal_json(run_fio(*FIO3_CASES[case], output_format="normal,json"))
    assert detect_format(text_part) == "fio-text"
    text_result = fio_text.parse(text_part)
    json_values = values(parse_text(json_part))
    text_values = values(text_result)
    assert text_result.tool_version == "3.33"
    assert_agree(text_values, json_values, fio3_close)
    # Latency: the text prints µs (or ns) with two decimals for the mean.
    assert {k for k in json_values if k[0].endswith("_us")} == {k for k in text_values if k[0].endswith("_us")}
    for key, exact in json_values.items():
        if key[0].endswith(("clat_mean_us", "clat_p99_us", "clat_p50_us")):
            assert text_values[key] == pytest.approx(exact, rel=0.01, abs=1), key
    for key, exact in json_values.items():
        if key[0] == "cpu.sys_pct" or key[1] == "disk":
            assert text_values[key] == pytest.approx(exact, abs=0.01), key


@pytest.mark.parametrize("case", ["seqw-group", "two-groups", "writer-vs-readers"])
def test_fio216_text_agrees_with_its_json(case):
    text_result = parse_file(FIXTURES / "fio-2.16" / f"{case}.txt")
    json_values = values(parse_file(FIXTURES / "fio-2.16" / f"{case}.json"))
    assert text_result.tool_version == "2.16"
    text_values = values(text_result)
    assert_agree(text_values, json_values, fio2_close)
    for key, exact in json_values.items():
        if "clat_p" in key[0] or (key[1] == "disk" and key[0] != "device.util_pct"):
            assert text_values[key] == exact, key
        elif key[0].startswith("cpu.") or key[0] == "device.util_pct":
            assert text_values[key] == pytest.approx(exact, abs=0.005), key


def test_fio216_group_reporting_minb_equals_aggrb():
    v = values(parse_file(FIXTURES / "fio-2.16" / "seqw-group.txt"))
    # "aggrb=1684.3MB/s, minb=1684.3MB/s, maxb=1684.3MB/s": taken as printed.
    assert v["write.bw_kib_s", "0", None] == pytest.approx(1684.3 * 1024)
    assert v["write.bw_min_kib_s", "0", None] == v["write.bw_max_kib_s", "0", None] == v["write.bw_kib_s", "0", None]
    assert v["write.io_kib", "0", None] == 131072
    assert v["write.iops", "0", "seqw"] == 842
    assert v["write.clat_p95_us", "0", "seqw"] == 5728
    assert v["cpu.minf", "0", "seqw"] == 43


SEED_LINES = [
    # seed 000, SD card before and after the patch; eMMC before and after
    ("WRITE: io=163840KB, aggrb=5125KB/s, minb=512KB/s, maxb=776KB/s, mint=21105msec, maxt=31967msec",
     163840, 5125, 512, 776, 21105, 31967),
    ("WRITE: io=163840KB, aggrb=10424KB/s, minb=1042KB/s, maxb=1172KB/s, mint=13975msec, maxt=15717msec",
     163840, 10424, 1042, 1172, 13975, 15717),
    ("WRITE: io=1024.0MB, aggrb=103583KB/s, minb=6473KB/s, maxb=8806KB/s, mint=7442msec, maxt=10123msec",
     1048576, 103583, 6473, 8806, 7442, 10123),
    ("WRITE: io=1024.0MB, aggrb=124860KB/s, minb=7803KB/s, maxb=9315KB/s, mint=7035msec, maxt=8398msec",
     1048576, 124860, 7803, 9315, 7035, 8398),
]
GROUP_METRICS = ("io_kib", "bw_kib_s", "bw_min_kib_s", "bw_max_kib_s", "runtime_min_ms", "runtime_max_ms")


@pytest.mark.parametrize("line,io,aggrb,minb,maxb,mint,maxt", SEED_LINES)
def test_seed_line_alone_is_group_0(line, io, aggrb, minb, maxb, mint, maxt):
    assert detect_format(line) == "fio-text"
    result = parse_text(line)
    assert values(result) == {(f"write.{m}", "0", None): float(x) for m, x in
                              zip(GROUP_METRICS, (io, aggrb, minb, maxb, mint, maxt))}
    assert result.tool_version is None


def test_seed_file_gives_one_group_per_quoted_line():
    v = values(parse_file(FIXTURES / "seeds" / "000_6a601ae0651ac377.txt"))
    expected = {}
    for group, (_, *numbers) in enumerate(SEED_LINES):
        expected.update({(f"write.{m}", str(group), None): float(x)
                         for m, x in zip(GROUP_METRICS, numbers)})
    assert v == expected


def test_adjacent_bare_lines_of_different_directions_share_a_group():
    text = ("   READ: io=65536KB, aggrb=595781KB/s, minb=297890KB/s, maxb=334367KB/s, mint=98msec, maxt=110msec\n"
            "  WRITE: io=65536KB, aggrb=59632KB/s, minb=59632KB/s, maxb=59632KB/s, mint=1099msec, maxt=1099msec\n"
            "  WRITE: io=1KB, aggrb=2,968KB/s, minb=2,968KB/s, maxb=2,968KB/s, mint=1msec, maxt=1msec\n")
    v = values(parse_text(text))
    assert v["read.bw_kib_s", "0", None] == 595781
    assert v["write.bw_kib_s", "0", None] == 59632
    assert v["write.bw_kib_s", "1", None] == 2968      # thousands separator
    assert v["write.io_kib", "1", None] == 1


def test_fio3_bare_group_line():
    line = ("  WRITE: bw=1684MiB/s (1766MB/s), 1684MiB/s-1684MiB/s (1766MB/s-1766MB/s), "
            "io=128MiB (134MB), run=76-76msec")
    v = values(parse_text(line))
    assert v["write.bw_kib_s", "0", None] == 1684 * 1024
    assert v["write.io_kib", "0", None] == 128 * 1024
    assert v["write.runtime_max_ms", "0", None] == 76


def test_text_numbers():
    assert fio_text.count("13.9k") == 13900
    assert fio_text.count("842") == 842
    assert fio_text.size_kib("512B") == 0.5
    assert fio_text.size_kib("4022kB") == pytest.approx(4022 * 1000 / 1024)
    assert fio_text.rate_kib_s("1.5GiB/s") == 1.5 * 1024 * 1024
    assert fio_text.rate_kib_s("2,968KB/s") == 2968


def test_latency_line_with_padded_figures():
    # fio prints the mean and stdev with %5.02f: small ones come padded.
    text = ("b: (groupid=1, jobs=1): err= 0: pid=1: Sat Nov 21 05:18:11 2026\n"
            "  write: IOPS=8533, BW=533MiB/s (559MB/s)(8192KiB/15msec); 0 zone resets\n"
            "    clat (nsec): min=101, max=1261k, avg= 119.48, stdev= 9.24\n")
    v = values(parse_text(text))
    assert v["write.clat_stddev_us", "1", "b"] == pytest.approx(0.00924)
    assert v["write.clat_max_us", "1", "b"] == pytest.approx(1261.0)
    assert v["write.iops", "1", "b"] == 8533


def test_malformed_group_line_names_the_line():
    text = "before:\nWRITE: io=16384OKB, aggrb=5125KB/s, minb=512KB/s, maxb=776KB/s, mint=21105msec, maxt=31967msec\n"
    with pytest.raises(ParseError) as e:
        parse_text(text, path="seed.txt")
    assert (e.value.path, e.value.line) == ("seed.txt", 2)
    assert str(e.value).startswith("seed.txt:2: expected a fio group line")
    assert "16384OKB" in e.value.found


def test_prose_is_not_fio_output():
    text = (FIXTURES / "seeds" / "003_19c316252e130d8a.txt").read_text()
    with pytest.raises(ParseError) as e:
        parse_text(text, path="003.txt")
    assert e.value.line == 1 and "fio JSON, fio text or fs_mark output" in str(e.value)


def test_failed_job_header_and_pid_line():
    # Lines as fio 3.33 printed them for a job whose I/O failed and one that never started.
    text = ("fio: pid=5435, err=2/file:filesetup.c:805, func=open(/tmp/x), error=No such file or directory\n"
            "ok: (groupid=0, jobs=1): err= 9 (file:io_u.c:1876, func=io_u error, error=Bad file descriptor):"
            " pid=5434: Sat Nov 21 05:10:53 2026\n"
            "  cpu          : usr=0.00%, sys=0.00%, ctx=0, majf=0, minf=18\n")
    result = parse_text(text)
    assert result.failures == [
        JobFailure("0", "ok", 9, "file:io_u.c:1876, func=io_u error, error=Bad file descriptor"),
        JobFailure("?", "pid 5435", 2, "file:filesetup.c:805, func=open(/tmp/x), error=No such file or directory"),
    ]
    assert result.samples == []


def test_real_failed_job_in_text(run_fio, tmp_path):
    (tmp_path / "plain").write_text("a file, so plain/x cannot be created\n")
    out = run_fio("--name=ok", "--rw=write", "--size=1m",
                  "--name=bad", "--rw=write", "--size=1m", "--filename=plain/x",
                  output_format="normal", expect_rc=1, with_stderr=True)
    # The job failed before it started: only fio's "fio: pid=0, err=20/..." line tells.
    result = parse_text(out)
    assert [(f.error, f.job) for f in result.failures] == [(20, "pid 0")]
    assert values(result)["write.io_kib", "0", "ok"] == 1024


def test_md_disk_stats_text_matches_json():
    text_disk = {k: v for k, v in values(parse_file(FIXTURES / "fio-3.33" / "md-raid0.txt")).items()
                 if k[1] == "disk"}
    json_disk = {k: v for k, v in values(parse_file(FIXTURES / "fio-3.33" / "md-raid0.json")).items()
                 if k[1] == "disk"}
    assert text_disk == json_disk
    assert text_disk["device.write_merges", "disk", "md0/members"] == 3
