"""`iowatch bisect --regression ID` and `--next`: a bisect job of the server's
queue, worked in the virtual lab or replayed over recorded measurements.
Not a subcommand itself (iowatch.commands.bisect hands over to run_job)."""
from __future__ import annotations

import contextlib
import json
import sys
import time
from pathlib import Path

from iowatch import inventory, paths, progress, resources
from iowatch.side_sources import server_history


def _fail(client, job, reason: str) -> int:
    """Post the job failed with the reason (when there is a job and a server); exit 1."""
    from iowatch.bisect.job import failed_body
    from iowatch.ciapi import ServerError
    print(f"iowatch bisect: {reason}", file=sys.stderr)
    if job is not None and job.job is not None:
        try:
            client.post_result(job.job, failed_body(job, reason))
            print(f"bisect: posted bisect #{job.job} failed", file=sys.stderr)
        except ServerError as e:
            print(f"iowatch bisect: could not post the failure either: {e}", file=sys.stderr)
            return 2
    return 1


def _assignment(args, client):
    """The job to work: claimed (--next) or the regression's; None when nothing is queued."""
    from iowatch.bisect.job import claimed, from_regression
    if args.next:
        claim = client.claim(args.host)
        if claim is None:
            return None
        job = claimed(client, claim)
        print(f"bisect: claimed bisect #{job.job} of regression {job.regression} for {args.host}",
              flush=True)
        return job
    return from_regression(client.regression(args.regression))


def _replay_plan(args, good: str, bad: str):
    """The plan of recorded measurements: --variants as `iowatch kernel build --json`
    printed them, whose ends must be the job's good and bad commits."""
    from iowatch.bisect.job import recorded_variants
    from iowatch.kernel.build import Plan
    from iowatch.kernel.series import Series
    variants = recorded_variants(Path(args.variants))
    if len(variants) < 2 or variants[0].index != 0:
        raise ValueError(f"{args.variants}: needs the base (index 0) and at least one commit after it")
    for end, want, v in (("good", good, variants[0]), ("bad", bad, variants[-1])):
        if not (v.commit.startswith(want) or want.startswith(v.commit)):
            raise ValueError(f"{args.variants}: its {end} end is {v.commit[:12]}, the job's {end} "
                             f"commit is {want[:12]}: record the job's range")
    here = Path(".")
    return Plan(here, here, here, Series(Path(args.variants).stem, args.variants, ()),
                variants[0].commit, variants)


def _usage_problem(args) -> str:
    """What is wrong with the options of a queued bisect, or ""."""
    if not args.server:
        return "--regression and --next need --server URL (or $IOWATCH_SERVER)"
    if args.next and args.regression is not None:
        return "give --regression ID or --next, not both"
    if bool(args.variants) != bool(args.bundles):
        return "give --variants and --bundles together (a replay)"
    return ""


@contextlib.contextmanager
def _beating(client, host: str | None, job):
    """A held job's host beats while it works: a claim whose host never beats
    goes back to the queue after the timeout (iowatch_web.hosts.giveback). A
    bisect with no job of the server's (printed, not posted) holds nothing."""
    from iowatch.heartbeat import Heartbeat

    if job.job is None:
        yield
        return
    with Heartbeat(client, host) as beat:
        beat.set("running", job={"kind": "bisect", "id": job.job})
        yield


