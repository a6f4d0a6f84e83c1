"""A confirmation job worked on this agent's host (the server's
regressions/confirm.py says what it is and judges it): the good and the bad
kernel built here, then booted in turn, ABAB (good, bad, good, bad, ...: a
drift of the host over the hour falls on both sides alike), the regressed
cells run after each boot and uploaded with the job in their trigger; then
the job is handed back with the runs, and the server's outcome is printed."""
from __future__ import annotations

from iowatch import bundle
from iowatch.agent.hosts import LabHostError, RunRequest
from iowatch.ciapi import JobCancelled, ServerError


def abab(rounds: int) -> list[str]:
    """The boots' order: good, bad, good, bad, ..."""
    return ["good", "bad"] * max(rounds, 1)


def cell_ids(cells: list[dict], devices: dict[str, list[str]]) -> list[str]:
    return sorted({f"{c['study']}/{name}/{c['filesystem']}"
                   for c in cells for name in devices.get(c["device_class"], [])})


def work_confirmation(agent, claim: dict) -> str:
    job_id, regression = claim["id"], claim["regression"]
    tag = {"kind": "confirmation", "id": job_id}
    agent.say(f"agent: {agent.host.name}: confirmation #{job_id} of regression {regression} "
              f"({claim['device_class']}): {claim['good']['kernel']} against {claim['bad']['kernel']}, "
              f"{claim['rounds']} round(s) ABAB")
    runs: dict[str, list[str]] = {"good": [], "bad": []}
    try:
        agent.beat.set("building", job=tag)
        kernels = {}
        for side in ("good", "bad"):
            commit = claim[side].get("commit")
            if not commit:
                raise ValueError(f"its {side} kernel {claim[side].get('kernel')} carries no git commit")
            kernels[side] = agent.builds.head(commit)[1]
            if kernels[side].status != "built":
                raise ValueError(f"the {side} commit {commit[:12]} does not build here: "
                                 f"{(kernels[side].error or '')[-300:]}")
        cells = cell_ids(claim["cells"], getattr(agent, "devices", {}))
        # An add-runs job (an unsure cell's retrigger) asks for its repetitions, and
        # its runs are ordinary ones: they pool into their kernels' sides on arrival.
        adding = claim.get("purpose") == "add-runs"
        reps = (claim.get("repetitions") or agent.reps) if adding else agent.reps
        matrix = agent.matrix or claim.get("matrix") or "check-quick"
        for k, side in enumerate(abab(claim["rounds"])):
            # Its one post comes at the end: between boots, ask whether it was cancelled.
            if (agent.client.get(f"confirmations/{job_id}") or {}).get("state") == "cancelled":
                raise JobCancelled(f"confirmation #{job_id} was cancelled on the server")
            v = kernels[side]
            out = agent.out / f"confirm-{job_id}" / f"{k:02d}-{side}"
            request = RunRequest(matrix, v.commit, f"confirm {side}", reps, agent.profile, cells)
            booted, path = agent.boot_and_run(v, request, out, tag)
            if path is None:
                raise ValueError(f"the {side} kernel did not boot on {agent.host.name}: {booted.detail}")
            if not adding:
                doc = bundle.load(path)
                doc["trigger"] = {"kind": "confirm", "regression": regression, "job": job_id,
                                  "side": side}
                bundle.write_manifest(path, doc)
            runs[side].append(agent.upload(path, tag))
    except (ValueError, OSError, LabHostError) as e:
        return _failed(agent, job_id, regression, str(e))
    except JobCancelled as e:
        return f"confirmation #{job_id} of regression {regression}: cancelled ({e})"
    finally:
        agent.restore()
    try:
        done = agent.client.post_confirmation(job_id, {"state": "done", "good_runs": runs["good"],
                                                       "bad_runs": runs["bad"]})
    except JobCancelled as e:
        return f"confirmation #{job_id} of regression {regression}: cancelled ({e})"
    rows = "; ".join(f"{r['metric']} {r['change_pct']:+.1f}% {r['outcome']}"
                     for r in done.get("verdicts") or [] if r.get("change_pct") is not None)
    return (f"confirmation #{job_id} of regression {regression}: {done.get('state')}, "
            f"{done.get('outcome') or done.get('error')}" + (f" ({rows})" if rows else ""))


def _failed(agent, job_id: int, regression: int, reason: str) -> str:
    try:
        agent.client.post_confirmation(job_id, {"state": "failed", "error": reason[:10_000]})
    except JobCancelled as e:
        return f"confirmation #{job_id} of regression {regression}: cancelled ({e})"
    except ServerError as e:
        agent.say(f"agent: could not post confirmation #{job_id} failed: {e}")
    return f"confirmation #{job_id} of regression {regression}: failed: {reason}"
