"""A bisect job of the server's queue, worked by an agent: take good, bad and
the cell from the server, run the bisect search (iowatch.bisect.search) following
that cell, upload every measured step's bundle and post each step as it is
decided, then post the result: the first bad commit with subject and author,
what skips left undecided, and the provenance.

The driver measures in the virtual lab (build, boot, run), or replays
measurements recorded elsewhere (--variants/--bundles, as the lab pipeline
and the tests give them). Any failure (the range does not build, the ends do
not differ, the server goes away) is posted as a failed job with the reason
when the server still answers.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from iowatch import bundle, metrics
from iowatch.bisect.search import BisectResult, NothingToBisect, Step, drift_words, report, search
from iowatch.cells import PooledKey
from iowatch.ciapi import Client, ServerError
from iowatch.judging import Comparison
from iowatch.kernel.build import Plan
from iowatch.stats.verdict import CellVerdict


class JobError(RuntimeError):
    """The job cannot be worked: the message says why (it is posted as the failure)."""


@dataclass
class Assignment:
    """What the server hands an agent: a claim's answer, or a regression's detail."""
    regression: int
    job: int | None                 # the bisect job to post to; None: print only
    good: dict                      # {"kernel", "commit", "runs"}
    bad: dict
    cell: dict                      # {"study", "device_class", "filesystem", "group", "metric", "key"}
    host: str                       # where the regression's runs ran
    matrix: str
    tree: str | None = None
    branch: str | None = None
    kind: str = ""

    @property
    def nightly_run(self) -> str | None:
        """The nightly run whose arrival raised the regression: the newest bad run."""
        runs = self.bad.get("runs") or []
        return str(runs[-1]) if runs and self.kind == "nightly" else None


def from_claim(claim: dict) -> Assignment:
    return Assignment(claim["regression"], claim["id"], claim["good"], claim["bad"], claim["cell"],
                      claim["host"], claim["matrix"], claim.get("tree"), claim.get("branch"), "nightly"
                      if claim.get("branch") else "")


def claimed(client: Client, claim: dict) -> Assignment:
    """A claim's assignment, with the regression's kind and both ends' runs."""
    job = from_claim(claim)
    detail = client.regression(job.regression)
    job.kind = detail.get("kind", job.kind)
    for side in ("good", "bad"):
        getattr(job, side).setdefault("runs", (detail.get(side) or {}).get("runs", []))
    return job


def failed_body(job: Assignment, reason: str) -> dict:
    """The result a job that could not be worked posts: failed, with the reason."""
    return {"state": "failed", "first_bad": None, "candidates": [], "skipped": [],
            "error": reason[:10_000],
            "provenance": {"nightly": job.nightly_run, "good_runs": [], "bad_runs": []}}


def recorded_variants(path: Path) -> list:
    """The variants of a recorded range (`iowatch kernel build --json`'s rows)."""
    import json

    from iowatch.kernel.build import Variant
    rows = json.loads(Path(path).read_text())
    return [Variant(**{k: row[k] for k in Variant.__dataclass_fields__ if k in row}) for row in rows]


def from_regression(detail: dict) -> Assignment:
    """The regression's open bisect job and its cell; without one, its worst cell
    (the largest change) and nothing to post to."""
    job = detail.get("bisect")
    if job and job.get("state") == "running":
        # Another agent's steps would interleave with ours on the page and in the result.
        raise JobError(f"regression {detail['id']}: bisect #{job['id']} is running on "
                       f"{job.get('agent_host') or job.get('agent') or 'another agent'} since "
                       f"{job.get('claimed_at') or job.get('updated')}: wait for its result")
    open_job = job if job and job.get("state") == "queued" else None
    cell = (open_job or {}).get("cell")
    if not cell:
        cells = detail.get("cells") or []
        if not cells:
            raise JobError(f"regression {detail['id']} names no regressed cell to follow")
        worst = max(cells, key=lambda c: abs(c.get("change_pct") or 0.0))
        cell = {k: worst.get(k) for k in ("study", "device_class", "filesystem", "group", "metric")}
    trig = detail.get("trigger") or {}
    return Assignment(detail["id"], open_job["id"] if open_job else None,
                      detail.get("good") or {}, detail.get("bad") or {}, cell,
                      detail.get("host", ""), detail.get("matrix", ""), trig.get("tree"),
                      trig.get("branch"), detail.get("kind", ""))


