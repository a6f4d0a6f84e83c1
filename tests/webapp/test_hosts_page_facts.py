"""The hosts page says what a maintainer asks of a host (issue 44, item 17):
its devices and their state, links to its runs and to the job it holds,
times with the year and the zone; and a heartbeat naming a job its host does
not hold is refused, naming the job."""
from __future__ import annotations

import re

import pytest

from bundle_maker import make_bundle
from test_heartbeat import BEAT, STEP, call, job, token_of  # noqa: F401 (job: a fixture)

pytestmark = pytest.mark.django_db(transaction=True)
STATE = {"status": "read", "source": "smartctl", "kind": "ssd", "firmware": "FW-2.1",
         "wear_pct": 3, "temperature_c": 41, "health": "passed"}


def test_a_beat_naming_a_job_its_host_does_not_hold_is_refused(client, job):
    a, b = token_of("agent-a", "host-a"), token_of("agent-b", "host-b")
    beat = {**BEAT, "job": {"kind": "bisect", "id": job.pk}}
    # Queued, claimed by nobody: no host holds it yet.
    status, answer = call(client, "post", "hosts/host-a/heartbeat", beat, a)
    assert status == 409 and f"does not hold bisect #{job.pk}" in answer["error"], answer
    assert answer["where"] == "body field job" and "queued" in answer["error"]
    assert call(client, "post", "bisects/claim", {"host": "host-a"}, a)[1]["id"] == job.pk
    assert call(client, "post", "hosts/host-a/heartbeat", beat, a)[0] == 200
    # Another host naming it, or anyone naming a job that does not exist.
    status, answer = call(client, "post", "hosts/host-b/heartbeat", beat, b)
    assert status == 409 and "it runs on host-a" in answer["error"]
    status, answer = call(client, "post", "hosts/host-a/heartbeat",
                          {**BEAT, "job": {"kind": "confirmation", "id": 987654}}, a)
    assert status == 409 and "confirmation #987654" in answer["error"] and "no such job" in answer["error"]
    # The page links the job the host holds, and its runs.
    page = client.get("/hosts/").content.decode()
    row = page[page.index('id="host-host-a"'):]
    row = row[:row.index("</tr>")]
    assert f'href="/regressions/{job.regression_id}/#bisect">its bisect #{job.pk}</a>' in row
    assert 'href="/runs/?host=host-a">its runs</a>' in row


def test_the_hosts_page_lists_each_hosts_devices_with_their_state_and_dated_times(
        client, post, agent_token):
    doc = make_bundle(cells=1, samples=2, host="lab-1")
    doc.setdefault("environment", {})["devices"] = {"sd0": {"state": STATE}}
    assert post(doc)[0] == 201
    assert call(client, "post", "hosts/lab-1/heartbeat", {"phase": "idle"}, agent_token)[0] == 200
    page = client.get("/hosts/").content.decode()
    row = page[page.index('id="host-lab-1"'):]
    row = row[:row.index("</tr>")]
    assert "<strong>sd0</strong> sdcard" in row, row
    assert "firmware FW-2.1; wear 3%; temperature 41 °C; health passed" in row
    assert f'href="/runs/{doc["run_id"]}/"' in row
    times = re.findall(r'<td class="num">([^<]+)</td>', row)
    assert times and all(re.fullmatch(r"20\d\d-\d\d-\d\d \d\d:\d\d(:\d\d)? UTC", t) for t in times), times
