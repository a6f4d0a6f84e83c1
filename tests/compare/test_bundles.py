"""iowatch compare on real bundles: two runs of the same kernel (A/A) made by
the runner on loop devices, compared as directories, by run id through a live
server, and by run id from this machine's store (the web app's compare command)."""
import json
import os
import shutil
import statistics
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from iowatch import bundle
from iowatch.metrics import METRICS

ROOT = Path(__file__).resolve().parents[2]
IOWATCH = str(Path(sys.executable).parent / "iowatch")
STUDY = ROOT / "jobs/studies/xfs-smallfile-writeback.yml"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(os.geteuid() != 0, reason="iowatch run needs root (losetup, mkfs, mount)"),
    pytest.mark.skipif(not shutil.which("fs_mark"), reason="fs_mark is not installed"),
]


def _run(*args, env=None, cwd=ROOT):
    return subprocess.run([IOWATCH, *map(str, args)], capture_output=True, text=True,
                          timeout=600, env=env, cwd=cwd)


@pytest.fixture(scope="module")
def two_bundles(tmp_path_factory):
    """Two runs of the quick xfs small-file study, 3 repetitions each."""
    tmp = tmp_path_factory.mktemp("aa")
    env = {**os.environ, "IOWATCH_DATA_DIR": str(tmp / "data")}
    outs = []
    try:
        for side in ("a", "b"):
            out = tmp / side
            r = _run("run", STUDY, "--profile", "quick", "--target", "localhost", "--inventory",
                     ROOT / "hardware-inventory.yml", "--reps", 3, "--out", out, "--no-progress", env=env)
            assert r.returncode == 0, r.stdout + r.stderr
            outs.append(out)
        yield outs
    finally:
        subprocess.run([IOWATCH, "device", "detach", "localhost", "--inventory",
                        str(ROOT / "hardware-inventory.yml")], env=env, capture_output=True)


def _group_values(doc: dict, group: str, metric: str) -> list[float]:
    return [s["value"] for c in doc["cells"] for r in c["repetitions"] for s in r["samples"]
            if s["group"] == group and s["metric"] == metric and s.get("job") is None]


def test_aa_of_two_bundle_dirs_reports_the_bundles_numbers(two_bundles):
    a, b = two_bundles
    r = _run("compare", a, b, "--format", "json")
    assert r.returncode in (0, 1, 3), r.stderr
    doc = json.loads(r.stdout)
    # The exit status is the state's (iowatch.exit_status): 3 while a deciding cell is undecided.
    assert r.returncode == {"regression": 1, "suspected": 3, "unsure": 3}.get(doc["state"], 0)
    docs = bundle.load(a), bundle.load(b)
    # The study's deciding metrics judge; its other metrics are diagnostics.
    # A loop device has no member disks, so the members' counters that also decide are absent.
    assert {c["metric"] for c in doc["cells"]} == {"fsmark.files_per_s", "wall_s"}
    assert {"cpu.sys_s", "device.write_bw_kib_s"} <= {c["metric"] for c in doc["diagnostics"]}
    for cell in doc["cells"] + doc["diagnostics"]:
        assert (cell["study"], cell["device_class"], cell["filesystem"]) == \
            ("xfs-smallfile-writeback", "ssd-raid0", "xfs")
        for side, d in zip(("base", "candidate"), docs):
            values = _group_values(d, cell["group"], cell["metric"])
            assert cell[side]["n"] == len(values) == 3
            assert cell[side]["mean"] == pytest.approx(statistics.mean(values))
            assert cell[side]["sd"] == pytest.approx(statistics.stdev(values))
        assert cell["outcome"] in ("regression", "suspected", "improvement", "no-change", "inconclusive")
    # Every deciding cell states its minimum detectable effect at its repetitions.
    assert all(isinstance(c["mde_pct"], float) and c["mde_pct"] >= 0 for c in doc["cells"])
    # A deciding metric is judged in the metric table's direction (the study's xfs
    # small-file question: the same work in fewer device I/Os is better). An A/A
    # outcome itself is chance, under load even drift between the two runs, so it
    # is not asserted.
    for cell in doc["cells"]:
        assert cell["direction"] == METRICS[cell["metric"]].direction != "info", cell["metric"]
    # Same host, same kernel, same tools: nothing to confound.
    assert all("mount_options" not in c["name"] for c in doc["confounders"])


def test_text_and_junit_reports_of_real_bundles(two_bundles):
    a, b = two_bundles
    r = _run("compare", a, b)
    assert r.returncode in (0, 1, 3), r.stderr
    doc = bundle.load(b)
    for text in (doc["kernel"]["release"], "device class ssd-raid0", "loop device over an image file",
                 "mkfs -f -q; mount noatime", "profile quick", "fsmark fsmark.files_per_s",
                 "reproduce:", "--reps 3", "minimum detectable effect at 3 vs 3 runs"):
        assert text in r.stdout, text
    r = _run("compare", a, b, "--format", "junit")
    root = ET.fromstring(r.stdout)
    # The study's deciding metrics a loop device has (no member disks): files/s and wall
    # time; and the platform's canary, which every boot now runs (issue 41 item 7).
    cases = root.findall("./testsuite/testcase")
    assert sorted(c.get("name") for c in cases) == ["canaries", "fsmark fsmark.files_per_s",
                                                     "fsmark wall_s"]


def test_compare_by_run_id_through_a_live_server_and_the_local_store(two_bundles):
    from live_server import create_agent, running_server, scratch_database

    a, b = two_bundles
    ids = [bundle.load(d)["run_id"] for d in (a, b)]
    from_dirs = json.loads(_run("compare", a, b, "--format", "json").stdout)
    with scratch_database() as env:
        token = create_agent(env, "aa-test")
        with running_server(env) as (url, _):
            up = _run("upload", a, b, "--server", url, "--token", token, env=env)
            assert up.returncode == 0, up.stdout + up.stderr
            r = _run("compare", *ids, "--server", url, "--format", "json", env=env)
            assert r.returncode in (0, 1, 3), r.stderr
            via_api = json.loads(r.stdout)
            missing = _run("compare", ids[0], "no-such-kernel", "--server", url, env=env)
        local = _run("compare", *ids, "--format", "json", env=env)
        assert local.returncode in (0, 1, 3), local.stderr
        via_store = json.loads(local.stdout)
    for got in (via_api, via_store):
        assert got["base"]["runs"] == [ids[0]] and got["candidate"]["runs"] == [ids[1]]
        strip = lambda d: [{k: v for k, v in c.items() if k != "host"} for c in d["cells"]]  # noqa: E731
        assert strip(got) == strip(from_dirs)
    assert missing.returncode == 2 and "candidate 'no-such-kernel'" in missing.stderr
