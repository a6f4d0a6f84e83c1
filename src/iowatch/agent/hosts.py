"""The lab host an agent drives, seen from the controller: boot a built kernel
on it once, run cells on it into a bundle brought back here, and put its
default kernel back.

`AnsibleHost` is a real host of the inventory (which is also Ansible's): the
kernel role (ansible/kernel.yml) installs the variant, reboots into it once
(grub-reboot, panic= and the fallback to the default entry) and says booted or
boot-failed; the cells run over ssh with the iowatch the common role installed
there, and the bundle comes back as a tar stream. The agent stays on the
controller, so a reboot or a panic of the host never kills it.

`RecordedHost` replays bundles recorded earlier (a directory per commit), for
the agent's tests and for a dry run of the loop: its boot is the fake one,
the rest of the agent is the same.
"""
from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Callable, Protocol

from iowatch import bundle
from iowatch.inventory import Host

REPO_ANSIBLE = Path(__file__).resolve().parents[3] / "ansible"
# The common role's defaults (ansible/roles/common/defaults/main.yml).
HOST_ENV_FILE = "/etc/iowatch/iowatch.env"
HOST_RUNS_DIR = "/var/lib/iowatch/agent-runs"
# `iowatch run --no-progress` names each cell as it starts (iowatch.progress).
CELL_LINE = re.compile(r"\bcell (\S+/\S+/\S+?):?\s")


def _playbook_command() -> str:
    """ansible-playbook of this virtualenv (setup.sh installs ansible-core into
    it), else the one on PATH."""
    here = Path(sys.executable).with_name("ansible-playbook")
    return str(here) if here.is_file() else "ansible-playbook"


class LabHostError(RuntimeError):
    """The host cannot do what was asked (no ssh, the role failed before any
    boot, the run left no bundle): the message says what and where to look."""


@dataclass
class BootOutcome:
    state: str        # booted | boot-failed
    detail: str = ""
    seconds: float = 0.0


@dataclass
class RunRequest:
    """What to run after a boot: a matrix (a name the host's iowatch resolves,
    or a study file), optionally only some cells, labelled for the bundle.
    known_as: the commit a maintainer knows, where the built variant carries
    another hash (a bisect's range re-applied in the work tree)."""
    matrix: str
    commit: str
    label: str
    reps: int | None = None
    profile: str | None = None
    cells: list[str] = field(default_factory=list)
    known_as: str | None = None


class LabHost(Protocol):
    name: str

    def boot(self, artifacts: Path, commit: str) -> BootOutcome: ...

    def run(self, request: RunRequest, out: Path, on_cell: Callable[[str], None] | None = None
            ) -> Path: ...

    def restore(self) -> None: ...


def _tail(text: str, n: int = 1500) -> str:
    return text.strip()[-n:]


