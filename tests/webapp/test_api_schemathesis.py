"""The API against its own OpenAPI description: whatever schemathesis makes of
/api/v1/openapi.json (reads with odd parameters, bundles built from the bundle
schema and broken on purpose), a real `iowatch serve` answers without a 5xx,
with answers that fit the description, refusing every request that breaks it.

The server runs on a scratch database (PostgreSQL when DATABASE_URL is set)
holding one stored run, so the reads have rows to page through. The examples
per operation are few: the file stays well under 90 s.
"""
from __future__ import annotations

import json
import urllib.request

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import negative_data_rejection, response_schema_conformance

from bundle_maker import make_bundle, wire
from live_server import create_agent, get_json, running_server, scratch_database
from iowatch_web.results.api import api

# schemathesis' generated cases share their test's node id: run without xdist.
pytestmark = pytest.mark.one_process

EXAMPLES = 25


@pytest.fixture(scope="module")
def live():
    with scratch_database() as env:
        token = create_agent(env, "schemathesis")
        with running_server(env, args=("--no-migrate", "--no-worker")) as (url, _):
            # One real run, so /runs, /cells and /samples answer with rows.
            request = urllib.request.Request(
                f"{url}/api/v1/bundles", data=wire(make_bundle(cells=2, samples=3)), method="POST",
                headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
            with urllib.request.urlopen(request, timeout=60) as r:
                assert r.status == 201, r.read()
            yield url, token


# The description the server serves at /api/v1/openapi.json, built by the same
# call; loaded here because schemathesis' fixture-based loader does not run
# under pytest 9 (it sets a node attribute pytest no longer has).
# test_the_live_server_serves_this_description holds the two equal.
DESCRIPTION = api.get_openapi_schema()
schema = schemathesis.openapi.from_dict(DESCRIPTION)


def test_the_live_server_serves_this_description(live):
    url, _ = live
    assert get_json(f"{url}/api/v1/openapi.json") == json.loads(json.dumps(DESCRIPTION))


@schema.parametrize()
@settings(max_examples=EXAMPLES, deadline=None, database=None,
          suppress_health_check=list(HealthCheck))
def test_no_generated_request_gets_a_server_error(case, live):
    url, token = live
    # Positive and negative cases (schemathesis' default modes); beside no 5xx,
    # every answer fits its documented schema (ST108) and every request that
    # breaks the description is refused (ST201) (issue 42 item 5).
    response = case.call_and_validate(base_url=url, headers={"Authorization": f"Bearer {token}"},
                                      checks=[not_a_server_error, response_schema_conformance,
                                              negative_data_rejection], timeout=60)
    if response.status_code >= 400 and response.headers.get("Content-Type") == "application/json":
        body = json.loads(response.content)
        # The API's own refusals name what is wrong ({"error", "where"}); the
        # triage route's login refusals are ninja's {"detail"}.
        assert body.get("error") or body.get("detail"), body


# Positive data only: requests that keep to the description. The reads have
# every bound the server checks in it (limits, offsets, enums of state, kind
# and format, the host name's pattern), so none may be refused (issue 28);
# so have the writes' bodies (required fields, types, enums, lengths, ranges,
# no NUL in an agent's text), but for the writes left out below.
positive = schemathesis.openapi.from_dict(DESCRIPTION)
positive.config.generation.update(modes=[GenerationMode.POSITIVE])


@positive.include(method="GET").parametrize()
@settings(max_examples=EXAMPLES, deadline=None, database=None,
          suppress_health_check=list(HealthCheck))
def test_a_read_that_keeps_to_the_description_is_never_refused(case, live):
    url, token = live
    response = case.call(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=60)
    assert response.status_code != 400, (case.method, case.formatted_path, case.query,
                                         response.content[:300])


# Left out, each for a rule across fields that a JSON schema cannot say (a
# 400 naming the field when broken):
WRITES_LEFT_OUT = {
    # a cell's device is one of the bundle's devices, its study one of the
    # matrix's, a repetition's index unique in its cell (iowatch.bundle.validate)
    "/api/v1/bundles",
    # a done bisect names first_bad or the candidates skips left; a failed one says why
    "/api/v1/bisects/{job_id}/result",
    # a done confirmation names runs of both kernels stored here; a failed one says why
    "/api/v1/confirmations/{job_id}/result",
}
# Not the agent's to write: triage and the bisect button take a logged-in
# user's session with its CSRF token (a 401 with the agent's token).
SESSION_WRITES = {"/api/v1/regressions/{regression_id}/triage",
                  "/api/v1/regressions/{regression_id}/bisect"}


@positive.include(method="POST").exclude(path=sorted(WRITES_LEFT_OUT | SESSION_WRITES)).parametrize()
@settings(max_examples=EXAMPLES, deadline=None, database=None,
          suppress_health_check=list(HealthCheck))
def test_a_write_that_keeps_to_the_description_is_never_refused(case, live):
    url, token = live
    response = case.call(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=60)
    assert response.status_code not in (400, 500), (case.method, case.formatted_path, case.body,
                                                    response.content[:300])


def test_the_writes_left_out_are_named_as_the_description_names_them():
    posts = {path for path, operations in DESCRIPTION["paths"].items() if "post" in operations}
    assert WRITES_LEFT_OUT | SESSION_WRITES <= posts
