"""A board class of a LAVA lab as the agent's lab host (iowatch.agent.hosts.LabHost).

On LAVA a boot and the run after it are one job, so this host boots and runs
at once (`boot_and_run`; the agent's loop calls it instead of boot then run):
the variant's kernel is put where the lab's boards fetch it, one job is
submitted and followed (iowatch.lava.follow), and the bundle comes back in
LAVA's log for the agent to mark and upload as it does for every host, with
its LAVA job, board and log URL in its environment (`lava`): a run that
failed on the board is stored as a failed run that links LAVA's log. So each
job kind the agent works (confirmations, bisect steps, nightlies) runs on LAVA
unchanged, one LAVA job a boot: boots stay the unit, the rounds and the canary
cell of every boot are the agent's and the matrix's as before.

A variant that did not boot is a boot-failed step with LAVA's reason and log;
an infrastructure failure on every board tried is the host's error (LabHostError).
After a job LAVA powers the board off, so there is no default kernel to restore.
"""
from __future__ import annotations

import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable
from urllib.parse import urlsplit

from iowatch import bundle
from iowatch.agent.hosts import BootOutcome, LabHostError, RunRequest
from iowatch.inventory import Host
from iowatch.lava import definition, follow
from iowatch.lava.client import LavaClient, LavaError


def publish_kernel(board, artifacts: Path, commit: str) -> str:
    """Put the built kernel where the lab serves kernels from, when that is a
    directory here (file://); an http(s) store is the build's to fill (Jenkins
    archives there). The kernel's URL."""
    url = definition.kernel_url(board, commit)
    image = Path(artifacts) / definition.KERNEL_IMAGE[board.arch]
    if url.startswith("file://"):
        target = Path(urlsplit(url).path)
        if not image.is_file():
            raise LabHostError(f"no kernel {image} to publish for {commit[:12]}")
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(image, target)
    return url


@dataclass
class LavaHost:
    host: Host
    client: LavaClient
    retries: int = 1
    poll_s: float = follow.POLL_S
    sleep: Callable[[float], None] = time.sleep
    say: Callable[[str], None] = print
    runs: list = field(default_factory=list)     # the LavaRun of each job, for the closing table

    @property
    def name(self) -> str:
        return self.host.name

    def boot(self, artifacts: Path, commit: str) -> BootOutcome:
        raise LabHostError(f"{self.name} is a LAVA board class: a boot is the job that runs (boot_and_run)")

    def run(self, request: RunRequest, out: Path, on_cell=None) -> Path:
        raise LabHostError(f"{self.name} is a LAVA board class: a run is the job that boots (boot_and_run)")

    def restore(self) -> None:
        """LAVA powers the board off at the end of every job."""

    def boot_and_run(self, artifacts: Path, commit: str, request: RunRequest,
                     out: Path) -> tuple[BootOutcome, Path | None]:
        t0 = time.monotonic()
        url = publish_kernel(self.host.lava, artifacts, commit)
        m = definition.Measurement(request.matrix, commit, request.label, server=None,
                                   cells=tuple(request.cells), reps=request.reps, profile=request.profile,
                                   kernel_url=url)
        try:
            run = follow.run_job(self.client, self.host, definition.make(self.host, m), retries=self.retries,
                                 poll_s=self.poll_s, sleep=self.sleep, say=self.say)
            self.runs.append(run)
            seconds = time.monotonic() - t0
            if run.state == "boot-failed":
                return BootOutcome("boot-failed", run.line(), seconds), None
            if run.state == "infrastructure":
                raise LabHostError(run.line())
            path = follow.bundle_from(self.client.logs(run.job_id), Path(out))
        except (LavaError, definition.DefinitionInvalid) as e:
            raise LabHostError(f"{self.name}: {e}") from None
        if path is None:
            raise LabHostError(f"{run.line()}; the board printed no bundle")
        # The stored run links its LAVA job and log (the run page's environment rows),
        # whether `iowatch run` passed on the board or failed there.
        doc = bundle.load(path)
        doc.setdefault("environment", {})["lava"] = run.provenance()
        bundle.write_manifest(path, doc)
        return BootOutcome("booted", f"LAVA job {run.job_id} on {run.board}", seconds), path
