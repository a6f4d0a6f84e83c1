"""Health holds while four clients read the largest accepted bundle's run page
(issue 44), against `iowatch serve`, as test_compare_served holds it for a
compare: /api/v1/health is asked every second on the health port while four
clients each open the run page of one large run (HTML, its first page of
cells) at once.

Checked: every health poll is answered (within HEALTH_WAIT_S; the goal is under
1 s, and the figures are printed, not asserted) and every reader gets its page.
The suite's case reads a 10,000-cell run; the issue's own, 100,000 cells (about
45 MB of bundle, minutes to store here), is marked heavy: `make test-heavy`
runs it, on PostgreSQL and on SQLite.
"""
from __future__ import annotations

import time
import urllib.request

import pytest

from live_server import create_agent, free_port, get_json, running_server, scratch_database, \
    wait_verdict
from test_compare_served import CLIENTS, MAX_BUNDLE_BYTES, _bundle, _upload, beside_health


def _open_run_page(url: str, out: list) -> None:
    t0 = time.perf_counter()
    with urllib.request.urlopen(url, timeout=600) as r:
        body = r.read()
        out.append({"status": r.status, "seconds": time.perf_counter() - t0, "bytes": len(body),
                    "names_the_run": url.rstrip("/").rsplit("/", 1)[-1].encode() in body})


def _served_run_page(cells: int) -> None:
    with scratch_database() as env:
        env["IOWATCH_MAX_BUNDLE_BYTES"] = MAX_BUNDLE_BYTES
        health_port = free_port()
        with running_server(env, health_port=health_port) as (url, _):
            token = create_agent(env, "big-agent", "lab-1")
            t = time.perf_counter()
            doc = _bundle(cells, 1, 20000.0)
            _upload(url, token, doc)
            wait_verdict(url, doc["run_id"])
            print(f"\nstored a run of {cells} cells in {time.perf_counter() - t:.1f} s")
            _four_readers(url, f"http://127.0.0.1:{health_port}/api/v1/health",
                          f"{url}/runs/{doc['run_id']}/")


def _four_readers(url: str, health: str, page: str) -> None:
    polls, answers = beside_health(health, _open_run_page, page)
    for a in answers:
        print(f"reader: the run page ({a['bytes']} bytes) in {a['seconds']:.1f} s")
    assert [status for _, status in polls] == [200] * len(polls)
    assert [(a["status"], a["names_the_run"]) for a in answers] == [(200, True)] * CLIENTS
    assert get_json(f"{url}/api/v1/health")["status"] == "ok"


def test_four_readers_of_a_10k_run_page_leave_health_answering():
    _served_run_page(10_000)


@pytest.mark.slow
@pytest.mark.heavy
def test_four_readers_of_a_100k_run_page_leave_health_answering():
    _served_run_page(100_000)
