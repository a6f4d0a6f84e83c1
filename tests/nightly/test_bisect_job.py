"""The bisect queue end to end against a live `iowatch serve` on PostgreSQL:
two nightly runs arrive (the e2e check's real guest bundles: Debian's base
kernel, then the kernel with the slow ext4 direct-write patch), the server
opens a nightly regression and queues its bisect, and `iowatch bisect --next`
claims it and replays a recorded range of 8 commits (the measurements are
the same real guest bundles; commit 3 did not build), uploading each step's
runs, posting each step and then the result. No kernel is built or booted."""
from __future__ import annotations

import json
import shutil
import sys
import uuid
from pathlib import Path

import pytest

from iowatch import bundle
from iowatch.ciapi import Client
from iowatch.inventory import load as load_inventory
from iowatch.nightly import NightlyOutcome, mark_nightly, render, report_and_wait, trigger

sys.path.insert(0, str(Path(__file__).parent.parent))
from live_server import (create_agent, free_port, get_json, iowatch_cli,  # noqa: E402
                         recorded_boots_as, running_server, scratch_database, wait_verdict)

pytestmark = pytest.mark.slow

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "e2e-check"
FAST, HARMLESS, SLOW = (FIXTURES / f"guest-0{i}" / "bundle" for i in (0, 1, 2))
FIRST_BAD, UNBUILT = 5, 3


def _recorded_range(tmp: Path, nights: dict[str, Path]) -> tuple[Path, Path, list[str]]:
    """variants.json of 8 commits after the good one and DIR/variant-NN bundles."""
    good = bundle.load(nights["good"])["kernel"]["git_commit"]
    bad = bundle.load(nights["bad"])["kernel"]["git_commit"]
    commits = [good] + [f"{i:x}" * 40 for i in range(1, 7)] + [bad]
    commits = [c[:40] for c in commits]
    rows = [{"index": i, "commit": c, "subject": f"commit {i}" if i else None,
             "status": "build-failed" if i == UNBUILT else "built",
             "error": "drivers/foo.c:1: error: on purpose" if i == UNBUILT else None}
            for i, c in enumerate(commits)]
    (tmp / "variants.json").write_text(json.dumps(rows))
    measured = tmp / "measured"
    for i in range(len(commits)):
        if i == UNBUILT:
            continue
        src = nights["good"] if i == 0 else nights["bad"] if i == len(commits) - 1 else \
            HARMLESS if i < FIRST_BAD else SLOW
        shutil.copytree(src, measured / f"variant-{i:02d}")
        if 0 < i < len(commits) - 1:  # a measurement of its own: a run id of its own
            doc = bundle.load(measured / f"variant-{i:02d}")
            doc["run_id"] = str(uuid.uuid4())
            bundle.write_manifest(measured / f"variant-{i:02d}", doc)
    return tmp / "variants.json", measured, commits


