"""The bundle contract: what validate() accepts and how it names what it refuses."""
from __future__ import annotations

import copy
import json
import uuid

import pytest

from iowatch import bundle
from iowatch.bundle import BundleError, BundleWriter


def good() -> dict:
    return {
        "schema_version": 1, "run_id": str(uuid.uuid4()), "status": "passed",
        "kernel": {"release": "6.12.0", "git_commit": "abc1234"},
        "host": {"name": "lab1"}, "devices": [{"name": "sdb", "class": "hdd"}],
        "cells": [{"id": f"ext4/sdb/c{i}", "study": "odirect-vs-readers", "status": "passed",
                   "device": "sdb", "repetitions": [{"index": 1, "status": "passed", "samples": [
                       {"metric": "write.bw_kib_s", "value": 2968.0, "unit": "KiB/s", "group": "0"},
                       {"metric": "read.bw_kib_s", "value": 103424.0, "group": "0", "job": None}]}]}
                  for i in range(3)],
    }


def test_a_good_bundle_passes():
    doc = good()
    assert bundle.validate(doc) is doc


@pytest.mark.parametrize("mutate, where, words", [
    (lambda d: d["cells"][1]["repetitions"][0]["samples"][0].update(value="fast"),
     "cell 'ext4/sdb/c1' field repetitions[0].samples[0].value", "must be number"),
    (lambda d: d["cells"][2]["repetitions"][0]["samples"][1].update(metric="write.speed"),
     "cell 'ext4/sdb/c2' field repetitions[0].samples[1].metric", "unknown metric 'write.speed'"),
    (lambda d: d["cells"][0]["repetitions"][0]["samples"][0].update(value=-5),
     "cell 'ext4/sdb/c0' field repetitions[0].samples[0].value", "negative"),
    (lambda d: d["cells"][0]["repetitions"][0]["samples"][0].update(unit="MB/s"),
     "cell 'ext4/sdb/c0' field repetitions[0].samples[0].unit", "KiB/s"),
    (lambda d: d["cells"][1].update(device="sdz"), "cell 'ext4/sdb/c1' field device", "'sdz'"),
    (lambda d: d["cells"][2].update(id="ext4/sdb/c0"), "cell 'ext4/sdb/c0' field id", "twice"),
    (lambda d: d.update(schema_version=2), "bundle field schema_version", "not supported"),
    (lambda d: d["kernel"].pop("release"), "bundle field kernel", "release"),
    (lambda d: d.update(status="great"), "bundle field status", "must be one of"),
])
def test_a_bad_bundle_is_refused_naming_cell_and_field(mutate, where, words):
    doc = copy.deepcopy(good())
    mutate(doc)
    with pytest.raises(BundleError) as e:
        bundle.validate(doc)
    assert e.value.where == where
    assert words in str(e.value)


def test_nan_and_truncated_json_are_refused():
    with pytest.raises(BundleError, match="NaN is not a number JSON allows"):
        bundle.loads('{"value": NaN}')
    with pytest.raises(BundleError, match="line 1 column"):
        bundle.loads(json.dumps(good())[:-20])


def test_writer_round_trip_carries_raw_files_on_the_wire(tmp_path):
    doc = good()
    w = BundleWriter(tmp_path, run_id=doc["run_id"], kernel=doc["kernel"], host=doc["host"],
                     devices=doc["devices"])
    raw = b'{"fio version": "fio-3.33", "jobs": []}\n'
    w.add_repetition("ext4/sdb/c0", "odirect-vs-readers", 1,
                     doc["cells"][0]["repetitions"][0]["samples"], {"fio.json": raw}, device="sdb")
    w.close()
    wire = bundle.validate(bundle.loads(bundle.to_wire(tmp_path)))
    art = wire["cells"][0]["repetitions"][0]["artifacts"][0]
    assert bundle.artifact_bytes(art) == raw and "path" not in art
    (tmp_path / "cells/ext4/sdb/c0/rep-1/fio.json").unlink()
    with pytest.raises(BundleError, match="missing from the bundle"):
        bundle.load(tmp_path)


def _bundle_with_raw_file(tmp_path, raw: bytes):
    doc = good()
    w = BundleWriter(tmp_path, run_id=doc["run_id"], kernel=doc["kernel"], host=doc["host"],
                     devices=doc["devices"])
    w.add_repetition("ext4/sdb/c0", "odirect-vs-readers", 2,
                     doc["cells"][0]["repetitions"][0]["samples"], {"fio.json": raw}, device="sdb")
    w.close()
    return tmp_path / "cells/ext4/sdb/c0/rep-2/fio.json"


def test_to_wire_carries_the_sha256_the_runner_recorded(tmp_path):
    _bundle_with_raw_file(tmp_path, b'{"fio version": "fio-3.33", "jobs": []}\n')
    recorded = bundle.load(tmp_path)["cells"][0]["repetitions"][0]["artifacts"][0]["sha256"]
    wire = bundle.loads(bundle.to_wire(tmp_path))
    assert wire["cells"][0]["repetitions"][0]["artifacts"][0]["sha256"] == recorded


def test_to_wire_refuses_a_raw_file_cut_short_after_the_run(tmp_path):
    raw = b'{"fio version": "fio-3.33", "jobs": [{"jobname": "seqw", "write": {}}]}\n'
    path = _bundle_with_raw_file(tmp_path, raw)
    path.write_bytes(raw[:len(raw) // 2])
    with pytest.raises(BundleError) as e:
        bundle.to_wire(tmp_path)
    assert e.value.where == f"{tmp_path}: cell 'ext4/sdb/c0' repetition 2 artifact 'fio.json'"
    message = str(e.value)
    assert "cells/ext4/sdb/c0/rep-2/fio.json" in message and f"{len(raw) // 2} bytes now" in message
    assert "Re-run" in message and "remove cell 'ext4/sdb/c0'" in message
