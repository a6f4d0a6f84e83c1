"""Turning a validated result bundle into rows of the store.

The API checks the bundle with iowatch.bundle (the same code the runner uses)
and hands it here. A bundle is stored whole in one transaction or not at all.
The run id is the idempotency key: posting the same bundle again stores
nothing and reports the run already there; a different bundle that reuses a
run id is refused. Concurrent posts are settled by the database's unique
constraint on the run id, not by a check in Python.
"""
from __future__ import annotations

import binascii
import hashlib
import json
import uuid
from dataclasses import dataclass
from datetime import datetime, timezone

from django.db import IntegrityError, connection, transaction
from django.utils.dateparse import parse_datetime

from iowatch.bundle import BundleError, artifact_bytes, upgrade
from iowatch_web.results.models import (Agent, Artifact, Cell, Device, Host, JobFailure, Kernel,
                                        Metric, Patch, PatchSeries, Repetition, Run, Sample, Study,
                                        sync_metrics)
from iowatch_web.results.signals import run_stored

# Rows per INSERT when COPY is not available (SQLite); Django splits further
# if the backend limits query parameters.
SAMPLE_BATCH = 5000


@dataclass(frozen=True)
class Stored:
    run: Run
    created: bool
    cells: int
    samples: int


class RunConflict(Exception):
    """The run id is already stored with a different bundle."""

    def __init__(self, run: Run):
        self.run = run
        super().__init__(
            f"run {run.run_id} is already stored from a different bundle (received "
            f"{run.received_at:%Y-%m-%d %H:%M:%S} UTC); a run id names one bundle only: "
            "give a new run its own id")


def canonical_sha256(doc: dict) -> str:
    """sha256 of the manifest with sorted keys and no spaces, so the same bundle
    hashes the same however its JSON was laid out."""
    text = json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False)
    return hashlib.sha256(text.encode()).hexdigest()


def store_bundle(doc: dict, agent: Agent | None = None) -> Stored:
    """Store a bundle that iowatch.bundle.validate accepted (wire form, any
    version of the chain).

    Returns Stored(created=True) for a new run, Stored(created=False) when the
    same bundle was stored before. Raises RunConflict when the run id is taken
    by a different bundle, BundleError for what the schema cannot check (an
    artifact's sha256, a bad timestamp)."""
    digest = canonical_sha256(doc)  # of the bundle as sent: the same old bundle re-sent stays idempotent
    doc = upgrade(doc)  # a lab a version behind: stored as the current version
    run_id = uuid.UUID(doc["run_id"])
    stored = _stored_before(run_id, digest)
    if stored:
        return stored
    artifacts = _artifact_contents(doc)
    times = {k: _timestamp(doc, k) for k in ("started_at", "finished_at")}
    _ensure_metrics({s["metric"] for c in doc["cells"] for r in c["repetitions"]
                     for s in r["samples"]})
    try:
        with transaction.atomic():
            stored = _insert(doc, digest, agent, artifacts, times)
            # In the same transaction: the run's follow-up work (its verdicts) is
            # queued with it, so no crash can leave a stored run without it.
            run_stored.send(sender=Run, run=stored.run)
            return stored
    except IntegrityError:
        # Another request stored this run id first (it committed while we waited
        # on the unique index): answer as if we had come second.
        stored = _stored_before(run_id, digest)
        if stored:
            return stored
        raise


def _stored_before(run_id: uuid.UUID, digest: str) -> Stored | None:
    run = Run.objects.filter(run_id=run_id).first()
    if run is None:
        return None
    if run.bundle_sha256 != digest:
        raise RunConflict(run)
    return Stored(run=run, created=False, cells=run.cells.count(),
                  samples=Sample.objects.filter(cell__run=run).count())


def _artifact_contents(doc: dict) -> dict[tuple[int, int, str], tuple[bytes, str]]:
    """Each artifact's bytes and sha256 by (cell position, repetition index,
    name), checked against the sha256 the runner sent: hashed here, before
    the transaction, never inside it."""
    contents = {}
    for ci, cell in enumerate(doc["cells"]):
        for ri, rep in enumerate(cell["repetitions"]):
            for ai, art in enumerate(rep.get("artifacts", [])):
                where = f"cell {cell['id']!r} field repetitions[{ri}].artifacts[{ai}]"
                if "content" not in art and "content_base64" not in art:
                    raise BundleError(f"artifact {art['name']!r} has no content: upload the "
                                      "wire form (iowatch.bundle.to_wire)", where)
                try:
                    raw = artifact_bytes(art)
                except binascii.Error as e:
                    raise BundleError(f"artifact {art['name']!r}: content_base64 is not "
                                      f"base64 ({e})", f"{where}.content_base64") from None
                digest = hashlib.sha256(raw).hexdigest()
                if "sha256" in art and digest != art["sha256"]:
                    raise BundleError(
                        f"artifact {art['name']!r} of repetition {rep['index']}: content does "
                        f"not match its sha256 {art['sha256']}, which the runner recorded when "
                        "it wrote the file: cut short or altered after the run or on the way; "
                        "nothing of this bundle was stored", f"{where}.sha256")
                contents[ci, rep["index"], art["name"]] = raw, digest
    return contents


