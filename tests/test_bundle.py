"""The bundle contract: what validate() accepts and how it names what it refuses."""
from __future__ import annotations

import copy
import json
import sys
import uuid
from pathlib import Path

import pytest

from iowatch import bundle
from iowatch.bundle import BundleError, BundleWriter


def _sample0(doc):
    return doc["cells"][0]["repetitions"][0]["samples"][0]


def good() -> dict:
    return {
        "schema_version": bundle.SCHEMA_VERSION, "run_id": str(uuid.uuid4()), "status": "passed",
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
    (lambda d: d.update(schema_version=3), "bundle field schema_version", "reads versions 1 and 2"),
    (lambda d: d["kernel"].pop("release"), "bundle field kernel", "release"),
    (lambda d: d.update(status="great"), "bundle field status", "must be one of"),
    # A form ISO 8601 allows, but no zone's (schemathesis found PostgreSQL refusing it).
    (lambda d: d.update(finished_at="0147-10-12T00:37:53+16:04"), "bundle field finished_at",
     "at most ±14:00"),
    # What the store cannot keep, in the dicts a runner builds: refused before
    # bundle.json is written, let alone sent.
    (lambda d: _sample0(d).update(group="0\x00"),
     "cell 'ext4/sdb/c0' field repetitions[0].samples[0].group", "NUL"),
    (lambda d: d.update(environment={"uname": "Linux \udc80"}), "bundle field environment.uname",
     "lone surrogate"),
    (lambda d: d.update(environment={"nested": {1: "an int key"}}), "bundle field environment.nested",
     "is not a string"),
    (lambda d: d.update(environment={"path": Path("/dev/sdb")}),
     "bundle field environment.path", "not a JSON value"),
    (lambda d: _sample0(d).update(value=float("nan")),
     "cell 'ext4/sdb/c0' field repetitions[0].samples[0].value", "not a finite number"),
    (lambda d: d["cells"][0].update(params={"numjobs": float("inf")}),
     "cell 'ext4/sdb/c0' field params.numjobs", "fits a double"),
    (lambda d: _sample0(d).update(value=10 ** 5000),
     "cell 'ext4/sdb/c0' field repetitions[0].samples[0].value", "int too large to show"),
    # Only an artifact's content may hold a NUL (it is stored as bytes), not a look-alike path.
    (lambda d: d.update(environment={"a": {"b": {"c": {"artifacts": {"x": {"content": "\x00"}}}}}}),
     "bundle field environment.a.b.c.artifacts.x.content", "NUL"),
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


# --- bounds: what the store can keep (webapp/iowatch_web/results/models.py) -------------------

def _nested(depth: int):
    value: object = 1
    for _ in range(depth):
        value = [value]
    return value


def test_nesting_is_bounded_without_recursing():
    doc = good()
    # The lists start at level 3 (the document, environment, x): 18 of them reach the bound.
    doc["environment"] = {"x": _nested(bundle.MAX_DEPTH - 2)}
    bundle.validate(doc)
    doc["environment"] = {"x": _nested(bundle.MAX_DEPTH - 1)}
    with pytest.raises(BundleError, match=f"nested more than {bundle.MAX_DEPTH} levels"):
        bundle.validate(doc)
    # Deeper than Python's recursion limit: refused all the same, not a RecursionError.
    doc["environment"] = {"x": _nested(100_000)}
    with pytest.raises(BundleError) as e:
        bundle.validate(doc)
    assert e.value.where.startswith("bundle field environment.x[0][0]")


def test_a_text_too_deep_for_the_parser_is_refused_naming_the_path():
    text = json.dumps(good()).replace('"lab1"', '"lab1", "inventory": {"racks": ' + "[" * 100_000
                                      + "]" * 100_000 + "}", 1)
    with pytest.raises(BundleError) as e:
        bundle.loads(text)
    assert e.value.where.startswith("bundle field host.inventory.racks[0]")
    assert "nested more than" in str(e.value)


@pytest.mark.parametrize("data, words", [
    (b'{"a": "\xed\xa0\x80"}', "not UTF-8"),  # a surrogate encoded in UTF-8 bytes
    (b'{"a": ' + b"1" * 5000 + b"}", "digits"),
    (b'{"a": -Infinity}', "-Infinity is not a number JSON allows"),
])
def test_loads_refuses_what_python_s_json_would_take(data, words):
    with pytest.raises(BundleError, match=words):
        bundle.loads(data)


@pytest.mark.parametrize("field, most, mutate", [
    ("repetitions[0].index", 2 ** 31 - 1, lambda d, v: d["cells"][0]["repetitions"][0].update(index=v)),
    ("size_bytes", 2 ** 63 - 1, lambda d, v: d["devices"][0].update(size_bytes=v)),
    ("patch.index", 2 ** 31 - 1, lambda d, v: d["kernel"].update(patch={"index": v})),
    ("environment string", bundle.MAX_TEXT, lambda d, v: d.update(environment={"log": "x" * v})),
    ("artifact name", 200, lambda d, v: d["cells"][0]["repetitions"][0].update(
        artifacts=[{"name": "a" * v, "content": ""}])),
])
def test_each_bound_takes_its_most_and_refuses_one_more(field, most, mutate):
    doc = copy.deepcopy(good())
    mutate(doc, most)
    bundle.validate(doc)
    mutate(doc, most + 1)
    with pytest.raises(BundleError):
        bundle.validate(doc)


def test_the_largest_double_is_a_sample_value():
    doc = good()
    _sample0(doc)["value"] = sys.float_info.max
    bundle.validate(doc)


def test_every_study_file_s_slug_is_a_study_name_a_bundle_takes():
    from iowatch.studies import load_studies
    slugs = list(load_studies(Path(__file__).parents[1] / "jobs" / "studies"))
    assert slugs
    for slug in slugs:
        doc = good()
        for cell in doc["cells"]:
            cell["study"] = slug
        bundle.validate(doc)


@pytest.mark.parametrize("name", ["..", ".", "a/b", "", "fio.json\n", "fio\x00.json"])
def test_an_artifact_name_that_is_not_a_plain_file_name_is_refused(name, tmp_path):
    doc = good()
    w = BundleWriter(tmp_path / "b", run_id=doc["run_id"], kernel=doc["kernel"], host=doc["host"],
                     devices=doc["devices"])
    w.doc["cells"].append({"id": "ext4/sdb/c0", "study": "odirect-vs-readers", "status": "passed",
                           "repetitions": [{"index": 1, "status": "passed", "samples": [],
                                            "artifacts": [{"name": name, "path": "x"}]}]})
    with pytest.raises(BundleError) as e:
        w.close()
    assert e.value.where == "cell 'ext4/sdb/c0' field repetitions[0].artifacts[0].name"
    assert not (tmp_path / "b" / "bundle.json").exists()


# --- the version chain ---------------------------------------------------------

E2E = Path(__file__).parent / "fixtures" / "e2e-check"


def test_each_version_keeps_its_schema_and_the_chain_has_no_gap():
    assert sorted(bundle.UPGRADES) == list(range(1, bundle.SCHEMA_VERSION + 1))
    assert bundle.UPGRADES[1] is None
    for v in bundle.UPGRADES:
        s = bundle.schema(v)
        assert s["properties"]["schema_version"]["const"] == v
        assert s["$id"] == f"iowatch/bundle-v{v}.json"


def test_a_real_version_1_bundle_is_read_as_the_current_version(tmp_path):
    """The e2e check's bundles were written by runners of version 1."""
    src = E2E / "guest-01" / "bundle"
    written = json.loads((src / "bundle.json").read_text())
    assert written["schema_version"] == 1
    doc = bundle.load(src)
    assert doc["schema_version"] == bundle.SCHEMA_VERSION
    assert bundle.validate(copy.deepcopy(doc)) == doc  # valid in the current schema
    assert {k: v for k, v in doc.items() if k != "schema_version"} == \
        {k: v for k, v in written.items() if k != "schema_version"}
    # On the wire it goes as written: the server upgrades it and hashes what was sent.
    assert json.loads(bundle.to_wire(src))["schema_version"] == 1


def test_upgrade_leaves_its_input_as_it_was():
    doc = good()
    doc["schema_version"] = 1
    before = copy.deepcopy(doc)
    after = bundle.upgrade(bundle.validate(doc))
    assert doc == before
    assert after["schema_version"] == bundle.SCHEMA_VERSION


def test_a_version_1_bundle_is_held_to_version_1_s_schema():
    """The series from mail came with version 2: a version 1 document that
    carries it was not written by a version 1 runner."""
    doc = good()
    doc["kernel"]["series"] = {"name": "s", "cc": ["a@example.org"]}
    bundle.validate(copy.deepcopy(doc))
    doc["schema_version"] = 1
    with pytest.raises(BundleError) as e:
        bundle.validate(doc)
    assert "bundle field kernel.series" in str(e.value)
    assert "cc" in str(e.value)


def test_a_lava_board_class_is_a_host_kind_and_a_bare_metal_one_of_before_still_reads():
    """A LAVA board class's runner names its host kind lava with the device
    type (iowatch.lava.definition.board_inventory); its bundles said
    bare-metal before, and those of either version still read."""
    doc = good()
    doc["host"] = {"name": "lava-qemu", "kind": "lava", "lava": {"device_type": "qemu", "tags": []}}
    assert bundle.validate(copy.deepcopy(doc)) == doc
    for version in (1, 2):
        old = good()
        old.update(schema_version=version, host={"name": "lava-qemu", "kind": "bare-metal"})
        assert bundle.upgrade(bundle.validate(old))["host"] == {"name": "lava-qemu", "kind": "bare-metal"}
    doc["host"]["lava"] = {"tags": ["sd-evo32"]}
    with pytest.raises(BundleError, match="device_type") as e:
        bundle.validate(copy.deepcopy(doc))
    assert e.value.where == "bundle field host.lava"
    # Version 1 runners wrote no such host: a version 1 document is held to its own kinds.
    doc.update(schema_version=1, host={"name": "lava-qemu", "kind": "lava"})
    with pytest.raises(BundleError) as e:
        bundle.validate(doc)
    assert e.value.where == "bundle field host.kind"


@pytest.mark.parametrize("version, words", [
    (3, ["schema_version 3 is not supported", "reads versions 1 and 2", "upgrade iowatch"]),
    (0, ["schema_version 0 is not supported", "reads versions 1 and 2"]),
    ("2", ["schema_version '2' is not supported"]),
    (2.0, ["schema_version 2.0 is not supported"]),
    (True, ["schema_version True is not supported"]),
    ([2], ["schema_version [2] is not supported"]),
    (None, ["schema_version None is not supported"]),
])
def test_a_version_outside_the_chain_is_refused_naming_it(version, words):
    doc = good()
    doc["schema_version"] = version
    with pytest.raises(BundleError) as e:
        bundle.validate(doc)
    assert e.value.where == "bundle field schema_version"
    for w in words:
        assert w in str(e.value)
