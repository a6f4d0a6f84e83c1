"""One rule of which runs make a side (iowatch.judging.sides.SideQuery, issue 27):
the dashboard's compare, `iowatch compare` of this machine's store (the sides its
`store_side` command hands back, read here in-process so the test database
serves them) and the verdict the server stores when a run arrives pool the
same runs for the same request.

The store holds a two-patch series on one host: the base kernel measured three
times and with a published run beside, the patch measured twice and once more
with a boot that failed and once as a bisect's step. The published run, the
failed boot and the bisect's step are no part of a side, whichever path reads
it: the HTTP API's too (`iowatch compare --server`), which reads each run's
trigger from the runs list.
"""
from __future__ import annotations

import json

import pytest

from bundle_maker import planted_bundle
from iowatch.cli import build_parser
from iowatch.commands import compare as compare_command
from iowatch.side_sources import load_side
from iowatch_web.dashboard import compare_page
from iowatch_web.regressions.models import StoredComparison
from iowatch_web.results.models import Kernel, Run
from iowatch_web.store.sides import store_side

pytestmark = pytest.mark.django_db(transaction=True)

BASE, PATCH = "a1b2c3d4e5f6", "f6e5d4c3b2a1"


def kernel(commit: str, patch: int) -> dict:
    return {"release": "6.12.0-iowatch", "git_commit": commit + "0" * 28, "config_hash": "c0ffee",
            "config": {"CONFIG_XFS_DEBUG": "n"}, "cmdline": "console=ttyS0 quiet",
            "series": {"name": "f2fs: dio write lock", "message_id": "<1@example.org>",
                       "base": "v6.12", "patch_count": 1},
            "patch": {"index": patch, **({"subject": "f2fs: drop the lock", "commit": commit[:7]}
                                         if patch else {})}}


@pytest.fixture
def stored(post):
    """The run ids of each kernel's measured runs, oldest first."""
    runs = {BASE: [], PATCH: []}
    for hour, (commit, patch, level) in enumerate(
            [(BASE, 0, 100), (BASE, 0, 102), (PATCH, 1, 99), (BASE, 0, 101), (PATCH, 1, 98)]):
        doc = planted_bundle({"write.bw_kib_s": [level + d for d in (-2, -1, 0, 1, 2)]},
                             kernel=kernel(commit, patch), started_at=f"2024-05-01T1{hour}:00:00Z")
        assert post(doc)[0] == 201
        runs[commit].append(doc["run_id"])
    published = planted_bundle({"write.bw_kib_s": [200.0]}, kernel=kernel(BASE, 0), published=True,
                               started_at="2024-05-01T09:00:00Z")
    failed = planted_bundle({"write.bw_kib_s": [1.0]}, kernel=kernel(PATCH, 1),
                            started_at="2024-05-01T19:00:00Z")
    failed.update(status="boot-failed", cells=[])
    step = planted_bundle({"write.bw_kib_s": [50.0, 51.0, 52.0]}, kernel=kernel(PATCH, 1),
                          started_at="2024-05-01T20:00:00Z")
    step.update(schema_version=2, trigger={"kind": "bisect", "regression": 7, "job": 3})
    for doc in (published, failed, step):
        assert post(doc)[0] == 201
    return runs


def cli_runs(base: str, candidate: str, capsys) -> dict:
    """The runs each side of `iowatch compare BASE CANDIDATE --format json` pooled."""
    args = build_parser("compare").parse_args(["compare", base, candidate, "--format", "json"])
    compare_command.run(args, store_side=store_side)
    out = json.loads(capsys.readouterr().out)
    return {role: out[role]["runs"] for role in ("base", "candidate")}


@pytest.mark.parametrize("request_for", [
    lambda runs: (BASE, PATCH),                       # kernels by commit prefix
    lambda runs: (BASE, runs[PATCH][-1]),             # a kernel against one run
])
def test_the_dashboard_and_iowatch_compare_pool_the_same_runs(stored, capsys, request_for):
    base, candidate = request_for(stored)
    page = compare_page.compare(base, candidate)
    cli = cli_runs(base, candidate, capsys)
    assert {role: page[role]["runs"] for role in ("base", "candidate")} == cli
    assert cli["base"] == stored[BASE]  # measured only, oldest first: no published run
    assert cli["candidate"] == (stored[PATCH] if candidate == PATCH else [candidate])


def test_the_stored_verdict_pools_what_the_pages_compare_link_pools(stored):
    base, candidate = (Kernel.objects.get(git_commit__startswith=c) for c in (BASE, PATCH))
    stored_cmp = StoredComparison.objects.get(reason="parent", base_kernel=base, candidate_kernel=candidate)
    page = compare_page.compare(f"kernel:{base.pk}", f"kernel:{candidate.pk}")
    for role, runs in (("base", stored_cmp.base_runs), ("candidate", stored_cmp.candidate_runs)):
        assert sorted(page[role]["runs"]) == sorted(str(r.run_id) for r in runs.all())
    assert page["base"]["runs"] == stored[BASE] and page["candidate"]["runs"] == stored[PATCH]
    assert Run.objects.filter(status="boot-failed").count() == 1


def test_the_http_api_pools_what_the_store_pools(stored, live_server):
    """`iowatch compare --server` reads a side through the runs API: the
    bisect's step is dropped there too (the runs list carries its trigger)."""
    for commit, runs in stored.items():
        side = load_side(commit, server=live_server.url, role="candidate")
        assert [r["run_id"] for r in side.runs] == runs
    assert Run.objects.filter(trigger__kind="bisect").count() == 1
