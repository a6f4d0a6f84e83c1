"""`iowatch agent` against a live `iowatch serve` on PostgreSQL, with the fake
boot (iowatch.agent.hosts.RecordedHost: the e2e check's real guest bundles,
relabelled as two bare-metal lab hosts with a disk each, stand in for booting
a commit and running its cells there).

Two nightlies on lab-a (Debian's base, then the slow ext4 direct-write patch)
open a nightly regression: the server queues its bisect and a confirmation
on lab-b, the other host with an hdd. lab-a's agent bisects a recorded range
of 8 commits in which commit 3 panics at boot (a boot-failed step, skipped);
lab-b's agent boots the good and the bad kernel ABAB and hands the runs back,
and the server judges them: confirmed on 2 of 2 hosts, or only on lab-a when
lab-b's bad kernel runs as fast as its good one. The mail waits for it."""
from __future__ import annotations

import json
import re
import shutil
import time
import subprocess
import sys
import urllib.error
import urllib.request
import uuid
from pathlib import Path

import pytest

from iowatch import bundle
from iowatch.nightly import mark_nightly, trigger

sys.path.insert(0, str(Path(__file__).parent.parent))
from live_server import (create_agent, get_json, iowatch_cli, manage, recorded_boots_as,  # noqa: E402
                         running_server,
                         scratch_database, wait_verdict)

pytestmark = pytest.mark.slow

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "e2e-check"
FAST, HARMLESS, SLOW = (FIXTURES / f"guest-0{i}" / "bundle" for i in (0, 1, 2))
FIRST_BAD, PANICS = 5, 3

INVENTORY = """\
all:
  children:
    lab:
      hosts:
        lab-a:
          ansible_host: 192.0.2.1
          iowatch_kind: bare-metal
          iowatch_devices:
            - {name: vhdd, class: hdd, path: /dev/disk/by-id/ata-disk-a, rotational: true, filesystems: [ext4]}
        lab-b:
          ansible_host: 192.0.2.2
          iowatch_kind: bare-metal
          iowatch_devices:
            - {name: vhdd, class: hdd, path: /dev/disk/by-id/ata-disk-b, rotational: true, filesystems: [ext4]}
    lab_agents: {hosts: {lab-a: {}, lab-b: {}}}
"""


def _as_host(src: Path, dst: Path, host: str, *, fresh_id: bool = True) -> Path:
    """A copy of a recorded bundle as if lab host `host` had run it."""
    shutil.copytree(src, dst)
    doc = bundle.load(dst)
    doc["host"] = {"name": host, "kind": "bare-metal"}
    if fresh_id:
        doc["run_id"] = str(uuid.uuid4())
    bundle.write_manifest(dst, doc)
    return dst


def _upload(url: str, token: str, path: Path, spool: Path) -> str:
    up = iowatch_cli("upload", str(path), "--server", url, "--token", token, "--spool", str(spool))
    assert up.returncode == 0, up.stdout + up.stderr
    run_id = bundle.load(path)["run_id"]
    wait_verdict(url, run_id)
    return run_id


def _lab(tmp: Path, confirm_slow: bool) -> dict:
    """Nights, the recorded range, and each host's recorded runs per commit."""
    nights = {}
    for side, src, night in (("good", FAST, "2026-11-20"), ("bad", SLOW, "2026-11-21")):
        nights[side] = _as_host(src, tmp / f"night-{side}", "lab-a")
        mark_nightly(nights[side], {**trigger("for-next", "/src/linux"), "night": night})
    good = bundle.load(nights["good"])["kernel"]["git_commit"]
    bad = bundle.load(nights["bad"])["kernel"]["git_commit"]
    commits = [good] + [f"{i:x}" * 40 for i in range(1, 7)] + [bad]
    rows = [{"index": i, "commit": c[:40], "subject": f"commit {i}" if i else None, "status": "built",
             "artifacts": str(tmp / "artifacts" / f"{i:02d}")} for i, c in enumerate(commits)]
    (tmp / "variants.json").write_text(json.dumps(rows))
    replay = {"lab-a": tmp / "replay-a", "lab-b": tmp / "replay-b"}
    for i, c in enumerate(commits):
        src = FAST if i == 0 else HARMLESS if i < FIRST_BAD else SLOW
        _as_host(src, replay["lab-a"] / c[:40] / "r1", "lab-a")
    (replay["lab-a"] / f"{commits[PANICS][:40]}.boot-failed").write_text(
        "Kernel panic - not syncing: iowatch: on purpose; back on the default kernel")
    for name, src in (("r1", FAST), ("r2", FAST)):
        _as_host(src, replay["lab-b"] / good / name, "lab-b")
    for name in ("r1", "r2"):
        _as_host(SLOW if confirm_slow else FAST, replay["lab-b"] / bad / name, "lab-b")
    # lab-b is known to the server (its disk a device of class hdd) before the regression.
    known = _as_host(FAST, tmp / "lab-b-earlier", "lab-b")
    return {"nights": nights, "commits": commits, "replay": replay, "lab_b": known}


