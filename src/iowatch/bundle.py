"""The result bundle: the one contract between a lab runner and the server
(docs/architecture.md, "The bundle contract and its versions").

A bundle is a directory per run of a matrix on one target:

    bundle.json                       the manifest (schema: schemas/bundle-v<N>.json)
    cells/<cell id>/rep-<n>/<file>    raw tool output, diskstats, CPU, per repetition

The manifest lists every cell, its repetitions, their parsed samples and the
raw artifacts by path. On the wire (the ingest API) the same document carries
each artifact's content inline instead of its path, so the server keeps the raw
output and a better parser can re-read history.

Both sides validate with the same code: the runner before it writes or sends
a bundle, the server before it stores one.

The contract is versioned as KCIDB's schema is: each version keeps its own
schema (schemas/bundle-v1.json, -v2.json, ...) and a small pure function that
turns a document of the version before into one of its own. A document is
validated against the schema of the version it names, then upgraded step by
step to the current version, so a lab whose agents are a version behind keeps
uploading to a newer server. A version the chain does not hold is refused
naming it and the versions this iowatch reads.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import sys
from datetime import datetime, timedelta, timezone
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, Callable

from iowatch.metrics import METRICS

MANIFEST = "bundle.json"


class BundleError(ValueError):
    """A bundle that breaks the contract. `where` names the cell and field."""

    def __init__(self, message: str, where: str | None = None):
        self.where = where
        super().__init__(f"{where}: {message}" if where else message)


# --- the version chain --------------------------------------------------------

def _upgrade_1_to_2(doc: dict) -> dict:
    """Version 2 added optional fields only: the series as it came by mail
    (kernel.series subject, to, cc, archive, patches; kernel.patch message_id,
    author) and what started the run (trigger). A version 1 document holds
    none of them, so it is a version 2 document once it says so."""
    return {**doc, "schema_version": 2}


# Each version and the step that makes a document of the version before into
# one of it (None for the first). A new version adds its schema file and its
# step here; the steps stay, so every older version keeps being read.
UPGRADES: dict[int, Callable[[dict], dict] | None] = {
    1: None,
    2: _upgrade_1_to_2,
}
SCHEMA_VERSION = max(UPGRADES)  # what this iowatch writes


@lru_cache(maxsize=None)
def schema(version: int = SCHEMA_VERSION) -> dict:
    return json.loads(resources.files("iowatch").joinpath(f"schemas/bundle-v{version}.json").read_text())


@lru_cache(maxsize=None)
def _validator(version: int):
    # fastjsonschema compiles the schema to Python: 30x faster than jsonschema
    # on a 10,000-sample bundle (12 ms against 390 ms), which the ingest rate needs.
    import fastjsonschema

    return fastjsonschema.compile(schema(version))


def _versions_read() -> str:
    *older, last = sorted(UPGRADES)
    return f"{', '.join(map(str, older))} and {last}" if older else str(last)


def upgrade(doc: dict) -> dict:
    """A validated document of any version in the chain as a document of the
    current version, through each step in turn. Pure: `doc` is left as it was
    (the server hashes the bundle as it was sent, so a re-upload of the same
    old bundle stays idempotent)."""
    version = doc["schema_version"]
    for v in range(version + 1, SCHEMA_VERSION + 1):
        doc = UPGRADES[v](doc)
    return doc


# Bounds the schema cannot state (its description repeats them). Each keeps a
# bad value out of the store with a 400 instead of a database error.
MAX_DEPTH = 20  # levels of objects and arrays; the fixed structure uses 7
MAX_TEXT = 65536  # characters in any string but an artifact's content
MAX_KEY = 200  # characters in an object's key
MAX_ENVIRONMENT = 1 << 20  # characters of keys and strings in the environment
_DOUBLE_MAX = sys.float_info.max
_SURROGATE = re.compile("[\ud800-\udfff]")
# A JSON string or a structural character: enough to follow the nesting of a
# text too deep for the parser.
_JSON_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[][{},:]', re.S)


def _reject_constant(name: str) -> float:
    raise ValueError(f"{name} is not a number JSON allows")


def loads(data: bytes | str, source: str = "bundle") -> Any:
    """Strict JSON: UTF-8 only (no encoded surrogates), NaN and Infinity refused
    (Python's json takes them), and a text nested deeper than the parser can go
    refused naming where, not raised as RecursionError."""
    try:
        text = data if isinstance(data, str) else str(data, "utf-8")
    except UnicodeDecodeError as e:
        raise BundleError(f"not UTF-8 text ({e.reason} at byte {e.start})", source) from None
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except RecursionError:
        path = _deep_path(text)
        raise BundleError(f"nested more than {MAX_DEPTH} levels deep",
                          _where({}, path) if path else source) from None
    except json.JSONDecodeError as e:
        raise BundleError(f"not valid JSON: {e.msg} at line {e.lineno} column {e.colno}", source) from None
    except ValueError as e:
        raise BundleError(f"not valid JSON: {e}", source) from None


def _deep_path(text: str) -> list:
    """The JSON path of the first container nested deeper than MAX_DEPTH, read
    from the text itself (the parser could not build the document)."""
    stack: list[list] = []  # per open container: [is an object, its current key or index]
    key = None
    for m in _JSON_TOKEN.finditer(text):
        t = m.group()
        if t in "{[":
            if len(stack) == MAX_DEPTH:
                return [entry[1] for entry in stack]
            stack.append([t == "{", None if t == "{" else 0])
        elif t in "}]":
            if stack:
                stack.pop()
        elif t == ",":
            if stack and not stack[-1][0]:
                stack[-1][1] += 1
        elif t == ":":
            if stack:
                stack[-1][1] = key
        else:
            key = t[1:-1]
    return []


def _shown(value: Any) -> str:
    """A value as an error message quotes it: short, and never an error itself
    (a deep list or a 5,000-digit integer cannot always be repr'd)."""
    try:
        return f"{value!r:.80}"
    except (RecursionError, ValueError):
        return f"<{type(value).__name__} too large to show>"


def _text_problem(text: str, nul_ok: bool = False) -> str | None:
    """Why a string cannot be stored as text, or None: PostgreSQL keeps no NUL
    in text or jsonb, and a lone surrogate has no UTF-8 form."""
    if not nul_ok and "\x00" in text:
        return "holds a NUL character (\\u0000), which the store cannot keep as text"
    if not text.isascii() and _SURROGATE.search(text):
        return "holds a lone surrogate (\\ud800-\\udfff), which is not Unicode text"
    return None


def _number_problem(value: int | float) -> str | None:
    # A comparison with the largest double is exact for ints of any size and false for NaN.
    if -_DOUBLE_MAX <= value <= _DOUBLE_MAX:
        return None
    return f"{_shown(value)} is not a finite number that fits a double"


def _cell_label(doc: dict, index: int) -> str:
    try:
        cid = doc["cells"][index]["id"]
        if isinstance(cid, str):
            return f"cell {cid!r}"
    except (KeyError, IndexError, TypeError):
        pass
    return f"cell #{index}"


def _where(doc: dict, path: list | tuple) -> str:
    """Turn a JSON path such as [cells, 3, repetitions, 0, samples, 5, value]
    into "cell 'ext4/ssd' repetitions[0].samples[5].value"."""
    if len(path) >= 2 and path[0] == "cells" and isinstance(path[1], int):
        head, rest = _cell_label(doc, path[1]), path[2:]
    else:
        head, rest = "bundle", path
    field = ""
    for p in rest:
        field += f"[{p}]" if isinstance(p, int) else (f".{p}" if field else str(p))
    return f"{head} field {field}" if field else head


def validate(doc: Any) -> dict:
    """Check a manifest (disk or wire form) against the schema of the version
    it names and the metric table. Returns it unchanged (upgrade() makes it
    current) or raises BundleError naming cell and field."""
    if not isinstance(doc, dict):
        raise BundleError("a bundle is a JSON object", "bundle")
    version = doc.get("schema_version")
    if type(version) is not int or version not in UPGRADES:  # not 1.0, True, a list
        newer = type(version) is int and version > SCHEMA_VERSION
        raise BundleError(
            f"schema_version {_shown(version)} is not supported: this iowatch reads versions "
            f"{_versions_read()} (it writes {SCHEMA_VERSION}); "
            + ("upgrade iowatch here (the server, or the runner that reads it) to one that knows it"
               if newer else "write the bundle with an iowatch runner"),
            "bundle field schema_version")
    import fastjsonschema

    _check_values(doc)
    try:
        _validator(version)(doc)
    except fastjsonschema.JsonSchemaValueException as e:
        path = [int(p) if p.isdigit() else p for p in e.path[1:]]  # e.path[0] is "data"
        message = e.message.removeprefix(e.name).strip()
        raise BundleError(f"{message} (found {_shown(e.value)})", _where(doc, path)) from None
    _check_semantics(doc)
    _check_times(doc)
    return doc


def _in_repetition(path: tuple, field: str) -> bool:
    # cells[i].repetitions[j].<field>: the fixed place, not a free-form object's look-alike.
    return len(path) >= 5 and path[0] == "cells" and path[2] == "repetitions" and path[4] == field


def _is_sample_list(path: tuple) -> bool:
    return len(path) == 5 and _in_repetition(path, "samples")


def _is_artifact_content(path: tuple) -> bool:
    return len(path) == 7 and _in_repetition(path, "artifacts") and path[6] in ("content", "content_base64")


def _check_values(doc: dict) -> None:
    """Every value but the samples (the sample loop checks theirs): text the
    store can keep, finite numbers, bounded nesting and sizes. It walks the
    cells and their repetitions, not the samples, so it costs little."""
    stack: list[tuple[Any, tuple, int]] = [(doc, (), 1)]
    environment_text = 0
    while stack:
        value, path, depth = stack.pop()
        if isinstance(value, str):
            content = _is_artifact_content(path)
            problem = _text_problem(value, nul_ok=content)
            if problem is None and len(value) > MAX_TEXT and not content:
                problem = f"holds {len(value)} characters; a string holds at most {MAX_TEXT}"
            if problem is None and content and path[6] == "content_base64" and not value.isascii():
                # The decoder's own check (at ingest) names any other character that is not base64.
                problem = "is not base64: it holds characters beyond ASCII"
            if problem:
                raise BundleError(problem, _where(doc, path))
            if path[:1] == ("environment",):
                environment_text += len(value)
        elif isinstance(value, (dict, list, tuple)):
            if depth > MAX_DEPTH:
                raise BundleError(f"nested more than {MAX_DEPTH} levels deep", _where(doc, path))
            if isinstance(value, dict):
                for key in value:
                    if problem := _key_problem(key):
                        raise BundleError(problem, _where(doc, path))
                    if path[:1] == ("environment",):
                        environment_text += len(key)
                children = value.items()
            else:
                if _is_sample_list(path):
                    continue
                children = enumerate(value)
            stack.extend((child, (*path, key), depth + 1) for key, child in children)
        elif isinstance(value, (int, float)):
            if problem := _number_problem(value):
                raise BundleError(problem, _where(doc, path))
        elif value is not None:
            raise BundleError(f"a {type(value).__name__} is not a JSON value", _where(doc, path))
    if environment_text > MAX_ENVIRONMENT:
        raise BundleError(f"holds {environment_text} characters of text; the environment holds "
                          f"at most {MAX_ENVIRONMENT}", "bundle field environment")


def _key_problem(key: Any) -> str | None:
    if not isinstance(key, str):
        return f"key {_shown(key)} is not a string"
    if problem := _text_problem(key):
        return f"key {_shown(key)} {problem}"
    if len(key) > MAX_KEY:
        return f"key of {len(key)} characters; a key holds at most {MAX_KEY}"
    return None


MAX_UTC_OFFSET = timedelta(hours=14)


def _check_times(doc: dict) -> None:
    # The schema checks the form; this checks the date exists and, taken to
    # UTC as the store keeps it, is still a year from 1 to 9999.
    for key in ("started_at", "finished_at"):
        text = doc.get(key)
        if text is None:
            continue
        try:
            value = datetime.fromisoformat(text)
            if value.tzinfo:
                value.astimezone(timezone.utc)
        except (ValueError, OverflowError) as e:
            raise BundleError(f"{text!r} is not a date and time the store can keep ({e})",
                              f"bundle field {key}") from None
        # No zone is further than 14 hours from UTC (PostgreSQL refuses past 15:59).
        offset = value.utcoffset()
        if offset is not None and abs(offset) > MAX_UTC_OFFSET:
            raise BundleError(f"{text!r}: a UTC offset of {offset} is no time zone's "
                              "(at most ±14:00); write the time in UTC", f"bundle field {key}")


def _check_semantics(doc: dict) -> None:
    devices = {d["name"] for d in doc.get("devices", [])}
    seen_cells: set[str] = set()
    # Group and job names repeat across samples: each distinct one is checked once.
    storable: set[str] = set()
    for ci, cell in enumerate(doc["cells"]):
        label = _cell_label(doc, ci)
        if cell["id"] in seen_cells:
            raise BundleError("cell id appears twice in the bundle", f"{label} field id")
        seen_cells.add(cell["id"])
        if cell.get("device") is not None and cell["device"] not in devices:
            raise BundleError(f"device {cell['device']!r} is not listed in the bundle's devices",
                              f"{label} field device")
        seen_reps: set[int] = set()
        for ri, rep in enumerate(cell["repetitions"]):
            if rep["index"] in seen_reps:
                raise BundleError(f"repetition {rep['index']} appears twice",
                                  f"{label} field repetitions[{ri}].index")
            seen_reps.add(rep["index"])
            for si, s in enumerate(rep["samples"]):
                if problem := _sample_problem(s, storable):
                    field, message = problem
                    raise BundleError(message, f"{label} field repetitions[{ri}].samples[{si}].{field}")
            names = [a["name"] for a in rep.get("artifacts", [])]
            if len(names) != len(set(names)):
                raise BundleError("two artifacts share a name",
                                  f"{label} field repetitions[{ri}].artifacts")


def _sample_problem(s: dict, storable: set[str]) -> tuple[str, str] | None:
    """(field, what is wrong) for a sample the schema passed, or None. It runs
    once per sample: the where is only formatted for a sample that fails."""
    m = METRICS.get(s["metric"])
    if m is None:
        return "metric", (f"unknown metric {_shown(s['metric'])}: not in iowatch's metric table "
                          "(iowatch.metrics); add it there or fix the parser")
    value = s["value"]
    if isinstance(value, bool) or not -_DOUBLE_MAX <= value <= _DOUBLE_MAX:
        return "value", f"value {_shown(value)} is not a finite number"
    if m.nonnegative and value < 0:
        return "value", f"value {value!r} is negative; {m.name} cannot be"
    if "unit" in s and s["unit"] != m.unit:
        return "unit", f"unit {_shown(s['unit'])} does not match {m.name}'s unit {m.unit!r}"
    if "direction" in s and s["direction"] != m.direction:
        return "direction", (f"direction {s['direction']!r} does not match {m.name}'s "
                             f"direction {m.direction!r}")
    group, job = s["group"], s.get("job")
    if group not in storable:
        if problem := _text_problem(group):
            return "group", problem
        storable.add(group)
    if job is not None and job not in storable:
        if problem := _text_problem(job):
            return "job", problem
        storable.add(job)
    return None


# --- on disk ---------------------------------------------------------------

def rep_dir(cell_id: str, index: int) -> str:
    """Where a repetition's raw files live, relative to the bundle directory."""
    return f"cells/{cell_id}/rep-{index}"


def write_manifest(bundle_dir: str | os.PathLike, doc: dict) -> Path:
    """Validate and write bundle.json atomically (a crash never leaves half a file)."""
    validate(doc)
    path = Path(bundle_dir) / MANIFEST
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(doc, indent=1, allow_nan=False) + "\n")
    os.replace(tmp, path)
    return path


def load(bundle_dir: str | os.PathLike) -> dict:
    """Read and validate a bundle directory's manifest (every artifact must
    exist inside the directory) and return it as a current-version document."""
    return upgrade(_read(bundle_dir))


def _read(bundle_dir: str | os.PathLike) -> dict:
    """The manifest as written, validated against its own version."""
    root = Path(bundle_dir)
    path = root / MANIFEST
    if not path.is_file():
        raise BundleError(f"no {MANIFEST} here: not a bundle directory", str(root))
    doc = validate(loads(path.read_bytes(), str(path)))
    for ci, cell in enumerate(doc["cells"]):
        for ri, rep in enumerate(cell["repetitions"]):
            for ai, art in enumerate(rep.get("artifacts", [])):
                where = f"{_cell_label(doc, ci)} field repetitions[{ri}].artifacts[{ai}]"
                if "path" not in art:
                    raise BundleError("an artifact on disk needs a path", where)
                f = (root / art["path"]).resolve()
                if not f.is_relative_to(root.resolve()) or not f.is_file():
                    raise BundleError(f"artifact file {art['path']!r} is missing from the bundle", where)
    return doc


def to_wire(bundle_dir: str | os.PathLike) -> bytes:
    """The upload body: the manifest with each artifact's bytes inline.

    Each artifact keeps the sha256 the runner recorded when it wrote the file,
    so the server checks the bytes against the run, not against the disk now.
    A raw file that no longer matches it (cut short, edited) is refused here,
    before anything is sent. The manifest goes in the version it was written
    in: the server upgrades it, and hashes it as sent for idempotency."""
    root = Path(bundle_dir)
    doc = _read(root)
    for cell in doc["cells"]:
        for rep in cell["repetitions"]:
            for art in rep.get("artifacts", []):
                raw = (root / art["path"]).read_bytes()
                _check_recorded_sha256(root, cell, rep, art, raw)
                del art["path"]
                try:
                    art["content"] = raw.decode("utf-8")
                except UnicodeDecodeError:
                    art["content_base64"] = base64.b64encode(raw).decode("ascii")
    return json.dumps(doc, separators=(",", ":"), allow_nan=False).encode()


def _check_recorded_sha256(root: Path, cell: dict, rep: dict, art: dict, raw: bytes) -> None:
    """Refuse an artifact whose bytes differ from the sha256 in the manifest."""
    digest = hashlib.sha256(raw).hexdigest()
    recorded = art.setdefault("sha256", digest)  # a manifest without one: nothing to compare
    if recorded == digest:
        return
    raise BundleError(
        f"raw file {art['path']!r} ({len(raw)} bytes now) no longer matches the sha256 "
        f"the runner recorded when it wrote the bundle ({recorded}): it was cut short or "
        f"changed after the run. Re-run the matrix (iowatch run with a new --out), or "
        f"remove cell {cell['id']!r} from {root / MANIFEST} to upload the other cells",
        f"{root}: cell {cell['id']!r} repetition {rep['index']} artifact {art['name']!r}")


def artifact_bytes(art: dict) -> bytes:
    """The raw bytes of a wire-form artifact."""
    if "content_base64" in art:
        return base64.b64decode(art["content_base64"], validate=True)
    return art.get("content", "").encode("utf-8")


class BundleWriter:
    """Builds a bundle directory as a run goes: raw files land in their
    repetition's directory at once, and the manifest is written (validated,
    atomically) by close(). The runner and the tests use it."""

    def __init__(self, bundle_dir: str | os.PathLike, *, run_id: str, kernel: dict, host: dict,
                 devices: list | None = None, tools: dict | None = None,
                 environment: dict | None = None, **fields: Any):
        self.root = Path(bundle_dir)
        self.root.mkdir(parents=True, exist_ok=True)
        self.doc: dict = {"schema_version": SCHEMA_VERSION, "run_id": run_id, "status": "incomplete",
                          "kernel": kernel, "host": host, "devices": devices or [],
                          "tools": tools or {}, "environment": environment or {}, "cells": [],
                          **fields}
        self._cells: dict[str, dict] = {}

    def cell(self, cell_id: str, study: str, **fields: Any) -> dict:
        """The cell with this id, made on first use (fields: device, filesystem, params, ...)."""
        if cell_id not in self._cells:
            c = {"id": cell_id, "study": study, "status": "passed", "repetitions": [], **fields}
            self._cells[cell_id] = c
            self.doc["cells"].append(c)
        return self._cells[cell_id]

    def find(self, cell_id: str) -> dict | None:
        return self._cells.get(cell_id)

    def adopt(self, cell: dict) -> None:
        """Keep a finished cell of an earlier, interrupted run of this bundle."""
        self._cells[cell["id"]] = cell
        self.doc["cells"].append(cell)

    def drop(self, cell_id: str) -> None:
        """Forget a cell (a resumed run starts it over)."""
        self._cells.pop(cell_id, None)
        self.doc["cells"] = [c for c in self.doc["cells"] if c["id"] != cell_id]

    def add_repetition(self, cell_id: str, study: str, index: int, samples: list[dict],
                       artifacts: dict[str, bytes] | None = None, failures: list[dict] | None = None,
                       status: str = "passed", error: str | None = None, **cell_fields: Any) -> dict:
        cell = self.cell(cell_id, study, **cell_fields)
        rel = rep_dir(cell_id, index)
        (self.root / rel).mkdir(parents=True, exist_ok=True)
        arts = []
        for name, data in (artifacts or {}).items():
            (self.root / rel / name).write_bytes(data)
            arts.append({"name": name, "path": f"{rel}/{name}",
                         "sha256": hashlib.sha256(data).hexdigest()})
        rep = {"index": index, "status": status, "samples": samples, "artifacts": arts}
        if failures:
            rep["failures"] = failures
        if error:
            rep["error"] = error
        cell["repetitions"].append(rep)
        if status == "failed":
            cell["status"] = "failed"
        return rep

    def close(self, status: str = "passed", **fields: Any) -> Path:
        self.doc.update(status=status, **fields)
        return write_manifest(self.root, self.doc)
