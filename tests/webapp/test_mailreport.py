"""The mailing-list report of a stored regression (iowatch.mailreport): the e2e
check's real bundles (tests/fixtures/e2e-check) go through the ingest API, the
server's own verdict work opens the patch 2 regression, and its report comes
out of GET /api/v1/regressions/{id}/report, the regression page and
`iowatch report` over HTTP (pytest-django's live_server) as one text."""
from __future__ import annotations

import email
import email.policy
import html
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from iowatch import bundle, mailreport

ROOT = Path(__file__).resolve().parents[2]
CHECK = ROOT / "tests" / "fixtures" / "e2e-check"
IOWATCH = str(Path(sys.executable).parent / "iowatch")
sys.path.insert(0, str(ROOT / "tests" / "dashboard"))

from bundle_maker import recorded_boots  # noqa: E402
from dashboard_browser import uploader  # noqa: E402

pytestmark = [pytest.mark.webapp, pytest.mark.django_db(transaction=True)]

PATCH2 = "ext4: yield to buffered readers before each direct write"
# The series as it came by mail (as `iowatch check --series <Message-ID>` records it).
MAIL = {"message_id": "cover.1@example.org", "subject": "[PATCH 0/2] ext4: yield to readers",
        "to": ["linux-ext4@vger.kernel.org"], "cc": ["Bob <bob@example.org>"],
        "archive": "https://lore.kernel.org/all/", "patch_count": 2,
        "patches": [{"index": 1, "subject": "xfs: say that statfs results must not be cached",
                     "author": "Ann <ann@example.org>", "message_id": "1.1@example.org"},
                    {"index": 2, "subject": PATCH2, "author": "Ann <ann@example.org>",
                     "message_id": "2.1@example.org"}]}


def store_check(mailed: bool):
    from iowatch_web.regressions.models import Regression

    post = uploader("report-lab")
    for doc in recorded_boots():  # the host's record of its noise between boots
        post(doc)
    for n in range(3):
        doc = bundle.upgrade(json.loads(bundle.to_wire(CHECK / f"guest-{n:02d}" / "bundle")))
        if mailed:
            doc["kernel"]["series"].update(MAIL)
            if n:
                doc["kernel"]["patch"]["message_id"] = f"{n}.1@example.org"
        post(doc)
    return Regression.objects.get(comparison__reason="parent",
                                  comparison__candidate_kernel__patch_index=2)


def parsed(text: str):
    return email.message_from_string(text, policy=email.policy.default)


def without_date(text: str) -> str:
    """A mail without its Date: (the time it is written, different each time)."""
    return re.sub(r"^Date: .*\n", "", text, count=1, flags=re.M)


def test_the_report_of_a_mailed_series_replies_in_its_thread_with_the_stored_numbers(
        live_server, client, settings):
    settings.IOWATCH_PUBLIC_URL = "https://iowatch.example.org/"
    regression = store_check(mailed=True)
    writer = regression.regressed_cells().get(group="writer")
    response = client.get(f"/api/v1/regressions/{regression.pk}/report?format=email")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/plain")
    text = response.content.decode()
    msg = parsed(text)
    # 0-day's shape, at most 72 characters: the commit's subject shortened to fit.
    assert msg["Subject"] == ("[iowatch] ext4: yield to buffered read...: write bandwidth "
                              f"{writer.change_pct:+.1f}% on hdd")
    assert len(msg["Subject"]) <= 72
    assert msg["In-Reply-To"] == "<2.1@example.org>"
    assert msg["References"] == "<cover.1@example.org> <2.1@example.org>"
    assert msg["To"] == "Ann <ann@example.org>"
    assert "linux-ext4@vger.kernel.org" in msg["Cc"] and "bob@example.org" in msg["Cc"]
    assert msg["From"] == "iowatch <iowatch@localhost>"
    body = msg.get_content()

    # Device class, model and host; before, after, the change, its CI, the repetitions: stored.
    for line in ("device class:  hdd",
                 "device:        vhdd (scsi-hd on virtio-scsi (QEMU), rotation rate 7200, 150 IOPS)",
                 "test machine:  vlab (qemu)", "filesystem:    ext4",
                 f"change {writer.change_pct:+.1f}%, 95% CI [{writer.ci_low:+.1f}%, "
                 f"{writer.ci_high:+.1f}%], {writer.base_n} vs {writer.candidate_n} repetitions",
                 f"before {writer.base_centre:.0f} KiB/s, after {writer.candidate_centre:.0f} KiB/s "
                 "(geometric means)",
                 f"first bad commit: db56ccc63f66 (\"{PATCH2}\")", "author:    Ann <ann@example.org>",
                 "found by:  the check of series e2e-slow-ext4-dio: patch 2 against its parent",
                 "iowatch check --series cover.1@example.org --base "
                 "c12fff06dffbe5058f9675864f0297d66f5f06cd --matrix e2e --reps 5",
                 "iowatch run e2e --reps 5 --target HOST"):
        # The body is folded at 72 columns: its lines are read with their words rejoined.
        assert " ".join(line.split()) in " ".join(body.replace(" \\\n", " ").split()), line
    # Provenance: how many runs a side, and the page that lists them (not their UUIDs).
    page_url = f"https://iowatch.example.org/regressions/{regression.pk}/"
    assert (f"provenance: runs: {regression.comparison.base_runs.count()} good, "
            f"{regression.comparison.candidate_runs.count()} bad, listed on {page_url}") in " ".join(body.split())
    for run in regression.comparison.candidate_runs.all():
        assert str(run.run_id) not in body
    assert f"| Closes: {page_url}" in body and "| Reported-by: iowatch <iowatch@localhost>" in body
    # The virtual lab's per-run boot parameters are no confounder, and nothing
    # of the machine that ran it (guest paths, the guest's own command) shows.
    assert "confounders:\n  none:" in body
    for leak in ("virtme", "/tmp", "/work/", "--out ", "--inventory"):
        assert leak not in text, leak

    # One text: the page (escaped in a <pre>) and `iowatch report` over HTTP.
    page = client.get(f"/regressions/{regression.pk}/").content.decode()
    shown = re.search(r'<pre id="mail-report" class="mail-report">(.*?)</pre>', page, re.S).group(1)
    assert without_date(html.unescape(shown)) == without_date(text)
    assert 'data-copy="mail-report"' in page and "dashboard/copy.js" in page
    cli = subprocess.run([IOWATCH, "report", str(regression.pk), "--format", "email",
                          "--server", live_server.url], capture_output=True, text=True, timeout=120)
    assert cli.returncode == 0, cli.stderr
    assert without_date(cli.stdout) == without_date(text)
    as_text = client.get(f"/api/v1/regressions/{regression.pk}/report?format=text").content.decode()
    assert as_text == f"{msg['Subject']}\n\n{body}"
    assert client.get(f"/api/v1/regressions/{regression.pk}/report?format=pdf").status_code == 400
    assert client.get("/api/v1/regressions/999999/report").status_code == 404
    missing = subprocess.run([IOWATCH, "report", "999999", "--server", live_server.url],
                             capture_output=True, text=True, timeout=120)
    assert missing.returncode == 2 and "404" in missing.stderr


