"""`iowatch agent`: the loop of one lab host, run on the controller beside it.

Every turn it says what the host is doing (a heartbeat), then takes work from
the server, its own host's first:
1. a confirmation job (a regression found on another host of the same device
   class): the good and the bad kernel booted in turn, ABAB, each run of the
   regression's cells uploaded with the job in its trigger; then the job is
   handed back and the server judges the runs (the same policy as every verdict);
2. a bisect job of the queue (docs/lab.md §7): the range good..bad built here
   with the lab host's configuration, each commit the search asks for booted on
   the host by the kernel role and measured there, each step posted;
and puts the host's default kernel back after each job. A variant that panics
or hangs is a boot-failed step (the role brought the host back on its default
kernel), never the agent's end. A nightly goes through the same path
(`iowatch agent --nightly BRANCH`): build the head, boot it, run the matrix,
upload, wait for the server's verdict.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from iowatch import bundle
from iowatch.agent.hosts import BootOutcome, LabHost, LabHostError, RunRequest
from iowatch.ciapi import Client, ServerError

IDLE_POLL_S = 60.0


class NullBeat:
    """What the loop reports to when there is no heartbeat to send."""

    def set(self, phase: str, **state) -> None:
        pass


@dataclass
class Builds:
    """Where the commits' kernels come from. `plan_for(good, bad)`: the range's
    plan (iowatch.kernel.build.Plan), `built(plan, index)`: its variant built
    (incrementally in the kept tree), `head(ref)`: a branch head's (plan, variant)."""
    plan_for: Callable[[str, str], object]
    built: Callable[[object, int], object]
    head: Callable[[str], tuple[object, object]] | None = None
    tree: Path | None = None        # the source tree: names the commits in steps


def _named(variant, request: RunRequest) -> str:
    """A booted kernel as the agent's lines name it: by the commit the bisect's
    steps and the mail name, with the hash it was built as when that differs."""
    if request.known_as and request.known_as != variant.commit:
        return f"{request.known_as[:12]} ({request.label}, built as {variant.commit[:12]})"
    return f"{variant.commit[:12]} ({request.label})"


def source_builds(tree: Path, fragments: list[Path] | None = None, base: str | None = None) -> Builds:
    """Builds from a kernel tree on this machine (the controller is the build
    host), with the lab host's configuration: the virtual lab's fragments,
    kernels/config/lab-host.config and any extra ones, on `base`."""
    from iowatch.kernel import build
    from iowatch.kernel.series import Series
    from iowatch.kernel.series_input import load_series
    frags = build.default_fragments() + [build.CONFIG_DIR / "lab-host.config"] + list(fragments or [])
    kw = {"base": base} if base else {}

    def plan_for(good: str, bad: str):
        plan = build.make_variants(tree, good, load_series(f"{good}..{bad}", tree))
        failed = next((v for v in plan.variants if v.status == "apply-failed"), None)
        if failed:
            raise ValueError(failed.error)
        build.configure(plan, frags, **kw)
        return plan

    def built(plan, index: int):
        v = plan.variants[index]
        if not (v.status == "built" and v.artifacts and (Path(v.artifacts) / "bzImage").is_file()):
            build.build_variant(plan, v)
        return v

    def head(ref: str):
        plan = build.make_variants(tree, ref, Series("lab-" + ref.replace("/", "_")[:40], ref, ()))
        build.configure(plan, frags, **kw)
        return plan, built(plan, 0)

    return Builds(plan_for, built, head, tree)


