"""The run page reads as a person reads it (issue 44, item 18): its raw
artifacts download, the kernel command line shows the command virtme-ng ran
in the guest instead of its base64, and no value is Python's repr."""
from __future__ import annotations

import base64
import hashlib
import re

import pytest

from bundle_maker import make_bundle

pytestmark = pytest.mark.django_db(transaction=True)
GUEST_COMMAND = "echo IOWATCH-GUEST-BOOTED; iowatch run /work/main/jobs/e2e.yml --target vlab"


def _run(post) -> dict:
    doc = make_bundle(cells=1, samples=2)
    blob = base64.b64encode(GUEST_COMMAND.encode()).decode()
    doc["kernel"]["cmdline"] = f"console=ttyS0 panic=-1 virtme.exec=`{blob}` quiet"
    doc.setdefault("environment", {})["devices"] = {"sd0": {"rotational": True, "scheduler": "bfq"}}
    doc["devices"][0]["rotational"] = False
    assert post(doc)[0] == 201, doc
    return doc


def test_the_artifacts_of_a_run_download_as_they_were_uploaded(post, client):
    doc = _run(post)
    page = client.get(f"/runs/{doc['run_id']}/").content.decode()
    links = re.findall(r'<a href="(/api/v1/artifacts/\d+)" download>([^<]+)</a>', page)
    assert links, page[page.index("Raw artifacts"):]
    raw = {a["name"]: a["content"] for c in doc["cells"] for r in c["repetitions"]
           for a in r.get("artifacts", [])}
    for url, name in links:
        response = client.get(url)
        assert response.status_code == 200 and response["Content-Disposition"].startswith("attachment")
        body = b"".join(response.streaming_content) if response.streaming else response.content
        assert body == raw[name].encode()
        assert response["Digest"] == f"sha-256={hashlib.sha256(body).hexdigest()}"


def test_the_command_line_shows_the_guests_command_decoded(post, client):
    doc = _run(post)
    page = client.get(f"/runs/{doc['run_id']}/").content.decode()
    row = re.search(r"<th>kernel command line</th><td><code>(.*?)</code>", page, re.S)[1]
    assert f"virtme.exec=`{GUEST_COMMAND}`" in row and "quiet" in row
    assert base64.b64encode(GUEST_COMMAND.encode()).decode() not in page


def test_no_value_is_shown_as_a_python_repr(post, client):
    doc = _run(post)
    page = client.get(f"/runs/{doc['run_id']}/").content.decode()
    environment = page[page.index('id="environment"'):]
    environment = environment[:environment.index("</table>")]
    assert "<th>devices.sd0.rotational</th><td>yes</td>" in environment, environment
    devices = page[page.index('<table class="devices">'):]
    devices = devices[:devices.index("</table>")]
    assert "<td>no</td>" in devices
    assert not re.search(r">(True|False|None)<", page)
