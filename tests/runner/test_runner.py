"""iowatch run for real: loop devices, fresh filesystems, fio and fs_mark, bundles.

Every test uses its own IOWATCH_DATA_DIR under tmp_path, so images, loop
devices and mounts are its own; the fixture detaches and unmounts whatever is
left even when a test fails.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pytest

from iowatch import bundle
from loop_devices import data_dir, loops_over  # noqa: F401 (data_dir: a fixture)

ROOT = Path(__file__).resolve().parents[2]
IOWATCH = str(Path(sys.executable).parent / "iowatch")

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(os.geteuid() != 0, reason="iowatch run needs root (losetup, mkfs, mount)"),
    pytest.mark.skipif(not shutil.which("fio") or not shutil.which("fs_mark"),
                       reason="fio and fs_mark are not installed (scripts/setup.sh installs them)"),
]


def iowatch(*args, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([IOWATCH, *map(str, args)], capture_output=True, text=True,
                          timeout=kw.pop("timeout", 600), **kw)


def group_samples(rep: dict, group: str) -> dict[str, float]:
    return {s["metric"]: s["value"] for s in rep["samples"]
            if s["group"] == group and s.get("job") is None}


def no_leftovers(data_dir: Path) -> None:
    from iowatch.filesystems import mount_root

    assert loops_over(data_dir) == [], "loop devices left attached"
    ours = f" {mount_root(data_dir)}/"
    assert not any(ours in line for line in Path("/proc/mounts").read_text().splitlines()), \
        "filesystems left mounted"


def test_xfs_smallfile_quick_gives_files_per_s_wall_and_device_write_iops_per_rep(tmp_path, data_dir):
    out = tmp_path / "bundle"
    r = iowatch("run", ROOT / "jobs/studies/xfs-smallfile-writeback.yml", "--profile", "quick",
                "--target", "localhost", "--inventory", ROOT / "hardware-inventory.yml",
                "--reps", 2, "--out", out, "--no-progress")
    assert r.returncode == 0, r.stderr
    doc = bundle.load(out)
    assert doc["status"] == "passed"
    # The study's one cell, and the platform's canary beside it (issue 41 item 7).
    (cell,) = [c for c in doc["cells"] if c["study"] != "canary-tmpfs-read"]
    assert cell["id"] == "xfs-smallfile-writeback/loop-ssd-raid0/xfs"
    assert {c["study"] for c in doc["cells"]} == {"xfs-smallfile-writeback", "canary-tmpfs-read"}
    assert cell["mkfs_options"] and cell["mount_options"] == "noatime"
    assert [r["index"] for r in cell["repetitions"]] == [1, 2]
    fm = cell["params"]["workload"]["fs_mark"]
    files = fm["options"]["n"] * fm["options"]["L"] * fm["dirs"]
    for rep in cell["repetitions"]:
        m = group_samples(rep, "fsmark")
        assert m["fsmark.files_per_s"] > 0 and m["wall_s"] > 0
        assert m["device.write_iops"] > 0 and m["device.write_bw_kib_s"] > 0
        # fs_mark -S0 leaves its files dirty: the device counters include their
        # writeback (the sync inside the measured window), not only what fs_mark dispatched.
        assert m["device.write_kib"] >= files * fm["options"]["s"] / 1024
        assert m["cpu.sys_s"] >= 0
        names = {a["name"] for a in rep["artifacts"]}
        assert {"fs_mark.txt", "diskstats.before", "diskstats.after"} <= names
        # The samples come from the raw output that travels with them.
        raw = (out / rep["artifacts"][0]["path"]).read_text()
        assert "Files/sec" in raw
    env = doc["environment"]
    assert env["host"]["release"] and "fio" in doc["tools"] and "fs_mark" in doc["tools"]
    assert env["devices"]["loop-ssd-raid0"]["rotational"] is False
    assert "runner" in env and env["runner"]["tool_s"] > 0
    # The writeback inside the window is measured time, kept apart from the tools'
    # time and from the overhead phases.
    runner = env["runner"]
    assert runner["workload_writeback_s"] > 0 and "writeback_sync" not in runner["phases_s"]
    assert {"mkfs_mount", "sync_before", "drop_caches", "unmount"} <= set(runner["phases_s"])
    assert runner["overhead_pct"] == pytest.approx(
        100 * (runner["wall_s"] - runner["tool_s"] - runner["workload_writeback_s"]) / runner["wall_s"],
        abs=0.05)
    no_leftovers(data_dir)


def _tiny_lab(tmp_path: Path) -> tuple[Path, Path]:
    """An inventory with a 128 MiB 'hdd' and a 1 GiB 'ssd', and a matrix whose
    first study cannot fit its writer on the small disk (ENOSPC)."""
    inv = tmp_path / "inventory.yml"
    inv.write_text("""all:
  hosts:
    localhost:
      ansible_connection: local
      iowatch_kind: local
      iowatch_devices:
        - {name: tiny-hdd, class: hdd, image: tiny-hdd.img, size: 128MiB, rotational: true, filesystems: [ext4]}
        - {name: small-ssd, class: ssd, image: small-ssd.img, size: 1GiB, rotational: false, filesystems: [ext4, raw, f2fs]}
