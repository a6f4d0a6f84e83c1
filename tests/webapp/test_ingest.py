"""POST /api/v1/bundles: stores a run whole, once, or refuses it and stores nothing."""
from __future__ import annotations

import copy
import json

import pytest
from django.test import override_settings

from bundle_maker import make_bundle, wire
from iowatch_web.results import ingest
from iowatch_web.results.models import Artifact, Cell, Device, Host, Kernel, Repetition, Run, Sample

pytestmark = pytest.mark.django_db


def test_a_new_bundle_is_stored_whole(post):
    doc = make_bundle(cells=3, samples=4, repetitions=2)
    status, body = post(doc)
    assert status == 201
    assert body == {"run_id": doc["run_id"], "created": True, "cells": 3, "samples": 24}
    run = Run.objects.select_related("host", "kernel__series").get(run_id=doc["run_id"])
    assert (run.status, run.label, run.host.name, run.host.kind) == ("passed", "patched", "lab-1", "qemu")
    assert run.kernel.release == "6.12.0-iowatch" and run.kernel.series.base == "v6.12"
    assert run.kernel.patch_index == 1 and run.kernel.series.patches.get().index == 1
    assert run.cmdline == "console=ttyS0 quiet"
    assert run.agent.name == "lab-agent" and run.agent.last_seen is not None
    assert [d.name for d in run.devices.all()] == ["sd0"]
    assert Cell.objects.filter(run=run).count() == 3
    assert Repetition.objects.filter(cell__run=run).count() == 6
    stored = sorted(Sample.objects.filter(cell__run=run).values_list(
        "cell__key", "repetition", "metric_id", "value", "group", "job"))
    sent = sorted((c["id"], r["index"], s["metric"], s["value"], s["group"], s["job"])
                  for c in doc["cells"] for r in c["repetitions"] for s in r["samples"])
    assert stored == sent
    art = Artifact.objects.filter(cell__run=run).first()
    assert bytes(art.content).decode() == doc["cells"][0]["repetitions"][0]["artifacts"][0]["content"]


def test_three_identical_posts_store_one_run(post, counts):
    doc = make_bundle(cells=2, samples=5)
    replies = [post(doc) for _ in range(3)]
    assert [s for s, _ in replies] == [201, 200, 200]
    assert replies[1][1] == replies[2][1] == {"run_id": doc["run_id"], "created": False,
                                              "cells": 2, "samples": 10}
    assert counts()["Run"] == 1 and counts()["Sample"] == 10


def test_the_same_bundle_laid_out_differently_is_still_the_same(post):
    doc = make_bundle(cells=1, samples=3)
    assert post(doc)[0] == 201
    assert post(json.dumps(doc, indent=2).encode())[0] == 200


def test_a_run_id_reused_with_different_content_is_refused(post, counts):
    doc = make_bundle(cells=2, samples=5)
    assert post(doc)[0] == 201
    before = counts()
    other = copy.deepcopy(doc)
    other["cells"][0]["repetitions"][0]["samples"][0]["value"] = 99.0
    status, body = post(other)
    assert status == 409
    assert "already stored from a different bundle" in body["error"]
    assert body["where"] == "bundle field run_id"
    assert counts() == before
    assert not Sample.objects.filter(value=99.0).exists()


def test_hosts_devices_kernels_and_studies_are_shared_between_runs(post):
    assert post(make_bundle(cells=2, samples=1))[0] == 201
    later = make_bundle(cells=2, samples=1, seed=1)
    later["devices"][0]["model"] = "QEMU SD v2"
    assert post(later)[0] == 201
    assert Host.objects.count() == 1 and Kernel.objects.count() == 1
    assert list(Device.objects.values_list("model", flat=True)) == ["QEMU SD v2"]


def _samples(doc):
    return doc["cells"][1]["repetitions"][0]["samples"]


def on_doc(change):
    """A breaker that edits the manifest before it is sent."""
    def body(doc: dict) -> bytes:
        change(doc)
        return wire(doc)
    return body


def on_text(change):
    """A breaker that edits the JSON text itself (what json.dumps cannot write)."""
    def body(doc: dict) -> bytes:
        return change(wire(doc))
    return body


