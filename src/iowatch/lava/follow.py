"""Following one iowatch job on a LAVA lab to its end.

A job ends Complete, Incomplete or Canceled (LAVA's health). iowatch reads:
- an Incomplete job whose LAVA `job` case says error_type Infrastructure (the
  board, its power or its network failed, not the kernel): tried again on
  another board of the same device type, while one is usable; the board that
  failed is named in the attempt, and a retry that lands on it again says so;
- an Incomplete job that never reached iowatch's test (no `iowatch` suite):
  the variant did not boot, a boot-failed step, never a performance result;
- the test case iowatch-run: iowatch run's exit status on the board (0: the
  bundle was made and uploaded);
- the run id from the line `iowatch run` prints ("bundle DIR (status, run ID)").
Every outcome carries LAVA's job page and log URL, so a failure recorded on
the run links to what LAVA saw. A job is only ever read as the board class it
was submitted for: its device type must be the host's.
"""
from __future__ import annotations

import base64
import binascii
import io
import re
import tarfile
import time
from pathlib import Path
from dataclasses import dataclass, field
from typing import Callable

from iowatch.inventory import Host
from iowatch.lava import definition
from iowatch.lava.client import (HEALTH_COMPLETE, HEALTH_INCOMPLETE, INFRASTRUCTURE, Case, Job,
                                 LavaClient, LavaError)

POLL_S = 30.0
BUNDLE_LINE = re.compile(re.escape(definition.BUNDLE_LINE) + r"([A-Za-z0-9+/=]+)\s*$")
RUN_LINE = re.compile(r"\bbundle (\S+) \(([\w-]+), run ([0-9a-f]{8}-[0-9a-f-]{27})\)")


@dataclass(frozen=True)
class Attempt:
    job_id: int
    board: str | None
    health: str
    infrastructure: str | None      # LAVA's error message when the board's side failed


@dataclass
class LavaRun:
    """What one measurement on a LAVA lab came to."""
    state: str                      # done | failed | boot-failed | infrastructure
    host: str
    device_type: str
    job_id: int
    board: str | None
    job_url: str
    log_url: str
    run_id: str | None = None
    exit_status: int | None = None
    detail: str = ""
    attempts: list[Attempt] = field(default_factory=list)

    def provenance(self) -> dict:
        """What the stored run keeps of its LAVA job (the bundle's environment.lava):
        the job, its board and LAVA's page and log, and every attempt before it."""
        return {"job": self.job_id, "board": self.board, "device_type": self.device_type,
                "job_url": self.job_url, "log_url": self.log_url,
                "attempts": [{"job": a.job_id, "board": a.board, "health": a.health,
                              **({"infrastructure": a.infrastructure} if a.infrastructure else {})}
                             for a in self.attempts]}

    def line(self) -> str:
        tried = f" after {len(self.attempts)} attempts" if len(self.attempts) > 1 else ""
        return (f"lava: {self.host} ({self.device_type}) job {self.job_id} on {self.board or 'no board'}: "
                f"{self.state}{tried}" + (f": {self.detail}" if self.detail else "") + f"; log {self.log_url}")


def wait(client: LavaClient, job_id: int, *, poll_s: float = POLL_S,
         sleep: Callable[[float], None] = time.sleep, say: Callable[[str], None] = print) -> Job:
    """Poll the job until LAVA says it finished; say each change of state."""
    seen = None
    while True:
        job = client.job(job_id)
        if (job.state, job.device) != seen:
            say(f"lava: job {job_id}: {job.state.lower()}" + (f" on {job.device}" if job.device else ""))
            seen = (job.state, job.device)
        if job.finished:
            return job
        sleep(poll_s)


def infrastructure_error(cases: list[Case]) -> str | None:
    """LAVA's message when its own `job` case blames the infrastructure."""
    for c in cases:
        if c.suite == "lava" and c.name == "job" and c.metadata.get("error_type") == INFRASTRUCTURE:
            return str(c.metadata.get("error_msg") or "infrastructure error")
    return None


def run_id_from(logs: list[dict]) -> str | None:
    for entry in logs:
        m = RUN_LINE.search(str(entry.get("msg", "")))
        if m:
            return m.group(3)
    return None


