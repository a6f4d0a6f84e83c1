"""A nightly run of a tracked branch: build its head, run the matrix on one
target, upload the bundle marked as a nightly, wait for the server's verdict
and say what it found.

The target is a qemu host of the inventory (the head is built incrementally
and booted in the virtual lab, as a check boots its variants) or a lab host
already booted into the head: the kernel role puts iowatch.commit=<sha> on
the booted kernel's command line, and a host running another kernel is
refused. The server does the finding (change points over each series key the
run touched, confirmed by the verdict policy, a nightly regression and its
bisect job); this side only reads it back, so Jenkins runs one command.
"""
from __future__ import annotations

import datetime as dt
import os
import platform
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from iowatch import bundle, exit_status, paths, progress, resources
from iowatch.ciapi import Client
from iowatch.inventory import Host

# Exit codes of `iowatch nightly`: the Jenkins stage goes red or yellow on them.
NO_REGRESSION, REGRESSION, ERROR, UNDECIDED = (exit_status.CLEAN, exit_status.REGRESSION,
                                               exit_status.ERROR, exit_status.UNDECIDED)

DEFAULT_WAIT_S = 1800.0
# Boots of the night's kernel in the virtual lab: two, so that the night's side
# holds the noise between boots (one boot a side is at most "suspected"
# unless the host has a record of it: iowatch.judging.boots).
DEFAULT_BOOTS = 2
POLL_S = 2.0


class NightlyError(RuntimeError):
    """The nightly cannot go on: the message says what and what to do."""


def say_phase(message: str) -> None:
    """One line per phase through the command's display (iowatch.progress):
    timestamped in Jenkins' log, above the bars on a terminal."""
    progress.current().say(f"nightly: {message}")


def trigger(branch: str, tree: str, night: dt.date | None = None) -> dict:
    """The bundle's trigger object of a nightly run (schemas/bundle-v2.json)."""
    night = night or dt.datetime.now(dt.timezone.utc).date()
    return {"kind": "nightly", "branch": branch, **({"tree": tree} if tree else {}),
            "night": night.isoformat()}


def mark_nightly(bundle_dir: Path, trig: dict) -> dict:
    """Put the trigger into the bundle's manifest. A nightly kernel is a branch
    head, not a variant of a series: the series and patch the virtual lab's run
    wrote for its one variant are dropped, and the label says nightly."""
    doc = bundle.load(bundle_dir)
    doc["trigger"] = trig
    doc["label"] = "nightly"
    doc["kernel"].pop("series", None)
    doc["kernel"].pop("patch", None)
    bundle.write_manifest(bundle_dir, doc)
    return doc


def running_commit(cmdline: str | None = None) -> str | None:
    """The commit the kernel role booted (iowatch.commit= on /proc/cmdline), if any."""
    if cmdline is None:
        try:
            cmdline = Path("/proc/cmdline").read_text()
        except OSError:
            return None
    for word in cmdline.split():
        if word.startswith("iowatch.commit="):
            return word.split("=", 1)[1] or None
    return None


def lab_commit(host: Host, expected: str | None, given: bool, cmdline: str | None = None) -> str:
    """The commit a lab host (or the local target) runs, checked against the one
    the nightly expects. `given`: the caller said with --kernel-commit that the
    host already runs `expected`, which stands when the kernel carries no mark."""
    running = running_commit(cmdline)
    if running and expected and not (running.startswith(expected) or expected.startswith(running)):
        raise NightlyError(
            f"{host.name} runs commit {running[:12]} (iowatch.commit on its kernel command line, "
            f"release {platform.release()}), not {expected[:12]}: boot the branch head first "
            "(ansible-playbook ansible/kernel.yml -l HOST -e kernel_variant_dir=DIR with the "
            "directory `iowatch nightly --build-only DIR` made)")
    if running:
        return expected if expected and len(expected) > len(running) else running
    if given and expected:
        return expected
    raise NightlyError(
        f"{host.name} runs {platform.release()}, which the kernel role did not boot (no "
        "iowatch.commit= on /proc/cmdline): boot the branch head with ansible/kernel.yml, or "
        "say which commit it runs with --kernel-commit")


@dataclass
class Finding:
    id: int
    kind: str
    state: str
    good: str
    bad: str
    cells: list[str]
    bisect: str        # the bisect job's state, or "none"

    def line(self) -> str:
        return (f"regression {self.id} ({self.kind}, {self.state}): {self.good} -> {self.bad}; "
                f"bisect {self.bisect}; " + "; ".join(self.cells[:6])
                + (f" (+{len(self.cells) - 6} more)" if len(self.cells) > 6 else ""))


