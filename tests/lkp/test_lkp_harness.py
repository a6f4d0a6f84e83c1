"""iowatch run --harness lkp for real: a small fio-basic and a small fsmark study
through LKP-tests' own `lkp run` on a loop device.

LKP comes from LKP_SRC, else ../shared/lkp-tests beside the repository, copied
to a temporary directory (LKP writes into its own tree); nothing of it is
vendored. The numbers in the bundle must equal iowatch's own parse of the raw
output LKP kept, the device iowatch did not declare for the run must be
untouched, and nothing LKP leaves behind may remain.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from iowatch import bundle
from iowatch.parsers import parse_text

ROOT = Path(__file__).resolve().parents[2]
IOWATCH = str(Path(sys.executable).parent / "iowatch")


def lkp_source() -> Path | None:
    if os.environ.get("LKP_SRC"):
        return Path(os.environ["LKP_SRC"])
    shared = ROOT.parent / "shared" / "lkp-tests"
    return shared if (shared / "bin" / "lkp").is_file() else None


pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(os.geteuid() != 0, reason="lkp run needs root (mkfs, mount, /lkp)"),
    pytest.mark.skipif(lkp_source() is None,
                       reason="no LKP-tests: set LKP_SRC, or have ../shared/lkp-tests beside the repository"),
    pytest.mark.skipif(not shutil.which("ruby"),
                       reason="ruby is not installed (scripts/setup.sh installs LKP's Debian packages)"),
    pytest.mark.skipif(not shutil.which("fio") or not shutil.which("fs_mark"),
                       reason="fio and fs_mark are not installed (scripts/setup.sh installs them)"),
]

INVENTORY = """\
all:
  hosts:
    localhost:
      iowatch_kind: local
      iowatch_devices:
        - {name: lkp-a, class: ssd, image: lkp-a.img, size: 1GiB, rotational: false, filesystems: [xfs, ext4]}
        - {name: bystander, class: hdd, image: bystander.img, size: 64MiB, rotational: true, filesystems: [ext4]}
"""

FIO_STUDY = """\
study: lkp-small-fio
title: small direct sequential writes (the LKP harness test)
seed: 999_0.txt  # none: a test study, no mailing-list seed
source: tests/lkp/test_lkp_harness.py
device_classes: [ssd]
filesystems: [xfs]
workload:
  fio:
    global: {ioengine: sync, rw: write, bs: 1m, direct: 1, directory: "{mountpoint}", size: 32m, numjobs: 2, runtime: 5}
    jobs:
      - name: seqw
  groups: {"0": seqw}
profiles:
  full: {scaling: none}
  quick: {scaling: none}
metrics:
  - {metric: write.bw_kib_s, group: seqw, direction: higher, decides: true}
published: []
"""

FSMARK_STUDY = """\
study: lkp-small-fsmark
title: small fs_mark with fsync (the LKP harness test)
seed: 999_0.txt  # none: a test study, no mailing-list seed
source: tests/lkp/test_lkp_harness.py
device_classes: [ssd]
filesystems: [xfs]
workload:
  fs_mark:
    options: {n: 512, s: 4096, S: 1, L: 1, D: 4, N: 128}
    dirs: 1
  groups: {fsmark: fsmark}
profiles:
  full: {scaling: none}
  quick: {scaling: none}
metrics:
  - {metric: fsmark.files_per_s, group: fsmark, direction: higher, decides: true}