def _timestamp(doc: dict, key: str) -> datetime | None:
    text = doc.get(key)
    if text is None:
        return None
    try:
        value = parse_datetime(text)
    except ValueError:
        value = None
    if value is None:
        raise BundleError(f"{text!r} is not an ISO 8601 date and time", f"bundle field {key}")
    # A runner that sends no zone means UTC (the runner writes UTC).
    return value if value.tzinfo else value.replace(tzinfo=timezone.utc)


def _ensure_metrics(names: set[str]) -> None:
    # validate() checked the names against the code's table; a server whose
    # database was not migrated since a metric was added learns it here.
    if Metric.objects.filter(name__in=names).count() != len(names):
        sync_metrics()


def _get_or_create_updated(model, lookup: dict, values: dict):
    """get_or_create on the lookup, then bring the row's other fields up to the
    bundle's values, writing (and locking the row) only when they differ."""
    obj, created = model.objects.get_or_create(**lookup, defaults=values)
    if not created:
        changed = {k: v for k, v in values.items() if getattr(obj, k) != v}
        if changed:
            model.objects.filter(pk=obj.pk).update(**changed)
            for k, v in changed.items():
                setattr(obj, k, v)
    return obj


def _devices(host: Host, listed: list[dict]) -> dict[str, Device]:
    """The bundle's devices of the host by name, as _get_or_create_updated
    leaves each, in three statements however many (not two a device): the
    missing ones made at once, a row written only when the bundle changed it."""
    values = {d["name"]: {"device_class": d["class"], "path": _text(d.get("path")),
                          "model": _text(d.get("model")), "size_bytes": d.get("size_bytes"),
                          "rotational": d.get("rotational"), "inventory": d} for d in listed}
    if not values:
        return {}
    Device.objects.bulk_create([Device(host=host, name=n, **v) for n, v in values.items()],
                               ignore_conflicts=True)
    found = {d.name: d for d in Device.objects.filter(host=host, name__in=list(values))}
    for name, device in found.items():
        changed = {k: v for k, v in values[name].items() if getattr(device, k) != v}
        if changed:
            Device.objects.filter(pk=device.pk).update(**changed)
            for k, v in changed.items():
                setattr(device, k, v)
    return found


def _text(value) -> str:
    return "" if value is None else value


def _absent_as_null(value):
    """None for "" as for null: the fields a unique key coalesces (a kernel's
    config hash, a series' base; a commit cannot be "") must mean one thing
    whichever a runner wrote, or the second spelling breaks the key (issue 28)."""
    return None if value == "" else value


def _kernel(k: dict) -> Kernel:
    series = None
    if s := k.get("series"):
        mail = {f: s[f] for f in ("subject", "to", "cc", "archive") if s.get(f)}
        series = _get_or_create_updated(
            PatchSeries, {"name": s["name"], "base": _absent_as_null(s.get("base"))},
            {"message_id": s.get("message_id"), "patch_count": s.get("patch_count"),
             **({"mail": mail} if mail else {})})
        # Every patch of a series that came by mail, so the thread is known
        # before each variant's run arrives.
        for p in s.get("patches") or []:
            _get_or_create_updated(Patch, {"series": series, "index": p["index"]},
                                   {"subject": _text(p.get("subject")), "message_id": p.get("message_id"),
                                    "author": _text(p.get("author")), "sha256": _text(p.get("sha256"))})
    patch = k.get("patch") or {}
    patch_index = patch.get("index")
    if series is not None and patch_index:
        _get_or_create_updated(Patch, {"series": series, "index": patch_index},
                               {"subject": _text(patch.get("subject")), "commit": patch.get("commit"),
                                **{f: patch[f] for f in ("message_id", "author") if patch.get(f)}})
    kernel, _ = Kernel.objects.get_or_create(
        release=k["release"], git_commit=k.get("git_commit"),
        config_hash=_absent_as_null(k.get("config_hash")), series=series,
        patch_index=patch_index, defaults={"config": k.get("config") or {}})
    return kernel