@dataclass
class NightlyOutcome:
    run_id: str | None = None
    bundle: Path | None = None
    commit: str | None = None
    verdict: str | None = None
    findings: list[Finding] = field(default_factory=list)
    undecided: int = 0  # deciding cells the server left unsure or suspected against the previous run
    states: list[str] = field(default_factory=list)  # the server's stored states of this run's comparisons
    error: str = ""
    phases: dict[str, float] = field(default_factory=dict)

    @property
    def exit_code(self) -> int:
        if self.error:
            return ERROR
        if self.findings:
            return REGRESSION
        undecided = self.undecided or set(self.states) & set(exit_status.UNDECIDED_STATES)
        return UNDECIDED if undecided else NO_REGRESSION


def _side_label(side: dict | None, kernel: dict | None) -> str:
    side, kernel = side or {}, kernel or {}
    release = side.get("kernel") or kernel.get("release") or "?"
    commit = side.get("commit") or kernel.get("git_commit")
    return f"{release}" + (f" ({commit[:12]})" if commit else "")


def bad_runs(detail: dict) -> list[str]:
    """The runs of a regression's bad side: the contract's bad.runs, else candidate_runs."""
    return [str(r) for r in ((detail.get("bad") or {}).get("runs") or detail.get("candidate_runs") or [])]


def finding(detail: dict) -> Finding:
    cells = [f"{c.get('study')} {c.get('device') or c.get('device_class')} {c.get('filesystem')} "
             f"[{c.get('group')}] {c.get('metric')} {c.get('change_pct', 0) or 0:+.1f}%"
             for c in detail.get("cells", [])]
    job = detail.get("bisect")
    return Finding(detail["id"], detail.get("kind", "?"), detail.get("state", "?"),
                   _side_label(detail.get("good"), detail.get("base_kernel")),
                   _side_label(detail.get("bad"), detail.get("candidate_kernel")),
                   cells, job["state"] if job else "none")


def wait_for_verdict(client: Client, run_id: str, wait_s: float,
                     sleep: Callable[[float], None] = time.sleep) -> str:
    """Poll the run until the server's verdict work is done; NightlyError on
    failure or when wait_s passes."""
    deadline = time.monotonic() + wait_s
    state = "?"
    while True:
        run = client.run(run_id)
        verdict = run.get("verdict") or {}
        state = verdict.get("state", "?")
        if state == "done":
            return state
        if state == "failed":
            raise NightlyError(f"the server's verdict work on run {run_id} failed after "
                               f"{verdict.get('attempts')} attempts: {verdict.get('error')}")
        if time.monotonic() >= deadline:
            raise NightlyError(f"run {run_id}: the server's verdict is still {state} after "
                               f"{wait_s:.0f} s; is its verdict worker running (iowatch serve "
                               "starts one)? Look later at "
                               f"{client.url('runs/' + run_id)}, or wait longer with --wait")
        sleep(POLL_S)


def findings_for(client: Client, run_id: str, host: str) -> list[Finding]:
    """The regressions whose bad side holds this run, newest first."""
    found = []
    for reg in client.regressions(host=host, limit=100):
        detail = client.regression(reg["id"])
        if run_id in bad_runs(detail):
            found.append(finding(detail))
    return found


def _upload(out: Path, client: Client) -> None:
    from iowatch.upload import Spool, upload
    outcomes = upload([str(out)], client.server, client.token, Spool(paths.spool_dir()))
    for o in outcomes:
        if o.state not in ("sent", "already-stored"):
            raise NightlyError(f"upload of {out} to {client.server}: {o.state}: {o.detail} "
                               "(the bundle stays in the spool; `iowatch upload` retries it)")


def upload_boot(out: Path, trig: dict, client: Client) -> str:
    """A boot of the night's kernel that is not its last: marked and uploaded,
    not waited on (the server pools the night's runs); its run id."""
    doc = mark_nightly(out, trig)
    _upload(out, client)
    return doc["run_id"]


def report_and_wait(out: Path, trig: dict, client: Client, host: Host, result: NightlyOutcome,
                    wait_s: float, say: Callable[[str], None]) -> NightlyOutcome:
    """Mark, upload, wait for the verdict, read the findings: the part every target shares."""
    doc = mark_nightly(out, trig)
    result.run_id, result.bundle = doc["run_id"], out
    t0 = time.monotonic()
    _upload(out, client)
    result.phases["upload"] = time.monotonic() - t0
    say(f"uploaded run {result.run_id} ({doc['status']}) to {client.server}; waiting for the verdict")
    t0 = time.monotonic()
    result.verdict = wait_for_verdict(client, result.run_id, wait_s)
    result.phases["verdict"] = time.monotonic() - t0
    result.findings = findings_for(client, result.run_id, host.name)
    verdict = client.run(result.run_id).get("verdict") or {}
    result.undecided = int(verdict.get("undecided") or 0)
    result.states = list(verdict.get("states") or [])
    return result


