"""No request holds the service (issue 42 item 2), against `iowatch serve`:
four clients open the compare of two large runs cold while /api/v1/health is
asked every second on the health port (iowatch_web.site.health_wsgi).

Checked: every health poll is answered (within HEALTH_WAIT_S; the issue's
goal is under 1 s, and the figures are printed, not asserted), each client
is told "being computed" until the answer is made and then gets it, and the
answer was computed once, by the verdict worker, for all four. Before, the
four waited 106-111 s in their requests and health up to 105 s.

The suite's case compares two 10,000-cell runs; the issue's own, two
100,000-cell runs, is marked heavy (each bundle is about 45 MB and takes
minutes to store here): `make test-heavy` runs it, on PostgreSQL and on SQLite.
"""
from __future__ import annotations

import json
import statistics
import threading
import time
import urllib.error
import urllib.request

import pytest

from bundle_maker import planted_bundle, wire
from live_server import create_agent, free_port, get_json, running_server, scratch_database, \
    wait_verdict

CLIENTS = 4
# A poll not answered in this long counts as unanswered (the goal is under 1 s:
# a stalled server, as before, took 105 s).
HEALTH_WAIT_S = 5.0
REPETITIONS = 3
# The most devices a bundle lists (bundle-v2.json).
DEVICES = 1000
# The bundles' size: 100,000 cells are about 45 MB of JSON.
MAX_BUNDLE_BYTES = str(256 << 20)


def _bundle(cells: int, kernel: int, level: float) -> dict:
    """One run of `cells` cells of f2fs-dio-write's deciding metric, REPETITIONS
    repetitions each, no raw artifact. A cell is study/device/filesystem and a
    bundle has at most DEVICES devices, so the cells spread over them and over
    filesystems named f2fs-N. The two runs' matrices differ so the verdict
    worker does not compare them itself (only the compare does)."""
    doc = planted_bundle({"write.bw_kib_s": [level + 3 * r for r in range(REPETITIONS)]},
                         cells=cells, matrix=f"big-{kernel}", host="lab-1",
                         kernel={"release": f"6.12.0-big{kernel}", "git_commit": f"{kernel:012x}",
                                 "config_hash": "c0ffee"})
    doc["devices"] = doc["devices"][:DEVICES]
    for c, cell in enumerate(doc["cells"]):
        device, filesystem = f"sd{c % DEVICES}", f"f2fs-{c // DEVICES}"
        cell.update(id=f"{cell['study']}/{device}/{filesystem}", device=device,
                    filesystem=filesystem)
        for rep in cell["repetitions"]:
            rep["artifacts"] = []
    return doc


def _upload(url: str, token: str, doc: dict) -> None:
    request = urllib.request.Request(f"{url}/api/v1/bundles", data=wire(doc), method="POST",
                                     headers={"Authorization": f"Bearer {token}",
                                              "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=1800) as r:
        assert r.status == 201, r.read()


def _poll_health(url: str, stop: threading.Event, polls: list) -> None:
    """Ask health every second until stopped: (seconds, status or the error)."""
    while not stop.is_set():
        t = time.perf_counter()
        try:
            with urllib.request.urlopen(url, timeout=HEALTH_WAIT_S) as r:
                r.read()
                polls.append((time.perf_counter() - t, r.status))
        except (OSError, urllib.error.URLError) as e:
            polls.append((time.perf_counter() - t, f"{type(e).__name__}: {e}"))
        stop.wait(max(0.0, 1.0 - (time.perf_counter() - t)))


def _open_compare(url: str, out: list) -> None:
    """A reader: ask, and while told "being computed", ask again after Retry-After."""
    t0 = time.perf_counter()
    asks, first = 0, None
    while True:
        with urllib.request.urlopen(url, timeout=600) as r:
            asks += 1
            first = first if first is not None else time.perf_counter() - t0
            body = json.loads(r.read())
            if r.status == 200:
                out.append({"first_answer_s": first, "answered_s": time.perf_counter() - t0,
                            "asks": asks, "computed": body["computed"],
                            "cells": body["cell_count"]})
                return
            assert r.status == 202 and body["state"] == "computing", body
            time.sleep(float(r.headers["Retry-After"]))


def _served_compare(cells: int) -> None:
    with scratch_database() as env:
        env["IOWATCH_MAX_BUNDLE_BYTES"] = MAX_BUNDLE_BYTES
        health_port = free_port()
        with running_server(env, health_port=health_port) as (url, _):
            token = create_agent(env, "big-agent", "lab-1")
            t = time.perf_counter()
            docs = [_bundle(cells, 1, 20000.0), _bundle(cells, 2, 18000.0)]
            for doc in docs:
                _upload(url, token, doc)
                wait_verdict(url, doc["run_id"])
            print(f"\nstored two runs of {cells} cells in {time.perf_counter() - t:.1f} s")
            _four_cold_readers(url, f"http://127.0.0.1:{health_port}/api/v1/health",
                               docs[0]["run_id"], docs[1]["run_id"], cells)


def beside_health(health: str, read, url: str) -> tuple[list, list]:
    """CLIENTS readers each call read(url, answers) at once while health is
    asked every second: the polls (seconds, status) and the readers' answers."""
    polls: list = []
    stop = threading.Event()
    poller = threading.Thread(target=_poll_health, args=(health, stop, polls))
    poller.start()
    answers: list = []
    readers = [threading.Thread(target=read, args=(url, answers)) for _ in range(CLIENTS)]
    try:
        time.sleep(1.5)  # health polled before the reads too
        for r in readers:
            r.start()
        for r in readers:
            r.join()
        time.sleep(1.5)
    finally:
        stop.set()
        poller.join()
    seconds = [s for s, _ in polls]
    print(f"health: {len(polls)} polls, max {max(seconds) * 1000:.0f} ms, "
          f"median {statistics.median(seconds) * 1000:.0f} ms (goal: max under 1000 ms)")
    return polls, answers


def _four_cold_readers(url: str, health: str, base: str, candidate: str, cells: int) -> None:
    compare = f"{url}/dashboard/api/compare?base={base}&candidate={candidate}"
    polls, answers = beside_health(health, _open_compare, compare)
    for a in answers:
        print(f"reader: first answer in {a['first_answer_s'] * 1000:.0f} ms, the compare after "
              f"{a['answered_s']:.1f} s and {a['asks']} asks; computed once in "
              f"{a['computed']['seconds']:.1f} s")
    assert [status for _, status in polls] == [200] * len(polls)
    assert len(answers) == CLIENTS and {a["cells"] for a in answers} == {cells}
    # Each was first told "being computed": none computed it in its request.
    assert min(a["asks"] for a in answers) >= 2
    # One computation, the same for every reader.
    assert {(a["computed"]["at"], a["computed"]["times"]) for a in answers} == \
        {(answers[0]["computed"]["at"], 1)}
    # The web port answers health too, now that no request computes.
    assert get_json(f"{url}/api/v1/health")["status"] == "ok"


def test_four_cold_readers_of_a_10k_compare_leave_health_answering():
    _served_compare(10_000)


@pytest.mark.slow
@pytest.mark.heavy
def test_four_cold_readers_of_a_100k_compare_leave_health_answering():
    _served_compare(100_000)
