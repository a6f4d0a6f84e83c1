"""A LAVA board class as the agent's lab host: one LAVA job boots and runs, the
bundle comes back on the board's console in LAVA's log and the agent uploads
it as from any host; a variant that never reached the test is a boot failure."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from iowatch import bundle, inventory
from iowatch.agent.hosts import RunRequest
from iowatch.agent.loop import Agent, Builds
from iowatch.cli import main
from iowatch.lava import definition, follow
from iowatch.lava.client import LavaClient
from iowatch.lava.host import LavaHost, publish_kernel
from recorded_lava import FIXTURES, RecordedLava

REPO = Path(__file__).resolve().parents[2]
BUNDLE = REPO / "tests/fixtures/e2e-check/guest-00/bundle"
API = "/api/v0.2/"
COMMIT = "a" * 40


def console_lines(directory: Path) -> list[str]:
    """What the job's last step prints for `directory`: the step's own shell line, run."""
    m = definition.Measurement("jobs/smoke.yml", COMMIT, "good", server=None)
    host = inventory.load(REPO / "hardware-inventory.yml").host("lava-qemu")
    (step,) = [s for s in definition.make(host, m)["actions"][-1]["test"]["definitions"][0]
               ["repository"]["run"]["steps"] if definition.BUNDLE_LINE in s]
    step = step.replace(definition.BOARD_BUNDLE, str(directory))
    return subprocess.run(["sh", "-c", step], capture_output=True, text=True, check=True).stdout.splitlines()


def log_with_bundle(tmp_path: Path) -> str:
    """The recorded log of job 4211 with the board's console printing a bundle."""
    entries = yaml.safe_load((FIXTURES / "logs-4211.yaml").read_text())
    printed = [{"dt": "2023-01-12T10:09:40.0", "lvl": "target", "msg": line} for line in console_lines(BUNDLE)]
    entries[4:4] = [{"dt": "2023-01-12T10:09:39.9", "lvl": "target", "msg": "[  612.1] random: crng init"}]
    entries[5:5] = printed
    return "".join(f"- {json.dumps(e)}\n" for e in entries)


def test_the_bundle_printed_on_the_console_comes_back_whole(tmp_path):
    lines = console_lines(BUNDLE)
    assert len(lines) > 10 and all(line.startswith(definition.BUNDLE_LINE) for line in lines)
    logs = [{"lvl": "target", "msg": line + "\r"} for line in lines]
    out = follow.bundle_from(logs, tmp_path / "back")
    assert bundle.load(out) == bundle.load(BUNDLE)
    assert sorted(p.relative_to(out) for p in out.rglob("*")) == sorted(p.relative_to(BUNDLE) for p in BUNDLE.rglob("*"))
    assert follow.bundle_from([{"lvl": "target", "msg": "no bundle here"}], tmp_path / "none") is None


@pytest.fixture
def lava_host(tmp_path, monkeypatch):
    kernels = tmp_path / "kernels"
    text = (REPO / "hardware-inventory.yml").read_text().replace(
        "file:///var/lib/iowatch/lava/kernels/", f"file://{kernels}/")
    host = inventory.loads(text, "inv.yml").host("lava-qemu")
    artifacts = tmp_path / "build"
    artifacts.mkdir()
    (artifacts / "bzImage").write_bytes(b"kernel image")
    return host, artifacts, kernels


def test_the_agent_boots_and_runs_a_variant_as_one_lava_job(tmp_path, lava_host):
    host, artifacts, kernels = lava_host
    with RecordedLava() as lava:
        lava.submits(4211)
        lava.finished_job(4211, "job-4211-complete.json", tests=("tests-4211-page1.json", "tests-4211-page2.json"),
                          logs=log_with_bundle(tmp_path))
        lab = LavaHost(host, LavaClient(lava.url, "t"), poll_s=0, sleep=lambda s: None, say=lambda s: None)
        said = []
        agent = Agent(client=None, host=lab, builds=Builds(None, None), out=tmp_path, say=said.append)
        variant = SimpleNamespace(commit=COMMIT, artifacts=str(artifacts))
        booted, path = agent.boot_and_run(variant, RunRequest("jobs/smoke.yml", COMMIT, "good", cells=["x/lsd/f2fs"]),
                                          tmp_path / "run")
        sent = yaml.safe_load(json.loads(lava.requests[0]["body"])["definition"])
    assert booted.state == "booted" and "LAVA job 4211 on qemu-01" in booted.detail
    doc = bundle.load(path)
    assert doc["run_id"] == bundle.load(BUNDLE)["run_id"]
    # the stored run links its LAVA job and log
    assert doc["environment"]["lava"] == {
        "job": 4211, "board": "qemu-01", "device_type": "qemu", "job_url": f"{lava.url}scheduler/job/4211",
        "log_url": f"{lava.url}{API.lstrip('/')}jobs/4211/logs/",
        "attempts": [{"job": 4211, "board": "qemu-01", "health": "Complete"}]}
    bundle.validate(doc)
    # the kernel was put where the boards fetch it, and the job fetches it from there
    assert (kernels / COMMIT / "bzImage").read_bytes() == b"kernel image"
    assert sent["actions"][0]["deploy"]["images"]["kernel"]["url"] == f"file://{kernels}/{COMMIT}/bzImage"
    # the board does not upload: no token travels, the agent uploads with the job in the trigger
    assert "secrets" not in sent and agent.log == [{"commit": COMMIT, "label": "good", "boot": "booted",
                                                     "boot_s": agent.log[0]["boot_s"]}]