def choose_cell(cmp: Comparison, cell: dict) -> CellVerdict:
    """The job's cell among good-vs-bad's regressions (choose_target's message when absent)."""
    def same(v: CellVerdict) -> bool:
        k = v.key
        return all(want in (None, "", got) for want, got in (
            (cell.get("study"), k.study), (cell.get("device_class"), k.device_class),
            (cell.get("filesystem"), k.filesystem), (cell.get("group"), k.group),
            (cell.get("metric"), k.metric)))
    found = [v for v in cmp.regressions if same(v)]
    if found:
        return max(found, key=lambda v: abs(v.change_pct or 0.0))
    seen = ", ".join(f"{v.key.group} {v.key.metric} {v.outcome}" for v in cmp.verdicts if same(v))
    raise NothingToBisect(
        f"good ({cmp.base.title}) and bad ({cmp.candidate.title}) show no regression of the job's "
        f"cell {cell.get('study')} {cell.get('device_class')} {cell.get('filesystem')} "
        f"[{cell.get('group')}] {cell.get('metric')} here: nothing to bisect"
        + (f" ({seen[:600]})" if seen else " (the matrix did not measure it)") + drift_words(cmp))


@dataclass
class Poster:
    """Uploads a job's bundles and posts its steps and result; with no job (or
    no client) it only remembers them, so a bisect without a queue still runs."""
    client: Client | None
    job: Assignment
    identity: Callable[[int], dict]           # variant index -> {"commit", "subject", "author"}
    say: Callable[[str], None] = print
    run_ids: dict[str, str] = field(default_factory=dict)   # bundle path -> run id
    steps: list[dict] = field(default_factory=list)

    def store(self, path: Path) -> None:
        run_id = bundle.load(path)["run_id"]
        self.run_ids[str(path)] = run_id
        if self.client is None:
            return
        from iowatch import paths
        from iowatch.upload import Spool, upload
        for o in upload([str(path)], self.client.server, self.client.token, Spool(paths.spool_dir())):
            if o.state not in ("sent", "already-stored"):
                raise ServerError(f"upload of {path} to {self.client.server}: {o.state}: {o.detail}")

    def runs_of(self, step: Step) -> list[str]:
        ids = []
        for r in step.runs:
            if r.bundle is not None:
                if str(r.bundle) not in self.run_ids:
                    self.store(r.bundle)  # a replayed measurement is uploaded when first used
                ids.append(self.run_ids[str(r.bundle)])
        return ids

    def step(self, step: Step, values: Callable[[Step], list[float]]) -> None:
        p = step.verdict
        metric = self.job.cell.get("metric") or ""
        try:
            unit = metrics.lookup(metric).unit
        except KeyError:
            unit = ""
        body = {**self.identity(step.index),
                "outcome": "skipped" if p is None else p.outcome,
                "median": None if p is None else p.median, "unit": unit,
                "repetitions": len(values(step)) if p is not None else 0,
                "run_ids": self.runs_of(step), "position": None if p is None else p.position}
        self.steps.append(body)
        self.say(f"bisect: step {body['commit'][:12]} {body['outcome']}"
                 + (f" (median {body['median']:.4g} {unit}, {body['repetitions']} repetitions; "
                    f"{p.words})" if p is not None else ""))
        if self.client is not None and self.job.job is not None:
            self.client.post_step(self.job.job, body)

    def result(self, body: dict) -> None:
        if self.client is not None and self.job.job is not None:
            self.client.post_result(self.job.job, body)


def result_body(result: BisectResult, poster: Poster) -> dict:
    """The contract's result of a search that ended: the first bad commit when the
    culprit model names one (its probability at least oracle.NAME_AT), else the
    candidates that together hold that probability; "probability" either way."""
    steps = {s.index: s for s in result.steps}
    skipped = sorted(i for i, s in steps.items() if s.verdict is None)
    found = result.culprit
    ends = {i: poster.runs_of(steps[i]) for i in (0, len(result.plan.variants) - 1)}
    body = {"state": "done",
            "first_bad": poster.identity(found.first_bad) if found.first_bad is not None else None,
            "candidates": [] if found.first_bad is not None else
            [poster.identity(i)["commit"] for i in found.candidates],
            "probability": round(found.probability, 4),
            "skipped": [poster.identity(i)["commit"] for i in skipped],
            "error": None,
            "provenance": {"nightly": poster.job.nightly_run, "good_runs": ends[0],
                           "bad_runs": ends[len(result.plan.variants) - 1]}}
    return body


