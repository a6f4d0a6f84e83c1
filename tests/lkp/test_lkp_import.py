"""iowatch import-lkp on real LKP result roots (tests/fixtures/lkp-results, README there).

LKP's numbers, mapped onto iowatch's metrics, must equal iowatch's own parse
of the raw tool output LKP kept beside them; bad input is refused naming the
file; the import stores runs that `iowatch compare` reads back by kernel.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from iowatch import bundle
from iowatch.lkp import mapping
from iowatch.lkp.importer import import_roots
from iowatch.lkp.result_root import ResultRootError
from iowatch.parsers import parse_text
from iowatch.studies import load_studies

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests/fixtures/lkp-results"
IOWATCH = str(Path(sys.executable).parent / "iowatch")
COMMIT = "6.18.44-fc-v657"


def group_values(samples: list[dict], group: str) -> dict[str, float]:
    return {s["metric"]: s["value"] for s in samples if s["group"] == group and s.get("job") is None}


def artifact(out: Path, rep: dict, name: str) -> str:
    (art,) = [a for a in rep["artifacts"] if a["name"] == name]
    return (out / art["path"]).read_text()


@pytest.fixture(scope="module")
def imported(tmp_path_factory):
    out = tmp_path_factory.mktemp("lkp-import")
    (made,) = import_roots([FIXTURES], out, studies=load_studies(ROOT / "jobs/studies"))
    return made, bundle.load(made)


def test_one_bundle_per_testbox_and_commit_with_kernel_host_disk_and_filesystem(imported):
    _, doc = imported
    assert doc["kernel"]["release"] == COMMIT and "git_commit" not in doc["kernel"]  # not a hash
    assert doc["host"] == {"name": "iowatch-probe", "kind": "bare-metal"}
    assert {d["name"]: d["class"] for d in doc["devices"]} == {"loop0": "hdd", "lkp-loop-a": "hdd"}
    cells = {c["id"]: c for c in doc["cells"]}
    assert sorted(cells) == [
        "lkp-fio-basic-4k-1hdd-ext4-sync-1-10s-write-128m/loop0/ext4",
        "lkp-fio-basic-4k-1hdd-xfs-sync-1-10s-write-128m/loop0/xfs",
        "lkp-fsmark-1hdd-4k-xfs-1x-16d-256fpd-1t-fsyncbeforeclose-16m/lkp-loop-a/xfs"]
    xfs = cells["lkp-fio-basic-4k-1hdd-xfs-sync-1-10s-write-128m/loop0/xfs"]
    assert xfs["mkfs_options"] == "-f -mreflink=0" and xfs["mount_options"] == "inode64"
    assert all(len(c["repetitions"]) == 1 and c["status"] == "passed" for c in cells.values())


def test_fio_numbers_equal_iowatchs_own_parse_of_the_raw_fio_output(imported):
    out, doc = imported
    fio_cells = [c for c in doc["cells"] if c["study"].startswith("lkp-fio-basic")]
    assert len(fio_cells) == 2
    for cell in fio_cells:
        rep = cell["repetitions"][0]
        lkp = group_values(rep["samples"], "fio")
        parsed = [s.to_dict() for s in parse_text(artifact(out, rep, "lkp.fio.output"), "fio-json").samples]
        own = group_values(parsed, "0")
        # Latencies are per job in iowatch's parse: fio-basic's one (group-reported) job, task_0.
        own_job = {s["metric"]: s["value"] for s in parsed if s.get("job") == "task_0"}
        assert lkp["write.iops"] == pytest.approx(own["write.iops"], rel=1e-9)
        for metric in ("write.clat_mean_us", "write.clat_p90_us", "write.clat_p95_us",
                       "write.clat_p99_us", "write.clat_stddev_us"):
            assert lkp[metric] == pytest.approx(own_job[metric], rel=1e-9), metric
        # LKP divides fio's integer KiB/s by 1024; iowatch reads bw_bytes: within a KiB/s.
        assert lkp["write.bw_kib_s"] == pytest.approx(own["write.bw_kib_s"], abs=1)
        stats = json.loads(artifact(out, rep, "lkp.stats.json"))
        assert lkp["write.bw_kib_s"] == stats["fio.write_bw_MBps"] * 1024
        run = group_values(rep["samples"], "run")
        assert run == {"wall_s": stats["fio.time.elapsed_time"], "cpu.user_s": stats["fio.time.user_time"],
                       "cpu.sys_s": stats["fio.time.system_time"]}


def test_fsmark_numbers_equal_iowatchs_own_parse_of_fs_marks_output(imported):
    out, doc = imported
    (cell,) = [c for c in doc["cells"] if c["study"].startswith("lkp-fsmark")]
    rep = cell["repetitions"][0]
    lkp = group_values(rep["samples"], "fsmark")
    own = group_values([s.to_dict() for s in parse_text(artifact(out, rep, "lkp.fsmark"), "fsmark").samples],
                       "fsmark")
    assert lkp["fsmark.files_per_s"] == pytest.approx(own["fsmark.files_per_s"]) == 254.7
    assert lkp["fsmark.app_overhead_us"] == own["fsmark.app_overhead_us"]
    assert lkp["wall_s"] == 16.24  # GNU time around LKP's fsmark run script


def test_a_job_that_is_a_studys_translation_is_filed_under_that_study(tmp_path):
    """An LKP job whose parameters are exactly what --harness lkp writes for a study maps to it."""
    src = next(FIXTURES.glob("fio-basic/4k-1HDD-xfs-*/*/*/*/*/*"))
    root = tmp_path / "fio-basic/x/iowatch-probe/debian/defconfig/gcc-12" / COMMIT
    shutil.copytree(src, root)
    job_file = root / "0/job.yaml"
    job = job_file.read_text()
    # ext4-dio-randread's quick profile on an ssd, as iowatch.lkp.jobs writes it.
    job = job.replace("runtime: 10s", "runtime: 3s").replace("nr_task: 1", "nr_task: 4")
    job = job.replace("test_size: 128M", "test_size: 1073741824").replace("disk: 1HDD", "disk: 1SSD")
    job = job.replace("fs: xfs", "fs: ext4").replace(
        "fio-setup-basic:\n  rw: write\n  bs: 4k\n  ioengine: sync\n",
        "fio-setup-basic:\n  rw: randread\n  bs: 4k\n  ioengine: libaio\n  iodepth: 16\n  direct: 1\n"
        "  time_based: 1\n  testfile: y\n  buffered: 0\n")
    job_file.write_text(job)
    (made,) = import_roots([tmp_path / "fio-basic"], tmp_path / "out", studies=load_studies(ROOT / "jobs/studies"))
    (cell,) = bundle.load(made)["cells"]
    assert cell["id"] == "ext4-dio-randread/loop0/ext4"
    # A job without `buffered` ran O_DIRECT under fio-setup-basic (buffered=0): not the same study.
    job_file.write_text(job.replace("  buffered: 0\n", ""))
    (made,) = import_roots([tmp_path / "fio-basic"], tmp_path / "out2", studies=load_studies(ROOT / "jobs/studies"))
    assert bundle.load(made)["cells"][0]["study"].startswith("lkp-fio-basic-x")


def _copy(tmp_path: Path) -> Path:
    dest = tmp_path / "lkp-results"
    shutil.copytree(FIXTURES / "fsmark", dest / "fsmark")
    return dest


def test_matrix_json_stands_in_for_a_missing_stats_json(tmp_path):
    roots = _copy(tmp_path)
    (stats,) = roots.glob("fsmark/*/*/*/*/*/*/0/stats.json")
    stats.unlink()
    (made,) = import_roots([roots], tmp_path / "out", studies={})
    rep = bundle.load(made)["cells"][0]["repetitions"][0]
    assert group_values(rep["samples"], "fsmark")["fsmark.files_per_s"] == 254.7


def test_missing_stats_json_and_matrix_json_is_refused_naming_the_file(tmp_path):
    roots = _copy(tmp_path)
    (stats,) = roots.glob("fsmark/*/*/*/*/*/*/0/stats.json")
    stats.unlink()
    (stats.parents[1] / "matrix.json").unlink()
    with pytest.raises(ResultRootError, match=f"{stats}: missing"):
        import_roots([roots], tmp_path / "out", studies={})
    r = subprocess.run([IOWATCH, "import-lkp", str(roots), "--no-store", "--out", str(tmp_path / "o")],
                       capture_output=True, text=True)
    assert r.returncode == 2 and str(stats) in r.stderr


def test_an_unknown_suite_is_refused_naming_job_yaml(tmp_path):
    roots = _copy(tmp_path)
    (job,) = roots.glob("fsmark/*/*/*/*/*/*/0/job.yaml")
    job.write_text(job.read_text().replace("suite: fsmark", "suite: ebizzy"))
    with pytest.raises(ResultRootError, match=rf"{job}: suite 'ebizzy' is not one iowatch maps"):
        import_roots([roots], tmp_path / "out", studies={})


def test_an_unmapped_stat_is_left_in_the_raw_files():
    assert mapping.metric_for("fio.latency_50us%") is None
    assert mapping.metric_for("fio.read_clat_99%_ns") == ("read.clat_p99_us", 1e-3, "fio")


def _second_kernel(tmp_path: Path) -> Path:
    """The fio result roots again under another commit (a copy with the commit renamed)."""
    other = tmp_path / "k2"
    shutil.copytree(FIXTURES / "fio-basic", other / "fio-basic")
    for d in other.glob(f"fio-basic/*/*/*/*/*/{COMMIT}"):
        job = d / "0/job.yaml"
        job.write_text(job.read_text().replace(f"commit: {COMMIT}", "commit: lkp-test-k2"))
        d.rename(d.parent / "lkp-test-k2")
    return other


@pytest.mark.webapp
def test_import_stores_lkp_history_that_compare_reads_by_kernel(tmp_path):
    """Stored like a run (this machine's store, on a scratch database); imported again,
    nothing is stored twice; a second kernel's result roots compare against the first's."""
    from live_server import scratch_database

    with scratch_database() as env:
        for roots in (FIXTURES, _second_kernel(tmp_path), FIXTURES):
            r = subprocess.run([IOWATCH, "import-lkp", str(roots), "--out", str(tmp_path / "b")],
                               env=env, capture_output=True, text=True, timeout=300)
            assert r.returncode == 0, r.stderr
        assert "already stored: run" in r.stdout + r.stderr  # the third import
        r = subprocess.run([IOWATCH, "compare", COMMIT, "lkp-test-k2", "--format", "json"],
                           env=env, capture_output=True, text=True, timeout=300)
    # one LKP sample a side leaves cells unsure: exit 3 (iowatch.exit_status) is a verdict too
    assert r.returncode in (0, 1, 3), r.stderr
    text = json.dumps(json.loads(r.stdout))
    assert "lkp-fio-basic-4k-1hdd-xfs-sync-1-10s-write-128m" in text and "write.bw_kib_s" in text


@pytest.mark.webapp
def test_import_uploads_to_a_server(tmp_path):
    from live_server import create_agent, running_server, scratch_database

    with scratch_database() as env:
        token = create_agent(env, "lkp-importer")
        client = {**env, "IOWATCH_DATA_DIR": str(tmp_path / "client")}
        with running_server(env) as (url, _):
            r = subprocess.run([IOWATCH, "import-lkp", str(FIXTURES), "--server", url, "--token", token],
                               env=client, capture_output=True, text=True, timeout=300)
            assert r.returncode == 0, r.stderr
            assert "upload: sent: run" in r.stdout
            r = subprocess.run([IOWATCH, "import-lkp", str(FIXTURES), "--server", url, "--token", token],
                               env=client, capture_output=True, text=True, timeout=300)
            assert r.returncode == 0 and "upload: already-stored: run" in r.stdout, r.stdout + r.stderr
