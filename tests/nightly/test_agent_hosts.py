"""The lab host as the agent drives it (iowatch.agent.hosts), without a host:
the ssh command comes from the inventory's Ansible variables, a kernel role
that stops before trying the variant is an error naming the host (not a boot
failure of the variant's), and the cell the heartbeat names is read from the
progress lines `iowatch run --no-progress` writes."""
from __future__ import annotations

import io
from pathlib import Path
from types import SimpleNamespace

import pytest

from iowatch import progress
from iowatch.agent.hosts import CELL_LINE, AnsibleHost, LabHostError, RecordedHost
from iowatch.inventory import Host


def _host(**vars) -> Host:
    return Host("lab-a", "bare-metal", (), vars)


def test_ssh_reaches_the_host_the_inventory_names(tmp_path):
    h = AnsibleHost(_host(ansible_host="192.0.2.7", ansible_port=2222, ansible_user="root",
                          ansible_ssh_private_key_file="/keys/lab",
                          ansible_ssh_common_args="-o StrictHostKeyChecking=no"), tmp_path / "inv.yml")
    argv = h._ssh_argv()
    assert argv[-1] == "root@192.0.2.7"
    assert argv[argv.index("-p") + 1] == "2222" and argv[argv.index("-i") + 1] == "/keys/lab"
    assert "StrictHostKeyChecking=no" in argv and "BatchMode=yes" in argv
    assert AnsibleHost(_host(), tmp_path / "inv.yml")._ssh_argv()[-1] == "lab-a"


def test_a_role_that_stops_before_the_reboot_is_an_error_not_a_boot_failure(tmp_path):
    # /bin/false stands for an ansible-playbook that fails before writing the result file.
    h = AnsibleHost(_host(), tmp_path / "inv.yml", playbook="false", logs=tmp_path / "logs")
    with pytest.raises(LabHostError, match="lab-a: ansible/kernel.yml exited 1 without a result file"):
        h.boot(tmp_path / "variant", "ab" * 20)


def test_the_cell_a_run_is_on_is_read_from_its_progress_lines():
    out = io.StringIO()
    cell = SimpleNamespace(id="odirect-vs-readers/hdd/ext4")
    with progress.Progress("iowatch", progress.LINES, stream=out) as p:
        p.on_rep(cell, 1, 3)
        p.on_done(cell, 1, "passed")
    found = [m.group(1) for m in CELL_LINE.finditer(out.getvalue())]
    assert found and set(found) == {"odirect-vs-readers/hdd/ext4"}


def test_a_replayed_commit_with_nothing_recorded_is_an_error(tmp_path):
    (tmp_path / ("ab" * 20)).mkdir()
    h = RecordedHost("lab-a", tmp_path)
    with pytest.raises(LabHostError, match="nothing recorded for commit cdcdcdcdcdcd"):
        h.boot(Path("."), "cd" * 20)
    assert h.boot(Path("."), "ab" * 20).state == "booted"


class _BootsAndRuns:
    """A lab host that boots every kernel and writes no bundle (what the agent says is the test)."""
    name = "lab-a"

    def boot(self, artifacts, commit):
        from iowatch.agent.hosts import BootOutcome
        return BootOutcome("booted", seconds=12.0)

    def run(self, request, out, on_cell=None):
        return None


@pytest.mark.parametrize("known_as", ["d625ef797d79" + "0" * 28, None])
def test_the_agent_names_a_bisect_step_by_the_commit_the_bisect_names(tmp_path, known_as):
    """A bisect's range is re-applied in the agent's work tree, so the variant
    it boots carries another hash than the commit the steps and the mail name
    (the LAVA loop's log read "f7b1f7f77bb2 (base+p1..p3): booted" beside
    "step d625ef797d79 good"). The agent's line and its closing table name
    the step's commit, and say what it was built as."""
    from iowatch.agent.hosts import RunRequest
    from iowatch.agent.loop import Agent
    said = []
    agent = Agent(client=None, host=_BootsAndRuns(), builds=None, out=tmp_path, say=said.append)
    variant = SimpleNamespace(commit="f7b1f7f77bb2" + "1" * 28, artifacts=str(tmp_path))
    agent.boot_and_run(variant, RunRequest("e2e", variant.commit, "base+p1..p3", known_as=known_as), tmp_path)
    if known_as:
        assert said == ["agent: lab-a: d625ef797d79 (base+p1..p3, built as f7b1f7f77bb2): booted in 12 s"]
        assert agent.log[0]["commit"] == known_as
    else:
        assert said == ["agent: lab-a: f7b1f7f77bb2 (base+p1..p3): booted in 12 s"]
        assert agent.log[0]["commit"] == variant.commit
