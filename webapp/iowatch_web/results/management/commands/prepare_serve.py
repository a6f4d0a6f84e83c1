"""manage.py prepare_serve: what `iowatch serve` does before it starts its
servers, in one process: migrate the store (unless --no-migrate), then collect
the static files. One start of Django for both, not one a step: each start
imports the web app and the statistics (about 3 s on 2 cores), and a server
that is restarted, or a test's, waits for it."""
from __future__ import annotations

from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError


class Command(BaseCommand):
    help = "migrate the store, then collect the static files (iowatch serve's first steps)"

    def add_arguments(self, parser):
        parser.add_argument("--no-migrate", action="store_true", help="do not migrate the store")

    def handle(self, *args, no_migrate: bool = False, **options):
        for step in ([] if no_migrate else ["migrate"]) + ["collectstatic"]:
            try:
                call_command(step, interactive=False, verbosity=0)
            except CommandError as e:
                raise CommandError(f"`{step}` failed: {e}") from e