def test_a_nightly_regression_is_claimed_bisected_and_written_back(tmp_path):
    nights = {}
    for side, src, night in (("good", FAST, "2026-11-20"), ("bad", SLOW, "2026-11-21")):
        shutil.copytree(src, tmp_path / side)
        mark_nightly(tmp_path / side, {**trigger("for-next", "/src/linux"), "night": night})
        nights[side] = tmp_path / side
    run_ids = {side: bundle.load(p)["run_id"] for side, p in nights.items()}
    variants, measured, commits = _recorded_range(tmp_path, nights)

    with scratch_database() as env:
        token = create_agent(env, "bisect-agent", "agent1")
        with running_server(env) as (url, _):
            # The virtual lab's record of its noise between boots: the nights and
            # the replayed steps are one boot each (iowatch.judging.boots).
            for boot in recorded_boots_as(tmp_path):
                up = iowatch_cli("upload", str(boot), "--server", url, "--token", token,
                                 "--spool", str(tmp_path / "spool"))
                assert up.returncode == 0, up.stdout + up.stderr
            up = iowatch_cli("upload", str(nights["good"]), "--server", url, "--token", token,
                          "--spool", str(tmp_path / "spool"))
            assert up.returncode == 0, up.stdout + up.stderr
            wait_verdict(url, run_ids["good"])
            # Night 2 as `iowatch nightly` ends once its guest has run: upload, wait, read back.
            said = []
            night2 = report_and_wait(nights["bad"], bundle.load(nights["bad"])["trigger"],
                                     Client(url, token), load_inventory(None).host("vlab"),
                                     NightlyOutcome(commit="x"), 120, said.append)
            assert night2.exit_code == 1 and night2.verdict == "done"
            assert [(f.kind, f.bisect) for f in night2.findings] == [("nightly", "queued")]
            text = render(night2, "for-next")
            assert "1 regression(s) with this run on the bad side" in text
            assert "odirect-vs-readers vhdd ext4 [writer] write.bw_kib_s -33.3%" in text, text
            regs = get_json(f"{url}/api/v1/regressions?limit=100")["items"]
            nightly = [r for r in regs if r["kind"] == "nightly"]
            assert len(nightly) == 1, regs
            detail = get_json(f"{url}/api/v1/regressions/{nightly[0]['id']}")
            assert detail["bisect"]["state"] == "queued"
            assert detail["good"]["commit"] == commits[0] and detail["bad"]["commit"] == commits[-1]

            agent = iowatch_cli("bisect", "--next", "--server", url, "--token", token, "--host", "agent1",
                             "--variants", str(variants), "--bundles", str(measured),
                             "--out", str(tmp_path / "out"))
            assert agent.returncode == 0, agent.stdout + agent.stderr
            assert f"first bad commit {commits[FIRST_BAD]} commit {FIRST_BAD}" in agent.stdout

            job = get_json(f"{url}/api/v1/bisects/{detail['bisect']['id']}")
            assert job["state"] == "done" and job["agent_host"] == "agent1"
            result = job["result"]
            assert result["first_bad"]["commit"] == commits[FIRST_BAD]
            assert result["skipped"] == [commits[UNBUILT]] and result["candidates"] == []
            assert result["probability"] >= 0.95  # the culprit model's, kept with the result
            assert result["provenance"]["nightly"] == run_ids["bad"]
            assert result["provenance"]["good_runs"] == [run_ids["good"]]
            assert result["provenance"]["bad_runs"] == [run_ids["bad"]]
            steps = job["steps"]
            # The ends first, then the search: 3 did not build, its lower neighbour 2 is measured.
            assert [s["commit"] for s in steps] == [commits[i] for i in (0, 7, 3, 2, 4, 5)]
            assert [s["outcome"] for s in steps] == ["good", "bad", "skipped", "good", "good", "bad"]
            measured_steps = [s for s in steps[2:] if s["outcome"] != "skipped"]
            assert len(measured_steps) <= 4  # ceil(log2 8) + 1
            for s in steps:
                if s["outcome"] == "skipped":
                    assert s["run_ids"] == [] and s["median"] is None
                    continue
                assert s["unit"] == "KiB/s" and s["repetitions"] == 5 and s["median"] > 0
                for run_id in s["run_ids"]:  # every step's run is stored on the server
                    assert get_json(f"{url}/api/v1/runs/{run_id}")["run_id"] == run_id
            after = get_json(f"{url}/api/v1/regressions/{detail['id']}")
            assert after["bisect"]["state"] == "done" and after["state"] == "bisected"
            # The steps' runs are the bisect's evidence: stored, marked, and judged into
            # no regression of their own (their variants carry a series good..bad).
            for run_id in {r for s in steps[2:] for r in s["run_ids"]}:
                trig = get_json(f"{url}/api/v1/runs/{run_id}")["trigger"]
                assert trig == {"kind": "bisect", "regression": detail["id"],
                                "job": detail["bisect"]["id"]}, trig
            regs = get_json(f"{url}/api/v1/regressions?limit=100")["items"]
            assert [r["id"] for r in regs] == [detail["id"]], regs
            # The recorded measurements themselves are not written to: marked copies went up.
            assert not any(bundle.load(d).get("trigger") for d in measured.iterdir()
                           if d.name != f"variant-{len(commits) - 1:02d}" and d.name != "variant-00")

            again = iowatch_cli("bisect", "--next", "--server", url, "--token", token, "--host", "agent1")
            assert again.returncode == 0 and "no bisect job queued" in again.stdout
            # A host the token does not act for (the default is this machine's name): refused.
            other = iowatch_cli("bisect", "--next", "--server", url, "--token", token, "--host", "lab-z")
            assert other.returncode == 2 and "403 agent bisect-agent may not act for host lab-z" in other.stderr

            # By regression, once its job is done: the same search, printed, nothing posted.
            by_id = iowatch_cli("bisect", "--regression", str(detail["id"]), "--server", url,
                             "--token", token, "--variants", str(variants), "--bundles", str(measured),
                             "--out", str(tmp_path / "again"))
            assert by_id.returncode == 0, by_id.stdout + by_id.stderr
            assert "has no open bisect job" in by_id.stdout
            assert f"no bisect job (nothing posted): first bad commit {commits[FIRST_BAD]}" in by_id.stdout
            assert len(get_json(f"{url}/api/v1/bisects/{detail['bisect']['id']}")["steps"]) == len(steps)


def test_a_bisect_agent_without_a_server_says_which_url_did_not_answer():
    url = f"http://127.0.0.1:{free_port()}"
    gone = iowatch_cli("bisect", "--next", "--server", url, "--token", "t", timeout=120)
    assert gone.returncode == 2
    assert f"POST {url}/api/v1/bisects/claim: no answer" in gone.stderr
