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
