"""How the lab-ops tests call the real tools: Ansible, ansible-lint, jenkins-jobs,
docker-compose, all offline, with their caches and temporary files under the
test's own directory."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
ANSIBLE_DIR = REPO / "ansible"
PLAYBOOKS = sorted(ANSIBLE_DIR.glob("*.yml"))
VENV_BIN = Path(sys.executable).parent


def tool(name: str, how: str) -> str:
    """The tool's path: the test environment's first, then PATH; skip naming how to get it."""
    found = shutil.which(name, path=f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    if not found:
        pytest.skip(f"{name} is not installed: {how}")
    return found


def ansible_env(tmp: Path) -> dict:
    """Ansible kept off ~/.ansible and off Galaxy: everything it writes goes under tmp."""
    env = dict(os.environ)
    env.update({
        "PATH": f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}",
        "ANSIBLE_CONFIG": str(ANSIBLE_DIR / "ansible.cfg"),
        "ANSIBLE_HOME": str(tmp / "ansible-home"),
        "ANSIBLE_LOCAL_TEMP": str(tmp / "ansible-local-tmp"),
        "ANSIBLE_REMOTE_TEMP": str(tmp / "ansible-remote-tmp"),
        "ANSIBLE_NOCOLOR": "1",
        "ANSIBLE_FORCE_COLOR": "0",
        "ANSIBLE_GALAXY_DISABLE_GPG_VERIFY": "1",
        "XDG_CACHE_HOME": str(tmp / "cache"),
        "NO_COLOR": "1",
    })
    return env


def run(cmd: list[str], env: dict, cwd: Path = ANSIBLE_DIR, timeout: int = 300) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)


_RECAP = re.compile(r"^(\S+)\s*:\s*ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)", re.M)


def recap(output: str, host: str = "localhost") -> dict[str, int]:
    """The PLAY RECAP counts of one host."""
    for m in _RECAP.finditer(output):
        if m.group(1) == host:
            return dict(zip(("ok", "changed", "unreachable", "failed"), map(int, m.groups()[1:])))
    raise AssertionError(f"no PLAY RECAP line for {host} in:\n{output[-3000:]}")