def _sample_field(field, value):
    return on_doc(lambda doc: _samples(doc)[2].update({field: value}))


def _middle_artifact(**fields):
    return on_doc(lambda doc: doc["cells"][1]["repetitions"][0]["artifacts"][0].update(fields))


def _raw_nan(body: bytes) -> bytes:
    assert b'"value":5.25' in body
    return body.replace(b'"value":5.25', b'"value":NaN', 1)


# The middle cell of three is the bad one: the good cells around it must not be stored.
MIDDLE = "cell 'f2fs-dio-write/sd0/f2fs/c1'"

# (what is wrong, how to break a good bundle, words the message must hold)
MALFORMED = [
    ("truncated JSON", on_text(lambda body: body[: len(body) // 2]), ["not valid JSON"]),
    ("a value that is a word", _sample_field("value", "fast"),
     [MIDDLE, "repetitions[0].samples[2].value", "must be number"]),
    ("an unknown metric", _sample_field("metric", "write.speed_furlongs"),
     [MIDDLE, "samples[2].metric", "unknown metric 'write.speed_furlongs'"]),
    ("NaN as raw JSON text", on_text(_raw_nan), ["NaN", "not a number JSON allows"]),
    ("a negative bandwidth", _sample_field("value", -5),
     [MIDDLE, "samples[2].value", "negative", "write.bw_kib_s"]),
    ("a schema version newer than the server's", on_doc(lambda doc: doc.update(schema_version=3)),
     ["schema_version 3 is not supported", "reads versions 1 and 2"]),
    ("an artifact whose sha256 does not match", _middle_artifact(content="truncated"),
     [MIDDLE, "artifacts[0].sha256", "does not match its sha256"]),
    ("an artifact whose base64 is broken", _middle_artifact(content_base64="@@@", sha256="0" * 64),
     [MIDDLE, "content_base64", "not base64"]),
    ("a cell naming an undeclared device", on_doc(lambda doc: doc["cells"][1].update(device="sd9")),
     [MIDDLE, "field device", "'sd9' is not listed"]),
    ("a start time that is no time", on_doc(lambda doc: doc.update(started_at="yesterday")),
     ["started_at"]),
]


@pytest.mark.parametrize("what, breaking, words", MALFORMED, ids=[m[0] for m in MALFORMED])
def test_a_malformed_bundle_is_refused_naming_where_and_stores_nothing(
        post, counts, what, breaking, words):
    doc = make_bundle(cells=3, samples=4)
    _samples(doc)[2].update(metric="write.bw_kib_s", value=5.25)
    body = breaking(doc)
    before = counts()
    status, reply = post(body)
    assert status == 400, reply
    for word in words:
        assert word in reply["error"], (word, reply)
    assert reply["where"]
    assert counts() == before


def test_a_bundle_over_the_size_limit_is_refused_with_413(post, counts):
    body = wire(make_bundle(cells=3, samples=20))
    before = counts()
    with override_settings(IOWATCH_MAX_BUNDLE_BYTES=len(body) - 1):
        status, reply = post(body)
    assert status == 413
    assert f"limit of {len(body) - 1} bytes" in reply["error"]
    assert "IOWATCH_MAX_BUNDLE_BYTES" in reply["error"]
    assert counts() == before
    with override_settings(IOWATCH_MAX_BUNDLE_BYTES=len(body)):
        assert post(body)[0] == 201


def test_a_body_that_is_not_json_is_refused_with_415(post, counts):
    before = counts()
    status, reply = post(wire(make_bundle()), content_type="text/plain")
    assert status == 415 and "application/json" in reply["error"]
    assert counts() == before


def test_a_failure_while_storing_leaves_nothing_behind(post, counts, monkeypatch):
    def broken(rows):
        raise RuntimeError("the disk filled up")

    monkeypatch.setattr(ingest, "_insert_samples", broken)
    before = counts()
    with pytest.raises(RuntimeError, match="disk filled up"):
        post(make_bundle(cells=3, samples=4))
    assert counts() == before
