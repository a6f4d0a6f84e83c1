"""Agent tokens: made by manage.py create_agent, shown once, stored as sha256."""
from __future__ import annotations

import hashlib
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from bundle_maker import make_bundle
from iowatch_web.results.models import Agent

pytestmark = pytest.mark.django_db


def _call(*args) -> str:
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue().strip()


def test_create_agent_prints_a_token_that_uploads_and_keeps_only_its_hash(post):
    token = _call("create_agent", "lab-2")
    agent = Agent.objects.get(name="lab-2")
    assert agent.token_sha256 == hashlib.sha256(token.encode()).hexdigest()
    assert token not in agent.token_sha256
    assert token.startswith("iow_")  # never read as an option on a command line
    assert post(make_bundle(), token=token)[0] == 201
    agent.refresh_from_db()
    assert agent.last_seen is not None and agent.runs.count() == 1


def test_create_agent_refuses_a_taken_name_and_rotate_replaces_the_token(post):
    old = _call("create_agent", "lab-2")
    with pytest.raises(CommandError, match="--rotate"):
        _call("create_agent", "lab-2")
    new = _call("create_agent", "lab-2", "--rotate")
    assert new != old
    assert post(make_bundle(), token=old)[0] == 401
    assert post(make_bundle(), token=new)[0] == 201
    with pytest.raises(CommandError, match="no agent named"):
        _call("create_agent", "lab-9", "--rotate")


def test_list_agents_shows_active_and_revoked(agent_token):
    _call("create_agent", "lab-2")
    _call("revoke_agent", "lab-2")
    listing = _call("list_agents")
    assert "lab-agent\tactive" in listing and "lab-2\trevoked" in listing
    assert agent_token not in listing


@pytest.mark.parametrize("token, message", [
    (None, "missing agent token"),
    ("not-a-token", "unknown or revoked agent token"),
])
def test_uploads_without_a_valid_token_are_refused(post, counts, token, message):
    before = counts()
    status, reply = post(make_bundle(), token=token)
    assert status == 401 and message in reply["error"]
    assert counts() == before


def test_a_revoked_token_is_refused(post, agent_token, counts):
    _call("revoke_agent", "lab-agent")
    before = counts()
    status, reply = post(make_bundle(), token=agent_token)
    assert status == 401 and reply["error"] == "unknown or revoked agent token"
    assert counts() == before
