"""manage.py cancel_job bisect|confirmation ID [--reason TEXT]: stop a job."""
import getpass

from django.core.management.base import BaseCommand, CommandError

from iowatch_web.regressions.cancel import KINDS, NotOpen, cancel


class Command(BaseCommand):
    help = ("Cancel a queued or running bisect or confirmation. Its agent is refused (409 "
            "cancelled) on its next post for it and stops the job.")

    def add_arguments(self, parser):
        parser.add_argument("kind", choices=sorted(KINDS))
        parser.add_argument("job_id", type=int)
        parser.add_argument("--reason", default="", help="why, shown on the job and to its agent")

    def handle(self, kind, job_id, reason, **options):
        try:
            job = cancel(kind, job_id, f"{getpass.getuser()} (manage cancel_job)", reason)
        except KINDS[kind].DoesNotExist:
            raise CommandError(f"no {kind} #{job_id}") from None
        except NotOpen as e:
            raise CommandError(str(e)) from None
        self.stdout.write(f"{kind} #{job.pk} {job.error}")