def test_the_mail_is_what_a_kernel_developer_would_send(live_server, client):
    """The shape of a linux-fsdevel performance report (the kernel test robot's
    and the mails of tests/fixtures/mails): the thread's people, a one-line
    subject with the subsystem once, body lines of at most 72 columns, the
    trade-off, the workload as run, a reproduction without iowatch, the
    patch's author, and no triage state."""
    regression = store_check(mailed=True)
    regression.state = "acknowledged"
    regression.save()
    text = client.get(f"/api/v1/regressions/{regression.pk}/report?format=email").content.decode()
    print(text)
    msg = parsed(text)
    header, _, body = text.partition("\n\n")
    subject = next(line for line in header.splitlines() if line.startswith("Subject: "))
    assert subject == f"Subject: {msg['Subject']}", "the subject is folded"
    assert msg["Subject"].count("ext4") == 1, msg["Subject"]
    assert msg["To"] == "Ann <ann@example.org>" and msg["In-Reply-To"] == "<2.1@example.org>"
    assert msg["Cc"] == "linux-ext4@vger.kernel.org, Bob <bob@example.org>"
    long = [line for line in body.splitlines() if len(line) > 72]
    assert not long, long
    # The readers' gain beside the writer's loss.
    readers = regression.comparison.cells.get(group="readers")
    assert readers.outcome == "improvement" and readers.change_pct > 30
    assert "the trade-off" in body and f"{readers.change_pct:+.1f}% (improvement)" in body
    # The fio job as it ran, and the same without iowatch.
    assert "the workload as run (job.fio of odirect-vs-readers/vhdd/ext4):" in body
    assert "  [seqwrite]" in body and "  rw=write" in body
    plain = body[body.index("to reproduce without iowatch"):body.index("to reproduce with iowatch")]
    assert "mkfs.ext4" in plain and "iowatch " not in plain.split(":", 1)[1]
    # What the runner did (iowatch.replay): the study's BFQ with wbt off, the
    # mount point the job's directory= names, the caches dropped, fio as run.
    directory = re.search(r"^  directory=(\S+)$", body, re.M).group(1)
    for step in ('echo bfq > "$Q/scheduler"', 'echo 0 > "$Q/wbt_lat_usec"', f"MNT={directory}",
                 "sync -f $MNT\n    echo 3 > /proc/sys/vm/drop_caches",
                 "fio --output-format=json --output=fio-$i.json job.fio"):
        assert step in plain, step
    config = " ".join(body[body.index("the kernels' config"):body.index("to reproduce without")].split())
    assert ("make allnoconfig, then scripts/kconfig/merge_config.sh -m .config guest-base.config "
            "iowatch.config no-debug.config") in config
    assert "author:    Ann <ann@example.org>" in body
    assert "acknowledged" not in body and body.rstrip().endswith(f"iowatch regression #{regression.pk}")


