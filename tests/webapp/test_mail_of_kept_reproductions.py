"""Issue 44: the mail of every regression the seeds' kept reproductions
(tests/fixtures/reproductions) open in the store is 7bit or 8bit text, its
subject and body lines at most 72 columns, and its reproduction without
iowatch says what the runner did. Seed 003's mail is written to
$IOWATCH_MAIL_OUT when set (the closing note's "as sent")."""
from __future__ import annotations

import email
import email.policy
import os
import re
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from iowatch import resources
from iowatch.commands.import_reproductions import kept_reproductions, stored_bundles
from iowatch.kernel import source
from iowatch.studies import load_studies

ROOT = Path(__file__).resolve().parents[2]
KEPT = ROOT / "tests" / "fixtures" / "reproductions"
REPRODUCIBLE_BASE = source.commit_hash(source.EARLIER_BASE_TREE, source.EARLIER_BASE_MESSAGE,
                                       source.BASE_COMMIT_ENV["GIT_AUTHOR_DATE"])

pytestmark = [pytest.mark.webapp, pytest.mark.slow, pytest.mark.django_db]


def test_every_kept_reproductions_mail_is_plain_text_within_72_columns(tmp_path, client):
    from iowatch_web.regressions.models import Regression
    from iowatch_web.regressions.work import drain

    studies = load_studies(resources.studies_dir())
    kept = kept_reproductions(KEPT, studies)
    call_command("ingest_bundle", *map(str, stored_bundles(kept, studies, tmp_path / "out")),
                 stdout=StringIO())
    drain()
    regressions = list(Regression.objects.select_related("comparison__candidate_kernel"))
    assert regressions
    studies_seen = set()
    for regression in regressions:
        text = client.get(f"/api/v1/regressions/{regression.pk}/report",
                          {"format": "email", "unconfirmed": "true"}).content.decode()
        msg = email.message_from_bytes(text.encode(), policy=email.policy.default)
        assert msg["Content-Transfer-Encoding"] in ("7bit", "8bit"), msg["Content-Transfer-Encoding"]
        assert "=?" not in text.partition("\n\n")[0]
        assert len(msg["Subject"]) <= 72, msg["Subject"]
        body = msg.get_content()
        long = [line for line in body.splitlines() if len(line) > 72]
        assert not long, (regression.pk, long)
        # The check to rerun names the base a clean clone makes (its files
        # are those of the earlier base the run was built on).
        named = re.findall(r"--base\s+\\?\s*([0-9a-f]{40})", body)
        assert named and set(named) == {REPRODUCIBLE_BASE}, (regression.pk, named)
        if "to reproduce without iowatch" in body:
            plain = body[body.index("to reproduce without iowatch"):]
            assert "echo 3 > /proc/sys/vm/drop_caches" in plain
        studies = set(regression.regressed_cells().values_list("study__slug", flat=True))
        if {"odirect-vs-readers", "odirect-vs-readers-wbt"} <= studies:
            # Seed 003's two halves, each with the queue it ran on.
            for key, queue in (("odirect-vs-readers/mhdd/ext4", 'bfq > "$Q/scheduler"\n'
                                '  echo 0 > "$Q/wbt_lat_usec"'),
                               ("odirect-vs-readers-wbt/mhdd/ext4", 'none > "$Q/scheduler"\n'
                                '  echo 75000 > "$Q/wbt_lat_usec"')):
                script = body[body.index(f"  # {key}, as root"):]
                assert f"  echo {queue}" in script.split("  done")[0], key
        studies_seen |= studies
        if "odirect-vs-readers" in studies and os.environ.get("IOWATCH_MAIL_OUT"):
            Path(os.environ["IOWATCH_MAIL_OUT"]).write_text(text)
    # Seeds 003 and 004 open regressions, and 001's re-run on the null_blk SSD
    # (000 and 002 reproduce no slowdown; 001's first run, on vssd, confirmed
    # when it ran, is only suspected by stop 51's rule).
    assert studies_seen == {"odirect-vs-readers", "odirect-vs-readers-wbt", "xfs-smallfile-writeback",
                            "ext4-dio-randread"}
