"""The five studies load, say what the seeds published, and bad files are refused by name."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from iowatch.studies import FsMarkSection, Ratio, load_matrix, load_studies, load_study
from iowatch.yamlfile import DataFileError

JOBS = Path(__file__).resolve().parents[2] / "jobs"


def test_the_five_studies_load_with_the_seeds_labels_and_numbers():
    studies = load_studies(JOBS / "studies")
    # The five seeds' studies (seed 003's in two halves: BFQ, and no scheduler with
    # wbt), and the platform canary (no seed, never deciding).
    assert sorted(studies) == ["canary-tmpfs-read", "ext4-dio-randread", "f2fs-dio-write",
                               "f2fs-nat-flush", "odirect-vs-readers", "odirect-vs-readers-wbt",
                               "xfs-smallfile-writeback"]
    # The post's numbers once: the wbt half judges no claim of its own.
    assert studies["odirect-vs-readers-wbt"].published == ()
    assert studies["odirect-vs-readers-wbt"].seed == studies["odirect-vs-readers"].seed
    assert (studies["odirect-vs-readers-wbt"].scheduler, studies["odirect-vs-readers-wbt"].wbt_lat_usec,
            studies["odirect-vs-readers"].scheduler, studies["odirect-vs-readers"].wbt_lat_usec) == \
        ("none", 75000, "bfq", 0)
    assert [s for s, st in studies.items() if st.canary or st.seed is None] == ["canary-tmpfs-read"]
    labels = {slug: [p.label for p in s.published] for slug, s in studies.items()}
    assert labels["f2fs-dio-write"] == ["before", "patched", "before", "patched"]
    assert labels["odirect-vs-readers"] == ["2.6.32-rc7", "for-2.6.33", "for-2.6.33+fix"]
    assert labels["xfs-smallfile-writeback"] == ["unpatched", "patched"]
    # Published units become the metric table's: fio's KB/s is KiB/s, MB/s is MiB/s.
    odirect = studies["odirect-vs-readers"]
    samples = odirect.published[1].samples()
    assert {(s["group"], s["metric"], s["value"]) for s in samples} == {
        ("writer", "write.bw_kib_s", 19), ("readers", "read.bw_kib_s", 137 * 1024)}
    f2fs = studies["f2fs-dio-write"]
    emmc_patched = f2fs.published[3].samples()
    assert emmc_patched[0] == {"metric": "write.bw_kib_s", "value": 124860, "unit": "KiB/s",
                               "direction": "higher", "group": "seqw", "job": None}


def test_profiles_resolve_per_device_class_and_say_their_scaling():
    f2fs = load_study(JOBS / "studies" / "f2fs-dio-write.yml")
    full_sd = f2fs.workload("full", "sdcard")["fio"]
    assert full_sd["global"]["filesize"] == "256m"
    assert full_sd["jobs"][0]["options"] == {"size": "16m", "numjobs": 10}
    assert f2fs.workload("full", "emmc")["fio"]["jobs"][0]["options"] == {"size": "64m", "numjobs": 16}
    assert f2fs.workload("quick", "sdcard")["fio"]["global"]["filesize"] == "32m"
    for study in load_studies(JOBS / "studies").values():
        assert study.scaling("quick")
    xfs = load_study(JOBS / "studies" / "xfs-smallfile-writeback.yml")
    assert xfs.workload("full", "ssd-raid0")["fs_mark"]["options"] == {
        "D": 10000, "S": 0, "n": 10000, "s": 4096, "L": 120}


def test_a_study_is_typed_objects_not_the_file_as_read():
    ext4 = load_study(JOBS / "studies" / "ext4-dio-randread.yml")
    assert not hasattr(ext4, "data")
    assert ext4.kind == "fio" and ext4.spec.ratio == Ratio("read.iops", "randread", "ext4", "raw")
    assert [j.name for j in ext4.spec.tool.jobs] and ext4.profiles["quick"].overrides.fio_global["numjobs"] == 4
    xfs = load_study(JOBS / "studies" / "xfs-smallfile-writeback.yml")
    assert xfs.spec.tool == FsMarkSection({"D": 10000, "S": 0, "n": 10000, "s": 4096, "L": 120}, dirs=8)
    assert xfs.spec.device_stats is True and xfs.profiles["quick"].overrides.fs_mark["L"] == 3
    nat = load_study(JOBS / "studies" / "f2fs-nat-flush.yml")
    assert nat.workload("quick", "hdd")["script"] == {"create_files": 100000, "workers": 16, "delete_every": 455,
                                                      "time_functions": {"f2fs.nat_flush_ms": "f2fs_flush_nat_entries"}}
    # The resolved workload is a fresh dict: the runner marks fio --readonly on one cell's copy.
    first = ext4.workload("quick", "ssd")
    first["fio"]["readonly"] = True
    assert "readonly" not in ext4.workload("quick", "ssd")["fio"]


def test_smoke_matrix_names_existing_studies():
    m = load_matrix(JOBS / "smoke.yml")
    assert m.profile == "quick" and m.reps >= 1
    assert "odirect-vs-readers" in [s.slug for s in m.studies]


@pytest.mark.parametrize("edit, line, words", [
    (("min_effect_pct: 5", "min_effect_pct: 5\nrepetitons: 5"), 11, "unknown key 'repetitons'"),
    (("global: {runtime: 3}", "global: {runtime: [3]}"), 27, "profiles.quick.global.runtime"),
    (("device_classes: [hdd]", "device_classes: [hdd, floppy]"), 6, "'floppy' is not allowed; allowed: 'sdcard'"),
    (("title: One direct", "titel: One direct"), 2, "unknown key 'titel'"),
    (("{metric: write.bw_kib_s, group: writer, direction: higher, decides: true,",
      "{metric: write.speed, group: writer, direction: higher, decides: true,"), 30, "unknown metric 'write.speed'"),
    (("{metric: write.bw_kib_s, group: writer, direction: higher, decides: true,",
      "{metric: write.bw_kib_s, group: writer, direction: lower, decides: true,"), 30, "higher-is-better"),
    (("why: \"the post's figure: the direct writer's aggregate bandwidth (aggrb)\"", "why: \"\""), 31,
     "metrics.0.why"),
    # A profile layer for a tool the workload does not run would be dropped without a word.
    (("    global: {runtime: 3}\n", "    global: {runtime: 3}\n    fs_mark: {n: 100}\n"), 28,
     "profiles.quick.fs_mark: changes fs_mark, but the workload runs fio"),
    (("jobs: {seqwrite: {size: 256M}", "jobs: {seqwrit: {size: 256M}"), 28,
     "profiles.quick: job 'seqwrit' is not in workload.fio.jobs"),
    (("    global: {runtime: 3}\n", "    global: {runtime: 3}\n    by_class: {ssd: {global: {runtime: 1}}}\n"), 28,
     "profiles.quick.by_class.ssd: device class 'ssd' is not one of the study's device_classes"),
    (("  groups: {\"0\": writer, \"1\": readers}\n",
      "  groups: {\"0\": writer, \"1\": readers}\n"
      "  ratio: {metric: write.bw_kib_s, group: writer, filesystem: ext4, against: raw}\n"), 22,
     "workload.ratio.against: 'raw' is not one of the study's filesystems (ext4)"),
])
def test_a_bad_study_file_is_refused_with_file_line_and_key(tmp_path, edit, line, words):
    src = (JOBS / "studies" / "odirect-vs-readers.yml").read_text()
    assert edit[0] in src
    bad = tmp_path / "odirect-vs-readers.yml"
    bad.write_text(src.replace(edit[0], edit[1], 1))
    with pytest.raises(DataFileError) as e:
        load_study(bad)
    assert str(bad) in str(e.value) and words in str(e.value)
    if line:
        assert e.value.line == line


@pytest.mark.parametrize("timed, words", [
    ("{step.time_ms: f2fs_flush_nat_entries}",
     "workload.script.time_functions: 'step.time_ms' is not one of the study's metrics"),
    ("{f2fs.nat_flush_ms: 'f2fs_flush_nat_entries()'}", "time_functions.f2fs.nat_flush_ms"),
])
def test_a_timed_function_must_give_a_metric_of_the_study(tmp_path, timed, words):
    src = (JOBS / "studies" / "f2fs-nat-flush.yml").read_text()
    given = "time_functions: {f2fs.nat_flush_ms: f2fs_flush_nat_entries}"
    assert given in src
    bad = tmp_path / "f2fs-nat-flush.yml"
    bad.write_text(src.replace(given, f"time_functions: {timed}").replace(
        "  - {metric: step.time_ms, group: checkpoint, direction: lower}\n", ""))
    with pytest.raises(DataFileError) as e:
        load_study(bad)
    assert str(bad) in str(e.value) and words in str(e.value), str(e.value)


def test_a_matrix_naming_a_missing_study_is_refused(tmp_path):
    shutil.copytree(JOBS / "studies", tmp_path / "studies")
    (tmp_path / "m.yml").write_text("matrix: m\nstudies:\n  - study: no-such-study\n")
    with pytest.raises(DataFileError, match="no study 'no-such-study'") as e:
        load_matrix(tmp_path / "m.yml")
    assert e.value.line == 3


@pytest.mark.parametrize("edit, line, words", [
    # Plain YAML keeps the last: the study would load with min_effect_pct 50.
    (("min_effect_pct: 5", "min_effect_pct: 5\nmin_effect_pct: 50"), 11,
     "key 'min_effect_pct' is given twice (first on line 10)"),
    (("    global: {directory: \"{mountpoint}\", runtime: 10}",
      "    global: {directory: \"{mountpoint}\", runtime: 10, runtime: 30}"), 13,
     "key 'runtime' is given twice (first on line 13)"),
])
def test_a_key_given_twice_in_a_study_is_refused_naming_file_and_line(tmp_path, edit, line, words):
    src = (JOBS / "studies" / "odirect-vs-readers.yml").read_text()
    assert edit[0] in src
    bad = tmp_path / "odirect-vs-readers.yml"
    bad.write_text(src.replace(edit[0], edit[1], 1))
    for load in (load_study, load_matrix):  # a study file is also a matrix of one
        with pytest.raises(DataFileError) as e:
            load(bad)
        assert e.value.path == str(bad) and e.value.line == line
        assert words in str(e.value)


def test_a_key_given_twice_in_a_matrix_is_refused_naming_file_and_line(tmp_path):
    shutil.copytree(JOBS / "studies", tmp_path / "studies")
    (tmp_path / "m.yml").write_text("matrix: m\nreps: 3\nstudies:\n  - study: odirect-vs-readers\n"
                                    "reps: 5\n")
    with pytest.raises(DataFileError) as e:
        load_matrix(tmp_path / "m.yml")
    assert str(e.value) == f"{tmp_path / 'm.yml'}:5: key 'reps' is given twice (first on line 2)"


def test_a_matrix_runs_a_study_on_a_subset_of_its_device_classes(tmp_path):
    """`device_classes:` in a matrix entry narrows where the runner plans cells
    (seed 002's reproduction runs on the post's class only); a class the study
    does not declare is refused with its line."""
    from iowatch import inventory
    from iowatch.runner import plan
    shutil.copytree(JOBS / "studies", tmp_path / "studies")
    vlab = inventory.load(JOBS.parent / "hardware-inventory.yml").host("vlab")
    (tmp_path / "all.yml").write_text("matrix: all\nstudies:\n  - study: f2fs-nat-flush\n")
    (tmp_path / "ssd.yml").write_text("matrix: ssd\nstudies:\n  - study: f2fs-nat-flush\n"
                                      "    device_classes: [ssd]\n")
    everywhere = {c.device.name for c in plan(load_matrix(tmp_path / "all.yml"), vlab)}
    assert {"vssd", "vsd", "vemmc"} <= everywhere
    # The platform canary comes too, in every boot (issue 41 item 7): it is not the study's class.
    assert [c.id for c in plan(load_matrix(tmp_path / "ssd.yml"), vlab)] == [
        "f2fs-nat-flush/vssd/f2fs", "canary-tmpfs-read/vssd/tmpfs"]
    (tmp_path / "bad.yml").write_text("matrix: bad\nstudies:\n  - study: f2fs-dio-write\n"
                                      "    device_classes: [hdd]\n")
    with pytest.raises(DataFileError, match="f2fs-dio-write does not run on device class hdd") as e:
        load_matrix(tmp_path / "bad.yml")
    assert e.value.line == 4