def run_on_lab_host(host: Host, matrix: str, out: Path, commit: str, trig: dict, client: Client, *,
                    profile: str | None = None, reps: int | None = None,
                    wait_s: float = DEFAULT_WAIT_S,
                    say: Callable[[str], None] = say_phase) -> NightlyOutcome:
    """The matrix on the host this runs on, whose kernel lab_commit() checked."""
    from iowatch.runner import Runner
    from iowatch.studies import load_matrix
    result = NightlyOutcome(commit=commit)
    if os.geteuid() != 0:
        raise NightlyError("the matrix needs root (loop devices, mkfs, mount, drop_caches): "
                           "run iowatch nightly with sudo on the lab host")
    say(f"running {matrix} on {host.name} ({platform.release()}, commit {commit[:12]})")
    t0 = time.monotonic()
    Runner(load_matrix(matrix), host, out, profile=profile, reps=reps, kernel_commit=commit,
           label="nightly", command=f"iowatch nightly --branch {trig['branch']} --target {host.name}",
           progress=progress.current()).run()
    result.phases["matrix"] = time.monotonic() - t0
    return report_and_wait(out, trig, client, host, result, wait_s, say)


def build_head(tree: Path, branch: str):
    """The branch head as the one variant of an empty series, configured and
    built incrementally in the shared build directory: (plan, variant)."""
    from iowatch.kernel.build import build_variant, configure, make_variants
    from iowatch.kernel.series import Series
    plan = make_variants(tree, branch, Series("nightly-" + branch.replace("/", "_"), branch, ()))
    configure(plan)
    v = plan.variants[0]
    build_variant(plan, v)
    return plan, v


def run_in_vlab(tree: Path, branch: str, host: Host, inventory: Path, matrix: str, out: Path,
                trig: dict, client: Client, *, profile: str | None = None, reps: int | None = None,
                wait_s: float = DEFAULT_WAIT_S, say: Callable[[str], None] = say_phase,
                echo_console: bool = False, boots: int = DEFAULT_BOOTS) -> NightlyOutcome:
    """Build the head and boot it `boots` times in the virtual lab with the
    matrix (iowatch.check's path), each boot a run of its own: the server pools
    the night's runs, so its side has the noise between boots in its test
    (issue 41 item 1). Every boot but the last is uploaded as it ends; the
    verdict is waited for on the last."""
    from iowatch.check import run_variant
    t0 = time.monotonic()
    plan, v = build_head(tree, branch)
    result = NightlyOutcome(commit=v.commit)
    result.phases["build"] = time.monotonic() - t0
    if v.status == "built":
        say(f"built {branch} {v.commit[:12]} as {v.release} in {v.build_s} s"
            f"{' (incremental)' if v.incremental else ''}; booting it on {host.name}")
    matrix = str(resources.matrix_path(matrix).resolve())  # the guest's run takes a path
    # A head that does not build or boot gets run_variant's failure bundle: it is
    # uploaded as that night's run, so the server records the failure, never a result.
    for k in range(1, boots + 1):
        where = out if boots == 1 else out / f"boot-{k}"
        if boots > 1:
            say(f"boot {k} of {boots} of {v.commit[:12]} on {host.name}")
        vr = run_variant(plan, v, host, inventory, matrix, where, profile=profile, reps=reps,
                         say=say, echo_console=echo_console, phases=result.phases)
        if vr.status not in ("passed", "failed"):
            why = f"{branch} {v.commit[:12]} on {host.name}: {vr.status}: {vr.reason.strip()[-800:]}"
            if vr.bundle is not None:
                why += f" (recorded on {client.server} as run {upload_boot(vr.bundle, trig, client)})"
            raise NightlyError(why)
        if k < boots:
            upload_boot(vr.bundle, trig, client)
    return report_and_wait(vr.bundle, trig, client, host, result, wait_s, say)


def render(result: NightlyOutcome, branch: str) -> str:
    """What the nightly prints at the end: the run, the verdict, the findings."""
    lines = [f"nightly {branch}: run {result.run_id} (commit {(result.commit or '?')[:12]}), "
             f"verdict {result.verdict}"]
    if result.findings:
        lines.append(f"{len(result.findings)} regression(s) with this run on the bad side:")
        lines += [f"  {f.line()}" for f in result.findings]
    else:
        lines.append("no regression with this run on the bad side")
    if result.undecided:
        lines.append(f"undecided: {result.undecided} deciding cell(s) still unsure or suspected "
                     "against the previous run (exit 3)")
    elif result.exit_code == UNDECIDED:
        lines.append(f"undecided: the server's comparison is {', '.join(result.states)} with no "
                     "deciding cell unsure (a drifted platform, or no deciding cell in common) "
                     "(exit 3)")
    if result.phases:
        lines.append("phases: " + ", ".join(f"{k} {v:.0f} s" for k, v in result.phases.items()))
    return "\n".join(lines)

