"""manage.py grant_hosts NAME HOST... [--revoke]: the hosts an agent may act for."""
from django.core.management.base import BaseCommand, CommandError

from iowatch_web.site.bounds import HOST_NAME_RULE, is_host_name
from iowatch_web.results.models import Agent, AgentHost


def grant(agent: Agent, hosts: list[str]) -> None:
    """Let `agent` act for `hosts` (claims, heartbeats, steps, results)."""
    bad = [h for h in hosts if not is_host_name(h)]
    if bad:
        raise CommandError(f"not a host name: {bad[0]!r} ({HOST_NAME_RULE})")
    for host in hosts:
        AgentHost.objects.get_or_create(agent=agent, name=host)


class Command(BaseCommand):
    help = ("Grant an agent the lab hosts it may act for: claim their jobs, send their "
            "heartbeats, post their steps and results. --revoke takes them away.")

    def add_arguments(self, parser):
        parser.add_argument("name")
        parser.add_argument("hosts", nargs="+", metavar="HOST")
        parser.add_argument("--revoke", action="store_true", help="take these hosts away instead")

    def handle(self, name, hosts, revoke, **options):
        agent = Agent.objects.filter(name=name).first()
        if agent is None:
            raise CommandError(f"no agent named {name!r}")
        if revoke:
            AgentHost.objects.filter(agent=agent, name__in=hosts).delete()
        else:
            grant(agent, hosts)
        held = agent.host_names()
        self.stdout.write(f"{name} acts for: {', '.join(held) if held else 'no host'}")
