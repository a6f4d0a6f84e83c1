"""An administrator cancels a bisect or a confirmation (the admin's action,
`manage cancel_job`): the job is finished as cancelled with who and why, its
regression's triage moves as after a failed bisect, and its agent is told on
its next post for the job (409, where "cancelled"), on which it stops the job
(iowatch.agent)."""
from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from iowatch_web.regressions import triage
from iowatch_web.regressions.models import BisectJob, ConfirmJob

KINDS = {"bisect": BisectJob, "confirmation": ConfirmJob}


class NotOpen(ValueError):
    pass


def cancel(kind: str, job_id: int, by: str, reason: str = ""):
    """Cancel the open job; NotOpen when it is finished already."""
    model = KINDS[kind]
    with transaction.atomic():
        job = model.objects.select_for_update().get(pk=job_id)
        if not job.open:
            raise NotOpen(f"{kind} #{job.pk} is {job.state}: only a queued or running job is cancelled")
        now = timezone.now()
        job.state, job.finished_at = "cancelled", now
        job.error = f"cancelled by {by} at {now:%Y-%m-%d %H:%M} UTC" + (f": {reason}" if reason else "")
        job.save()
        if kind == "bisect":
            triage.bisect_finished(job)
    return job


def refused(kind: str, job) -> str:
    """What an agent posting for a cancelled job is told (409)."""
    return (f"{kind} #{job.pk} was {job.error or 'cancelled'}: it takes no more steps nor "
            "results; stop working it")
