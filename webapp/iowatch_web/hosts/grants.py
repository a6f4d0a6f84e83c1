"""Which hosts an agent may act for, decided once for every call an agent
makes for a host: a claim (bisects, confirmations), a heartbeat, a step, a
result. The hosts are granted when the agent is made (`manage create_agent
NAME --host H...`, `manage grant_hosts`, the admin's Agent page;
results.AgentHost). Anything else is refused with a 403 naming the host.

An agent with no host granted (one made before hosts were recorded) may
upload bundles and nothing more: refusing is the safe default, since its
history cannot tell its own hosts from those it took."""
from __future__ import annotations

from django.db.models import Model
from django.http import JsonResponse

from iowatch_web.results.models import Agent, AgentHost
from iowatch_web.site.api import error_response


def refusal(agent: Agent, host: str) -> str | None:
    """Why `agent` may not act for `host`, or None when it may."""
    if AgentHost.objects.filter(agent=agent, name=host).exists():
        return None
    held = sorted(AgentHost.objects.filter(agent=agent).values_list("name", flat=True))
    if not held:
        return (f"agent {agent.name} may act for no host yet, so not for host {host}: an "
                f"administrator grants its hosts (iowatch manage grant_hosts {agent.name} HOST..., "
                "or the admin's Agent page)")
    return (f"agent {agent.name} may not act for host {host}: it acts for "
            f"{', '.join(held)} (iowatch manage grant_hosts grants more)")


def forbidden(agent: Agent, host: str, where: str) -> JsonResponse | None:
    """The 403 for an agent acting for a host not its own, or None."""
    if why := refusal(agent, host):
        return error_response(403, why, where)
    return None


def job_host(job: Model) -> str:
    """The host a job is worked on: the one it was queued for (a
    confirmation), else the one its claim named."""
    return getattr(job, "host", "") or job.agent_host


def forbidden_for_job(job: Model, kind: str, agent: Agent, host: str) -> JsonResponse | None:
    """The 403 for a step or a result an agent may not post: for a host not
    its own (the one it names, or the job's), or, on a job nobody claimed,
    without naming its host. A job another agent holds is left to the
    claim's own refusal (409, giveback.refusal), which names the holder."""
    if host and (refused := forbidden(agent, host, "body field host")):
        return refused
    if job.state == "running" and job.agent_id not in (None, agent.pk):
        return None  # another agent's claim: giveback.refusal's 409 says whose
    if (on := job_host(job)) and (refused := forbidden(agent, on, f"{kind} host")):
        return refused
    if not on and not host:
        return error_response(403, f"{kind} #{job.pk} is claimed by nobody: a step or a result "
                              "names the host it was measured on (body field host)",
                              "body field host")
    return None
