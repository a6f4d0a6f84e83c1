"""ansible-lint (production profile) and --syntax-check over ansible/, offline."""
from __future__ import annotations

import pytest

from ansible_env import ANSIBLE_DIR, PLAYBOOKS, ansible_env, run, tool

HOW = "pip install -e '.[dev]' (ansible-core and ansible-lint are in the dev extra)"


def test_playbooks_exist():
    assert {p.name for p in PLAYBOOKS} >= {"site.yml", "provision.yml", "storage.yml", "kernel.yml"}


def test_ansible_lint_production_profile_is_clean(tmp_path):
    lint = tool("ansible-lint", HOW)
    done = run([lint, "--offline", "--profile", "production", "--nocolor", "--project-dir", str(ANSIBLE_DIR),
                *[str(p) for p in PLAYBOOKS], "roles"], ansible_env(tmp_path))
    output = done.stdout + done.stderr
    print(output)
    assert done.returncode == 0, output
    assert "Profile 'production' was required, and it passed" in output


@pytest.mark.parametrize("playbook", PLAYBOOKS, ids=lambda p: p.name)
def test_playbook_syntax(playbook, tmp_path):
    ansible_playbook = tool("ansible-playbook", HOW)
    done = run([ansible_playbook, "--syntax-check", str(playbook)], ansible_env(tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr
