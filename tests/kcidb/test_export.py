"""KCIDB export (issue 16, item 3): the e2e check's real bundles, a run alone,
and a regression from a real store read over HTTP, each validated with
kcidb-io; statuses and numbers held against the bundles and the verdicts."""
from __future__ import annotations

import json
import statistics
import subprocess
import sys
from pathlib import Path

import pytest
from kcidb_io.schema import LATEST

from iowatch import bundle, inventory, kcidb
from iowatch.kernel.series import Patch, Series, patchset_hash

ROOT = Path(__file__).resolve().parents[2]
CHECK = ROOT / "tests" / "fixtures" / "e2e-check"
AABB = ROOT / "tests" / "fixtures" / "e2e-boots" / "aabb"
IOWATCH = str(Path(sys.executable).parent / "iowatch")
WRITER = "iowatch.odirect-vs-readers.hdd.ext4.writer.write.bw_kib_s"
READERS = "iowatch.odirect-vs-readers.hdd.ext4.readers.read.bw_kib_s"


def export(*argv: str) -> dict:
    out = subprocess.run([IOWATCH, "export", "kcidb", *argv], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    LATEST.validate(data)  # again, here: the command's own validation is under test too
    return data


def median_of(bundle_dir: Path, group: str, metric: str) -> float:
    doc = bundle.load(bundle_dir)
    return statistics.median(kcidb.cell_values(doc["cells"][0], group, metric))


def by_path(data: dict, build_id: str) -> dict[str, dict]:
    return {t["path"]: t for t in data["tests"] if t["build_id"] == build_id}


def test_the_e2e_check_exports_with_the_checks_own_verdicts():
    # One boot a variant (made before a check booted each twice): the vlab's record.
    data = export("--check", str(CHECK), "--history", str(AABB))
    summary = json.loads((CHECK / "check.json").read_text())
    assert data["version"] == {"major": LATEST.major, "minor": LATEST.minor}
    assert len(data["checkouts"]) == len(data["builds"]) == 3
    by_commit = {c["misc"]["commit"]: c for c in data["checkouts"]}
    failing = set()
    for row in summary["variants"]:
        checkout = by_commit[row["commit"]]
        assert checkout["misc"]["patch_index"] == row["index"]
        build = next(b for b in data["builds"] if b["checkout_id"] == checkout["id"])
        assert build["status"] == "PASS" and build["architecture"] == "x86_64"
        tests = by_path(data, build["id"])
        assert tests["boot"]["status"] == "PASS"
        guest = CHECK / f"guest-{row['index']:02d}" / "bundle"
        writer, readers = tests[WRITER], tests[READERS]
        assert writer["number"] == {"value": median_of(guest, "writer", "write.bw_kib_s"),
                                    "unit": "KiB/s"}
        assert readers["number"]["value"] == median_of(guest, "readers", "read.bw_kib_s")
        if row["index"] == 0:
            assert {writer["status"], readers["status"]} == {"DONE"}  # the base: nothing to compare
        if any(t["status"] == "FAIL" for t in tests.values()):
            failing.add(row["index"])
    assert failing == set(summary["regressing_patches"]) == {2}
    patch2 = by_path(data, next(b["id"] for b in data["builds"]
                                 if b["checkout_id"] == by_commit[summary["variants"][2]["commit"]]["id"]))
    assert patch2[WRITER]["status"] == "FAIL" and patch2[WRITER]["misc"]["outcome"] == "regression"
    assert patch2[WRITER]["misc"]["change_pct"] == pytest.approx(-33.2, abs=0.5)
    assert patch2[READERS]["status"] == "PASS" and patch2[READERS]["misc"]["outcome"] == "improvement"


def test_a_run_alone_is_measurements_without_a_verdict():
    guest = CHECK / "guest-02" / "bundle"
    data = export("--run", str(guest), "--origin", "iowatch_lab1", "--branch", "master")
    run_id = bundle.load(guest)["run_id"]
    assert {t["status"] for t in data["tests"] if t["path"] != "boot"} == {"DONE"}
    assert all(o["id"].startswith("iowatch_lab1:") and o["origin"] == "iowatch_lab1"
               for kind in ("checkouts", "builds", "tests") for o in data[kind])
    writer = next(t for t in data["tests"] if t["path"] == WRITER)
    assert writer["id"] == f"iowatch_lab1:{run_id}:odirect-vs-readers/vhdd/ext4:writer:write.bw_kib_s"
    assert writer["environment"]["misc"]["device_model"].startswith("scsi-hd")
    assert data["checkouts"][0]["git_repository_branch"] == "master"


def test_build_and_boot_failures_and_a_series_from_mail(tmp_path):
    """Failure bundles as iowatch check writes them, for a series that came by mail."""
    from iowatch.check import failure_bundle
    from iowatch.kernel.build import Plan, Variant

    base = "c12fff06dffbe5058f9675864f0297d66f5f06cd"
    patches = tuple(Patch(i, f"p{i}", f"ext4: change {i}", f"Subject: [PATCH {i}/2] x\n\n+{i}\n",
                          f"{i}.abc@example.org", "Ann Dev <ann@example.org>") for i in (1, 2))
    series = Series("ext4-changes", "series.mbox", patches, "cover.abc@example.org",
                    "ext4: two changes", ("linux-ext4@vger.kernel.org",), (),
                    "https://lore.kernel.org/all/")
    plan = Plan(tmp_path, tmp_path, tmp_path, series, base, [])
    host = inventory.Host("vlab", "qemu")
    built = failure_bundle(tmp_path / "v1", Variant(1, "ab" * 20, "ext4: change 1"), plan, host,
                            "boot-failed", "no login in 240 s",
                            {"console_tail": "Kernel panic - not syncing"})
    unbuilt = failure_bundle(tmp_path / "v2", Variant(2, "cd" * 20, "ext4: change 2"), plan, host,
                              "build-failed", "fs/ext4/inode.c:12: error: expected ';'", {})
    data = export("--run", str(built))
    data2 = export("--run", str(unbuilt))
    checkout = data["checkouts"][0]
    assert checkout["git_commit_hash"] == base
    assert checkout["patchset_hash"] == patchset_hash(patches[:1])
    assert checkout["message_id"] == "cover.abc@example.org"
    assert checkout["patchset_files"] == [{"name": "0001.patch",
                                           "url": "https://lore.kernel.org/all/1.abc@example.org/raw"}]
    assert data["builds"][0]["status"] == "PASS"
    boot = next(t for t in data["tests"] if t["path"] == "boot")
    assert boot["status"] == "FAIL" and "Kernel panic" in boot["log_excerpt"]
    assert data2["builds"][0]["status"] == "FAIL"
    assert "expected ';'" in data2["builds"][0]["log_excerpt"]
    assert "tests" not in data2  # nothing ran on a kernel that did not build
    assert data2["checkouts"][0]["patchset_hash"] == patchset_hash(patches)


def test_bad_input_is_refused_naming_what():
    with pytest.raises(kcidb.KcidbError, match="origin 'Bad-Origin'"):
        kcidb.Export("Bad-Origin")
    with pytest.raises(kcidb.KcidbError, match="https://"):
        kcidb.Export(repository="git://example.org/linux.git")
    with pytest.raises(kcidb.KcidbError, match="refuses tests/0/status"):
        kcidb.validate({"version": {"major": 5, "minor": 3},
                        "tests": [{"id": "iowatch:x", "origin": "iowatch", "build_id": "iowatch:b",
                                   "status": "SLOW"}]})
    out = subprocess.run([IOWATCH, "export", "kcidb", "--check", "/nonexistent"],
                         capture_output=True, text=True)
    assert out.returncode == 2 and "/nonexistent/check.json: not a check's summary" in out.stderr
    out = subprocess.run([IOWATCH, "export", "kcidb", "--regression", "3"],
                         capture_output=True, text=True)
    assert out.returncode == 2 and "--regression needs --server" in out.stderr


def test_a_patch_that_did_not_apply_is_a_checkout_that_failed(tmp_path):
    """The e2e check as if patch 2 had not applied: its checkout is not valid,
    with git am's complaint, and nothing is built of it."""
    import shutil

    summary = json.loads((CHECK / "check.json").read_text())
    for n in (0, 1):
        shutil.copytree(CHECK / f"guest-{n:02d}", tmp_path / f"guest-{n:02d}")
    summary["variants"][2].update(status="apply-failed", bundle=None, commit="",
                                  reason="patch 2 does not apply to b7ba0a69b073:\n--- fs/ext4/file.c.rej")
    summary["regressing_patches"] = []
    (tmp_path / "check.json").write_text(json.dumps(summary))
    data = export("--check", str(tmp_path))
    failed = [c for c in data["checkouts"] if not c["valid"]]
    assert len(failed) == 1 and failed[0]["misc"]["patch_index"] == 2
    assert "does not apply" in failed[0]["log_excerpt"]
    assert failed[0]["id"] == "iowatch:e2e-slow-ext4-dio@c12fff06dffbe5058f9675864f0297d66f5f06cd+p1..p2"
    assert len(data["builds"]) == 2
    assert failed[0]["id"] not in {b["checkout_id"] for b in data["builds"]}
