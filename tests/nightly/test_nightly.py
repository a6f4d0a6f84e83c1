"""iowatch nightly on the local target (a lab host already booted into the
head, said with --kernel-commit) against a live `iowatch serve`: real fio on
loop devices, a real upload and the server's real verdict work."""
from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys
from pathlib import Path

import pytest

from iowatch import bundle
from iowatch.inventory import load as load_inventory
from iowatch.nightly import NightlyError, finding, lab_commit, mark_nightly, trigger

sys.path.insert(0, str(Path(__file__).parent.parent))
from live_server import IOWATCH, create_agent, get_json, running_server, scratch_database  # noqa: E402

COMMIT = "0123456789abcdef0123456789abcdef01234567"
STUDY = "ext4-dio-randread"   # the quickest study: one fio job on the ssd loop device


def _nightly(url: str, token: str, out: Path, *extra: str, env=None) -> subprocess.CompletedProcess:
    return subprocess.run([IOWATCH, "nightly", "--branch", "for-next", "--target", "localhost",
                           "--matrix", STUDY, "--reps", "2", "--server", url, "--token", token,
                           "--out", str(out), "--night", "2026-11-22", "--wait", "120", *extra],
                          capture_output=True, text=True, timeout=900, env=env)


@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0, reason="the local target's loop devices need root")
def test_nightly_on_the_local_target_uploads_a_nightly_run_and_reports_the_verdict(tmp_path):
    with scratch_database() as env:
        token = create_agent(env, "lab-nightly")
        run_env = {**os.environ, "IOWATCH_DATA_DIR": str(tmp_path / "data")}
        with running_server(env) as (url, _):
            out = tmp_path / "night1"
            first = _nightly(url, token, out, "--kernel-commit", COMMIT, env=run_env)
            assert first.returncode == 0, first.stdout + first.stderr
            doc = bundle.load(out)
            assert doc["trigger"] == {"kind": "nightly", "branch": "for-next", "night": "2026-11-22"}
            assert doc["label"] == "nightly"
            assert doc["kernel"]["git_commit"] == COMMIT and "series" not in doc["kernel"]
            assert any(c["repetitions"] for c in doc["cells"]), doc["cells"]
            # The progress lines are timestamped phases (not a terminal here).
            assert " nightly: running " in first.stdout
            last = first.stdout.strip().splitlines()
            assert f"nightly for-next: run {doc['run_id']} (commit {COMMIT[:12]}), verdict done" in last
            assert "no regression with this run on the bad side" in last
            stored = get_json(f"{url}/api/v1/runs/{doc['run_id']}")
            assert stored["verdict"]["state"] == "done"
            assert stored["kernel"]["git_commit"] == COMMIT if "kernel" in stored else True
            if "trigger" in stored:  # the server side of the contract keeps it
                assert stored["trigger"]["kind"] == "nightly"

            # Without --kernel-commit, a kernel the role did not boot is refused by name.
            refused = _nightly(url, token, tmp_path / "night2", env=run_env)
            assert refused.returncode == 2
            assert "localhost runs" in refused.stderr and "--kernel-commit" in refused.stderr
            assert not (tmp_path / "night2").exists()


def test_a_host_running_another_commit_is_refused_naming_both():
    host = load_inventory(None).host("localhost")
    with pytest.raises(NightlyError, match=r"runs commit aaaaaaaaaaaa .* not 0123456789ab"):
        lab_commit(host, COMMIT, given=False, cmdline="root=/dev/sda1 iowatch.commit=" + "a" * 40)
    assert lab_commit(host, COMMIT[:12], given=False, cmdline="iowatch.commit=" + COMMIT) == COMMIT
    assert lab_commit(host, None, given=False, cmdline="quiet iowatch.commit=" + COMMIT) == COMMIT
    with pytest.raises(NightlyError, match="no iowatch.commit="):
        lab_commit(host, None, given=False, cmdline="quiet")


def test_marking_a_guest_bundle_nightly_drops_its_series_and_keeps_the_trigger(tmp_path):
    import shutil
    src = Path(__file__).parent.parent / "fixtures" / "e2e-check" / "guest-00" / "bundle"
    shutil.copytree(src, tmp_path / "b")
    assert "series" in bundle.load(tmp_path / "b")["kernel"]
    trig = trigger("master", "/src/linux", dt.date(2026, 11, 22))
    mark_nightly(tmp_path / "b", trig)
    doc = bundle.load(tmp_path / "b")
    assert doc["trigger"] == {"kind": "nightly", "branch": "master", "tree": "/src/linux",
                              "night": "2026-11-22"}
    assert "series" not in doc["kernel"] and "patch" not in doc["kernel"]
    doc["trigger"]["kind"] = "weekly"
    with pytest.raises(bundle.BundleError, match="trigger"):
        bundle.validate(doc)


def test_a_finding_names_both_kernels_the_cells_and_the_bisect_state():
    detail = {"id": 7, "kind": "nightly", "state": "new",
              "good": {"kernel": "6.12.117+", "commit": "a" * 40, "runs": ["r1"]},
              "bad": {"kernel": "6.12.118+", "commit": "b" * 40, "runs": ["r2"]},
              "cells": [{"study": "xfs-smallfile-writeback", "device": "vd-ssd", "filesystem": "xfs",
                         "group": "fsmark", "metric": "fsmark.files_per_s", "change_pct": -23.4}],
              "bisect": {"id": 3, "state": "running"}}
    line = finding(detail).line()
    assert line == ("regression 7 (nightly, new): 6.12.117+ (aaaaaaaaaaaa) -> 6.12.118+ "
                    "(bbbbbbbbbbbb); bisect running; xfs-smallfile-writeback vd-ssd xfs [fsmark] "
                    "fsmark.files_per_s -23.4%")


def test_more_boots_than_one_on_a_lab_host_are_refused_with_what_to_do(tmp_path):
    """A lab host runs in the kernel it booted: its second boot of the night is a
    reboot and a second call (issue 41 item 1), which the message says."""
    r = _nightly("http://127.0.0.1:9", "t", tmp_path / "night", "--boots", "2",
                 "--kernel-commit", COMMIT)
    assert r.returncode == 2
    assert "--boots 2: localhost runs in the kernel it booted" in r.stderr
    assert "same --night" in r.stderr and not (tmp_path / "night").exists()
