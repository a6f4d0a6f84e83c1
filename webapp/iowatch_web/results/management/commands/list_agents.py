"""manage.py list_agents: the upload agents, whether active, and when last seen."""
from django.core.management.base import BaseCommand

from iowatch_web.results.models import Agent


class Command(BaseCommand):
    help = "List agents: name, active or revoked, created, last seen, the hosts it acts for."

    def handle(self, **options):
        for agent in Agent.objects.order_by("name").prefetch_related("hosts"):
            seen = f"{agent.last_seen:%Y-%m-%d %H:%M:%S}" if agent.last_seen else "never"
            state = "active" if agent.active else "revoked"
            self.stdout.write(f"{agent.name}\t{state}\tcreated {agent.created:%Y-%m-%d %H:%M:%S}"
                              f"\tlast seen {seen}\thosts {','.join(agent.host_names()) or '-'}")
