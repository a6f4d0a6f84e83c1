"""A second host's confirmation of a regression (issue 29, docs/lab.md §7).

A regression opened on a lab host (host kind bare-metal, or lava: a board
class of a LAVA lab) is re-run on another lab host that has a device of the
regressed cells' class, when the lab has one: a ConfirmJob that host's agent
claims (`iowatch agent`). The agent
boots the good and the bad kernel in turn, ABAB, runs the regressed cells
after each boot and uploads the runs with the trigger
{"kind": "confirm", "job", "regression", "side"} (such runs are never a side of
an ordinary verdict: JUDGED_TRIGGERS). When it hands the job back, the runs
are judged here with the one policy (iowatch.judging.compare_sides, the
studies' deciding metrics and minimum effects) and the regressed cells are
looked up by what does not depend on the host: study, device class,
filesystem, job group and metric.

The mail (iowatch.mailreport) goes out only after the confirmation: while
one is queued or running the report is refused with the reason; when the lab
has no second host of the class, the mail says why it was not confirmed.
"""
from __future__ import annotations

from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from iowatch.vocabulary import DEFAULT_CAP, FDR
from iowatch.judging import compare_sides
from iowatch.vocabulary.outcomes import UNDECIDED_OUTCOMES
from iowatch_web.regressions.models import CONFIRM_OPEN, ConfirmJob, Regression, StoredVerdict
from iowatch_web.results.models import Device, Run
from iowatch_web.store.sides import boot_history, judging_studies, one_host, runs_side

# The hosts an agent works: lab machines and LAVA board classes (iowatch.lava.host).
LAB_KINDS = ("bare-metal", "lava")
ROUNDS = 2


def regressed_cells(regression: Regression) -> list[dict]:
    """The regressed cells by what holds on any host of the class."""
    seen, out = set(), []
    for v in regression.regressed_cells().select_related("study"):
        cell = {"study": v.study.slug, "device_class": v.device_class, "filesystem": v.filesystem,
                "group": v.group, "metric": v.metric_id}
        key = tuple(cell.values())
        if key not in seen:
            seen.add(key)
            out.append(cell)
    return out


def second_host(regression: Regression, device_class: str) -> str | None:
    """Another lab host with a device of the class: the one that ran last."""
    here = regression.comparison.host
    hosts = (Device.objects.filter(device_class=device_class, host__kind__in=LAB_KINDS)
             .exclude(host=here).values("host__name")
             .annotate(last=Max("runs__received_at")).order_by("-last", "host__name"))
    first = hosts.first()
    return first["host__name"] if first else None


def queue_for(regression: Regression) -> list[ConfirmJob]:
    """Queue the confirmations a newly opened regression asks for: one per
    device class of its regressed cells that another lab host has."""
    if regression.comparison.host.kind not in LAB_KINDS:
        return []
    cells = regressed_cells(regression)
    jobs = []
    good, bad = regression.comparison.base_kernel, regression.comparison.candidate_kernel
    for cls in sorted({c["device_class"] for c in cells if c["device_class"]}):
        host = second_host(regression, cls)
        if host is None:
            continue
        job = regression.confirmations.filter(host=host, state__in=CONFIRM_OPEN).first()
        jobs.append(job or ConfirmJob.objects.create(
            regression=regression, host=host, device_class=cls, rounds=ROUNDS,
            cells=[c for c in cells if c["device_class"] == cls],
            good_kernel=good.release, good_commit=good.git_commit,
            bad_kernel=bad.release, bad_commit=bad.git_commit))
    return jobs


class NoRunsToAdd(ValueError):
    """The cell asks for no more runs: decided, or its budget is spent."""


def queue_runs(verdict: StoredVerdict) -> ConfirmJob:
    """Perfherder's retrigger for an unsure cell: a job on the comparison's own
    host (it has the cell's device class, and its runs pool into the same
    comparison) that runs both kernels again for the repetitions the cell
    needs, never past its cap: the estimate when it is within reach, else up
    to the cap. The confirmation machinery carries it (purpose "add-runs"):
    the host's agent claims it at POST /confirmations/claim. An open one for
    the same cell is kept."""
    if verdict.outcome not in UNDECIDED_OUTCOMES:
        raise NoRunsToAdd(f"cell {verdict.cell_key} [{verdict.group}] {verdict.metric_id} is "
                          f"{verdict.outcome}: only an unsure or suspected cell asks for more runs")
    cap = verdict.cap or DEFAULT_CAP
    room = cap - min(verdict.base_n, verdict.candidate_n)
    if verdict.budget_spent or room <= 0:
        raise NoRunsToAdd(f"cell {verdict.cell_key} has spent its budget of {cap} runs a side")
    comparison = verdict.comparison
    cell = {"study": verdict.study.slug, "device_class": verdict.device_class,
            "filesystem": verdict.filesystem, "group": verdict.group, "metric": verdict.metric_id}
    open_job = ConfirmJob.objects.filter(purpose="add-runs", comparison=comparison,
                                         state__in=CONFIRM_OPEN, cells=[cell]).first()
    if open_job is not None:
        return open_job
    good, bad = comparison.base_kernel, comparison.candidate_kernel
    return ConfirmJob.objects.create(
        purpose="add-runs", comparison=comparison, host=comparison.host.name,
        device_class=verdict.device_class, cells=[cell], rounds=1,
        repetitions=min(verdict.needs_runs or room, room),
        good_kernel=good.release, good_commit=good.git_commit,
        bad_kernel=bad.release, bad_commit=bad.git_commit)


