"""Issue 44, item 1: the mail's "to reproduce without iowatch" steps
(iowatch.replay) are what the runner did, made from what its bundle records.

First, on the kept reproductions of the five seeds (tests/fixtures/
reproductions/seed-NNN/guest-01/bundle), the steps of every measured cell name
the queue the cell ran on (or the study's own when the bundle predates the
recorded queue), the mount point the job file names, fs_mark's directory,
the md RAID0 and the dropped caches. Then, as root on loop devices, the steps
of a fresh `iowatch run` cell are run by bash and give the cell's groups and
metrics. The host kernel has no md driver and no f2fs: seeds 000, 002 and 004
(f2fs, f2fs, md RAID0) are checked here on their text, and their steps run
for real in test_replay_of_seeds.py, inside the guest proof's kernel."""
from __future__ import annotations

import copy
import dataclasses
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from iowatch import bundle, replay
from iowatch.inventory import Device
from iowatch.parsers import parse_text
from iowatch.studies import load_studies
from loop_devices import data_dir  # noqa: F401 (a fixture)

ROOT = Path(__file__).resolve().parents[2]
KEPT = ROOT / "tests" / "fixtures" / "reproductions"
STUDIES = load_studies(ROOT / "jobs" / "studies")
IOWATCH = str(Path(sys.executable).parent / "iowatch")
DROP = "sync -f $MNT\n  echo 3 > /proc/sys/vm/drop_caches\n"


def runs_of(directory: Path) -> dict[str, replay.CellRun]:
    """Each measured cell of a bundle as the server hands it to the mail."""
    doc = json.loads((directory / "bundle.json").read_text())
    devices = {d["name"]: d for d in doc["devices"]}
    out = {}
    for cell in doc["cells"]:
        if cell["status"] != "passed":
            continue
        artifacts = {a["name"]: a["path"] for a in cell["repetitions"][0]["artifacts"]}
        text = next(((directory / artifacts[n]).read_text() for n in ("job.fio", "command")
                     if n in artifacts), None)
        study = STUDIES[cell["study"]]
        declared = {"scheduler": study.scheduler, "wbt_lat_usec": study.wbt_lat_usec}
        out[cell["id"]] = replay.cell_run(cell, devices[cell["device"]], text, 5, declared)
    return out


def script(run: replay.CellRun) -> str:
    return "\n".join(replay.steps(run)) + "\n"


def mount_point(run: replay.CellRun, option: str) -> str:
    """The runner's mount point, read off the job file as run."""
    value = re.search(rf"^{option}=(\S+)$", run.tool_text, re.M).group(1)
    return value.removesuffix("/iowatch.data")


def test_seed_000_f2fs_dio_write_on_each_class_queue_and_directory():
    runs = runs_of(KEPT / "seed-000" / "guest-01" / "bundle")
    for cell, scheduler, wbt, mkfs in (("f2fs-dio-write/msd/f2fs", "mq-deadline", 2000, "-f -q -t 0"),
                                       ("f2fs-dio-write/memmc/f2fs", "mq-deadline", 2000, "-f -q -t 0"),
                                       ("f2fs-dio-write/mssd/f2fs", "none", 75000, "-f -q")):
        steps = script(runs[cell])
        assert f'echo {scheduler} > "$Q/scheduler"\necho {wbt} > "$Q/wbt_lat_usec"\n' in steps
        assert f"MNT={mount_point(runs[cell], 'directory')}\n" in steps
        assert f"  mkfs.f2fs {mkfs} $DEV\n" in steps and "mount -t f2fs -o noatime $DEV $MNT" in steps
        assert DROP in steps and "fio --output-format=json --output=fio-$i.json job.fio" in steps


def test_seed_001_ext4_cell_mounts_where_filename_points_and_the_raw_cell_reads_dev():
    runs = runs_of(KEPT / "seed-001" / "guest-01" / "bundle")
    ext4 = runs["ext4-dio-randread/vssd/ext4"]
    filename = re.search(r"^filename=(\S+)$", ext4.tool_text, re.M).group(1)
    assert filename.startswith("/run/iowatch/") and filename.endswith("/vssd/iowatch.data")
    steps = script(ext4)
    assert f"MNT={filename.removesuffix('/iowatch.data')}\n" in steps
    assert "/mnt/test" not in steps and DROP in steps
    # The study sets no queue and the bundle recorded none: the steps say so.
    assert "# I/O scheduler: the kernel's default (the study sets none)" in steps
    raw = script(runs["ext4-dio-randread/vssd/raw"])
    assert "mkfs" not in raw and "mount" not in raw
    assert "sed -i 's|^filename=.*|filename='\"$DEV\"'|' job.fio" in raw
    assert "fio --readonly --output-format=json" in raw
    assert "blockdev --flushbufs $DEV\n  echo 3 > /proc/sys/vm/drop_caches" in raw