def run_job(args) -> int:
    from iowatch.bisect.search import NeedMeasurement, guest_measure, recorded
    from iowatch.bisect.job import JobError, Poster, identities, render, work
    from iowatch.ciapi import Client, JobCancelled, ServerError
    from iowatch.commands.guest_options import PLAIN_HOST, HostError, qemu_host
    from iowatch.kernel.build import configure, make_variants
    from iowatch.kernel.series import SeriesError
    from iowatch.kernel.series_input import load_series
    from iowatch.kernel.source import SourceError, open_source
    from iowatch.yamlfile import DataFileError
    wrong = _usage_problem(args)
    if wrong:
        print(f"iowatch bisect: {wrong}", file=sys.stderr)
        return 2
    # Steps and results name the host measured on: the token must be granted it.
    client = Client(args.server, args.token or "", host=args.host)
    try:
        job = _assignment(args, client)
    except (ServerError, KeyError, JobError) as e:
        print(f"iowatch bisect: {e}", file=sys.stderr)
        return 2
    if job is None:
        print(f"bisect: no bisect job queued on {args.server}")
        return 0
    good, bad = job.good.get("commit"), job.bad.get("commit")
    if not (good and bad):
        return _fail(client, job, f"regression {job.regression}: its good ({job.good.get('kernel')}) "
                                  f"and bad ({job.bad.get('kernel')}) kernels must both carry a git "
                                  "commit (kernel.git_commit of their runs) to be bisected")
    # A path, not a name: the guest resolves it from the run command (iowatch.vlab).
    matrix = str(resources.matrix_path(args.matrix or job.matrix or "check-quick").resolve())
    say = (lambda s: progress.current().say(s))
    _announce(job, good, bad)
    out = Path(args.out) if args.out else \
        paths.data_dir() / "bisects" / f"regression-{job.regression}-{time.strftime('%Y%m%d-%H%M%S')}"
    # Each step's bundle says it is this bisect's evidence (iowatch.bisect.search.mark_step).
    step_trigger = {"regression": job.regression, **({"job": job.job} if job.job is not None else {})}
    try:
        if args.variants:
            plan, tree = _replay_plan(args, good, bad), None
            measure = recorded(plan, Path(args.bundles), step_trigger, steps=out / "steps")
        else:
            host = qemu_host(args.inventory, args.hosts or PLAIN_HOST, "the bisect agent measures on a qemu host "
                             "(a lab host's bisect boots each commit with the Jenkins pipeline's "
                             "--variants/--bundles steps)")
            tree = open_source(args.source or job.tree)
            plan = make_variants(tree, good, load_series(f"{good}..{bad}", tree))
            failed = next((v for v in plan.variants if v.status == "apply-failed"), None)
            if failed:
                return _fail(client, job, f"cannot bisect: {failed.error}")
            configure(plan)
            measure = None  # made below, once the poster can store
    except (OSError, ValueError, DataFileError, HostError, SourceError, SeriesError) as e:
        return _fail(client, job, f"cannot bisect regression {job.regression}: {e}")
    poster = Poster(client if job.job is not None else None, job, identities(plan, tree), say)
    if job.job is None:
        print(f"bisect: regression {job.regression} has no open bisect job: the steps and the "
              "result are printed, not posted (a maintainer queues one with the Bisect button)",
              flush=True)
    if measure is None:
        measure = guest_measure(plan, host, Path(args.inventory or inventory.default_path()), matrix,
                                out, profile=args.profile, reps=args.reps, store=poster.store,
                                say=say, echo_console=args.console, trigger=step_trigger)
    try:
        with progress.from_args(args, "bisect"), _beating(client, args.host, job):
            # Ends and steps of one boot each read the host's record from the server.
            result, body = work(job, plan, measure, poster, say=say,
                                history=server_history(client, job.host))
    except NeedMeasurement as e:
        return _fail(client, job, f"{args.bundles}: {e}; the replay needs every measurement it asks for")
    except JobCancelled as e:
        print(f"bisect: #{job.job} was cancelled on the server; stopped: {e}", file=sys.stderr)
        return 1
    except ServerError as e:
        _fail(client, job, f"the server stopped answering mid-bisect: {e}")
        return 2
    print()
    print(render(job, result, body))
    _keep(out, job, poster, body)
    return 0 if body["state"] == "done" else 1


def _announce(job, good: str, bad: str) -> None:
    c = job.cell
    print(f"bisect: regression {job.regression} ({job.kind or 'regression'}), "
          f"{good[:12]} (good) .. {bad[:12]} (bad), following {c.get('study')} "
          f"{c.get('device_class')} {c.get('filesystem')} [{c.get('group')}] {c.get('metric')}", flush=True)


def _keep(out: Path, job, poster, body: dict) -> None:
    """The job, its steps and its result, beside the bundles (bisect-job.json)."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "bisect-job.json").write_text(json.dumps({"job": job.__dict__, "steps": poster.steps,
                                                     "result": body}, indent=1, default=str) + "\n")
    print(f"bisect: details in {out / 'bisect-job.json'}")
