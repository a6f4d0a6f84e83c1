"""What the dashboard's browser tests share beside fixtures: the untrusted
text they plant, where their screenshots go, and an agent's upload."""
from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOTS = ROOT / "test-artifacts" / "screenshots"
SCRIPT = "<script>alert(1)</script>"


def screenshot(page, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)


NOISE = [-10, 4, 10, -4, 0]


def claim_kernel(commit: int) -> dict:
    return {"release": "6.12.0-iowatch", "git_commit": f"{commit:012x}", "config_hash": "c0ffee",
            "config": {"CONFIG_EXT4_DEBUG": "n"}, "cmdline": "console=ttyS0 quiet"}


def uploader(agent: str):
    """post(doc): upload a wire-form bundle as a new agent through the ingest API,
    then do its verdict work with the queue's own task runner, as a worker would."""
    from io import StringIO

    from bundle_maker import wire
    from django.core.management import call_command
    from django.test import Client

    from iowatch_web.regressions.work import drain

    out = StringIO()
    call_command("create_agent", agent, stdout=out)
    token = out.getvalue().strip().split()[-1]
    client = Client()

    def post(doc: dict) -> None:
        response = client.post("/api/v1/bundles", wire(doc), content_type="application/json",
                               HTTP_AUTHORIZATION=f"Bearer {token}")
        assert response.status_code == 201, response.content
        drain()

    return post


def stored_lava_labs() -> None:
    """Two LAVA labs as refresh_lava_boards left them (tests/webapp/test_lava_boards.py
    makes such rows from LAVA's recorded answers): one answered five minutes ago,
    one not reached now (its boards three hours old), with requests' long error."""
    from datetime import timedelta

    from django.utils import timezone

    from iowatch_web.hosts.models import LavaBoardState, LavaLabRefresh
    now = timezone.now()
    fresh = LavaLabRefresh.objects.create(lab="lava_local", server="http://127.0.0.1:8010/",
                                          tried_at=now - timedelta(minutes=5),
                                          reached_at=now - timedelta(minutes=5))
    down = LavaLabRefresh.objects.create(
        lab="lava_vendor", server="https://lava.storage-lab.example.org/", tried_at=now,
        reached_at=now - timedelta(hours=3),
        error="LAVA at https://lava.storage-lab.example.org/api/v0.2/devices/?device_type="
              "rk3399-gru-kevin did not answer: HTTPSConnectionPool(host='lava.storage-lab.example.org', "
              "port=443): Max retries exceeded (Caused by NewConnectionError('Failed to establish a "
              "new connection: [Errno 111] Connection refused'))")
    for lab, name, kind, state, health, label in (
            (fresh, "qemu-01", "qemu", "Idle", "Good", "idle"),
            (fresh, "qemu-02", "qemu", "Running", "Good", "running"),
            (fresh, "qemu-03", "qemu", "Idle", "Bad", "bad health"),
            (down, "rk3399-gru-kevin-cbg-0-with-a-long-hostname", "rk3399-gru-kevin", "Idle",
             "Maintenance", "offline")):
        LavaBoardState.objects.create(lab=lab, hostname=name, device_type=kind, state=state,
                                      health=health, label=label, worker="worker-1")


def level(mean: float) -> list[float]:
    return [mean + e for e in NOISE]


def kernel(commit: int, series: str | None = None, patch: int | None = None,
           subject: str = "") -> dict:
    k = {"release": "6.12.0-iowatch", "git_commit": f"{commit:012x}", "config_hash": "c0ffee",
         "config": {"CONFIG_XFS_DEBUG": "n"}, "cmdline": "console=ttyS0 quiet"}
    if series is not None:
        k["series"] = {"name": series, "base": "v6.12", "patch_count": 2,
                       "message_id": "<series@example.org>"}
        if patch:
            k["patch"] = {"index": patch, "subject": subject, "commit": f"{commit:07x}"}
        else:
            k["patch"] = {"index": 0}
    return k


def at(hour: int) -> str:
    return f"2024-05-{1 + hour // 24:02d}T{hour % 24:02d}:00:00Z"