""")
    studies = tmp_path / "jobs" / "studies"
    studies.mkdir(parents=True)
    src = (ROOT / "jobs/studies/odirect-vs-readers.yml").read_text()
    quick = "jobs: {seqwrite: {size: 256M}, seqread: {size: 128M}}"
    assert quick in src
    (studies / "odirect-vs-readers.yml").write_text(
        src.replace(quick, "jobs: {seqwrite: {size: 1G}, seqread: {size: 8M}}"))
    shutil.copy(ROOT / "jobs/studies/ext4-dio-randread.yml", studies)
    matrix = tmp_path / "jobs" / "m.yml"
    matrix.write_text("matrix: m\nprofile: quick\nreps: 2\nstudies:\n"
                      "  - study: odirect-vs-readers\n  - study: ext4-dio-randread\n")
    return inv, matrix


def test_a_failing_tool_fails_its_cell_and_the_others_go_on(tmp_path, data_dir):
    inv, matrix = _tiny_lab(tmp_path)
    out = tmp_path / "bundle"
    r = iowatch("run", matrix, "--target", "localhost", "--inventory", inv, "--out", out,
                "--no-progress")
    assert r.returncode == 1, r.stdout + r.stderr
    doc = bundle.load(out)
    cells = {c["id"]: c for c in doc["cells"]}
    failed = cells["odirect-vs-readers/tiny-hdd/ext4"]
    assert failed["status"] == "failed"
    assert "No space left on device" in failed["reason"] or "error 28" in failed["reason"]
    assert failed["repetitions"][0]["status"] == "failed"
    # Never a performance result from a failed job.
    assert not any(s["group"] == "writer" and s["metric"] == "write.bw_kib_s" and s["job"] is None
                   for s in failed["repetitions"][0]["samples"])
    ok_fs, ok_raw = cells["ext4-dio-randread/small-ssd/ext4"], cells["ext4-dio-randread/small-ssd/raw"]
    assert ok_fs["status"] == ok_raw["status"] == "passed"
    ratio = group_samples(ok_fs["repetitions"][0], "randread")["ratio.fs_to_raw"]
    iops_fs = group_samples(ok_fs["repetitions"][0], "randread")["read.iops"]
    [raw_rep] = [r for r in ok_raw["repetitions"] if r["index"] == ok_fs["repetitions"][0]["index"]]
    iops_raw = group_samples(raw_rep, "randread")["read.iops"]
    assert ratio == pytest.approx(iops_fs / iops_raw)  # against the raw repetition of its index
    assert doc["status"] == "failed"
    no_leftovers(data_dir)


def test_sigterm_leaves_an_incomplete_bundle_that_a_rerun_finishes(tmp_path, data_dir):
    inv, matrix = _tiny_lab(tmp_path)
    out = tmp_path / "bundle"
    proc = subprocess.Popen([IOWATCH, "run", str(matrix), "--target", "localhost", "--inventory",
                             str(inv), "--out", str(out), "--no-progress"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        # Stop it once the first cell is written and the second is running.
        while time.monotonic() < deadline and proc.poll() is None:
            if (out / "bundle.json").exists() and json.loads((out / "bundle.json").read_text())["cells"]:
                break
            time.sleep(0.05)
        # Held still while the test looks (under load the run could otherwise
        # finish its other cells between the look and the signal); the SIGTERM
        # waits for SIGCONT and is handled before the run goes on.
        proc.send_signal(signal.SIGSTOP)
        assert proc.poll() is None, "the run ended before the test could stop it: " + proc.stderr.read()
        assert json.loads((out / "bundle.json").read_text())["status"] != "complete"
        proc.send_signal(signal.SIGTERM)
        proc.send_signal(signal.SIGCONT)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert "incomplete" in err
    first = json.loads((out / "bundle.json").read_text())
    assert first["status"] == "incomplete"
    # fio's job processes went with it (they kept a killed fio's filesystem busy).
    left = subprocess.run(["pgrep", "-af", str(tmp_path)], capture_output=True, text=True).stdout
    assert "fio" not in left, left
    assert loops_over(data_dir) == [], f"loop devices left attached; the run said: {err}"
    no_leftovers(data_dir)

    r = iowatch("run", matrix, "--target", "localhost", "--inventory", inv, "--out", out,
                "--no-progress")
    assert r.returncode == 1, r.stderr  # the ENOSPC cell still fails, as it should
    done = bundle.load(out)
    assert done["run_id"] == first["run_id"] and done["status"] == "failed", r.stderr
    assert sorted(c["id"] for c in done["cells"]) == [
        "ext4-dio-randread/small-ssd/ext4", "ext4-dio-randread/small-ssd/raw",
        "odirect-vs-readers/tiny-hdd/ext4"]
    assert all(len(c["repetitions"]) == 2 for c in done["cells"])
    no_leftovers(data_dir)


def test_the_runner_refuses_a_mounted_device_and_writes_nothing(tmp_path, data_dir):
    inv, matrix = _tiny_lab(tmp_path)
    from iowatch import inventory, loopdev

    host = inventory.load(inv).host("localhost")
    loop = loopdev.attach(host.device("tiny-hdd"), data_dir)
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    try:
        subprocess.run(["mkfs.ext4", "-q", "-F", loop], check=True)
        subprocess.run(["mount", loop, mnt], check=True)
        (mnt / "precious").write_text("keep me")
        r = iowatch("run", matrix, "--target", "localhost", "--inventory", inv,
                    "--out", tmp_path / "bundle", "--no-progress")
        assert r.returncode == 2, r.stdout + r.stderr  # an error; 3 is "undecided" (issue 24)
        assert "refused" in r.stderr and loop in r.stderr and "mounted" in r.stderr
        assert (mnt / "precious").read_text() == "keep me"
    finally:
        subprocess.run(["umount", mnt], capture_output=True)
        loopdev.detach(loop)


def test_the_scripted_checkpoint_workload_times_the_final_sync(tmp_path, data_dir):
    """f2fs-nat-flush's steps, run on ext4: the host kernel here has no f2fs,
    and the steps (create in parallel, sync, sparse delete, drop caches, timed
    sync) are the same whatever the filesystem."""
    inv, _ = _tiny_lab(tmp_path)
    studies = tmp_path / "jobs" / "studies"
    src = (ROOT / "jobs/studies/f2fs-nat-flush.yml").read_text()
    for old, new in (("filesystems: [f2fs]", "filesystems: [f2fs, ext4]"),
                     ("script: {create_files: 100000}", "script: {create_files: 3000}")):
        assert old in src
        src = src.replace(old, new)
    (studies / "f2fs-nat-flush.yml").write_text(src)
    out = tmp_path / "bundle"
    tracefs = os.path.ismount("/sys/kernel/tracing")
    r = iowatch("run", studies / "f2fs-nat-flush.yml", "--target", "localhost", "--inventory", inv,
                "--reps", 2, "--out", out, "--no-progress")
    assert r.returncode == 0, r.stdout + r.stderr
    # The study times f2fs_flush_nat_entries: the host's tracefs is left as it was.
    assert os.path.ismount("/sys/kernel/tracing") is tracefs
    cells = {c["id"]: c for c in bundle.load(out)["cells"]}
    assert cells["f2fs-nat-flush/small-ssd/f2fs"]["status"] == "skipped"
    assert "f2fs" in cells["f2fs-nat-flush/small-ssd/f2fs"]["reason"]
    rep = cells["f2fs-nat-flush/small-ssd/ext4"]["repetitions"][0]
    steps = {s["job"]: s["value"] for s in rep["samples"] if s["metric"] == "step.time_ms"}
    assert set(steps) == {"create", "sync", "delete"}
    final = group_samples(rep, "checkpoint")["sync.time_ms"]
    log = json.loads((out / next(a["path"] for a in rep["artifacts"] if a["name"] == "script.json")).read_text())
    assert [s["step"] for s in log["steps"]] == ["create", "sync", "delete", "drop_caches", "final_sync"]
    assert log["steps"][-1]["ms"] == pytest.approx(final)
    no_leftovers(data_dir)


@pytest.mark.parametrize("wbt", [75000, 20000])
def test_a_study_s_wbt_setting_is_set_after_its_scheduler_and_recorded(tmp_path, data_dir, wbt):
    """Issue 25 item 2: a study names writeback throttling's latency target
    (seed 003's mechanism is wbt's exemption of REQ_SYNC | REQ_IDLE writes).
    The runner sets it on the device under test after the scheduler (choosing
    BFQ turns wbt off) and records the value in force beside the scheduler."""
    import yaml
    doc = yaml.safe_load((ROOT / "jobs/studies/odirect-vs-readers.yml").read_text())
    doc.update(scheduler="mq-deadline", wbt_lat_usec=wbt)
    study = tmp_path / "odirect-vs-readers.yml"
    study.write_text(yaml.safe_dump(doc))
    out = tmp_path / "bundle"
    r = iowatch("run", study, "--profile", "quick", "--target", "localhost", "--inventory",
                ROOT / "hardware-inventory.yml", "--reps", 1, "--out", out, "--no-progress")
    assert r.returncode == 0, r.stdout + r.stderr
    doc = bundle.load(out)
    seen = doc["environment"]["devices"]["loop-hdd"]
    assert (seen["scheduler"], seen["wbt_lat_usec"]) == ("mq-deadline", wbt)
    assert "wbt_note" not in seen
    # ... and in the cell, which keeps its own when another study on the device asks for another.
    (cell,) = [c for c in doc["cells"] if c["study"] == "odirect-vs-readers"]
    assert cell["params"]["queue"] == {"scheduler": "mq-deadline", "wbt_lat_usec": wbt}
    no_leftovers(data_dir)
