"""Each study's published pairs give the outcome its seed post describes,
through the library and through `iowatch compare --published`."""
import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from iowatch.side_sources import published_side
from iowatch.judging import compare_sides
from iowatch.report import render_junit, render_markdown, render_text
from iowatch.studies import load_studies
from iowatch.vocabulary import FDR

ROOT = Path(__file__).resolve().parents[2]
IOWATCH = str(Path(sys.executable).parent / "iowatch")
STUDIES = load_studies(ROOT / "jobs/studies")

# (study, base label, candidate label, device class or None, {(group, metric): outcome}, seed's words)
SEEDS = [
    ("f2fs-dio-write", "before", "patched", "sdcard",
     {("seqw", "write.bw_kib_s"): "improvement"}, "SD 5125 -> 10424 KB/s"),
    ("f2fs-dio-write", "before", "patched", "emmc",
     {("seqw", "write.bw_kib_s"): "improvement"}, "eMMC 103583 -> 124860 KB/s"),
    ("ext4-dio-randread", "DIO_LOCKING", "blockdev_direct_IO_no_locking", None,
     {("randread", "ratio.fs_to_raw"): "improvement"}, "50% of raw -> 99% of raw"),
    ("f2fs-nat-flush", "Before change", "After change", None,
     {("checkpoint", "f2fs.nat_flush_ms"): "improvement"}, "flush 158 -> 11 ms, lower is better"),
    ("odirect-vs-readers", "2.6.32-rc7", "for-2.6.33", None,
     {("writer", "write.bw_kib_s"): "regression", ("readers", "read.bw_kib_s"): "improvement"},
     "writer 2968 -> 19 KB/s while readers 101 -> 137 MB/s"),
    ("odirect-vs-readers", "for-2.6.33", "for-2.6.33+fix", None,
     # The fix gives the readers' gain back (137 -> 103 MB/s): by size, that is a regression.
     {("writer", "write.bw_kib_s"): "improvement", ("readers", "read.bw_kib_s"): "regression"},
     "the fix restores the writer: 19 -> 2728 KB/s"),
    ("xfs-smallfile-writeback", "unpatched", "patched", None,
     {("fsmark", "fsmark.files_per_s"): "improvement", ("fsmark", "device.members.write_iops"): "improvement",
      ("fsmark", "wall_s"): "improvement"}, "32,500 -> 52,900 files/s; 28,000 -> 1,500 IOPS"),
]


def _library(study, base, cand, cls):
    s = STUDIES[study]
    return compare_sides(published_side(s, base, cls, "base"), published_side(s, cand, cls, "candidate"),
                         studies=STUDIES)


@pytest.mark.parametrize("study, base, cand, cls, expected, seed", SEEDS, ids=[s[5] for s in SEEDS])
def test_library_gives_the_seeds_outcome(study, base, cand, cls, expected, seed):
    cmp = _library(study, base, cand, cls)
    got = {(v.key.group, v.key.metric): v for v in cmp.verdicts}
    for key, outcome in expected.items():
        assert got[key].outcome == outcome, got[key].words
        assert got[key].size_only and got[key].p_value is None and "size only" in got[key].words
    if cls:
        assert {v.key.device_class for v in cmp.verdicts} == {cls}


def test_the_writer_collapse_is_about_minus_99_4_percent():
    v = {v.key.group: v for v in _library("odirect-vs-readers", "2.6.32-rc7", "for-2.6.33", None).verdicts}
    assert v["writer"].change_pct == pytest.approx(-99.36, abs=0.01)
    assert v["writer"].words.startswith("write bandwidth fell 99.4%, from 2,968 to 19 KiB/s: a regression")
    assert v["readers"].words.startswith("read bandwidth rose 35.6%, from 101 to 137 MiB/s: an improvement")


def test_device_iops_falling_is_an_improvement_because_the_table_says_lower_is_better():
    # The post's "physical write IOPS" are its two SSDs': the RAID0's members.
    v = {v.key.metric: v for v in _library("xfs-smallfile-writeback", "unpatched", "patched", None).verdicts}
    assert v["device.members.write_iops"].direction == "lower"
    assert v["device.members.write_iops"].change_pct == pytest.approx((1500 / 28000 - 1) * 100)
    assert v["device.members.write_iops"].outcome == "improvement"