def _agent(url: str, token: str, tmp: Path, host: str, replay: Path) -> subprocess.CompletedProcess:
    (tmp / "inventory.yml").write_text(INVENTORY)
    return iowatch_cli("agent", "--host", host, "--server", url, "--token", token, "--once",
                    "--inventory", str(tmp / "inventory.yml"), "--replay", str(replay),
                    "--variants", str(tmp / "variants.json"), "--out", str(tmp / f"agent-{host}"))


def _report(url: str, regression: int) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"{url}/api/v1/regressions/{regression}/report?format=email") as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def _open_regression(tmp: Path, url: str, token: str, lab: dict) -> dict:
    spool = tmp / "spool"
    for boot in recorded_boots_as(tmp, "lab-a"):  # lab-a's record of its noise between boots
        _upload(url, token, boot, spool)
    _upload(url, token, lab["lab_b"], spool)
    _upload(url, token, lab["nights"]["good"], spool)
    _upload(url, token, lab["nights"]["bad"], spool)
    regs = [r for r in get_json(f"{url}/api/v1/regressions?limit=100")["items"] if r["kind"] == "nightly"]
    assert len(regs) == 1, regs
    return get_json(f"{url}/api/v1/regressions/{regs[0]['id']}")


def test_the_agent_bisects_on_its_host_and_a_second_host_confirms(tmp_path):
    lab = _lab(tmp_path, confirm_slow=True)
    commits = lab["commits"]
    with scratch_database() as env:
        token = create_agent(env, "lab-agents", "lab-a", "lab-b", "lab-c")
        with running_server(env) as (url, _):
            detail = _open_regression(tmp_path, url, token, lab)
            assert detail["bisect"]["state"] == "queued"
            conf = detail["confirmation"]
            assert conf["state"] == "pending" and conf["words"] == "awaiting confirmation on lab-b (queued)"
            assert [(j["host"], j["device_class"], j["state"]) for j in conf["jobs"]] == [("lab-b", "hdd", "queued")]
            status, said = _report(url, detail["id"])
            assert status == 409 and "the mail goes out after it" in said, said

            a = _agent(url, token, tmp_path, "lab-a", lab["replay"]["lab-a"])
            assert a.returncode == 0, a.stdout + a.stderr
            assert f"first bad {commits[FIRST_BAD][:12]} commit {FIRST_BAD}" in a.stdout, a.stdout
            assert f"{commits[PANICS][:12]}  base+p1..p{PANICS}" in a.stdout  # the boots' table
            job = get_json(f"{url}/api/v1/bisects/{detail['bisect']['id']}")
            assert job["state"] == "done" and job["agent_host"] == "lab-a"
            assert job["result"]["first_bad"]["commit"] == commits[FIRST_BAD]
            # The commit that panicked is a skipped step, and the search went around it.
            outcomes = {s["commit"]: s["outcome"] for s in job["steps"]}
            assert outcomes[commits[PANICS]] == "skipped"
            assert outcomes[commits[FIRST_BAD]] == "bad" and outcomes[commits[FIRST_BAD - 1]] == "good"
            assert job["result"]["skipped"] == [commits[PANICS]]
            # ... recorded by the server as a boot-failed run of that commit, with the reason.
            (panicked,) = [s for s in job["steps"] if s["commit"] == commits[PANICS]]
            (failed_run,) = panicked["run_ids"]
            run = get_json(f"{url}/api/v1/runs/{failed_run}")
            assert run["status"] == "boot-failed" and run["trigger"]["kind"] == "bisect"
            assert "Kernel panic - not syncing" in json.dumps(run)
            for s in job["steps"]:
                for run_id in s["run_ids"]:
                    assert get_json(f"{url}/api/v1/runs/{run_id}")["trigger"]["kind"] == "bisect"

            b = _agent(url, token, tmp_path, "lab-b", lab["replay"]["lab-b"])
            assert b.returncode == 0, b.stdout + b.stderr
            assert "confirmation #" in b.stdout and ": done, confirmed" in b.stdout, b.stdout
            after = get_json(f"{url}/api/v1/regressions/{detail['id']}")["confirmation"]
            assert after["state"] == "confirmed"
            assert after["words"] == "confirmed on 2 of 2 hosts (lab-a, lab-b)"
            (job_b,) = after["jobs"]
            assert len(job_b["good_runs"]) == len(job_b["bad_runs"]) == 2
            # ABAB: the runs went up good, bad, good, bad, each marked with its side.
            sides = [get_json(f"{url}/api/v1/runs/{r}")["trigger"] for r in
                     (job_b["good_runs"][0], job_b["bad_runs"][0])]
            assert [t["side"] for t in sides] == ["good", "bad"] and sides[0]["kind"] == "confirm"
            (row,) = [r for r in job_b["verdicts"] if r["metric"] == "write.bw_kib_s"]
            assert row["outcome"] == "regression" and row["change_pct"] < -20
            assert row["base_n"] == row["candidate_n"] == 10
            # Confirmation runs open nothing of their own.
            assert len(get_json(f"{url}/api/v1/regressions?limit=100")["items"]) == 1
            status, mail = _report(url, detail["id"])
            assert status == 200, mail
            assert "second host: confirmed on 2 of 2 hosts (lab-a, lab-b)" in mail