@dataclass
class AnsibleHost:
    """A host of the inventory, driven with the kernel role and ssh."""
    host: Host
    inventory: Path
    ansible_dir: Path = REPO_ANSIBLE
    playbook: str = field(default_factory=_playbook_command)
    logs: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="iowatch-agent-")))
    say: Callable[[str], None] = print

    @property
    def name(self) -> str:
        return self.host.name

    # --- the kernel role -----------------------------------------------------------

    def _playbook(self, log_name: str, *extra: str) -> subprocess.CompletedProcess:
        self.logs.mkdir(parents=True, exist_ok=True)
        cmd = [self.playbook, "-i", str(self.inventory.resolve()), "-l", self.name, "kernel.yml", *extra]
        with open(self.logs / log_name, "w") as log:
            return subprocess.run(cmd, cwd=self.ansible_dir, stdout=log, stderr=subprocess.STDOUT,
                                  env={**_env(), "ANSIBLE_CONFIG": str(self.ansible_dir / "ansible.cfg"),
                                       "ANSIBLE_FORCE_COLOR": "0"})

    def boot(self, artifacts: Path, commit: str) -> BootOutcome:
        """kernel.yml with the variant: booted (uname -r and iowatch.commit= checked
        by the role) or boot-failed (it panicked or hung and the host came back on
        its default kernel). A role that fails before the reboot is an error."""
        result = self.logs / f"boot-{commit[:12]}-{uuid.uuid4().hex[:6]}.json"
        t0 = time.monotonic()
        done = self._playbook(result.with_suffix(".log").name, "-e", f"kernel_variant_dir={artifacts}",
                              "-e", f"kernel_result_file={result}")
        seconds = time.monotonic() - t0
        if not result.is_file():
            log = (self.logs / result.with_suffix(".log").name).read_text(errors="replace")
            raise LabHostError(f"{self.name}: ansible/kernel.yml exited {done.returncode} without a "
                               f"result file (the variant was not tried): {_tail(log, 800)}")
        outcome = json.loads(result.read_text())
        return BootOutcome(outcome.get("state", "boot-failed"), outcome.get("detail", ""), seconds)

    def restore(self) -> None:
        done = self._playbook("restore.log", "-e", "kernel_action=restore")
        if done.returncode != 0:
            raise LabHostError(f"{self.name}: kernel.yml -e kernel_action=restore exited "
                               f"{done.returncode}: see {self.logs / 'restore.log'}")

    # --- ssh ---------------------------------------------------------------------------

    def _ssh_argv(self) -> list[str]:
        v = self.host.vars
        argv = ["ssh", "-o", "BatchMode=yes", "-o", "ConnectTimeout=20"]
        if v.get("ansible_port"):
            argv += ["-p", str(v["ansible_port"])]
        if v.get("ansible_ssh_private_key_file"):
            argv += ["-i", str(v["ansible_ssh_private_key_file"])]
        argv += shlex.split(str(v.get("ansible_ssh_common_args", "")))
        user = v.get("ansible_user")
        target = str(v.get("ansible_host") or self.name)
        return argv + [f"{user}@{target}" if user else target]

    def ssh(self, command: str, *, timeout: float | None = None, stdout=subprocess.PIPE
            ) -> subprocess.CompletedProcess:
        return subprocess.run(self._ssh_argv() + [command], stdout=stdout, stderr=subprocess.PIPE,
                              timeout=timeout)

    def run(self, request: RunRequest, out: Path, on_cell: Callable[[str], None] | None = None) -> Path:
        """`iowatch run` on the host with its environment file (the inventory the
        device-safety check reads, the data directory), then the bundle back here;
        on_cell(id) as each cell starts (its progress lines say so)."""
        remote = f"{HOST_RUNS_DIR}/{uuid.uuid4()}"
        argv = ["iowatch", "run", request.matrix, "--target", self.name, "--out", remote,
                "--kernel-commit", request.commit, "--label", request.label, "--no-progress"]
        if request.reps:
            argv += ["--reps", str(request.reps)]
        if request.profile:
            argv += ["--profile", request.profile]
        if request.cells:
            argv += ["--cells", ",".join(request.cells)]
        env_file = self.host.vars.get("iowatch_env_file", HOST_ENV_FILE)
        script = (f"set -a; [ -f {shlex.quote(env_file)} ] && . {shlex.quote(env_file)}; set +a; "
                  f"{shlex.join(argv)}")
        self.logs.mkdir(parents=True, exist_ok=True)
        log = self.logs / f"run-{request.commit[:12]}-{remote.rsplit('/', 1)[1][:8]}.log"
        with open(log, "w") as f:
            proc = subprocess.Popen(self._ssh_argv() + [f"sh -c {shlex.quote(script)}"], text=True,
                                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT, errors="replace")
            for line in proc.stdout:
                f.write(line)
                f.flush()
                if on_cell and (m := CELL_LINE.search(line)):
                    on_cell(m.group(1))
            done = SimpleNamespace(returncode=proc.wait())
        out.mkdir(parents=True, exist_ok=True)
        fetched = self.ssh(f"tar -C {shlex.quote(remote)} -cf - . && rm -rf {shlex.quote(remote)}",
                           timeout=600)
        if fetched.returncode != 0:
            raise LabHostError(f"{self.name}: `iowatch run` exited {done.returncode} and left no "
                               f"bundle at {remote} ({fetched.stderr.decode(errors='replace').strip()}); "
                               f"its output: {log}")
        subprocess.run(["tar", "-C", str(out), "-xf", "-"], input=fetched.stdout, check=True)
        if not (out / bundle.MANIFEST).is_file():
            raise LabHostError(f"{self.name}: `iowatch run` exited {done.returncode} without a "
                               f"bundle manifest; its output: {log}")
        return out


def _env() -> dict:
    import os
    return dict(os.environ)


@dataclass
class RecordedHost:
    """Bundles recorded earlier stand in for boots and runs:
    ROOT/<commit>/<anything>/manifest.json (one directory per run, used in name
    order and then from the start again), ROOT/<commit>.boot-failed (its text
    is the reason: the commit panics). Each replayed run gets a run id of its own."""
    name: str
    root: Path
    boots: list[str] = field(default_factory=list)   # the commits booted, in order
    _used: dict[str, int] = field(default_factory=dict)

    def _dir(self, commit: str) -> Path | None:
        for d in sorted(self.root.iterdir()):
            stem = d.name.split(".", 1)[0]
            if stem and (commit.startswith(stem) or stem.startswith(commit)):
                return d.parent / stem
        return None

    def boot(self, artifacts: Path, commit: str) -> BootOutcome:
        self.boots.append(commit)
        base = self._dir(commit)
        if base is None:
            raise LabHostError(f"{self.root}: nothing recorded for commit {commit[:12]}")
        failed = base.with_name(base.name + ".boot-failed")
        if failed.is_file():
            return BootOutcome("boot-failed", failed.read_text().strip())
        return BootOutcome("booted", f"recorded runs of {commit[:12]}")

    def run(self, request: RunRequest, out: Path, on_cell: Callable[[str], None] | None = None
            ) -> Path:
        base = self._dir(request.commit)
        runs = sorted(p.parent for p in base.glob(f"*/{bundle.MANIFEST}")) if base else []
        if not runs:
            raise LabHostError(f"{self.root}: no recorded run of commit {request.commit[:12]}")
        k = self._used.get(request.commit, 0)
        self._used[request.commit] = k + 1
        shutil.copytree(runs[k % len(runs)], out)
        doc = bundle.load(out)
        doc["run_id"] = str(uuid.uuid4())
        doc["label"] = request.label
        bundle.write_manifest(out, doc)
        return out

    def restore(self) -> None:
        self.boots.append("default")
