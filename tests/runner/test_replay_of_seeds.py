"""Issue 44, item 1's done-when: each of the five seeds' mail "to reproduce
without iowatch" steps, made from its kept reproduction (tests/fixtures/
reproductions), run by bash as root on loop devices, gives the kept cell's
groups and metrics: what the runner measured, the replay measures.

Seeds 001 (ext4 and the raw device) and 003 (ext4 under BFQ without wbt, and
with wbt) run on this host. Its kernel has neither f2fs nor md, so seeds 000
and 002 (f2fs) and 004 (md RAID0) skip here, saying so; the guest proof
(scripts/guest-kernel-proof.sh) runs this file inside a guest of the virtual
lab's kernel, which has both. One repetition each, on loop devices over
sparse images in the test's own directory, detached after (and the array
stopped, the mount point unmounted) even when a step fails."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from iowatch.parsers import parse_text

sys.path.insert(0, str(Path(__file__).parent.parent))
from loop_devices import data_dir, detach_over  # noqa: E402,F401 (a fixture)
from runner.test_replay import KEPT, runs_of, script  # noqa: E402

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(os.geteuid() != 0, reason="the steps need root (losetup, mkfs, mount)")]


@pytest.fixture
def scratch(data_dir):  # noqa: F811
    """The test's data directory; after it, its loop devices detached and their
    images deleted: in a guest the images live in memory (a tmpfs /tmp), and
    one test's left-over images filled it for the next (f2fs then failed its
    writes, mdadm its superblock)."""
    yield data_dir
    detach_over(data_dir)
    for image in data_dir.glob("*.img"):
        image.unlink()


def _kernel_has(filesystem: str) -> bool:
    return filesystem in Path("/proc/filesystems").read_text().split()


NO_F2FS = pytest.mark.skipif(not _kernel_has("f2fs") or not shutil.which("mkfs.f2fs"),
                             reason="this kernel has no f2fs (or mkfs.f2fs is missing): the guest proof, "
                                    "scripts/guest-kernel-proof.sh, runs it in the virtual lab's kernel")
NO_MD = pytest.mark.skipif(not Path("/proc/mdstat").exists() or not shutil.which("mdadm"),
                           reason="this kernel has no md driver (or mdadm is missing): the guest proof, "
                                  "scripts/guest-kernel-proof.sh, runs it in the virtual lab's kernel")


def _measured(samples, groups: dict) -> set[tuple[str, str]]:
    """The (group, metric) a tool measured: not the runner's own device, CPU
    and wall-clock counters around it, nor a ratio it works out of two cells
    (ext4's IOPS over the raw device's: both cells' steps give their own)."""
    return {(groups.get(s["group"], s["group"]), s["metric"]) for s in samples
            if s.get("job") is None
            and not s["metric"].startswith(("device.", "cpu.", "wall_s", "step.", "ratio."))}


def _kept(seed: str, cell: str) -> set[tuple[str, str]]:
    """What the kept cell's first repetition measured."""
    doc = json.loads((KEPT / f"seed-{seed}" / "guest-01" / "bundle" / "bundle.json").read_text())
    (found,) = [c for c in doc["cells"] if c["id"] == cell]
    return _measured(found["repetitions"][0]["samples"], {})


def _loops(images: Path, names: list[str]) -> list[str]:
    out = []
    for name in names:
        image = images / f"{name}.img"
        subprocess.run(["truncate", "-s", "1G", str(image)], check=True)
        out.append(subprocess.run(["losetup", "--find", "--show", str(image)], capture_output=True,
                                  text=True, check=True).stdout.strip())
    return out


def _replayed(seed: str, cell: str, data: Path, work: Path, members: int = 0):
    """The kept cell's steps (one repetition) run on loop devices: (the run,
    bash's result, the loop devices, still attached)."""
    run = runs_of(KEPT / f"seed-{seed}" / "guest-01" / "bundle")[cell]
    run.reps = 1
    steps = script(run)
    loops = _loops(data, [f"member{i}" for i in range(members)] if members else ["dev"])
    env = ({f"DEV{i + 1}": d for i, d in enumerate(loops)} if members else {"DEV": loops[0]})
    work.mkdir()
    if run.tool_text is not None:  # a job file or fs_mark's command; a script study has none
        (work / "job.fio").write_text(run.tool_text)
    mounted = re.search(r"^MNT=(\S+)$", steps, re.M)  # none for fio on the raw device
    try:
        ran = subprocess.run(["bash", "-e", "-c", steps], cwd=work, env={**os.environ, **env},
                             capture_output=True, text=True, timeout=1800)
    finally:
        if mounted:
            subprocess.run(["umount", mounted.group(1)], capture_output=True)
        if members and Path("/dev/md/iowatch-mraid0").exists():
            subprocess.run(["mdadm", "--stop", "/dev/md/iowatch-mraid0"], capture_output=True)
    assert ran.returncode == 0, ran.stderr[-3000:]
    return run, ran, loops


def _fio_cell(seed: str, cell: str, work: Path, data: Path, groups: set[str]) -> str:
    """The fio cell's steps run; its loop device."""
    run, _, (loop,) = _replayed(seed, cell, data, work)
    parsed = parse_text((work / "fio-1.json").read_text(), "fio-json", path="fio-1.json")
    mine = _measured([s.to_dict() for s in parsed.samples], run.workload["groups"])
    assert mine == _kept(seed, run.cell) and {g for g, _ in mine} == groups
    return loop


@NO_F2FS
def test_seed_000_f2fs_steps_give_the_fio_cells_groups_and_metrics(tmp_path, scratch):
    _fio_cell("000", "f2fs-dio-write/msd/f2fs", tmp_path / "replay", scratch, {"seqw"})


@pytest.mark.parametrize("cell", ["ext4-dio-randread/vssd/ext4", "ext4-dio-randread/vssd/raw"])
def test_seed_001_steps_of_ext4_and_of_the_raw_device_give_their_cells(tmp_path, scratch, cell):
    _fio_cell("001", cell, tmp_path / "replay", scratch, {"randread"})


@pytest.mark.parametrize("cell, scheduler, wbt", [("odirect-vs-readers/mhdd/ext4", "bfq", "0"),
                                                  ("odirect-vs-readers-wbt/mhdd/ext4", "none", "75000")])
def test_seed_003_steps_set_the_queue_and_give_the_writer_and_readers(tmp_path, scratch, cell, scheduler, wbt):
    loop = _fio_cell("003", cell, tmp_path / "replay", scratch, {"writer", "readers"})
    # The steps ran on the study's queue: what they left on the device.
    queue = Path("/sys/block") / Path(loop).name / "queue"
    assert f"[{scheduler}]" in (queue / "scheduler").read_text()
    assert (queue / "wbt_lat_usec").read_text().strip() == wbt


@NO_F2FS
def test_seed_002_f2fs_checkpoint_steps_time_the_checkpoint_sync(tmp_path, scratch):
    """The script's cell measures the checkpoint's sync (sync.time_ms) and the
    NAT flush inside it (f2fs.nat_flush_ms, the function graph tracer); the
    steps time the sync with bash's `time`, once a repetition, and copy the
    tracer's record of the flush beside it."""
    run, ran, _ = _replayed("002", "f2fs-nat-flush/vnullb/f2fs", scratch, tmp_path / "replay")
    timed = re.findall(r"^real\s+(\d+)m([\d.]+)s$", ran.stderr, re.M)
    assert len(timed) == 1, ran.stderr[-2000:]
    assert (tmp_path / "replay" / "function-graph-1.txt").is_file()
    assert _kept("002", run.cell) == {("checkpoint", "sync.time_ms"), ("checkpoint", "f2fs.nat_flush_ms")}


@NO_MD
def test_seed_004_md_raid0_steps_give_fs_marks_groups_and_metrics(tmp_path, scratch):
    (cell,) = [c for c in runs_of(KEPT / "seed-004" / "guest-01" / "bundle") if c.startswith("xfs-smallfile")]
    run, _, _ = _replayed("004", cell, scratch, tmp_path / "replay", members=2)
    parsed = parse_text((tmp_path / "replay" / "fs_mark-1.txt").read_text(), "fsmark", path="fs_mark-1.txt")
    mine = _measured([s.to_dict() for s in parsed.samples], run.workload["groups"])
    assert mine == _kept("004", run.cell) and {g for g, _ in mine} == {"fsmark"}
    assert not Path("/dev/md/iowatch-mraid0").exists(), "the steps left the array running"
