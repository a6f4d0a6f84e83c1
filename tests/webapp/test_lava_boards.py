"""LAVA's board states on the hosts page (issue 45 item 4): `iowatch manage
refresh_lava_boards` asks each LAVA lab of the inventory for its board
classes' boards (a real HTTP server answering LAVA 2023.01's recorded
answers, tests/lava/fixtures) and stores them; the page reads the stored
rows, never LAVA, and says how old they are, or that the lab was not
reached and why, keeping the boards it last saw."""
from __future__ import annotations

import sys
from datetime import timedelta
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from iowatch_web.hosts.models import LavaBoardState, LavaLabRefresh

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lava"))
from recorded_lava import RecordedLava  # noqa: E402

pytestmark = pytest.mark.django_db

REPO = Path(__file__).resolve().parents[2]
DEVICES = "/api/v0.2/devices/?device_type=qemu"


@pytest.fixture
def lava(tmp_path, monkeypatch):
    """A recorded LAVA; the repository's inventory with its lab pointed there."""
    with RecordedLava() as server:
        inv = tmp_path / "inventory.yml"
        inv.write_text((REPO / "hardware-inventory.yml").read_text()
                       .replace("http://127.0.0.1:8010/", server.url))
        monkeypatch.setenv("IOWATCH_LAVA_TOKEN", "lava-token")
        server.inventory = str(inv)
        yield server


def _refresh(lava) -> str:
    from io import StringIO
    out = StringIO()
    call_command("refresh_lava_boards", "--inventory", lava.inventory, stdout=out)
    return out.getvalue()


def _section(client) -> str:
    page = client.get("/hosts/").content.decode()
    return page[page.index('id="lava-boards"'):] if 'id="lava-boards"' in page else ""


def test_the_boards_are_stored_and_shown_with_their_age(lava, client):
    lava.answer("GET", DEVICES, "devices-qemu.json")
    said = _refresh(lava)
    assert "lava_local (" + lava.url + "): 4 board(s) of qemu: 1 bad health, 1 idle, 1 offline, 1 running" in said
    assert [(r["path"], r["authorization"]) for r in lava.requests] == [(DEVICES, "Token lava-token")]
    assert list(LavaBoardState.objects.values_list("hostname", "label", "state", "health")) == [
        ("qemu-01", "idle", "Idle", "Good"), ("qemu-02", "running", "Running", "Good"),
        ("qemu-03", "bad health", "Idle", "Bad"), ("qemu-04", "offline", "Idle", "Maintenance")]
    # The page reads the store: LAVA is not asked again.
    asked = len(lava.requests)
    section = _section(client)
    assert len(lava.requests) == asked
    assert "lava_local" in section and lava.url in section
    assert "0\xa0minutes ago): 1 idle, 1 running, 1 offline, 1 bad health." in section
    assert ('<tr id="board-qemu-03"><td>qemu-03</td><td>qemu</td><td><span class="board bad-health">'
            'bad health</span></td><td>Idle, health Bad</td><td>worker-1</td></tr>') in section
    assert '<span class="board offline">offline</span>' in section
    # Two hours later, with no refresh since, the page says how old they are.
    LavaLabRefresh.objects.update(tried_at=timezone.now() - timedelta(hours=2),
                                  reached_at=timezone.now() - timedelta(hours=2))
    assert "(2\xa0hours ago)" in _section(client)


def test_a_lab_not_reached_is_said_with_the_error_and_its_last_boards_kept(lava, client):
    lava.answer("GET", DEVICES, "devices-qemu.json")
    _refresh(lava)
    lava.answer("GET", DEVICES, "devices-401.json", status=401)
    with pytest.raises(CommandError, match="a LAVA lab was not reached"):
        _refresh(lava)
    lab = LavaLabRefresh.objects.get()
    assert lab.error == f"LAVA refused GET {lava.url}api/v0.2/devices/ (401): Invalid token."
    section = _section(client)
    assert '<span class="unreachable">not reached</span> at ' in section
    assert f"LAVA refused GET {lava.url}api/v0.2/devices/ (401): Invalid token." in section
    assert "The boards below are as it last answered, at " in section
    assert LavaBoardState.objects.count() == 4 and 'id="board-qemu-01"' in section


def test_a_lab_never_reached_and_a_missing_token_are_said(lava, client, monkeypatch):
    monkeypatch.delenv("IOWATCH_LAVA_TOKEN")
    with pytest.raises(CommandError):
        _refresh(lava)
    assert lava.requests == []
    section = _section(client)
    assert "takes its API token from the environment variable IOWATCH_LAVA_TOKEN, which is not set" in section
    assert "It has never answered." in section and "No board of its device types." in section
    # A server that is gone: its error names the URL.
    monkeypatch.setenv("IOWATCH_LAVA_TOKEN", "lava-token")
    Path(lava.inventory).write_text(Path(lava.inventory).read_text().replace(lava.url, "http://127.0.0.1:9/"))
    with pytest.raises(CommandError):
        _refresh(lava)
    assert "LAVA at http://127.0.0.1:9/api/v0.2/devices/" in LavaLabRefresh.objects.get().error
    assert "did not answer" in _section(client)


def test_no_lava_lab_no_section(client, tmp_path):
    inv = tmp_path / "inventory.yml"
    inv.write_text("all:\n  hosts:\n    box:\n      iowatch_kind: local\n")
    call_command("refresh_lava_boards", "--inventory", str(inv))
    assert LavaLabRefresh.objects.count() == 0 and _section(client) == ""


def test_every_n_seconds_it_asks_again_and_goes_on_past_a_lab_not_reached(lava, client):
    """As a service (--every): each refresh reads the inventory and asks LAVA;
    a refusal is stored and said, and the loop goes on."""
    from io import StringIO
    lava.answer("GET", DEVICES, "devices-401.json", status=401)
    out = StringIO()
    call_command("refresh_lava_boards", "--inventory", lava.inventory, "--every", "0.05",
                 "--count", "3", stdout=out)
    assert [r["path"] for r in lava.requests] == [DEVICES] * 3
    assert out.getvalue().count(": not reached: ") == 3
    assert LavaLabRefresh.objects.get().error.endswith("(401): Invalid token.")
    lava.answer("GET", DEVICES, "devices-qemu.json")
    call_command("refresh_lava_boards", "--inventory", lava.inventory, "--every", "0.05",
                 "--count", "1", stdout=StringIO())
    assert LavaLabRefresh.objects.get().error in ("", None) and LavaBoardState.objects.count() == 4
    with pytest.raises(CommandError, match="at most once a second"):
        call_command("refresh_lava_boards", "--inventory", lava.inventory, "--every", "0.5")
