"""The landing page lists measured and published runs, escaping what it shows."""
import pytest

from bundle_maker import make_bundle


@pytest.mark.django_db
def test_index_lists_runs_and_escapes_labels(client, post):
    doc = make_bundle()
    doc["label"] = "<script>alert(1)</script>"
    status, _ = post(doc)
    assert status == 201
    page = client.get("/").content.decode()
    assert doc["run_id"] in page
    assert "<script>alert(1)</script>" not in page and "&lt;script&gt;" in page
