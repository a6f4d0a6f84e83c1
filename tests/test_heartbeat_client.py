"""The agent's heartbeat (iowatch.heartbeat.Heartbeat over iowatch.ciapi.Client)
against a real `iowatch serve`: beats arrive at each phase change, the server
going away never stops the caller and is logged once, and when the server
comes back on the same store the newest state arrives."""
from __future__ import annotations

import logging
import time

import pytest

from iowatch.ciapi import Client
from iowatch.heartbeat import Heartbeat, HostState
from live_server import create_agent, free_port, get_json, running_server, scratch_database

WAIT_S = 60


def until(what, check, within: float = WAIT_S):
    """Poll `check` until it is true; fail naming `what` (not a timing assertion:
    the bound is only there so a broken beat fails instead of hanging)."""
    deadline = time.monotonic() + within
    while not check():
        if time.monotonic() > deadline:
            pytest.fail(f"{what} did not happen within {within} s")
        time.sleep(0.2)


def host(url: str, name: str) -> dict | None:
    try:
        return get_json(f"{url}/api/v1/hosts/{name}")
    except OSError:
        return None


@pytest.mark.webapp
def test_beats_reach_the_server_survive_its_outage_and_resume(caplog):
    caplog.set_level(logging.WARNING, logger="iowatch.heartbeat")
    with scratch_database() as env:
        port = free_port()
        first = running_server(env, port=port, workers=1, args=("--no-worker",))
        url, _ = first.__enter__()
        try:
            token = create_agent(env, "lab-agent", "lab-1")  # the server migrated the store
            with Heartbeat(Client(url, token), "lab-1", every=0.3) as beat:
                until("the first beat", lambda: (host(url, "lab-1") or {}).get("phase") == "idle")
                beat.set("building", job={"kind": "check", "id": 3}, commit="ab" * 20)
                until("the building beat", lambda: host(url, "lab-1")["phase"] == "building")
                state = host(url, "lab-1")
                assert state["job"] == {"kind": "check", "id": 3} and state["commit"] == "ab" * 20
                assert state["agent"] == "lab-agent" and state["reachable"] is True
                assert not [r for r in caplog.records if "not taken" in r.getMessage()]

                # The server goes away: the caller goes on setting, nothing raises.
                first.__exit__(None, None, None)
                first = None
                beat.set("booting", commit="cd" * 20, detail="grub-reboot once")
                beat.set("running", cell="f2fs-dio-write/sd0/f2fs", job={"kind": "check", "id": 3},
                         commit="cd" * 20)
                until("three missed beats", lambda: beat.missed >= 3)
                assert beat.outage and "no answer" in beat.outage
                warned = [r for r in caplog.records if "not taken" in r.getMessage()]
                assert len(warned) == 1, [r.getMessage() for r in caplog.records]  # once an outage

                # It comes back on the same store: the unsent changes arrive, in order.
                with running_server(env, port=port, workers=1, args=("--no-worker",)):
                    until("the beat after the outage",
                          lambda: (host(url, "lab-1") or {}).get("phase") == "running")
                    state = host(url, "lab-1")
                    assert state["cell"] == "f2fs-dio-write/sd0/f2fs" and state["reachable"] is True
                    assert [c["phase"] for c in state["changes"]] == ["running", "booting",
                                                                      "building", "idle"]
                    until("the outage to end", lambda: beat.outage is None)
                    assert any("taken again" in r.getMessage() for r in caplog.records)
                    assert len([r for r in caplog.records if "not taken" in r.getMessage()]) == 1
        finally:
            if first is not None:
                first.__exit__(None, None, None)


def test_a_bad_state_is_refused_by_the_caller_naming_the_field():
    beat = Heartbeat(Client("http://127.0.0.1:9"), "lab-1")
    with pytest.raises(ValueError, match="phase 'sleeping' is not one of idle"):
        beat.set("sleeping")
    with pytest.raises(ValueError, match="job kind 'lunch'"):
        beat.set("running", job={"kind": "lunch", "id": 1})
    with pytest.raises(ValueError, match="job id 'x'"):
        HostState("running", job={"kind": "bisect", "id": "x"})
    assert beat.state == HostState("idle")