def test_seed_002_f2fs_checkpoint_script_drops_caches_with_the_nat_dirty():
    run = runs_of(KEPT / "seed-002" / "guest-01" / "bundle")["f2fs-nat-flush/vnullb/f2fs"]
    steps = script(run)
    assert 'echo none > "$Q/scheduler"\necho 2000 > "$Q/wbt_lat_usec"' in steps
    sc = run.workload["script"]
    assert f"seq 1 {sc['create_files']} | xargs -P {sc['workers']} -n 64 touch" in steps
    delete = f"seq {sc['delete_every']} {sc['delete_every']} {sc['create_files']} | xargs rm\n"
    # After the sparse delete: caches dropped with no sync between, then the
    # timed sync (the tracer set for the flush in between: no sync there).
    tail = steps[steps.index(delete) + len(delete):]
    assert re.match(r"\s*#.*\n\s*echo 3 > /proc/sys/vm/drop_caches\n(?:(?!.*sync).*\n)*\s*time sync -f \.",
                    tail), tail
    assert DROP in steps


def test_seed_002_the_flush_the_study_times_is_traced_around_the_checkpoint_sync():
    """A study that times a kernel function (workload.script.time_functions)
    gets the function graph tracer set around the timed sync, as the runner
    sets it, and its trace copied out before the tracer is put back; a
    workload that times nothing sets no tracer."""
    run = runs_of(KEPT / "seed-002" / "guest-01" / "bundle")["f2fs-nat-flush/vnullb/f2fs"]
    assert run.workload["script"]["time_functions"] == {"f2fs.nat_flush_ms": "f2fs_flush_nat_entries"}
    steps = script(run)
    sync = steps.index("time sync -f .")
    before, after = steps[:sync], steps[sync:]
    assert "echo f2fs_flush_nat_entries > /sys/kernel/tracing/set_graph_function" in before
    # Only the timed function is patched: else every kernel call enters the tracer.
    assert "echo f2fs_flush_nat_entries > /sys/kernel/tracing/set_ftrace_filter" in before
    assert "echo function_graph > /sys/kernel/tracing/current_tracer" in before
    assert after.index('cp /sys/kernel/tracing/trace "$OUT/function-graph-$i.txt"') < \
        after.index("echo nop > /sys/kernel/tracing/current_tracer")
    untimed = copy.deepcopy(run.workload)
    del untimed["script"]["time_functions"]
    assert "set_graph_function" not in script(dataclasses.replace(run, workload=untimed))


def test_seed_003_both_halves_name_their_scheduler_and_wbt():
    runs = runs_of(KEPT / "seed-003" / "guest-01" / "bundle")
    bfq = script(runs["odirect-vs-readers/mhdd/ext4"])
    assert 'echo bfq > "$Q/scheduler"\necho 0 > "$Q/wbt_lat_usec"' in bfq
    assert "mq-deadline" not in bfq and "75000" not in bfq
    wbt = script(runs["odirect-vs-readers-wbt/mhdd/ext4"])
    assert 'echo none > "$Q/scheduler"\necho 75000 > "$Q/wbt_lat_usec"' in wbt
    for steps, run in ((bfq, runs["odirect-vs-readers/mhdd/ext4"]),
                       (wbt, runs["odirect-vs-readers-wbt/mhdd/ext4"])):
        assert f"MNT={mount_point(run, 'directory')}\n" in steps and DROP in steps
        assert "mount -t ext4 -o noatime,noinit_itable $DEV $MNT" in steps


