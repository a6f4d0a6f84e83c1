"""The compare page at its edges (issue 44, item 8): a label of several
kernels is refused naming them, a kernel against itself says so, a compare
across hosts says so in its verdict box, an unknown filter is a 400 naming
it, and no 400 shows the database driver's words."""
from __future__ import annotations

import re

import pytest
from django.test import RequestFactory

from bundle_maker import planted_bundle
from iowatch_web.results.models import Kernel, Run

pytestmark = pytest.mark.django_db(transaction=True)
NOISE = [-4, 2, 4, -2, 0]


def _run(post, commit: int, level: float = 1000, *, label: str = "patched", host: str = "lab-1",
         day: int = 1) -> Run:
    doc = planted_bundle({"write.bw_kib_s": [level + e for e in NOISE]}, host=host,
                         kernel={"release": "6.12.0-iowatch", "git_commit": f"{commit:012x}"},
                         started_at=f"2024-05-{day:02d}T10:00:00Z")
    doc["label"] = label
    assert post(doc)[0] == 201
    return Run.objects.get(run_id=doc["run_id"])


def _page(client, **query):
    response = client.get("/compare", query)
    text = response.content.decode()
    m = re.search(r'class="compare-verdict"><strong>Verdict:</strong>\s*(.*?)</p>', text, re.S)
    return response, (m[1].strip() if m else None), text


def test_a_label_of_several_measured_kernels_is_refused_naming_them(post, client):
    _run(post, 1, label="before", day=1)
    _run(post, 2, label="patched", day=2)
    _run(post, 3, 500, label="patched", day=3)
    response, headline, text = _page(client, base="before", candidate="patched")
    assert response.status_code == 400 and headline is None
    assert "candidate 'patched' matches 2 kernels" in text.replace("&#x27;", "'")
    for commit in (2, 3):
        assert f"kernel:{Kernel.objects.get(git_commit=f'{commit:012x}').pk}" in text
    data = client.get("/dashboard/api/compare", {"base": "before", "candidate": "patched"})
    assert data.status_code == 400 and "matches 2 kernels" in data.json()["error"]
    assert len(data.json()["candidates"]) == 2


def test_a_kernel_against_itself_says_so(post, client):
    a = _run(post, 1, day=1)
    b = _run(post, 1, day=2)
    spec = f"kernel:{a.kernel_id}"
    response, headline, text = _page(client, base=spec, candidate=spec)
    assert response.status_code == 400 and headline is None
    assert "are the same 2 runs" in text and "no change" not in text
    data = client.get("/dashboard/api/compare", {"base": spec, "candidate": spec})
    assert data.status_code == 400 and "same 2 runs" in data.json()["error"]
    # Two runs of one kernel: an A/A comparison, said before the verdict.
    response, headline, _ = _page(client, base=str(a.run_id), candidate=str(b.run_id))
    assert response.status_code == 200
    assert headline.startswith("the same kernel on both sides (6.12.0-iowatch 000000000001)"), headline


def test_a_compare_across_hosts_names_the_hosts_in_its_verdict_box(post, client):
    a = _run(post, 1, host="lab-1", day=1)
    b = _run(post, 2, host="lab-2", day=2)
    response, headline, text = _page(client, base=f"kernel:{a.kernel_id}", candidate=f"kernel:{b.kernel_id}")
    assert response.status_code == 200 and headline
    box = text[text.index('id="compare-summary"'):]
    box = box[:box.index("</section>")]
    assert "Different hosts:</strong> base on lab-1, candidate on lab-2" in box, box
    # One host: no such line.
    c = _run(post, 3, host="lab-1", day=3)
    _, _, text = _page(client, base=f"kernel:{a.kernel_id}", candidate=f"kernel:{c.kernel_id}")
    assert "Different hosts" not in text


def test_an_unknown_filter_is_a_400_naming_it(post, client):
    a, b = _run(post, 1, day=1), _run(post, 2, day=2)
    sides = {"base": f"kernel:{a.kernel_id}", "candidate": f"kernel:{b.kernel_id}"}
    response, headline, text = _page(client, **sides, host="lab-9")
    assert response.status_code == 400 and headline is None
    assert "unknown query parameter &#x27;host&#x27;" in text and "device_class" in text
    data = client.get("/dashboard/api/compare", {**sides, "devcie_class": "ssd"})
    assert data.status_code == 400 and "'devcie_class'" in data.json()["error"]
    assert client.get("/compare", {**sides, "device_class": "sdcard"}).status_code == 200


@pytest.mark.parametrize("path, query", [
    ("/compare", {"base": "kernel:99999999999999999999", "candidate": "kernel:1"}),
    ("/dashboard/api/compare", {"base": "kernel:9" * 30, "candidate": "kernel:1"}),
    ("/regressions/99999999999999999999/", {}),
    ("/series/9223372036854775808/", {}),
])
def test_an_id_past_the_stores_integers_is_not_found(client, path, query):
    response = client.get(path, query)
    assert response.status_code == 404, response.content[:300]
    assert b"too large" not in response.content


def test_the_out_of_range_answer_never_repeats_the_drivers_words():
    from iowatch_web.site.middleware import out_of_range
    request = RequestFactory().get("/runs/")
    response = out_of_range(request, OverflowError("Python int too large to convert to SQLite INTEGER"))
    assert response.status_code == 400
    assert b"SQLite" not in response.content and b"64-bit" in response.content
