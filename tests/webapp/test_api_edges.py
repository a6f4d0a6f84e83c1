"""The API and the pages at their edges (issue 28): values a store holds two
ways, ids past the store's integers, and errors in the API's one shape.

Each case answered a 500 (or an HTML page under /api/) before it was fixed."""
from __future__ import annotations

import json
import uuid

import pytest

from bundle_maker import make_bundle


def _again(doc: dict, **kernel) -> dict:
    """The same bundle as a new run of a new release, with the kernel fields changed."""
    doc = json.loads(json.dumps(doc))
    doc["run_id"] = str(uuid.uuid4())
    doc["kernel"].update(kernel)
    return doc


@pytest.mark.django_db(transaction=True)
def test_an_empty_config_hash_and_a_null_one_are_the_same_kernel(post):
    # The reproduction: "" first, then null for the same release.
    first = _again(make_bundle(), release="6.13.0-edge", config_hash="")
    second = _again(first, config_hash=None)
    status, body = post(first)
    assert status == 201, body
    status, body = post(second)
    assert status == 201, body
    from iowatch_web.results.models import Kernel, Run
    assert Kernel.objects.filter(release="6.13.0-edge").count() == 1
    assert Run.objects.filter(kernel__release="6.13.0-edge").count() == 2


@pytest.mark.django_db(transaction=True)
def test_an_empty_series_base_and_a_null_one_are_the_same_series(post):
    first = make_bundle()
    first["kernel"]["series"]["base"] = ""
    second = _again(first)
    second["kernel"]["series"]["base"] = None
    for doc in (first, second):
        status, body = post(doc)
        assert status == 201, body
    from iowatch_web.results.models import PatchSeries
    assert PatchSeries.objects.count() == 1


HUGE = 99999999999999999999999  # the id: past 2**63 - 1


@pytest.mark.django_db
@pytest.mark.parametrize("path", [
    f"/compare?base=kernel:{HUGE}&candidate=kernel:1",
    f"/compare?base=kernel:1&candidate=kernel:{2 ** 63}",
    f"/dashboard/api/compare?base=kernel:{HUGE}&candidate=kernel:1",
    f"/series/{HUGE}/", f"/regressions/{HUGE}/",
    f"/api/v1/regressions/{HUGE}", f"/api/v1/regressions/{HUGE}/report",
])
def test_an_id_past_the_stores_integers_is_a_400_or_404_on_pages_too(client, path):
    response = client.get(path)
    assert response.status_code in (400, 404), (response.status_code, response.content[:300])
    if path.startswith("/api/"):
        assert set(response.json()) == {"error", "where"}