def added_runs_refused(job: ConfirmJob, good: list[str], bad: list[str]) -> str | None:
    """Why an add-runs job's runs cannot join its comparison's sides, or None:
    a side pools the runs of its kernel on the comparison's host and matrix, so a
    run of another kernel (another config or series place), host or matrix
    would be stored and judged apart, and the cell would stay unsure."""
    c = job.comparison
    wanted = {"good": c.base_kernel, "bad": c.candidate_kernel}
    for side, ids in (("good", good), ("bad", bad)):
        for run in Run.objects.filter(run_id__in=ids).select_related("kernel", "host"):
            where = {"kernel": (run.kernel_id, wanted[side].pk, f"{run.kernel}", f"{wanted[side]}"),
                     "host": (run.host_id, c.host_id, run.host.name, c.host.name),
                     "matrix": (run.matrix, c.matrix, run.matrix, c.matrix)}
            for what, (got, want, said, asked) in where.items():
                if got != want:
                    return (f"{side} run {run.run_id}: its {what} is {said}, comparison #{c.pk}'s "
                            f"{side} side is {asked}: the run cannot pool with it")
    return None


def claim(agent, host: str, holds_none: bool = False) -> ConfirmJob | None:
    """The oldest queued confirmation for this host, now running for `agent`;
    a job whose host stopped beating (or, holds_none, whose agent started
    again without it) is given back first."""
    from iowatch_web.hosts.giveback import give_back_held, give_back_stuck
    give_back_stuck(ConfirmJob, "confirmation")
    if holds_none:
        give_back_held(ConfirmJob, "confirmation", host, agent)
    while True:
        with transaction.atomic():
            job = (ConfirmJob.objects.filter(state="queued", host=host).order_by("created", "id")
                   .select_for_update(skip_locked=True).first())
            if job is None:
                return None
            now = timezone.now()
            if ConfirmJob.objects.filter(pk=job.pk, state="queued").update(
                    state="running", agent=agent, agent_host=host, claimed_at=now, updated=now):
                return ConfirmJob.objects.get(pk=job.pk)


def judge(job: ConfirmJob) -> None:
    """Judge the job's runs (good against bad) and record, per regressed cell,
    what this host showed; the job is confirmed when one of them regressed here too."""
    good = Run.objects.filter(run_id__in=job.good_runs).select_related("kernel")
    bad = Run.objects.filter(run_id__in=job.bad_runs).select_related("kernel")
    judged = compare_sides(runs_side(f"{job.good_kernel} on {job.host}", good),
                           runs_side(f"{job.bad_kernel} on {job.host}", bad),
                           studies=judging_studies(), fdr=FDR, history=boot_history(one_host([*good, *bad])))
    wanted = {(c["study"], c["device_class"], c["filesystem"], c["group"], c["metric"]) for c in job.cells}
    rows = []
    for v in judged.verdicts:
        k = v.key
        if (k.study, k.device_class, k.filesystem, k.group, k.metric) not in wanted:
            continue
        rows.append({"study": k.study, "device_class": k.device_class, "device": k.device,
                     "filesystem": k.filesystem, "group": k.group, "metric": k.metric,
                     "outcome": v.outcome, "change_pct": v.change_pct, "ci_low": v.ci_low,
                     "ci_high": v.ci_high, "base_n": v.base.n, "candidate_n": v.candidate.n})
    job.verdicts = rows
    job.outcome = "confirmed" if any(r["outcome"] == "regression" for r in rows) else "not-confirmed"
    if not rows:
        job.state, job.error = "failed", ("none of the regressed cells was measured on both sides "
                                          f"on {job.host}: its runs hold other cells")


def state(regression: Regression) -> dict:
    """What the regression's detail, page and mail say about its confirmation:
    {state, words, hosts: [...], jobs: [...]}. state: pending, confirmed,
    only-here, unconfirmable (no second host of the class) or failed."""
    here = regression.comparison.host.name
    jobs = list(regression.confirmations.order_by("created", "id"))
    rows = [{"id": j.id, "host": j.host, "device_class": j.device_class, "state": j.state,
             "outcome": j.outcome, "verdicts": j.verdicts, "error": j.error,
             "good_runs": j.good_runs, "bad_runs": j.bad_runs,
             "claimed_at": j.claimed_at.isoformat() if j.claimed_at else None,
             "finished_at": j.finished_at.isoformat() if j.finished_at else None} for j in jobs]
    if regression.comparison.host.kind not in LAB_KINDS:
        return {"state": "not-asked", "words": "", "jobs": rows}
    pending = [j for j in jobs if j.open]
    if pending:
        return {"state": "pending", "jobs": rows,
                "words": "awaiting confirmation on " + ", ".join(
                    f"{j.host} ({j.state})" for j in pending)}
    done = [j for j in jobs if j.state == "done"]
    if not jobs:
        classes = sorted({c["device_class"] for c in regressed_cells(regression)}) or ["its class"]
        return {"state": "unconfirmable", "jobs": rows,
                "words": f"not confirmed on a second host: the lab has no other host with "
                         f"a {' or '.join(classes)} device"}
    if not done:
        return {"state": "failed", "jobs": rows,
                "words": "not confirmed: the confirmation on " + ", ".join(
                    f"{j.host} failed ({(j.error or '')[:200]})" for j in jobs)}
    confirmed = [j.host for j in done if j.outcome == "confirmed"]
    total = len(done) + 1
    if confirmed:
        return {"state": "confirmed", "jobs": rows,
                "words": f"confirmed on {len(confirmed) + 1} of {total} hosts ({here}, "
                         + ", ".join(confirmed) + ")"}
    others = "; ".join(f"{j.host}: " + ", ".join(
        f"{r['metric']} {r['change_pct']:+.1f}% ({r['outcome']})" for r in j.verdicts
        if r.get("change_pct") is not None) for j in done)
    return {"state": "only-here", "jobs": rows,
            "words": f"only on {here}: not reproduced on {others}"}
