"""Issue 44: a mail a maintainer can act on. The stored e2e check (as
test_mailreport stores it) and the lab regressions of test_confirmations go
through the server; what is checked is the mail as the API, the page and
`iowatch report` give it: 7bit/8bit text with a "×" in it, no report while a
confirmation is pending, the confounders of device state one side did not
record, and the headers (Message-ID per regression on a configured domain,
Date when written, recipients, the subject's shape)."""
from __future__ import annotations

import email
import email.policy
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from email.utils import parsedate_to_datetime
from pathlib import Path

import pytest
from django.urls import reverse

from iowatch import mailreport
from test_confirmations import BAD, GOOD, lab_bundle
from test_mailreport import store_check

IOWATCH = str(Path(sys.executable).parent / "iowatch")

pytestmark = [pytest.mark.webapp, pytest.mark.django_db(transaction=True)]

# One run a kernel: the host is calibrated first (conftest.post, issue 41 item 1).
CALIBRATE_HOSTS = True



def parsed(text: str):
    return email.message_from_bytes(text.encode(), policy=email.policy.default)


def test_a_times_sign_and_a_non_ascii_name_leave_the_mail_8bit_text(live_server, client):
    regression = store_check(mailed=True)
    detail = client.get(f"/api/v1/regressions/{regression.pk}").json()
    detail["cells"][0]["change_pct"] = -80.0  # still ASCII: "-80.0%"
    assert "Content-Transfer-Encoding: 7bit" in mailreport.render(detail)
    # A "×2.5" in the trade-off table and an author with an umlaut.
    detail["verdicts"] = [dict(v, change_pct=150.0) if v["group"] == "readers" else v
                          for v in detail["verdicts"]]
    for patch in detail["series"]["patches"]:
        patch["author"] = "Jürgen Groß <jg@example.org>"
    text = mailreport.render(detail)
    header, _, body = text.partition("\n\n")
    assert "Content-Transfer-Encoding: 8bit" in header and "base64" not in header
    assert "=?utf-8?" not in header and "To: Jürgen Groß <jg@example.org>" in header
    assert "×2.5" in body and "Jürgen Groß" in body
    msg = parsed(text)
    assert msg.get_content() == body
    # The page shows the same text, not a blob.
    regression.comparison.cells.filter(group="readers").update(change_pct=150.0)
    page = client.get(f"/regressions/{regression.pk}/").content.decode()
    assert "×2.5" in page and "base64" not in page.split('id="mail-report"')[1]


def test_the_message_id_is_the_regressions_on_the_configured_domain_and_the_date_is_now(
        live_server, client, settings):
    settings.IOWATCH_MAIL_DOMAIN = "lab.example.org"
    regression = store_check(mailed=True)
    url = f"/api/v1/regressions/{regression.pk}/report"
    first = parsed(client.get(url).content.decode())
    regression.state = "acknowledged"
    regression.save()
    # Made a year ago: the mail's Date is when it is written, not then.
    type(regression).objects.filter(pk=regression.pk).update(
        created=datetime.now(timezone.utc) - timedelta(days=365),
        updated=datetime.now(timezone.utc) - timedelta(days=300))
    second = parsed(client.get(url).content.decode())
    assert first["Message-ID"] == second["Message-ID"] == \
        f"<iowatch-regression-{regression.pk}@lab.example.org>"
    sent = parsedate_to_datetime(second["Date"])
    assert abs(datetime.now(timezone.utc) - sent) < timedelta(minutes=5)


def test_recipients_come_from_the_command_line_and_the_api(live_server, client):
    regression = store_check(mailed=False)
    plain = parsed(client.get(f"/api/v1/regressions/{regression.pk}/report").content.decode())
    assert plain["To"] == "undisclosed-recipients:;"
    via_api = parsed(client.get(f"/api/v1/regressions/{regression.pk}/report", {
        "to": '"Doe, Jo" <jo@example.org>, linux-block@vger.kernel.org',
        "cc": "axboe@kernel.dk"}).content.decode())
    assert via_api["To"] == '"Doe, Jo" <jo@example.org>, linux-block@vger.kernel.org'
    assert via_api["Cc"] == "axboe@kernel.dk"
    # A UTF-8 name stays as written (no RFC 2047 word); a non-address is refused, named.
    raw = client.get(f"/api/v1/regressions/{regression.pk}/report",
                     {"to": "Jürgen Groß <jg@example.org>"}).content.decode()
    assert "\nTo: Jürgen Groß <jg@example.org>\n" in raw
    bad = client.get(f"/api/v1/regressions/{regression.pk}/report", {"cc": "ann, bob@example.org"})
    assert bad.status_code == 400 and bad.json()["where"] == "query field cc"
    assert "'ann' is not an e-mail address" in bad.json()["error"]
    cli = subprocess.run([IOWATCH, "report", str(regression.pk), "--server", live_server.url,
                          "--to", "linux-ext4@vger.kernel.org", "--cc", "Ann <ann@example.org>",
                          "--cc", "bob@example.org"], capture_output=True, text=True, timeout=120)
    assert cli.returncode == 0, cli.stderr
    msg = parsed(cli.stdout)
    assert msg["To"] == "linux-ext4@vger.kernel.org"
    assert msg["Cc"] == "Ann <ann@example.org>, bob@example.org"
    # Without IOWATCH_PUBLIC_URL, the page's address is the server's the command asked.
    assert f"| Closes: {live_server.url}/regressions/{regression.pk}/" in msg.get_content()


