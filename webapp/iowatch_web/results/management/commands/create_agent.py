"""manage.py create_agent NAME --host HOST... [--rotate]: make an agent bound to
the lab hosts it may act for, and print its token once."""
import secrets

from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from iowatch_web.site.api import agent_token_digest
from iowatch_web.results.management.commands.grant_hosts import grant
from iowatch_web.results.models import Agent


class Command(BaseCommand):
    help = ("Create an upload agent and print its token (shown once; only its sha256 is "
            "stored). --host names the lab hosts it may act for (claims, heartbeats, steps, "
            "results); without one it may only upload bundles. --rotate gives an existing agent "
            "a new token and revokes the old one.")

    def add_arguments(self, parser):
        parser.add_argument("name")
        parser.add_argument("--rotate", action="store_true",
                            help="replace the token of an existing agent (and reactivate it); "
                                 "--host then adds hosts to those it has")
        parser.add_argument("--host", dest="hosts", action="extend", nargs="+", default=[],
                            metavar="HOST",
                            help="a lab host it may act for, as the inventory names it (repeatable)")

    def handle(self, name, rotate, hosts, **options):
        # A fixed prefix: a token that starts with '-' reads as an option on a command line.
        token = "iow_" + secrets.token_urlsafe(32)
        digest = agent_token_digest(token)
        with transaction.atomic():
            if rotate:
                if not Agent.objects.filter(name=name).update(token_sha256=digest, active=True):
                    raise CommandError(f"no agent named {name!r}; create it without --rotate")
            else:
                if Agent.objects.filter(name=name).exists():
                    raise CommandError(f"agent {name!r} exists; use --rotate to give it a new token")
                Agent.objects.create(name=name, token_sha256=digest)
            grant(Agent.objects.get(name=name), hosts)
        self.stdout.write(token)