def _cli(*args):
    return subprocess.run([IOWATCH, "compare", *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=120)


@pytest.mark.parametrize("study, base, cand, cls, expected, seed", SEEDS, ids=[s[5] for s in SEEDS])
def test_cli_gives_the_seeds_outcome_and_exit_code(study, base, cand, cls, expected, seed):
    extra = ["--device-class", cls] if cls else []
    r = _cli("--published", study, "--base", base, "--candidate", cand, "--format", "json", *extra)
    assert r.returncode == (1 if "regression" in expected.values() else 0), r.stderr
    doc = json.loads(r.stdout)
    got = {(c["group"], c["metric"]): c for c in doc["cells"]}
    for key, outcome in expected.items():
        cell = got[key]
        assert cell["outcome"] == outcome and cell["study"] == study
        assert cell["base"]["n"] == cell["candidate"]["n"] == 1
        assert set(cell["ci"]) == {"low", "high"} and "p_value" in cell and "change_pct" in cell
    assert doc["fdr"] == FDR and doc["confounders"] == []


def test_cli_text_report_names_the_kernels_and_the_verdict_in_words():
    r = _cli("--published", "odirect-vs-readers", "--base", "2.6.32-rc7", "--candidate", "for-2.6.33")
    assert r.returncode == 1
    for text in ("2.6.32-rc7", "1af60fbd759d", "device class hdd", "filesystem ext4",
                 "write bandwidth fell 99.4%, from 2,968 to 19 KiB/s: a regression",
                 "judged by size only", "confounders", "iowatch run jobs/studies/odirect-vs-readers.yml"):
        assert text in r.stdout


def test_one_sample_a_side_is_a_size_in_every_report_never_confirmed():
    # The compare page's headline and the reports read one verdict line (issue 28).
    cmp = _library("odirect-vs-readers", "2.6.32-rc7", "for-2.6.33", None)
    assert cmp.state == "regression"
    verdict = next(line for line in render_text(cmp).splitlines() if line.startswith("verdict:"))
    assert verdict.startswith("verdict: size only, not confirmed: a deciding cell is 99.4% slower")
    assert "confirmed slower" not in verdict and "REGRESSION" not in verdict
    assert "size only, not confirmed" in render_markdown(cmp)


def test_cli_says_which_side_is_missing_and_why():
    r = _cli("--published", "odirect-vs-readers", "--base", "2.6.32-rc7", "--candidate", "nope")
    assert r.returncode == 2
    assert "candidate 'nope'" in r.stderr and "for-2.6.33+fix" in r.stderr
    r = _cli("/nonexistent/bundle", "also-missing", "--server", "http://127.0.0.1:9")
    assert r.returncode == 2 and "base '/nonexistent/bundle'" in r.stderr and "cannot read" in r.stderr


def test_junit_has_one_testcase_per_cell_and_a_failure_exactly_for_regressions():
    for study, base, cand, cls, expected, _ in SEEDS:
        cmp = _library(study, base, cand, cls)
        root = ET.fromstring(render_junit(cmp))
        cases = root.findall("./testsuite/testcase")
        assert len(cases) == len(cmp.verdicts)
        for case, v in zip(cases, cmp.verdicts):
            assert (case.find("failure") is not None) == (v.outcome == "regression")
        assert root.find("testsuite").get("failures") == str(len(cmp.regressions))


def test_markdown_has_a_row_per_cell():
    r = _cli("--published", "xfs-smallfile-writeback", "--base", "unpatched", "--candidate", "patched",
             "--format", "markdown")
    assert r.returncode == 0
    rows = [line for line in r.stdout.splitlines() if line.startswith("| xfs-smallfile-writeback")]
    assert len(rows) == 3  # the deciding metrics; cpu.sys_s and the device bandwidth are diagnostics