def test_the_subject_has_0days_shape_within_72_characters(live_server, client):
    regression = store_check(mailed=True)
    detail = client.get(f"/api/v1/regressions/{regression.pk}").json()
    for patch in detail["series"]["patches"]:
        patch["subject"] = "block: " + "a very long subject " * 8
    title = mailreport.subject(detail)
    assert len(title) <= 72 and title.startswith("[iowatch] block: a very long subject")
    assert title.endswith("...: write bandwidth -33.2% on hdd".replace(
        "-33.2%", f"{detail['cells'][0]['change_pct']:+.1f}%"))
    # A subject without a subsystem prefix gets the filesystem's.
    for patch in detail["series"]["patches"]:
        patch["subject"] = "yield"
    assert mailreport.subject(detail).startswith("[iowatch] ext4: yield: write bandwidth")
    # A prefix of several subsystems is the commit's own (seed 003's patch).
    for patch in detail["series"]["patches"]:
        patch["subject"] = "block, iomap: stop marking direct writes REQ_SYNC"
    assert mailreport.subject(detail).startswith("[iowatch] block, iomap: stop marking")
    body = mailreport.render(detail, "text")
    assert "base versus commit (geometric means):" in body
    assert "parameters (odirect-vs-readers/vhdd/ext4):\n  scheduler:     bfq\n" in body
    assert "  odirect-vs-readers:\n" in body.split("base versus commit")[1]
    assert "test machine:  vlab (qemu)" in body


@pytest.fixture
def lab_regression(post):
    """A lab regression whose confirmation on lab-2 is pending (test_confirmations)."""
    from iowatch_web.regressions.models import Regression

    assert post(lab_bundle("lab-2", GOOD, 1000))[0] == 201
    for night, (commit, bw) in enumerate([(GOOD, 1000), (BAD, 700)]):
        assert post(lab_bundle("lab-1", commit, bw, night=night))[0] == 201
    return Regression.objects.get()


def test_while_a_confirmation_is_pending_report_exits_3_and_the_page_offers_no_mail(
        live_server, client, lab_regression):
    pk = lab_regression.pk
    assert client.get(f"/api/v1/regressions/{pk}").json()["confirmation"]["state"] == "pending"
    cli = subprocess.run([IOWATCH, "report", str(pk), "--server", live_server.url],
                         capture_output=True, text=True, timeout=120)
    assert cli.returncode == 3 and cli.stdout == ""
    assert "awaiting confirmation on lab-2" in cli.stderr and "--unconfirmed" in cli.stderr
    forced = subprocess.run([IOWATCH, "report", str(pk), "--server", live_server.url,
                             "--unconfirmed"], capture_output=True, text=True, timeout=120)
    assert forced.returncode == 0 and forced.stdout.startswith("From: ")
    page = client.get(reverse("dashboard:regression", args=[pk])).content.decode()
    assert 'id="mail-report"' not in page and 'data-copy="mail-report"' not in page
    assert "the mail goes out after it" in page and "unconfirmed=true" in page


def test_device_state_one_side_did_not_record_and_a_firmware_change_are_said(post, client):
    """Item 5: the good side recorded no device state, and the bad side's runs
    changed firmware between them: neither is "devices agree"."""
    from iowatch_web.regressions.models import Regression

    def state(firmware):
        return {"sd0": {"state": {"status": "read", "serial": "0x1234", "firmware": firmware, "wear_pct": 10}}}

    assert post(lab_bundle("lab-1", GOOD, 1000, night=0))[0] == 201
    for night, firmware in ((1, "1.0"), (2, "1.1")):
        doc = lab_bundle("lab-1", BAD, 700, night=night)
        doc["environment"]["devices"] = state(firmware)
        status, answer = post(doc)
        assert status == 201, answer
    regression = Regression.objects.order_by("id").first()
    detail = client.get(f"/api/v1/regressions/{regression.pk}").json()
    names = {c["name"] for c in detail["confounders"]}
    assert "sd0 device state" in names, names
    body = mailreport.render(detail, "text")
    assert "devices agree" not in body and "  none:" not in body
    assert "sd0 device state: not recorded -> recorded" in body
    assert len(detail["candidate_runs"]) == 2  # both bad nights on the bad side
    assert "sd0 firmware within the candidate side's runs: 1.0 -> 1.1" in body