def test_a_variant_that_never_reaches_the_test_is_a_boot_failure(tmp_path, lava_host):
    host, artifacts, _ = lava_host
    with RecordedLava() as lava:
        lava.submits(4213)
        lava.finished_job(4213, "job-4213-incomplete.json", tests=("tests-4213.json",))
        lab = LavaHost(host, LavaClient(lava.url, "t"), poll_s=0, sleep=lambda s: None, say=lambda s: None)
        booted, path = lab.boot_and_run(artifacts, COMMIT, RunRequest("jobs/smoke.yml", COMMIT, "bad"), tmp_path)
    assert (booted.state, path) == ("boot-failed", None)
    assert "auto-login-action timed out" in booted.detail and "/api/v0.2/jobs/4213/logs/" in booted.detail


def test_a_missing_kernel_is_not_published(tmp_path, lava_host):
    host, _, _ = lava_host
    from iowatch.agent.hosts import LabHostError
    with pytest.raises(LabHostError, match="no kernel .*/bzImage to publish for aaaaaaaaaaaa"):
        publish_kernel(host.lava, tmp_path / "nothing", COMMIT)


def test_iowatch_lava_submit_dry_run_prints_the_checked_definition(capsys):
    assert main(["lava", "submit", "lava-qemu", "jobs/smoke.yml", "--commit", COMMIT, "--inventory",
                 str(REPO / "hardware-inventory.yml"), "--server", "http://s/", "--token", "secret-t",
                 "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert yaml.safe_load(out)["device_type"] == "qemu" and "secret-t" not in out


def test_iowatch_lava_refuses_a_host_that_is_not_a_board_class_and_a_missing_token(capsys, monkeypatch):
    inv = str(REPO / "hardware-inventory.yml")
    assert main(["lava", "boards", "vlab", "--inventory", inv]) == 2
    assert "host 'vlab' is qemu, not a board class of a LAVA lab" in capsys.readouterr().err
    assert main(["lava", "submit", "lava-qemu", "jobs/smoke.yml", "--commit", COMMIT, "--inventory", inv,
                 "--server", "http://s/", "--token", "", "--dry-run"]) == 2
    assert "give the agent token" in capsys.readouterr().err
    monkeypatch.delenv("IOWATCH_LAVA_TOKEN", raising=False)
    assert main(["lava", "follow", "lava-qemu", "4211", "--inventory", inv]) == 2
    assert "export IOWATCH_LAVA_TOKEN=" in capsys.readouterr().err


def test_the_lab_agent_pipeline_works_lava_board_classes_with_the_same_command(tmp_path, capsys):
    text = (REPO / "jobs/pipelines/lab-agent.Jenkinsfile").read_text()
    assert "--group lab_agents --group lava_boards" in text
    assert "credentialsId: 'iowatch-lava-token', variable: 'IOWATCH_LAVA_TOKEN'" in text
    assert text.count("iowatch agent --host") == 1
    inv = tmp_path / "inv.yml"
    inv.write_text((REPO / "hardware-inventory.yml").read_text().replace(
        "    lava_boards:\n      hosts: {}", "    lava_boards:\n      hosts: {lava-qemu: {}}"))
    assert inventory.main(["--inventory", str(inv), "--group", "lab_agents", "--group", "lava_boards"]) == 0
    assert capsys.readouterr().out == "lava-qemu\n"


def test_iowatch_lava_follow_and_boards_read_the_lab_of_the_inventory(tmp_path, monkeypatch, capsys):
    with RecordedLava() as lava:
        inv = tmp_path / "inv.yml"
        inv.write_text((REPO / "hardware-inventory.yml").read_text().replace("http://127.0.0.1:8010/", lava.url))
        monkeypatch.setenv("IOWATCH_LAVA_TOKEN", "lava-token")
        lava.finished_job(4213, "job-4213-incomplete.json", tests=("tests-4213.json",))
        lava.answer("GET", API + "devices/?device_type=qemu", "devices-qemu.json")
        assert main(["lava", "follow", "lava-qemu", "4213", "--inventory", str(inv), "--poll", "0"]) == 1
        assert "job 4213 on qemu-01: boot-failed: the job ended Incomplete before iowatch ran" in capsys.readouterr().out
        assert main(["lava", "boards", "lava-qemu", "--inventory", str(inv)]) == 0
        assert "qemu-03                  bad health  (LAVA: Idle, health Bad" in capsys.readouterr().out
        assert {r["authorization"] for r in lava.requests} == {"Token lava-token"}


def test_the_bundle_comes_back_from_a_real_lava_run_log(tmp_path):
    """lava-run's own log of a measured job (fixtures/README.md): the bundle the
    board printed, with the run id iowatch run said, and LAVA's result lines."""
    logs = [yaml.safe_load(line) for line in (FIXTURES / "lava-run-qemu-measure.log").read_text().splitlines()
            if line.startswith("{")]
    doc = bundle.load(follow.bundle_from(logs, tmp_path / "back"))
    assert (doc["status"], doc["host"]["name"], doc["run_id"]) == ("passed", "lava-qemu", follow.run_id_from(logs))
    assert {d["name"]: d["path"] for d in doc["devices"]} == {"lssd": "/dev/vdb", "lhdd": "/dev/sda",
                                                              "lsd": "/dev/mmcblk0"}
    results = {e["msg"]["case"]: e["msg"] for e in logs if e["lvl"] == "results"}
    assert (results["iowatch-run"]["definition"], results["iowatch-run"]["result"]) == ("0_iowatch", "pass")
    assert results["job"]["result"] == "pass"