def test_a_regression_lab_b_does_not_show_is_only_on_lab_a(tmp_path):
    lab = _lab(tmp_path, confirm_slow=False)
    with scratch_database() as env:
        token = create_agent(env, "lab-agents", "lab-a", "lab-b", "lab-c")
        with running_server(env) as (url, _):
            detail = _open_regression(tmp_path, url, token, lab)
            b = _agent(url, token, tmp_path, "lab-b", lab["replay"]["lab-b"])
            assert b.returncode == 0, b.stdout + b.stderr
            after = get_json(f"{url}/api/v1/regressions/{detail['id']}")["confirmation"]
            assert after["state"] == "only-here", after
            assert after["words"].startswith("only on lab-a: not reproduced on lab-b: ")
            status, mail = _report(url, detail["id"])
            assert status == 200 and "second host: only on lab-a" in mail


def _post(url: str, path: str, token: str, body: dict) -> tuple[int, dict]:
    req = urllib.request.Request(f"{url}/api/v1/{path}", data=json.dumps(body).encode(), method="POST",
                                 headers={"Authorization": f"Bearer {token}",
                                          "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            raw = r.read()
            return r.status, json.loads(raw) if raw.strip() else {}
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


def test_a_job_whose_host_went_silent_is_given_back_and_worked_again(tmp_path):
    """lab-a's first agent claims the bisect, beats once and dies; past the
    heartbeat timeout the host reads unreachable, the next claim puts the job
    back on the queue, the dead agent's late step is refused, and lab-a's new
    agent works the job to its end. A restarted agent that still beats (its
    claim says it holds nothing) gets its host's job back at once."""
    lab = _lab(tmp_path, confirm_slow=True)
    commits = lab["commits"]
    with scratch_database() as env:
        env["IOWATCH_HEARTBEAT_TIMEOUT_S"] = "3"
        token = create_agent(env, "lab-agents", "lab-a", "lab-b", "lab-c")
        with running_server(env) as (url, _):
            detail = _open_regression(tmp_path, url, token, lab)
            job_id = detail["bisect"]["id"]
            status, claimed = _post(url, "bisects/claim", token, {"host": "lab-a"})
            assert status == 200 and claimed["id"] == job_id
            beat = {"phase": "running", "cell": "odirect-vs-readers/vhdd/ext4",
                    "job": {"kind": "bisect", "id": job_id}, "commit": commits[0], "detail": "base"}
            assert _post(url, "hosts/lab-a/heartbeat", token, beat)[0] == 200
            assert get_json(f"{url}/api/v1/hosts/lab-a")["reachable"] is True
            time.sleep(4)
            host = get_json(f"{url}/api/v1/hosts/lab-a")
            assert host["reachable"] is False and host["unreachable_since"], host
            # Any claim sweeps first: the silent host's job is queued again.
            assert _post(url, "bisects/claim", token, {"host": "lab-c", "device_classes": ["sdcard"]})[0] == 204
            assert get_json(f"{url}/api/v1/bisects/{job_id}")["state"] == "queued"
            late = {"commit": commits[0], "outcome": "good", "host": "lab-a"}
            status, said = _post(url, f"bisects/{job_id}/steps", token, late)
            assert status == 409 and "given back" in said["error"], said

            a = _agent(url, token, tmp_path, "lab-a", lab["replay"]["lab-a"])
            assert a.returncode == 0, a.stdout + a.stderr
            job = get_json(f"{url}/api/v1/bisects/{job_id}")
            assert job["state"] == "done" and job["result"]["first_bad"]["commit"] == commits[FIRST_BAD]
            # The agent beat its phases while it worked; it ends idle.
            states = get_json(f"{url}/api/v1/hosts/lab-a")
            assert states["phase"] == "idle" and states["reachable"] is True

            # A restarted agent that beats on: its claim (holds_none) frees the confirmation
            # its host held, which it then works itself.
            conf_id = detail["confirmation"]["jobs"][0]["id"]
            assert _post(url, "confirmations/claim", token, {"host": "lab-b"})[1]["id"] == conf_id
            assert _post(url, "hosts/lab-b/heartbeat", token, {"phase": "running"})[0] == 200
            b = _agent(url, token, tmp_path, "lab-b", lab["replay"]["lab-b"])
            assert b.returncode == 0, b.stdout + b.stderr
            assert get_json(f"{url}/api/v1/confirmations/{conf_id}")["outcome"] == "confirmed"


def test_a_bisect_cancelled_by_an_admin_stops_at_the_agents_next_post(tmp_path):
    """Issue 42: an admin cancels lab-a's bisect while the host boots its first
    commit; the agent's next step gets 409 cancelled, it stops the job (no more
    boots, no result), puts the host back on its default kernel and goes on."""
    from iowatch.agent.bisect import recorded_range
    from iowatch.agent.hosts import RecordedHost
    from iowatch.agent.loop import Agent, Builds
    from iowatch.ciapi import Client

    lab = _lab(tmp_path, confirm_slow=True)
    (tmp_path / "inventory.yml").write_text(INVENTORY)
    with scratch_database() as env:
        token = create_agent(env, "lab-agents", "lab-a")
        with running_server(env) as (url, _):
            detail = _open_regression(tmp_path, url, token, lab)
            job_id = detail["bisect"]["id"]

            class CancelledWhileBooting(RecordedHost):
                def boot(self, artifacts, commit):
                    if not self.boots:
                        manage(env, "cancel_job", "bisect", str(job_id), "--reason", "triaged invalid")
                    return super().boot(artifacts, commit)

            host = CancelledWhileBooting("lab-a", lab["replay"]["lab-a"])
            plan_for, built = recorded_range(tmp_path / "variants.json")
            said = []
            agent = Agent(Client(url, token, host="lab-a"), host, Builds(plan_for, built), tmp_path / "out",
                          device_classes=("hdd",), devices={"hdd": ["vhdd"]}, say=said.append)
            line = agent.turn()
            assert line.startswith(f"bisect #{job_id} ") and ": cancelled (" in line, line
            assert "triaged invalid" in line and "409" in line, line
            # It stopped at its first post (after the ends' first boots), not at the range's end,
            # and put the host back on its default kernel once.
            commits = [b for b in host.boots if b != "default"]
            assert 1 <= len(commits) < len(lab["commits"]) and host.boots[-1] == "default", host.boots
            assert host.boots.count("default") == 1
            job = get_json(f"{url}/api/v1/bisects/{job_id}")
            assert job["state"] == "cancelled" and job["steps"] == [] and job["result"] is None
            assert "triaged invalid" in job["error"]
            # Nothing else queued: the next turn is idle, not an error.
            assert agent.turn() == "idle"


BOOTS = Path(__file__).resolve().parents[1] / "fixtures" / "e2e-boots"


def test_the_agents_nightly_boots_the_head_n_times_and_the_first_nights_boots_are_the_record(tmp_path):
    """`iowatch agent --nightly --boots N` boots the night's head N times, each
    boot a run of that night, as the virtual lab's nightly and the lab's
    nightly pipeline do. A lab host's first night booted four times is the
    host's record of its noise between boots (3 degrees of freedom, what
    iowatch.judging.boots needs), so the next night's one boot is judged with
    it and the slow ext4 direct-write patch opens a regression. The replayed
    boots are real guest boots of the base and of that patch, one kernel
    configuration (tests/fixtures/e2e-boots). Before, the agent booted a night's
    head once, whatever the pipeline asked: against one boot of the base the
    patch was "undecided" (exit 3), as scripts/lava/nightly.sh met on a LAVA
    board."""
    good, bad = "a" * 40, "b" * 40
    rows = [{"index": i, "commit": c, "subject": f"commit {i}" if i else None, "status": "built",
             "artifacts": str(tmp_path / "artifacts" / f"{i:02d}")} for i, c in enumerate((good, bad))]
    (tmp_path / "variants.json").write_text(json.dumps(rows))
    replay = tmp_path / "replay"
    recorded = {good: [BOOTS / "check-cold" / "guest-00", BOOTS / "check-warm" / "guest-00",
                       BOOTS / "aabb" / "boot-1-v0", BOOTS / "aabb" / "boot-4-v0"],
                bad: [BOOTS / "check-warm" / "guest-02"]}
    for commit, boots in recorded.items():
        for k, src in enumerate(boots, 1):
            dst = _as_host(src / "bundle", replay / commit / f"r{k}", "lab-a")
            doc = bundle.load(dst)
            doc["kernel"]["git_commit"] = commit
            bundle.write_manifest(dst, doc)
    (tmp_path / "inventory.yml").write_text(INVENTORY)

    def night(ref: str, date: str, boots: int) -> subprocess.CompletedProcess:
        return iowatch_cli("agent", "--host", "lab-a", "--server", url, "--token", token,
                           "--inventory", str(tmp_path / "inventory.yml"), "--replay", str(replay),
                           "--variants", str(tmp_path / "variants.json"), "--out",
                           str(tmp_path / f"agent-{date}"), "--matrix", "e2e",
                           "--nightly", ref, "--branch", "for-next", "--night", date,
                           "--boots", str(boots))

    with scratch_database() as env:
        token = create_agent(env, "lab-agents", "lab-a")
        with running_server(env) as (url, _):
            first = night(good, "2026-11-20", 4)
            assert first.returncode == 0, first.stdout + first.stderr
            said = re.findall(r"boot (\d) of 4 of aaaaaaaaaaaa uploaded as run ([0-9a-f-]{36})", first.stdout)
            assert [k for k, _ in said] == ["1", "2", "3"], first.stdout
            assert "agent: lab-a: 4 boot(s)" in first.stdout
            # Each boot is a run of the night on the server.
            nights = [get_json(f"{url}/api/v1/runs/{r}")["trigger"] for _, r in said]
            assert [(t["kind"], t["night"]) for t in nights] == [("nightly", "2026-11-20")] * 3
            second = night(bad, "2026-11-21", 1)
            assert second.returncode == 1, second.stdout + second.stderr
            assert "1 regression(s) with this run on the bad side" in second.stdout, second.stdout
            (reg,) = [r for r in get_json(f"{url}/api/v1/regressions?limit=100")["items"] if r["kind"] == "nightly"]
            detail = get_json(f"{url}/api/v1/regressions/{reg['id']}")
            assert detail["bad"]["commit"] == bad and len(detail["bad"]["runs"]) == 1, detail["bad"]
            assert len(detail["good"]["runs"]) == 4, detail["good"]
            assert any(c["metric"] == "write.bw_kib_s" and c["change_pct"] < -20 for c in detail["cells"])