def test_without_an_author_the_mail_goes_to_the_series_lists(live_server, client):
    regression = store_check(mailed=True)
    from iowatch_web.results.models import Patch
    Patch.objects.update(author="")
    msg = parsed(client.get(f"/api/v1/regressions/{regression.pk}/report").content.decode())
    assert msg["To"] == "linux-ext4@vger.kernel.org" and msg["Cc"] == "Bob <bob@example.org>"


def test_the_author_a_bundle_gives_its_patch_is_stored(post):
    from bundle_maker import make_bundle
    from iowatch_web.results.models import Patch
    doc = make_bundle()
    doc["schema_version"] = 2
    doc["kernel"]["patch"]["author"] = "Ann <ann@example.org>"
    assert post(doc)[0] == 201
    assert Patch.objects.get(index=1).author == "Ann <ann@example.org>"


def test_a_series_without_message_ids_is_a_new_thread(live_server, client):
    regression = store_check(mailed=False)
    msg = parsed(client.get(f"/api/v1/regressions/{regression.pk}/report").content.decode())
    assert msg["In-Reply-To"] is None and msg["References"] is None
    assert msg["To"] == "undisclosed-recipients:;"
    assert "iowatch check --series kernels/series/e2e-slow-ext4-dio --base" in msg.get_content()


def test_a_boot_parameter_that_differs_is_shown_alone(live_server, client):
    """A real command-line confounder is the parameter that differs, not two
    1,400-character command lines."""
    regression = store_check(mailed=False)
    detail = client.get(f"/api/v1/regressions/{regression.pk}").json()
    line = "console=ttyS0 virtme_chdir=work/main ro"
    detail["confounders"] = [{"name": "kernel cmdline", "base": line,
                              "candidate": line + " mitigations=off", "why": "boot parameters"},
                             {"name": "kernel CONFIG_PROVE_LOCKING", "base": "n", "candidate": "y",
                              "why": "lockdep"}]
    body = mailreport.render(detail, "text")
    assert "  kernel cmdline: (none) -> mitigations=off\n" in body
    assert "  kernel CONFIG_PROVE_LOCKING: n -> y\n" in body


def test_one_number_is_written_one_way_on_the_pages_and_in_the_mail(live_server, client):
    """Issue 28: the p-value, the change, the unit and the statistic of a cell
    read the same on the compare page, the regression page and in the mail
    (iowatch.figures), and the words name the statistic they are between."""
    from iowatch import figures
    from iowatch.metrics import METRICS

    regression = store_check(mailed=False)
    cmp = regression.comparison
    writer = regression.regressed_cells().get(group="writer")
    readers = cmp.cells.get(group="readers")
    mail = client.get(f"/api/v1/regressions/{regression.pk}/report?format=text").content.decode()
    page = html.unescape(client.get(f"/regressions/{regression.pk}/").content.decode())
    compare = html.unescape(client.get("/compare", {
        "base": f"kernel:{cmp.base_kernel_id}",
        "candidate": f"kernel:{cmp.candidate_kernel_id}"}).content.decode())
    p = figures.p_value(writer.p_adjusted)
    for shown in (page, compare):
        assert f'<td class="num">{p}</td>' in shown
        assert figures.change(writer.change_pct) in shown
    assert "0.000" not in compare and "e-0" not in page
    # The words say what their numbers are, and the mail shows those numbers,
    # one a side: not the medians beside the words' geometric means.
    assert "(geometric means)" in writer.words
    (b, a), unit = figures.amount((writer.base_centre, writer.candidate_centre),
                                  METRICS["write.bw_kib_s"].unit)
    assert f"from {b} to {a} {unit} (geometric means)" in writer.words
    assert f"before {b} {unit}, after {a} {unit} (geometric means)" in " ".join(mail.split())
    assert "(medians)" not in mail
    # A verdict stored before the server kept those numbers: its medians, labelled.
    cmp.cells.update(base_centre=None, candidate_centre=None, centre_statistic="")
    old = client.get(f"/api/v1/regressions/{regression.pk}/report?format=text").content.decode()
    (b, a), unit = figures.amount((writer.base_median, writer.candidate_median),
                                  METRICS["write.bw_kib_s"].unit)
    assert f"before {b} {unit}, after {a} {unit} (medians)" in " ".join(old.split())
    # The readers' numbers on the regression page are the mail's (issue 44 item 12:
    # one "before" number a cell, the change's own), in the unit the mail uses.
    (rb, ra), runit = figures.amount((readers.base_centre, readers.candidate_centre),
                                     METRICS["read.bw_kib_s"].unit)
    assert f"{rb} → {ra} {runit} (geometric means)" in page
    assert runit == figures.amount((readers.base_median, readers.candidate_median),
                                   METRICS["read.bw_kib_s"].unit)[1]