def bundle_from(logs: list[dict], out: Path) -> Path | None:
    """The bundle a board printed on its console (definition.BUNDLE_LINE lines,
    base64 of a tar.gz), unpacked into `out`; None when it printed none."""
    chunks = [m.group(1) for e in logs if e.get("lvl") == "target"
              for m in [BUNDLE_LINE.match(str(e.get("msg", "")).strip())] if m]
    if not chunks:
        return None
    try:
        data = base64.b64decode("".join(chunks), validate=True)
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:*") as tar:
            out.mkdir(parents=True, exist_ok=True)
            tar.extractall(out, filter="data")
    except (binascii.Error, tarfile.TarError, EOFError) as e:
        raise LavaError(f"the bundle the board printed on its console is damaged ({e}); "
                        "LAVA's log has the lines") from None
    return out


def _same_class(host: Host, job: Job) -> None:
    wanted = host.lava.device_type
    if job.device_type and job.device_type != wanted:
        raise LavaError(f"LAVA job {job.id} ran on device type {job.device_type}, not {wanted} of host "
                        f"{host.name}: its results belong to another board class and are not read")


def read_finished(client: LavaClient, host: Host, job: Job) -> LavaRun:
    """The outcome of one finished job."""
    _same_class(host, job)
    cases = client.cases(job.id)
    run = LavaRun("failed", host.name, host.lava.device_type, job.id, job.device,
                  client.job_url(job.id), client.log_url(job.id))
    infra = infrastructure_error(cases) if job.health == HEALTH_INCOMPLETE else None
    run.attempts.append(Attempt(job.id, job.device, job.health, infra))
    ours = [c for c in cases if c.suite.endswith(definition.SUITE) and c.name == definition.RUN_CASE]
    if infra:
        run.state, run.detail = "infrastructure", f"LAVA: {infra}"
    elif not ours:
        said = job.failure_comment or next((str(c.metadata.get("error_msg")) for c in cases
                                            if c.suite == "lava" and c.metadata.get("error_msg")), "")
        run.state = "boot-failed" if job.health == HEALTH_INCOMPLETE else "failed"
        run.detail = (f"the job ended {job.health} before iowatch ran" + (f": {said}" if said else ""))
    else:
        run.exit_status = int(ours[0].measurement) if ours[0].measurement is not None else None
        run.run_id = run_id_from(client.logs(job.id))
        if ours[0].result == "pass" and job.health == HEALTH_COMPLETE:
            run.state = "done"
        else:
            run.detail = f"iowatch run exited {run.exit_status} on the board (job {job.health})"
    return run


def other_boards(client: LavaClient, device_type: str, failed: set[str]) -> list[str]:
    """Usable boards of the type besides those that failed."""
    return sorted(b.hostname for b in client.boards(device_type) if b.usable and b.hostname not in failed)


def run_job(client: LavaClient, host: Host, job: dict, *, retries: int = 1, poll_s: float = POLL_S,
            sleep: Callable[[float], None] = time.sleep, say: Callable[[str], None] = print) -> LavaRun:
    """Validate, submit and follow `job` (a definition of iowatch.lava.definition)
    for `host`; an infrastructure failure is tried again, up to `retries` times,
    while another board of the type is usable."""
    text = definition.render(definition.validate(job), hide_secrets=False)
    attempts: list[Attempt] = []
    failed: set[str] = set()
    while True:
        job_id = client.submit(text)
        say(f"lava: {host.name}: submitted job {job_id} ({client.job_url(job_id)})")
        run = read_finished(client, host, wait(client, job_id, poll_s=poll_s, sleep=sleep, say=say))
        if run.board in failed:
            run.detail += f" (LAVA scheduled the retry on {run.board} again)"
        run.attempts = attempts + run.attempts
        attempts = run.attempts
        if run.state != "infrastructure" or len(attempts) > retries:
            return run
        failed.add(run.board or "")
        others = other_boards(client, host.lava.device_type, failed)
        if not others:
            run.detail += (f"; no other usable board of type {host.lava.device_type} to try "
                           f"(failed: {', '.join(sorted(failed))})")
            return run
        say(f"lava: {host.name}: infrastructure error on {run.board}: trying again on another "
            f"{host.lava.device_type} board ({', '.join(others)} usable)")
