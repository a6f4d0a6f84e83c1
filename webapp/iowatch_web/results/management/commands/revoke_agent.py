"""manage.py revoke_agent NAME: refuse an agent's token from now on."""
from django.core.management.base import BaseCommand, CommandError

from iowatch_web.results.models import Agent


class Command(BaseCommand):
    help = "Revoke an upload agent's token (create_agent NAME --rotate gives it a new one)."

    def add_arguments(self, parser):
        parser.add_argument("name")

    def handle(self, name, **options):
        if not Agent.objects.filter(name=name).update(active=False):
            raise CommandError(f"no agent named {name!r}")
        self.stdout.write(f"revoked {name}")