published: []
"""


def _loops_over(images: Path) -> list[str]:
    out = subprocess.run(["losetup", "-l", "-n", "-O", "NAME,BACK-FILE"], capture_output=True, text=True)
    return [line.split()[0] for line in out.stdout.splitlines()
            if len(line.split()) > 1 and line.split()[1].startswith(str(images))]


def _wakeups(src: Path) -> list[int]:
    exe = str(src / "bin/event/wakeup").encode()
    pids = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and (proc / "cmdline").read_bytes().split(b"\0")[0] == exe:
                pids.append(int(proc.name))
        except OSError:
            pass
    return pids


@pytest.fixture(scope="module")
def lkp(tmp_path_factory):
    """LKP copied to a temporary directory, its wakeup helper built there."""
    src = tmp_path_factory.mktemp("lkp") / "lkp-tests"
    shutil.copytree(lkp_source(), src, symlinks=True)
    subprocess.run(["make", "-C", str(src / "bin/event"), "wakeup"], check=True, capture_output=True)
    yield src
    for pid in _wakeups(src):
        os.kill(pid, 9)


@pytest.fixture
def lab(tmp_path, monkeypatch, lkp):
    data = tmp_path / "data"
    data.mkdir()
    monkeypatch.setenv("IOWATCH_DATA_DIR", str(data))
    monkeypatch.setenv("LKP_SRC", str(lkp))
    inv = tmp_path / "inventory.yml"
    inv.write_text(INVENTORY)
    studies = tmp_path / "studies"
    studies.mkdir()
    (studies / "lkp-small-fio.yml").write_text(FIO_STUDY)
    (studies / "lkp-small-fsmark.yml").write_text(FSMARK_STUDY)
    # The bystander: a declared device this run must not touch, attached and filled.
    image = data / "images" / "bystander.img"
    image.parent.mkdir()
    image.write_bytes(os.urandom(64 << 20))
    loop = subprocess.run(["losetup", "--find", "--show", str(image)], check=True,
                          capture_output=True, text=True).stdout.strip()
    results_before = set(Path("/lkp/result").glob("*/*")) if Path("/lkp/result").is_dir() else set()
    yield {"data": data, "inventory": inv, "studies": studies, "bystander": loop, "lkp": lkp}
    for mnt in Path("/fs").glob("lkp-*") if Path("/fs").is_dir() else ():
        subprocess.run(["umount", str(mnt)], capture_output=True)
    for loop_dev in _loops_over(data):
        subprocess.run(["umount", loop_dev], capture_output=True)
        subprocess.run(["losetup", "-d", loop_dev], capture_output=True)
    for made in set(Path("/lkp/result").glob("*/*")) - results_before:
        shutil.rmtree(made, ignore_errors=True)  # LKP's own history of this test's runs


def _digest(dev: str) -> str:
    with open(dev, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def _our_mounts(lab) -> list[str]:
    """Mounts of this test's devices or under LKP's /fs (other engineers' runs mount beside us)."""
    ours = set(_loops_over(lab["data"])) | {lab["bystander"]}
    return [line for line in Path("/proc/mounts").read_text().splitlines()
            if line.split()[0] in ours or line.split()[1].startswith("/fs/")]


def _run(lab, study: str, out: Path) -> dict:
    mounts_before = _our_mounts(lab)
    bystander_before = _digest(lab["bystander"])
    r = subprocess.run([IOWATCH, "run", str(lab["studies"] / f"{study}.yml"), "--harness", "lkp",
                        "--target", "localhost", "--inventory", str(lab["inventory"]), "--reps", "1",
                        "--out", str(out), "--no-progress"], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    # Nothing outside the declared device: the bystander's bytes and the mounts are as they were.
    assert _digest(lab["bystander"]) == bystander_before
    assert _our_mounts(lab) == mounts_before == []
    # What LKP leaves behind is gone.
    assert _wakeups(lab["lkp"]) == []
    assert not list(Path("/dev").glob("lkp-*"))
    assert not list(Path("/fs").glob("lkp-*")) if Path("/fs").is_dir() else True
    assert not Path("/tmp/lkp-root").exists()
    doc = bundle.load(out)
    assert doc["status"] == "passed"
    return doc


def _artifact(out: Path, rep: dict, name: str) -> str:
    (art,) = [a for a in rep["artifacts"] if a["name"] == name]
    return (out / art["path"]).read_text()


def _group(samples, group):
    return {s["metric"]: s["value"] for s in samples if s["group"] == group and s.get("job") is None}


def test_fio_basic_through_lkp_run_matches_iowatchs_parse_of_the_same_fio_json(lab, tmp_path):
    out = tmp_path / "bundle"
    doc = _run(lab, "lkp-small-fio", out)
    (cell,) = doc["cells"]
    assert cell["id"] == "lkp-small-fio/lkp-a/xfs" and cell["params"]["harness"] == "lkp"
    assert cell["mkfs_options"] == "-f -mreflink=0"  # LKP's own mkfs, from its reproduce.sh
    (rep,) = cell["repetitions"]
    job = _artifact(out, rep, "lkp-job.yaml")
    assert "buffered: 0" in job and "direct: 1" in job and "hdd_partitions: /dev/lkp-lkp-a" in job
    task = _artifact(out, rep, "lkp.fio.task")
    assert "direct=1" in task and "numjobs=2" in task and "bs=1m" in task
    lkp = _group(rep["samples"], "seqw")
    parsed = [s.to_dict() for s in parse_text(_artifact(out, rep, "lkp.fio.output"), "fio-json").samples]
    own = _group(parsed, "0")
    own_job = {s["metric"]: s["value"] for s in parsed if s.get("job") == "task_0"}
    assert lkp["write.iops"] == pytest.approx(own["write.iops"], rel=1e-9)
    assert lkp["write.bw_kib_s"] == pytest.approx(own["write.bw_kib_s"], abs=1)
    assert lkp["write.clat_p99_us"] == pytest.approx(own_job["write.clat_p99_us"], rel=1e-9)
    assert lkp["write.clat_mean_us"] == pytest.approx(own_job["write.clat_mean_us"], rel=1e-9)
    assert own["write.io_kib"] == 64 * 1024  # 2 jobs x 32 MiB, as the study says
    # iowatch's own device counters around the run: at least the workload's 64 MiB written.
    assert lkp["device.write_kib"] >= 64 * 1024
    assert _group(rep["samples"], "run")["wall_s"] > 0


def test_fsmark_through_lkp_run_matches_iowatchs_parse_of_fs_marks_output(lab, tmp_path):
    out = tmp_path / "bundle"
    doc = _run(lab, "lkp-small-fsmark", out)
    (cell,) = doc["cells"]
    (rep,) = cell["repetitions"]
    raw = _artifact(out, rep, "lkp.fsmark")
    assert "-D 4 -N 128 -n 512 -L 1 -S 1 -s 4096" in raw  # the study's command line, through LKP
    own = _group([s.to_dict() for s in parse_text(raw, "fsmark").samples], "fsmark")
    lkp = _group(rep["samples"], "fsmark")
    assert lkp["fsmark.files_per_s"] == pytest.approx(own["fsmark.files_per_s"])
    assert lkp["fsmark.app_overhead_us"] == pytest.approx(own["fsmark.app_overhead_us"])
    assert lkp["device.write_ios"] > 0 and lkp["wall_s"] > 0


def test_a_study_lkp_cannot_express_is_skipped_with_the_reason(lab, tmp_path):
    study = lab["studies"] / "lkp-small-fsmark.yml"
    study.write_text(FSMARK_STUDY.replace("D: 4, N: 128", "D: 4"))
    r = subprocess.run([IOWATCH, "run", str(study), "--harness", "lkp", "--target", "localhost",
                        "--inventory", str(lab["inventory"]), "--reps", "1", "--out", str(tmp_path / "b"),
                        "--no-progress"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    (cell,) = bundle.load(tmp_path / "b")["cells"]
    assert cell["status"] == "skipped" and "-D without -N" in cell["reason"]


def test_without_lkp_the_run_is_refused_saying_what_to_set(lab, tmp_path, monkeypatch):
    monkeypatch.setenv("LKP_SRC", str(tmp_path / "nowhere"))
    r = subprocess.run([IOWATCH, "run", str(lab["studies"] / "lkp-small-fio.yml"), "--harness", "lkp",
                        "--target", "localhost", "--inventory", str(lab["inventory"])],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "no LKP-tests at" in r.stderr and "LKP_SRC" in r.stderr


def test_sigterm_during_lkp_run_leaves_nothing_behind(lab, tmp_path):
    """Stopped while fio runs under LKP: the run is marked incomplete and LKP's
    helpers, the mount on /fs, the disk name and the loop device are all gone."""
    study = lab["studies"] / "lkp-small-fio.yml"
    study.write_text(FIO_STUDY.replace("runtime: 5}", "runtime: 60, time_based: 1}"))
    out = tmp_path / "bundle"
    proc = subprocess.Popen([IOWATCH, "run", str(study), "--harness", "lkp", "--target", "localhost",
                             "--inventory", str(lab["inventory"]), "--reps", "1", "--out", str(out),
                             "--no-progress"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not any(" /fs/lkp-" in line for line in Path("/proc/mounts").read_text().splitlines()):
            assert proc.poll() is None and time.monotonic() < deadline, "LKP never mounted the disk"
            time.sleep(0.2)
        time.sleep(2)  # fio under way
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert "marked incomplete" in err
    assert _our_mounts(lab) == []
    assert _wakeups(lab["lkp"]) == []
    assert not list(Path("/dev").glob("lkp-*"))
    # The loop device is detached with autoclear: the kernel lets it go once the
    # killed fio's direct writes in flight complete, which on a loaded machine can
    # outlast the runner's own 15 s wait. It must go by itself, without a hand.
    deadline = time.monotonic() + 90
    while _loops_over(lab["data"]) != [lab["bystander"]] and time.monotonic() < deadline:
        time.sleep(0.5)
    assert _loops_over(lab["data"]) == [lab["bystander"]]


def test_a_leftover_mount_point_holding_files_is_refused_naming_it(lab, tmp_path):
    """A run killed before its cleanup left /fs/<disk> with files on the root
    filesystem: the next run refuses, naming the directory, and keeps the files."""
    mnt = Path("/fs/lkp-lkp-a")
    mnt.mkdir(parents=True)
    try:
        (mnt / "task_0.0.0").write_bytes(b"left by a killed run")
        r = subprocess.run([IOWATCH, "run", str(lab["studies"] / "lkp-small-fio.yml"), "--harness", "lkp",
                            "--target", "localhost", "--inventory", str(lab["inventory"]), "--reps", "1",
                            "--out", str(tmp_path / "b"), "--no-progress"],
                           capture_output=True, text=True, timeout=300)
        assert r.returncode != 0
        assert f"{mnt} holds files and is not a mount point" in r.stdout + r.stderr
        assert (mnt / "task_0.0.0").read_bytes() == b"left by a killed run"
        assert _our_mounts(lab) == [] and not list(Path("/dev").glob("lkp-*"))
    finally:
        shutil.rmtree(mnt, ignore_errors=True)
