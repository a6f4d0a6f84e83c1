"""The common role installs iowatch from its wheel, for real: the wheel built from
this tree, the role's iowatch tasks (ansible/roles/common/tasks/iowatch.yml)
applied with a local connection into a directory of the test's own (the
virtualenv, /etc/iowatch, the data dir and the PATH link moved under it), then
the installed copy run from there: `iowatch --version`, `iowatch device check`
on the inventory the role copied, and a cell of a study the wheel ships on the
local target's loop devices. A second apply changes nothing.

Slow (a virtualenv and pip install of the wheel's dependencies, about a
minute with pip's cache warm); the cell needs root for its loop devices.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ansible_env import ANSIBLE_DIR, REPO, ansible_env, recap, run, tool
from loop_devices import detach_over
from wheel_build import build_wheel

pytestmark = pytest.mark.slow
HOW = "pip install -e '.[dev]' (ansible-core is in the dev extra)"


def _apply(tmp: Path, wheel: Path, more: dict | None = None, env_more: dict | None = None):
    """Apply the role's iowatch tasks into tmp/host: (the role's variables, the command, its environment)."""
    host = tmp / "host"
    variables = {"common_iowatch_wheel": str(wheel), "common_iowatch_venv": str(host / "opt/iowatch/venv"),
                 "common_config_dir": str(host / "etc/iowatch"), "common_data_dir": str(host / "var/lib/iowatch"),
                 "common_iowatch_link": str(host / "usr/local/bin/iowatch"),
                 "common_inventory_source": str(REPO / "hardware-inventory.yml"), **(more or {})}
    (host / "usr/local/bin").mkdir(parents=True)
    playbook = tmp / "common-iowatch.yml"
    playbook.write_text(json.dumps([{
        "name": "The common role's iowatch tasks", "hosts": "localhost", "gather_facts": False,
        "tasks": [{"name": "Install iowatch from its wheel",
                   "ansible.builtin.include_role": {"name": "common", "tasks_from": "iowatch"}}]}]))
    cmd = [tool("ansible-playbook", HOW), "-i", "localhost,", "-c", "local", str(playbook),
           "-e", json.dumps(variables), "-e", f"ansible_python_interpreter={_python()}"]
    env = {**ansible_env(tmp), "ANSIBLE_ROLES_PATH": str(ANSIBLE_DIR / "roles"), **(env_more or {})}
    return variables, cmd, env


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(the role's variables, the first apply's output, the second apply's output)."""
    tmp = tmp_path_factory.mktemp("common")
    variables, cmd, env = _apply(tmp, build_wheel(tmp / "src", tmp / "dist"))
    first = run(cmd, env, timeout=900)
    second = run(cmd, env, timeout=900)
    return variables, first, second


def _python() -> str:
    """The host's Python, as on a lab host: the role makes its own virtualenv with it."""
    return "/usr/bin/python3"


def test_the_role_installs_the_wheel_into_its_virtualenv_and_links_it(installed):
    variables, first, _ = installed
    out = first.stdout + first.stderr
    assert first.returncode == 0, out[-4000:]
    assert recap(out)["failed"] == 0
    venv = Path(variables["common_iowatch_venv"])
    link = Path(variables["common_iowatch_link"])
    assert link.is_symlink() and link.resolve() == (venv / "bin/iowatch").resolve()
    dist = venv.parent / "dist" / Path(variables["common_iowatch_wheel"]).name
    assert dist.is_file(), "the wheel was not copied to the host"
    version = subprocess.run([str(link), "--version"], capture_output=True, text=True, timeout=120)
    assert version.returncode == 0 and "iowatch" in version.stdout, version
    # Installed, not a checkout: the package lives in the virtualenv's site-packages.
    where = subprocess.run([str(venv / "bin/python"), "-c", "import iowatch; print(iowatch.__file__)"],
                           capture_output=True, text=True, cwd="/", timeout=120).stdout
    assert where.startswith(str(venv)) and "site-packages" in where, where
    env_file = Path(variables["common_config_dir"]) / "iowatch.env"
    assert f"IOWATCH_INVENTORY={variables['common_config_dir']}/hardware-inventory.yml" in env_file.read_text()