def _insert(doc: dict, digest: str, agent: Agent | None,
            artifacts: dict[tuple[int, int, str], tuple[bytes, str]], times: dict) -> Stored:
    h = doc["host"]
    host_values = {"inventory": h}
    if "kind" in h:
        host_values["kind"] = h["kind"]
    host = _get_or_create_updated(Host, {"name": h["name"]}, host_values)
    devices = _devices(host, doc.get("devices", []))
    kernel = _kernel(doc["kernel"])
    # Sorted, so two uploads creating the same studies take their locks in one order.
    studies = {slug: Study.objects.get_or_create(slug=slug)[0]
               for slug in sorted({c["study"] for c in doc["cells"]})}

    run = Run.objects.create(
        run_id=doc["run_id"], host=host, kernel=kernel, agent=agent, status=doc["status"],
        published=doc.get("published", False), label=_text(doc.get("label")),
        matrix=_text(doc.get("matrix")), command=_text(doc.get("command")),
        cmdline=_text(doc["kernel"].get("cmdline")), tools=doc.get("tools", {}),
        environment=doc.get("environment", {}), trigger=doc.get("trigger") or {},
        check_round=doc.get("check_round") or {}, bundle_sha256=digest, **times)
    run.devices.set(devices.values())

    cells = Cell.objects.bulk_create([
        Cell(run=run, key=c["id"], study=studies[c["study"]],
             device=devices[c["device"]] if c.get("device") else None,
             filesystem=_text(c.get("filesystem")), mkfs_options=_text(c.get("mkfs_options")),
             mount_options=_text(c.get("mount_options")), params=c.get("params", {}),
             status=c["status"], reason=_text(c.get("reason")))
        for c in doc["cells"]])

    repetitions, failures, files, samples = [], [], [], []
    for ci, (cell, c) in enumerate(zip(cells, doc["cells"])):
        for rep in c["repetitions"]:
            index = rep["index"]
            repetitions.append((cell.pk, index, rep["status"], _text(rep.get("error"))))
            failures += [JobFailure(cell_id=cell.pk, repetition=index, group=f["group"],
                                    job=f["job"], error=f["error"], message=f.get("message", ""))
                         for f in rep.get("failures", [])]
            for art in rep.get("artifacts", []):
                raw, digest = artifacts[ci, index, art["name"]]
                files.append((cell.pk, index, art["name"], digest, len(raw), raw))
            samples += [(cell.pk, index, s["metric"], s["value"], s["group"], s.get("job"))
                        for s in rep["samples"]]
    _copy_rows(Repetition, REPETITION_COLUMNS, repetitions)
    JobFailure.objects.bulk_create(failures)
    _copy_rows(Artifact, ARTIFACT_COLUMNS, files)
    _insert_samples(samples)
    Run.objects.filter(pk=run.pk).update(cell_count=len(cells), sample_count=len(samples))
    return Stored(run=run, created=True, cells=len(cells), samples=len(samples))


SAMPLE_COLUMNS = ("cell", "repetition", "metric", "value", "group", "job")
REPETITION_COLUMNS = ("cell", "index", "status", "error")
ARTIFACT_COLUMNS = ("cell", "repetition", "name", "sha256", "size", "content")


def _insert_samples(rows: list[tuple]) -> None:
    """Insert (cell id, repetition, metric name, value, group, job) rows."""
    _copy_rows(Sample, SAMPLE_COLUMNS, rows)


def _copy_rows(model, fields: tuple[str, ...], rows: list[tuple]) -> None:
    """Insert rows of `model` (values in the order of `fields`; a foreign key
    by its id) with PostgreSQL's COPY, else in batched INSERTs (SQLite)."""
    if not rows:
        return
    if connection.vendor == "postgresql":
        # COPY: 54,000 samples/s against 19,000 with bulk_create (bench/ingest/run.py,
        # 10,000-sample bundles through gunicorn, one client).
        columns = ", ".join(connection.ops.quote_name(model._meta.get_field(f).column)
                            for f in fields)
        table = connection.ops.quote_name(model._meta.db_table)
        with connection.cursor() as cursor:
            with cursor.cursor.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
    else:
        names = [model._meta.get_field(f).attname for f in fields]
        model.objects.bulk_create([model(**dict(zip(names, row))) for row in rows],
                                  batch_size=SAMPLE_BATCH)
