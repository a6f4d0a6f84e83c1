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


def job_name(claim: dict) -> str:
    """How the agent's lines name the job: a confirmation of a regression, or
    an add-runs job (an unsure cell's retrigger) of a comparison."""
    if claim.get("purpose") == "add-runs":
        return f"add-runs #{claim['id']} of comparison {claim.get('comparison')}"
    return f"confirmation #{claim['id']} of regression {claim.get('regression')}"


def _kernels(agent, claim: dict) -> dict:
    """The good and the bad kernel, built here."""
    kernels = {}
    for side in ("good", "bad"):
        commit = claim[side].get("commit")
        if not commit:
            raise ValueError(f"its {side} kernel {claim[side].get('kernel')} carries no git commit")
        kernels[side] = agent.builds.head(commit)[1]
        if kernels[side].status != "built":
            raise ValueError(f"the {side} commit {commit[:12]} does not build here: "
                             f"{(kernels[side].error or '')[-300:]}")
        _same_config(claim, side, kernels[side])
    return kernels


def _same_config(claim: dict, side: str, built) -> None:
    """An add-runs job's runs pool with its comparison's only when they are of
    its kernel: the same commit and the same config. A build here of another
    config would be stored as another kernel and refused at the end, after
    every boot: refuse it before the first."""
    wanted = claim[side].get("config_hash")
    if claim.get("purpose") != "add-runs" or not wanted or not built.config_hash or built.config_hash == wanted:
        return
    raise ValueError(
        f"the {side} kernel {claim[side].get('kernel')} ({claim[side]['commit'][:12]}) builds here with config "
        f"sha256 {built.config_hash[:12]}, the comparison's runs were of config {wanted[:12]}: its runs "
        "could not pool with them. Start the agent with the base config and fragments the comparison's "
        "kernels were built with (iowatch agent --config-base, --fragment), or check the series again on "
        "this host")


def _marked(path, claim: dict, side: str) -> None:
    """A confirmation's run carries the job in its trigger (never a side of an
    ordinary verdict); an add-runs run is an ordinary one that must join its
    kernel's side, so it carries that kernel's place in its series."""
    doc = bundle.load(path)
    if claim.get("purpose") == "add-runs":
        place = claim[side].get("series")
        if not place:
            return
        doc["kernel"]["series"] = {**(doc["kernel"].get("series") or {}),
                                   "name": place["name"], "base": place.get("base")}
        doc["kernel"]["patch"] = {**(doc["kernel"].get("patch") or {}), "index": place["patch_index"]}
    else:
        doc["trigger"] = {"kind": "confirm", "regression": claim["regression"], "job": claim["id"],
                          "side": side}
    bundle.write_manifest(path, doc)


def work_confirmation(agent, claim: dict) -> str:
    job_id, name = claim["id"], job_name(claim)
    tag = {"kind": "confirmation", "id": job_id}
    # An add-runs job asks for its repetitions of the comparison's matrix: its
    # runs are ordinary ones that pool into their kernels' sides.
    adding = claim.get("purpose") == "add-runs"
    reps = (claim.get("repetitions") or agent.reps) if adding else agent.reps
    matrix = ((claim.get("matrix") or agent.matrix) if adding
              else (agent.matrix or claim.get("matrix"))) or "check-quick"
    agent.say(f"agent: {agent.host.name}: {name} ({claim['device_class']}): "
              f"{claim['good']['kernel']} against {claim['bad']['kernel']}, "
              f"{claim['rounds']} round(s) ABAB" + (f", {reps} runs a boot" if adding and reps else ""))
    runs: dict[str, list[str]] = {"good": [], "bad": []}
    try:
        agent.beat.set("building", job=tag)
        kernels = _kernels(agent, claim)
        cells = cell_ids(claim["cells"], getattr(agent, "devices", {}))
        for k, side in enumerate(abab(claim["rounds"])):
            # Its one post comes at the end: between boots, ask whether it was cancelled.
            if (agent.client.get(f"confirmations/{job_id}") or {}).get("state") == "cancelled":
                raise JobCancelled(f"{name} was cancelled on the server")
            v = kernels[side]
            out = agent.out / f"confirm-{job_id}" / f"{k:02d}-{side}"
            label = f"add-runs {side}" if adding else f"confirm {side}"
            request = RunRequest(matrix, v.commit, label, reps, agent.profile, cells)
            booted, path = agent.boot_and_run(v, request, out, tag)
            if path is None:
                raise ValueError(f"the {side} kernel did not boot on {agent.host.name}: {booted.detail}")
            _marked(path, claim, side)
            runs[side].append(agent.upload(path, tag))
    except (ValueError, OSError, LabHostError) as e:
        return _failed(agent, job_id, name, str(e))
    except JobCancelled as e:
        return f"{name}: cancelled ({e})"
    finally:
        agent.restore()
    try:
        done = agent.client.post_confirmation(job_id, {"state": "done", "good_runs": runs["good"],
                                                       "bad_runs": runs["bad"]})
    except JobCancelled as e:
        return f"{name}: cancelled ({e})"
    except ServerError as e:
        if e.status != 400:
            raise
        # 400: the server refused the runs (another kernel, host or matrix): the job failed.
        return _failed(agent, job_id, name, str(e))
    return _said(name, done)


def _said(name: str, done: dict) -> str:
    rows = "; ".join(f"{r['group']} {r['metric']} {r['change_pct']:+.1f}% {r['outcome']}"
                     + (f" (n {r['base_n']} vs {r['candidate_n']})" if "base_n" in r else "")
                     for r in done.get("verdicts") or [] if r.get("change_pct") is not None)
    return (f"{name}: {done.get('state')}, "
            f"{done.get('outcome') or done.get('error') or 'judged again'}" + (f" ({rows})" if rows else ""))


def _failed(agent, job_id: int, name: str, reason: str) -> str:
    try:
        agent.client.post_confirmation(job_id, {"state": "failed", "error": reason[:10_000]})
    except JobCancelled as e:
        return f"{name}: cancelled ({e})"
    except ServerError as e:
        agent.say(f"agent: could not post {name} failed: {e}")
    return f"{name}: failed: {reason}"
