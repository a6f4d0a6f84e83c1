"""A study's workload as LKP's atomic job (iowatch.lkp.jobs): what translates, and what is refused."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from iowatch.lkp.jobs import NotTranslatable, atomic_job, lkp_disk_name
from iowatch.studies import load_studies

STUDIES = load_studies(Path(__file__).resolve().parents[2] / "jobs/studies")


def test_f2fs_dio_write_becomes_fio_basic_with_buffered_set_and_the_clones_sizes():
    w = STUDIES["f2fs-dio-write"].workload("quick", "sdcard")
    job = atomic_job(w, "f2fs", "/dev/lkp-sd", where="f2fs-dio-write")
    assert job["suite"] == "fio-basic" and job["fs"] == "f2fs" and job["hdd_partitions"] == "/dev/lkp-sd"
    assert job["nr_task"] == 4 and job["test_size"] == 4 * 4 * 2**20  # 4 jobs x 4 MiB
    assert job["fio-setup-basic"] == {"ioengine": "sync", "invalidate": 1, "rw": "write",
                                      "filesize": "32m", "bs": "2m", "direct": 1, "buffered": 0}
    assert job["runtime"] == "86400s"  # no runtime in the study: not fio-setup-basic's 300 s cap
    assert job["arch"]  # what makes it atomic for `lkp run`


def test_a_buffered_study_says_buffered_1():
    w = STUDIES["f2fs-dio-write"].workload("quick", "sdcard")
    w["fio"]["global"]["direct"] = 0
    assert atomic_job(w, "xfs", "/dev/lkp-x", where="s")["fio-setup-basic"]["buffered"] == 1


def test_one_shared_file_is_fio_basics_testfile():
    w = STUDIES["ext4-dio-randread"].workload("quick", "ssd")
    params = atomic_job(w, "ext4", "/dev/lkp-x", where="s")["fio-setup-basic"]
    assert params["testfile"] == "y" and params["time_based"] == 1 and params["iodepth"] == 16


@pytest.mark.parametrize("slug, fs, reason", [
    ("odirect-vs-readers", "ext4", "2 fio jobs (seqwrite, seqread)"),
    ("xfs-smallfile-writeback", "xfs", "-D without -N"),
    ("f2fs-nat-flush", "f2fs", "a scripted workload"),
    ("ext4-dio-randread", "raw", "raw-device cell"),
])
def test_what_lkp_cannot_express_is_refused_with_the_reason(slug, fs, reason):
    study = STUDIES[slug]
    w = study.workload("quick", study.device_classes[0])
    with pytest.raises(NotTranslatable, match=re.escape(reason)):
        atomic_job(w, fs, "/dev/lkp-x", where=slug)


def test_an_unknown_fio_option_is_named():
    w = STUDIES["f2fs-dio-write"].workload("quick", "sdcard")
    w["fio"]["global"]["zonemode"] = "zbd"
    with pytest.raises(NotTranslatable, match="fio option 'zonemode' has no LKP fio-basic parameter"):
        atomic_job(w, "xfs", "/dev/lkp-x", where="s")


def test_disk_names_never_end_in_a_digit():
    assert lkp_disk_name("loop-ssd") == "/dev/lkp-loop-ssd"
    assert lkp_disk_name("nvme0") == "/dev/lkp-nvme0-disk"