@dataclass
class Agent:
    client: Client
    host: LabHost
    builds: Builds
    out: Path
    matrix: str | None = None           # default: the job's
    reps: int | None = None
    profile: str | None = None
    device_classes: tuple[str, ...] = ()
    devices: dict[str, list[str]] = field(default_factory=dict)   # class -> the host's device names
    bisect_any: bool = False        # also bisect regressions other hosts of its classes found
    inventory_host: object = None   # the host as the inventory declares it (iowatch.inventory.Host)
    beat: object = field(default_factory=NullBeat)
    say: Callable[[str], None] = print
    log: list[dict] = field(default_factory=list)   # one row per boot: what the closing table prints

    # --- one boot and its run ----------------------------------------------------------

    def boot_and_run(self, variant, request: RunRequest, out: Path,
                     job: dict | None = None) -> tuple[BootOutcome, Path | None]:
        """Boot the built variant on the host and run the request there; the bundle
        (None when the boot failed)."""
        row = {"commit": request.known_as or variant.commit, "label": request.label}
        self.beat.set("booting", commit=variant.commit, job=job, detail=request.label)
        if hasattr(self.host, "boot_and_run"):  # a LAVA board class: one job boots and runs
            return self._boot_and_run_at_once(variant, request, out, job, row)
        booted = self.host.boot(Path(variant.artifacts or "."), variant.commit)
        row.update(boot=booted.state, boot_s=round(booted.seconds, 1))
        self.say(f"agent: {self.host.name}: {_named(variant, request)}: {booted.state}"
                 + (f" in {booted.seconds:.0f} s" if booted.seconds else "")
                 + (f": {booted.detail}" if booted.state != "booted" and booted.detail else ""))
        if booted.state != "booted":
            self.log.append(row)
            self.beat.set("boot-failed", commit=variant.commit, job=job, detail=booted.detail[-500:])
            return booted, None
        self.beat.set("running", commit=variant.commit, job=job,
                      cell=",".join(request.cells) or request.matrix, detail=request.label)
        t0 = time.monotonic()
        path = self.host.run(request, out, on_cell=lambda cell: self.beat.set(
            "running", commit=variant.commit, job=job, cell=cell, detail=request.label))
        row["run_s"] = round(time.monotonic() - t0, 1)
        self.log.append(row)
        return booted, path

    def _boot_and_run_at_once(self, variant, request: RunRequest, out: Path, job: dict | None,
                              row: dict) -> tuple[BootOutcome, Path | None]:
        """A host whose boot is the job that runs (iowatch.lava.host.LavaHost)."""
        self.beat.set("running", commit=variant.commit, job=job, cell=",".join(request.cells) or request.matrix,
                      detail=request.label)
        booted, path = self.host.boot_and_run(Path(variant.artifacts or "."), variant.commit, request, out)
        row.update(boot=booted.state, boot_s=round(booted.seconds, 1))
        self.say(f"agent: {self.host.name}: {_named(variant, request)}: {booted.state}"
                 + (f": {booted.detail}" if booted.detail else ""))
        self.log.append(row)
        if path is None:
            self.beat.set("boot-failed", commit=variant.commit, job=job, detail=booted.detail[-500:])
        return booted, path

    def upload(self, path: Path, job: dict | None = None) -> str:
        from iowatch import paths
        from iowatch.upload import Spool, upload
        self.beat.set("uploading", job=job)
        for o in upload([str(path)], self.client.server, self.client.token, Spool(paths.spool_dir())):
            if o.state not in ("sent", "already-stored"):
                raise ServerError(f"upload of {path} to {self.client.server}: {o.state}: {o.detail}")
        return bundle.load(path)["run_id"]

    def restore(self) -> None:
        self.beat.set("booting", detail="back to the default kernel")
        self.host.restore()

    # --- the turn -------------------------------------------------------------------------

    def turn(self) -> str:
        """Take one job and work it; what was done, in a line ("idle" when nothing)."""
        self.beat.set("claiming")
        # Between jobs the agent holds none: what its host still holds on the
        # server was lost when it started again, and goes back to the queue.
        claim = self.client.claim_confirmation(self.host.name, holds_none=True)
        if claim is not None:
            from iowatch.agent.confirm import work_confirmation
            return work_confirmation(self, claim)
        claim = self.client.claim(self.host.name, self.device_classes or None,
                                  own_only=not self.bisect_any, holds_none=True)
        if claim is not None:
            from iowatch.agent.bisect import work_bisect
            return work_bisect(self, claim)
        self.beat.set("idle")
        return "idle"

    def forever(self, poll_s: float = IDLE_POLL_S, *, once: bool = False,
                sleep: Callable[[float], None] = time.sleep) -> int:
        """Turns until stopped (or, with once, until the queue is empty); 0, or 1
        when a job failed."""
        status = 0
        while True:
            try:
                line = self.turn()
            except ServerError as e:
                self.say(f"agent: the server did not answer: {e}; trying again in {poll_s:.0f} s")
                self.beat.set("error", detail=str(e)[:500])
                line = "error"
                if once:
                    return 2
            except LabHostError as e:
                self.say(f"agent: {e}")
                self.beat.set("error", detail=str(e)[:500])
                return 2
            self.say(f"agent: {line}")
            if line.startswith(("bisect", "confirmation", "add-runs")) and "failed" in line:
                status = 1
            if line in ("idle", "error"):
                if once:
                    return status
                sleep(poll_s)

    def table(self) -> str:
        """The boots of this agent's life, one line each."""
        lines = [f"{'commit':12}  {'label':18} {'boot':11} {'boot s':>7} {'run s':>7}"]
        for r in self.log:
            lines.append(f"{r['commit'][:12]:12}  {r['label'][:18]:18} {r['boot']:11} "
                         f"{r.get('boot_s', 0):7.0f} {r.get('run_s', 0):7.0f}")
        return "\n".join(lines)

