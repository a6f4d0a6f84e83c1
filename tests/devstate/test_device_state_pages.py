"""The device's state on the pages: the run page's device-state table, and a
firmware change between two runs as a confounder on the run page, the compare
page, the stored regression and its mail. Bundles go in through the real
ingest API and the verdict queue; the states are parsed from the captured
fixtures (tests/fixtures/devstate)."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from iowatch import mailreport
from iowatch.devstate import parse_smartctl

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "tests" / "webapp"), str(ROOT / "tests" / "dashboard")]
from bundle_maker import calibration_bundles, planted_bundle  # noqa: E402
from dashboard_browser import uploader  # noqa: E402

FIXTURES = ROOT / "tests" / "fixtures" / "devstate"
NOISE = [-10, 4, 10, -4, 0]

pytestmark = [pytest.mark.webapp, pytest.mark.django_db]


def smart(name: str) -> dict:
    return parse_smartctl((FIXTURES / name).read_text(), name)


def run_with(firmware_file: str, commit: int, bw: float, hour: int) -> dict:
    doc = planted_bundle({"write.bw_kib_s": [bw + e for e in NOISE]},
                         kernel={"release": "6.12.0-iowatch", "git_commit": f"{commit:012x}",
                                 "config_hash": "c0ffee"},
                         started_at=f"2024-05-01T{hour:02d}:00:00Z")
    state = smart(firmware_file)
    doc["schema_version"] = 2
    doc["environment"]["devices"] = {"sd0": {"scheduler": "none", "state": state,
                                             "state_after": {**state, "temperature_c": 38}}}
    return doc


@pytest.fixture
def post(db):
    return uploader("devstate-agent")


def test_a_firmware_change_shows_on_the_run_compare_regression_and_mail(post, client):
    base, candidate = run_with("smartctl-sata-qemu-fw-a.json", 1, 1000, 0), \
        run_with("smartctl-sata-qemu-fw-b.json", 2, 700, 1)
    for doc in calibration_bundles(base):  # the host's record of its noise between boots
        post(doc)
    post(base)
    post(candidate)

    page = client.get(f"/runs/{candidate['run_id']}/").content.decode()
    table = page[page.index('id="device-state"'):]
    table = table[:table.index("</table>")]
    assert "<td>FW-B</td>" in table and "31 °C" in table and "38 °C" in table
    assert "passed" in table and "serial IOWATCH-SATA0" in table and "read by smartctl" in table
    # The state is in its own table, not flattened into the environment's rows.
    env = page[page.index('id="environment"'):]
    assert "devices.sd0.state" not in env[:env.index("</table>")]
    confounders = page[page.index('class="confounders"'):]
    confounders = confounders[:confounders.index("</table>")]
    assert "sd0 firmware" in confounders and "firmware changed" in confounders

    compare = client.get(f"/compare?base={base['run_id']}&candidate={candidate['run_id']}").content.decode()
    assert "sd0 firmware" in compare

    from iowatch_web.regressions.models import Regression
    regression = Regression.objects.get()
    detail = client.get(f"/api/v1/regressions/{regression.pk}").json()
    assert {"name": "sd0 firmware", "base": "FW-A", "candidate": "FW-B"}.items() <= \
        next(c for c in detail["confounders"] if c["name"] == "sd0 firmware").items()
    assert "  sd0 firmware: FW-A -> FW-B\n" in mailreport.render(detail, "text")


def test_a_run_without_device_state_shows_no_table(post, client):
    doc = run_with("smartctl-nvme-qemu.json", 1, 1000, 0)
    doc["environment"]["devices"] = {"sd0": {"scheduler": "none"}}
    post(doc)
    page = client.get(f"/runs/{doc['run_id']}/").content.decode()
    assert 'id="device-state"' not in page


def test_preconditioning_is_shown_under_its_device(post, client):
    doc = run_with("smartctl-nvme-qemu.json", 1, 1000, 0)
    doc["environment"]["devices"]["sd0"]["precondition"] = {"ext4-dio-randread": {
        "held": False, "rounds_iops": [900.0, 700.0, 500.0], "settings": {"window": 3},
        "steady_state": {"reason": "not steady over the last 3 rounds: the fit moves 57.1% of the mean"}}}
    post(doc)
    page = client.get(f"/runs/{doc['run_id']}/").content.decode()
    row = page[page.index('class="precondition"'):]
    row = row[:row.index("</tr>")]
    assert "preconditioned for ext4-dio-randread: 3 rounds" in row and "not reached" in row
    assert "the fit moves 57.1%" in row