def test_a_second_apply_changes_nothing(installed):
    _, _, second = installed
    out = second.stdout + second.stderr
    assert second.returncode == 0, out[-4000:]
    assert recap(out)["changed"] == 0, out[-4000:]


def _host_env(variables: dict, tmp_path: Path) -> dict:
    """What a lab host's shell has after sourcing /etc/iowatch/iowatch.env, here under the test's directory."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("VIRTUAL_ENV", "PYTHONPATH", "DATABASE_URL", "IOWATCH_STUDIES")}
    for line in (Path(variables["common_config_dir"]) / "iowatch.env").read_text().splitlines():
        if "=" in line and not line.startswith("#"):
            key, value = line.split("=", 1)
            env[key] = value
    env["IOWATCH_DATA_DIR"] = str(tmp_path / "data")  # loop images of this test's own
    return env


def test_the_installed_copy_checks_a_device_against_the_copied_inventory(installed, tmp_path):
    variables, first, _ = installed
    assert first.returncode == 0
    done = subprocess.run([variables["common_iowatch_link"], "device", "check", "localhost", "/dev/null"],
                          capture_output=True, text=True, cwd=tmp_path, env=_host_env(variables, tmp_path),
                          timeout=120)
    # /dev/null is no declared device of localhost: refused, with the reason.
    assert done.returncode == 1, done
    assert "/dev/null" in done.stdout + done.stderr


@pytest.mark.skipif(os.geteuid() != 0, reason="the local target makes loop devices: run as root")
def test_the_installed_copy_runs_a_cell_of_a_study_it_ships(installed, tmp_path):
    variables, first, _ = installed
    assert first.returncode == 0
    env = _host_env(variables, tmp_path)
    try:
        done = subprocess.run([variables["common_iowatch_link"], "run", "ext4-dio-randread", "--profile", "quick",
                               "--target", "localhost", "--reps", "1", "--cells", "ext4-dio-randread/loop-ssd/raw",
                               "--out", str(tmp_path / "bundle")],
                              capture_output=True, text=True, cwd=tmp_path, env=env, timeout=600)
    finally:
        detach_over(tmp_path / "data")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "passed   ext4-dio-randread/loop-ssd/raw" in done.stdout, done.stdout


def test_a_wheelhouse_installs_iowatch_on_a_host_without_an_index(tmp_path):
    """common_iowatch_wheelhouse: the dependencies' wheels go with iowatch's, and pip
    installs from them with no index (a lab host that cannot reach PyPI, as the
    VM of scripts/vm-provision.sh)."""
    wheel = build_wheel(tmp_path / "src", tmp_path / "dist")
    wheelhouse = tmp_path / "wheelhouse"
    subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--only-binary=:all:", "-d", str(wheelhouse),
                    str(wheel)], check=True, timeout=600)
    (wheelhouse / wheel.name).unlink()
    # An index that refuses every connection: pip must not need one.
    variables, cmd, env = _apply(tmp_path, wheel, {"common_iowatch_wheelhouse": str(wheelhouse)},
                                 {"PIP_INDEX_URL": "http://127.0.0.1:9/simple", "PIP_RETRIES": "0"})
    done = run(cmd, env, timeout=900)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-4000:]
    copied = Path(variables["common_iowatch_venv"]).parent / "wheelhouse"
    assert sorted(p.name for p in copied.iterdir()) == sorted(p.name for p in wheelhouse.iterdir())
    version = subprocess.run([variables["common_iowatch_link"], "--version"], capture_output=True, text=True,
                             timeout=120)
    assert version.returncode == 0 and "iowatch" in version.stdout, version
    again = run(cmd, env, timeout=900)
    assert again.returncode == 0 and recap(again.stdout)["changed"] == 0, (again.stdout + again.stderr)[-4000:]
