"""A bisect job of the server's queue, worked on a lab host: the search of
iowatch.bisect.search (the same one the virtual lab's bisect runs), whose
measure() builds the commit here, boots it on the host with the kernel role
and runs the followed cell there. Steps and the result are posted as the
virtual lab's bisect posts them (iowatch.bisect.job)."""
from __future__ import annotations

from pathlib import Path

from iowatch import bundle
from iowatch.agent.confirm import cell_ids
from iowatch.agent.hosts import RunRequest
from iowatch.ciapi import JobCancelled, ServerError


def cells_of(cell: dict, devices: dict[str, list[str]], want: dict[str, int] | None = None,
             studies: dict | None = None) -> list[str]:
    """The bundle cell ids a measurement runs on this host: the followed cell
    with its ratio partner, and the cells judging's next_measurement wants
    (`want`, the search's); [] when the followed cell names no study,
    filesystem or class and nothing more is wanted: the whole matrix runs."""
    from iowatch import resources
    from iowatch.judging import with_partners
    from iowatch.studies import load_studies
    followed = []
    if cell.get("study") and cell.get("filesystem") and cell.get("device_class"):
        followed = cell_ids([cell], devices)
    if not followed and not want:
        return []
    return with_partners([*followed, *(want or {})],
                         studies if studies is not None else load_studies(resources.studies_dir()))


def work_bisect(agent, claim: dict) -> str:
    from iowatch.bisect.job import JobError, Poster, claimed, identities, work
    from iowatch.bisect.search import mark_step, measurement_dir
    from iowatch.check import VariantRun, failure_bundle
    job = claimed(agent.client, claim)
    tag = {"kind": "bisect", "id": job.job}
    good, bad = job.good.get("commit"), job.bad.get("commit")
    agent.say(f"agent: {agent.host.name}: bisect #{job.job} of regression {job.regression}, "
              f"{(good or '?')[:12]}..{(bad or '?')[:12]}, following {job.cell.get('study')} "
              f"{job.cell.get('device_class')} {job.cell.get('filesystem')} {job.cell.get('metric')}")
    if not (good and bad):
        return _failed(agent, job, f"regression {job.regression}: its good and bad kernels must "
                                   "both carry a git commit to be bisected")
    agent.beat.set("building", job=tag, detail=f"{good[:12]}..{bad[:12]}")
    try:
        plan = agent.builds.plan_for(good, bad)
    except (OSError, ValueError, RuntimeError) as e:
        return _failed(agent, job, f"cannot make the range {good[:12]}..{bad[:12]}: {e}")
    matrix = agent.matrix or job.matrix or "check-quick"
    out = agent.out / f"bisect-{job.job}"
    identity = identities(plan, agent.builds.tree)
    poster = Poster(agent.client, job, identity, agent.say)
    trigger = {"kind": "bisect", "regression": job.regression, "job": job.job}

    def measure(index: int, attempt: int, want: dict[str, int] | None = None) -> list:
        agent.beat.set("building", job=tag, detail=f"variant {index}")
        v = agent.builds.built(plan, index)
        if v.status != "built":
            return [VariantRun(v, None, status=v.status, reason=v.error or "")]
        where = measurement_dir(out, index, attempt)
        booted, path = agent.boot_and_run(
            v, RunRequest(matrix, v.commit, v.label, max(want.values()) if want else agent.reps,
                          agent.profile, cells_of(job.cell, getattr(agent, "devices", {}), want),
                          known_as=identity(index)["commit"]),
            where, tag)
        if path is None:
            # The server records the boot failure as the step's run (no cells).
            path = failure_bundle(where, v, plan, agent.inventory_host, "boot-failed", booted.detail, {})
            mark_step(path, trigger)
            poster.store(path)
            return [VariantRun(v, path, status="boot-failed", reason=booted.detail)]
        mark_step(path, trigger)
        poster.store(path)
        return [VariantRun(v, path, status=bundle.load(path)["status"])]

    try:
        # Each end and step is one boot here: the regression's host's record of
        # its noise between boots, from the server (iowatch.judging.boots).
        from iowatch.side_sources import server_history
        result, body = work(job, plan, measure, poster, say=agent.say,
                            history=server_history(agent.client, job.host))
    except JobError as e:
        return _failed(agent, job, str(e))
    except JobCancelled as e:
        # An administrator stopped it: nothing more is measured or posted for it.
        return f"bisect #{job.job} of regression {job.regression}: cancelled ({e})"
    finally:
        agent.restore()
    first = body.get("first_bad") or {}
    return (f"bisect #{job.job} of regression {job.regression}: {body['state']}"
            + (f", first bad {first.get('commit', '')[:12]} {first.get('subject', '')}" if first else "")
            + (f": {body.get('error')}" if body.get("error") else ""))


def _failed(agent, job, reason: str) -> str:
    from iowatch.bisect.job import failed_body
    try:
        agent.client.post_result(job.job, failed_body(job, reason))
    except JobCancelled as e:
        return f"bisect #{job.job} of regression {job.regression}: cancelled ({e})"
    except ServerError as e:
        agent.say(f"agent: could not post bisect #{job.job} failed: {e}")
    return f"bisect #{job.job} of regression {job.regression}: failed: {reason}"


def recorded_range(variants_json: Path):
    """Builds over a recorded range (`iowatch kernel build --json`'s rows): the
    dry run's and the tests' plan, nothing built."""
    from iowatch.bisect.job import recorded_variants
    from iowatch.kernel.build import Plan
    from iowatch.kernel.series import Series
    variants = recorded_variants(variants_json)

    def plan_for(good: str, bad: str):
        ends = (variants[0].commit, variants[-1].commit)
        if not (ends[0].startswith(good[:12]) and ends[1].startswith(bad[:12])):
            raise ValueError(f"{variants_json} records {ends[0][:12]}..{ends[1][:12]}, the job is "
                             f"{good[:12]}..{bad[:12]}")
        here = Path(".")
        return Plan(here, here, here, Series(Path(variants_json).stem, str(variants_json), ()),
                    variants[0].commit, variants)

    return plan_for, (lambda plan, index: plan.variants[index])