def test_seed_004_makes_the_md_raid0_and_runs_fs_mark_beside_the_mount_point():
    (run,) = [r for r in runs_of(KEPT / "seed-004" / "guest-01" / "bundle").values()
              if r.cell.startswith("xfs-smallfile")]
    steps = script(run)
    assert ("mdadm --create /dev/md/iowatch-mraid0 --run --level=0 --raid-devices=2 "
            "--metadata=1.2 --homehost=iowatch $DEV1 $DEV2\nDEV=/dev/md/iowatch-mraid0\n") in steps
    assert steps.rstrip().endswith("mdadm --stop $DEV")
    assert "MNT=/run/iowatch/replay/mraid0\n" in steps
    # fs_mark's -d mraid0/N are relative to the mount point's parent, which the steps enter.
    assert f"(cd $MNT/.. && {run.tool_text.strip()}) | tee fs_mark-$i.txt" in steps
    assert run.tool_text.count("-d mraid0/") == 8
    assert "  mkfs.xfs -f -q $DEV\n" in steps and DROP in steps
    # A bundle of today counts the members (inventory.Device.bundle_entry).
    entry = Device(name="r0", device_class="ssd-raid0", members=("/dev/sdb", "/dev/sdc", "/dev/sdd"),
                   filesystems=("xfs",)).bundle_entry()
    assert entry["md_members"] == 3
    three = replay.cell_run({"id": run.cell, "filesystem": "xfs", "params": {"workload": run.workload}},
                            entry, run.tool_text, 1)
    assert "--raid-devices=3 --metadata=1.2 --homehost=iowatch $DEV1 $DEV2 $DEV3" in script(three)


# -- the steps run for real ---------------------------------------------------



def _groups_and_metrics(samples, groups: dict) -> set[tuple[str, str]]:
    return {(groups.get(s["group"], s["group"]), s["metric"]) for s in samples
            if s.get("job") is None and not s["metric"].startswith(("device.", "cpu.", "wall_s"))}


@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0, reason="the steps need root (losetup, mkfs, mount)")
@pytest.mark.skipif(not shutil.which("fio"), reason="fio is not installed")
@pytest.mark.parametrize("study", ["odirect-vs-readers", "xfs-smallfile-writeback"])
def test_the_steps_of_a_run_cell_give_its_groups_and_metrics_on_a_loop_device(
        tmp_path, data_dir, study):  # noqa: F811 (data_dir: the fixture)
    out = tmp_path / "bundle"
    r = subprocess.run([IOWATCH, "run", str(ROOT / "jobs" / "studies" / f"{study}.yml"),
                        "--profile", "quick", "--target", "localhost", "--inventory",
                        str(ROOT / "hardware-inventory.yml"), "--reps", "1", "--out", str(out),
                        "--no-progress"], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    doc = bundle.load(out)
    (cell,) = [c for c in doc["cells"] if c["status"] == "passed" and c["study"] != "canary-tmpfs-read"]
    (run,) = [v for k, v in runs_of(out).items() if k == cell["id"]]
    run.reps = 1
    # The steps on a scratch loop device of their own, in a directory with the job file.
    image = data_dir / "replay.img"
    subprocess.run(["truncate", "-s", "2G", str(image)], check=True)
    loop = subprocess.run(["losetup", "--find", "--show", "--direct-io=on", str(image)],
                          capture_output=True, text=True, check=True).stdout.strip()
    work = tmp_path / "replay"
    work.mkdir()
    (work / "job.fio").write_text(run.tool_text)
    ran = subprocess.run(["bash", "-e", "-c", script(run)], cwd=work, env={**os.environ, "DEV": loop},
                         capture_output=True, text=True, timeout=600)
    assert ran.returncode == 0, ran.stderr
    groups = run.workload["groups"]
    if run.tool == "fio":
        queue = Path("/sys/block") / Path(loop).name / "queue"
        assert "[bfq]" in (queue / "scheduler").read_text()
        assert (queue / "wbt_lat_usec").read_text().strip() == "0"
        parsed = parse_text((work / "fio-1.json").read_text(), "fio-json", path="fio-1.json")
        wanted = {"writer", "readers"}
    else:  # fs_mark ran beside the mount point, its -d directories on the filesystem
        parsed = parse_text((work / "fs_mark-1.txt").read_text(), "fsmark", path="fs_mark-1.txt")
        wanted = {"fsmark"}
    mine = _groups_and_metrics([s.to_dict() for s in parsed.samples], groups)
    runners = _groups_and_metrics(cell["repetitions"][0]["samples"], {})
    assert mine == runners and {g for g, _ in mine} == wanted
    assert loop not in Path("/proc/mounts").read_text()