def work(job: Assignment, plan: Plan, measure: Callable[[int, int, object], object], poster: Poster, *,
         say: Callable[[str], None] = print, history=None) -> tuple[BisectResult, dict]:
    """Search plan's variants with measure(), posting as it goes; returns the
    driver's result and the body posted (state done or failed). `history`: the
    host's record of its noise between boots (iowatch.judging.boots)."""
    from iowatch.bisect.search import side_of
    from iowatch.side_data import pool
    result = BisectResult(plan.series, plan)
    n = len(plan.variants) - 1
    t0 = time.monotonic()
    target_key: list[PooledKey] = []

    def values(step: Step) -> list[float]:
        return pool(side_of(step.runs)).values.get(target_key[0], []) if target_key else []

    def choose(cmp: Comparison) -> CellVerdict:
        v = choose_cell(cmp, job.cell)
        target_key[:] = [v.key.pooled]
        return v

    try:
        if n < 1:
            raise NothingToBisect("the range holds no commits after the good one")
        result.target, result.steps, result.last_good, result.first_bad, result.untestable = search(
            n, measure, choose=choose, say=say, on_step=lambda s: poster.step(s, values),
            history=history)
        body = result_body(result, poster)
    except (NothingToBisect, JobError) as e:
        result.reason = str(e)
        body = {"state": "failed", "first_bad": None, "candidates": [], "skipped": [],
                "error": str(e)[:10_000],
                "provenance": {"nightly": job.nightly_run, "good_runs": [], "bad_runs": []}}
    result.phases["total"] = time.monotonic() - t0
    poster.result(body)
    return result, body


def render(job: Assignment, result: BisectResult, body: dict) -> str:
    """What the agent prints at the end: the driver's report and the posted outcome."""
    lines = [report(result), ""]
    where = f"bisect #{job.job}" if job.job is not None else "no bisect job (nothing posted)"
    chance = f" (probability {body['probability']:.1%})" if body.get("probability") is not None else ""
    if body["state"] == "done" and body["first_bad"]:
        fb = body["first_bad"]
        lines.append(f"regression {job.regression}, {where}: first bad commit {fb['commit']} "
                     f"{fb['subject']}" + (f" ({fb['author']})" if fb.get("author") else "") + chance)
    elif body["state"] == "done":
        lines.append(f"regression {job.regression}, {where}: the first bad commit is one of "
                     + ", ".join(c[:12] for c in body["candidates"]) + chance)
    else:
        lines.append(f"regression {job.regression}, {where}: failed: {body['error']}")
    if body["skipped"]:
        lines.append("skipped: " + ", ".join(c[:12] for c in body["skipped"]))
    return "\n".join(lines)


def identities(plan: Plan, tree: Path | None) -> Callable[[int], dict]:
    """variant index -> the commit a maintainer knows ({"commit", "subject", "author"}).
    The variants are the range's commits re-applied in the work tree (new
    hashes); a git range's patch keeps the original commit's name, which the
    source tree resolves, with its subject and author. Without a tree (a replay)
    the variant's own commit and subject stand."""
    from iowatch.kernel.source import git
    known: dict[int, dict] = {}

    def identity(index: int) -> dict:
        if index in known:
            return known[index]
        v = plan.variants[index]
        commit, subject, author = v.commit, v.subject or "", ""
        if tree is not None:
            patch = next((p for p in plan.series.patches if p.index == index), None)
            ref = plan.base if index == 0 else (patch.name if patch else v.commit)
            out = git(tree, "log", "-1", "--format=%H%n%an <%ae>%n%s", ref, check=False)
            if out.returncode == 0 and out.stdout.count("\n") >= 2:
                commit, author, subject = out.stdout.split("\n", 2)
                subject = subject.strip()
        known[index] = {"commit": commit, "subject": subject, "author": author}
        return known[index]
    return identity
