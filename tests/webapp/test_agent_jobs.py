"""One job shape (issue 43 item 5): a bisect's job and a confirmation's are
AgentJobs, the fields every job an agent claims and hands back has declared
once; the models moved onto it without a migration (the tables are as they were)."""
from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command

from iowatch_web.regressions.models import AgentJob, BisectJob, ConfirmJob


def test_a_bisect_and_a_confirmation_are_one_job_shape():
    shared = {f.name for f in AgentJob._meta.get_fields()}
    assert {"state", "good_kernel", "bad_kernel", "agent", "agent_host", "error", "created",
            "claimed_at", "finished_at"} <= shared
    for job in (BisectJob, ConfirmJob):
        assert issubclass(job, AgentJob)
        assert shared <= {f.name for f in job._meta.get_fields()}
        assert job(state="running").open and not job(state="done").open


@pytest.mark.django_db
def test_the_job_shape_needs_no_migration():
    out = StringIO()
    call_command("makemigrations", "regressions", "--check", "--dry-run", stdout=out)
    assert "No changes detected" in out.getvalue()
