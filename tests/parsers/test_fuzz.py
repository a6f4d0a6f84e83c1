"""Every parser on damaged real outputs: samples the bundle can hold, or a ParseError naming the file.

The inputs are the real tool outputs under tests/fixtures, damaged by
tests/parsers/mutations.py (byte flips, truncation, lines deleted or repeated,
figures replaced by huge, inf, nan or negative ones, JSON keys removed or given
values of another type, lists nested past the recursion limit). Hypothesis
draws the damage with a fixed seed (derandomize) and keeps no example database,
so every run tries the same inputs. test_found_failures holds, one per site,
the inputs that raised another exception before the parsers were made robust.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from iowatch.metrics import METRICS
from iowatch.parsers import FORMATS, parse_file, parse_text
from iowatch.samples import ParseError

from . import mutations
from .conftest import FIXTURES

FIO_JSON = sorted(FIXTURES.glob("fio-*/*.json"))
FIO_TEXT = sorted(FIXTURES.glob("fio-*/*.txt")) + sorted(FIXTURES.glob("seeds/*.txt"))
FSMARK = sorted(FIXTURES.glob("fs_mark-*/*.txt"))
INPUTS = {"fio-json": FIO_JSON, "fio-text": FIO_TEXT, "fsmark": FSMARK,
          "auto": FIO_JSON + FIO_TEXT + FSMARK}
TEXTS = {p: p.read_text() for p in INPUTS["auto"]}

# Bounded for CI: the file runs in a few seconds. The deadline is only a guard
# against a parser that hangs (a regular expression that backtracks without end).
FUZZ = settings(max_examples=250, deadline=5000, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


class Draws:
    """mutations.Picker over hypothesis's draws."""

    def __init__(self, data):
        self.data = data

    def integer(self, lo: int, hi: int) -> int:
        return self.data.draw(st.integers(lo, hi))

    def choice(self, options):
        return self.data.draw(st.sampled_from(list(options)))


def storable(name: str | None, limit: int = 300) -> bool:
    """What the bundle keeps as text: no NUL, no lone surrogate; a name is short."""
    return name is None or (isinstance(name, str) and "\x00" not in name and len(name) <= limit
                            and not any("\ud800" <= c <= "\udfff" for c in name))


def check(text: str, fmt: str, path: str) -> str:
    """Parse; 'parsed' when every sample is one the bundle takes, 'refused' for a
    one-line ParseError naming the file. Any other exception fails the test."""
    try:
        result = parse_text(text, fmt, path)
    except ParseError as e:
        assert str(e).startswith(path) and "\n" not in str(e), str(e)
        return "refused"
    for s in result.samples:
        metric = METRICS[s.metric]
        assert math.isfinite(s.value), s
        assert s.value >= 0 or not metric.nonnegative, s
        assert storable(s.group) and storable(s.job), s
    for f in result.failures:
        assert storable(f.group) and storable(f.job) and storable(f.message, 1000), f
    return "parsed"


def fuzz(fmt: str, data) -> None:
    source = data.draw(st.sampled_from(INPUTS[fmt]), label="fixture")
    pick = Draws(data)
    text = mutations.mutate(TEXTS[source], pick, pick.integer(1, 3))
    # Shown by --hypothesis-show-statistics: how many damaged outputs still parse.
    event(check(text, fmt, f"fuzzed/{source.parent.name}/{source.name}"))


@pytest.mark.parametrize("fmt", ["fio-json", "fio-text", "fsmark", "auto"])
@FUZZ
@given(data=st.data())
def test_parser(fmt, data):
    """Each parser on its own outputs; "auto" is what `iowatch parse` does by default."""
    fuzz(fmt, data)


@FUZZ
@given(st.data())
def test_parse_file_on_damaged_bytes(data):
    """Bytes no UTF-8 decoder takes, through the file path `iowatch parse FILE` uses."""
    source = data.draw(st.sampled_from(INPUTS["auto"]), label="fixture")
    raw = bytearray(source.read_bytes())
    for _ in range(data.draw(st.integers(1, 8))):
        raw[data.draw(st.integers(0, len(raw) - 1))] = data.draw(st.integers(0, 255))
    fmt = data.draw(st.sampled_from(("auto",) + FORMATS))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / source.name
        path.write_bytes(bytes(raw))
        try:
            result = parse_file(str(path), fmt)
        except ParseError as e:
            assert str(e).startswith(str(path))
            return
    assert all(math.isfinite(s.value) for s in result.samples)


def _edit_json(name: str, edit) -> str:
    """A fio JSON fixture with one value changed by edit(doc)."""
    doc = json.loads((FIXTURES / name).read_text())
    edit(doc)
    return json.dumps(doc, indent=2)


def _set(path: list, value):
    def edit(doc):
        node = doc
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value
    return edit


def _drop(path: list):
    def edit(doc):
        node = doc
        for key in path[:-1]:
            node = node[key]
        del node[path[-1]]
    return edit


def _raw_json(name: str, path: list, token: str) -> str:
    """A fio JSON fixture with one value replaced by a token json.dumps cannot write."""
    return _edit_json(name, _set(path, "@@token@@")).replace('"@@token@@"', token)


def _text(name: str, old: str, new: str) -> str:
    text = (FIXTURES / name).read_text()
    assert old in text, (name, old)
    return text.replace(old, new, 1)


# The inputs that raised something other than ParseError before, one per code
# site, with the part of the message that says what was expected instead.
FOUND = [
    # fio_json load: RecursionError, and the 4300-digit limit's ValueError, from json
    ("deep nesting", lambda: _raw_json("fio-3.33/md-raid0.json", ["jobs", 0, "write", "bw"],
                                       "[" * 100_000 + "1" + "]" * 100_000),
     "nested too deep"),
    ("5000-digit integer", lambda: _raw_json("fio-2.16/two-groups.json", ["jobs", 1, "groupid"], "9" * 5000),
     "an integer from 0 to 2^31 at jobs[1].groupid"),
    # fio_json: non-dicts where objects are, wrong types, missing and impossible figures
    ("job not an object", lambda: _edit_json("fio-2.16/seqw-group.json", _set(["jobs", 0], 7)),
     "a JSON object at jobs[0]"),
    ("fio version a number", lambda: _edit_json("fio-3.33/md-raid0.json", _set(["fio version"], 3.33)),
     "a string at document.fio version"),
    ("jobname an object", lambda: _edit_json("fio-2.16/two-groups.json", _set(["jobs", 0, "jobname"], {})),
     "a string at jobs[0].jobname"),
    ("error a float", lambda: _edit_json("fio-2.16/two-groups.json", _set(["jobs", 0, "error"], 2.5)),
     "an integer from 0 to 2^31 at jobs[0].error"),
    ("io_bytes null", lambda: _edit_json("fio-2.16/seqw-group.json", _set(["jobs", 0, "write", "io_bytes"], None)),
     "an integer from 0 to 2^64 at jobs[0].write.io_bytes"),
    ("direction a string", lambda: _edit_json("fio-2.16/writer-vs-readers.json", _set(["jobs", 0, "read"], "x")),
     "a JSON object at jobs[0].read"),
    ("runtime a list", lambda: _edit_json("fio-2.16/two-groups.json", _set(["jobs", 0, "read", "runtime"], [1])),
     "an integer from 0 to 2^64 at jobs[0].read.runtime"),
    ("fio 3 without io_bytes", lambda: _edit_json("fio-3.33/md-raid0.json", _drop(["jobs", 0, "write", "io_kbytes"])),
     None),
    ("latency null", lambda: _edit_json("fio-2.16/two-groups.json", _set(["jobs", 0, "read", "clat"], None)),
     "a JSON object at jobs[0].read.clat"),
    ("latency a list", lambda: _edit_json("fio-2.16/two-groups.json", _set(["jobs", 0, "read", "clat", "mean"], [])),
     "a number from 0 to 2^64 at jobs[0].read.clat.mean"),
    ("latency past a double", lambda: _edit_json("fio-2.16/seqw-group.json", _set(["jobs", 0, "write", "lat", "max"], 10**400)),
     "a number from 0 to 2^64"),
    ("percentiles a bool", lambda: _edit_json("fio-2.16/seqw-group.json", _set(["jobs", 0, "write", "clat", "percentile"], True)),
     "a JSON object at jobs[0].write.clat.percentile"),
    ("percentile key not a number", lambda: _text("fio-3.33-mixed/both.json", '"99.000000"', '"[[x"'),
     "percentiles such as"),
    ("percentile value a list", lambda: _edit_json("fio-3.33/md-raid0.json", _set(
        ["jobs", 0, "write", "clat_ns", "percentile", "99.000000"], [1])),
     "at jobs[0].write.clat_ns.percentile.99.000000"),
    ("disk_util a number", lambda: _edit_json("fio-3.33-mixed/mixed.json", _set(["disk_util"], 1.5)),
     "a JSON array at disk_util"),
    ("disk entry a bool", lambda: _edit_json("fio-3.33/md-raid0.json", _set(["disk_util", 0], True)),
     "a JSON object at disk_util[0]"),
    ("NaN figure", lambda: _raw_json("fio-3.33/md-raid0.json", ["jobs", 0, "write", "bw"], "NaN"),
     "at jobs[0].write.bw, found 'nan'"),
    # fio_json group line: a runtime of a denormal's milliseconds divided bytes to inf
    ("runtime a tiny float", lambda: _edit_json("fio-2.16/writer-vs-readers.json", _set(
        ["jobs", 0, "write", "runtime"], 5e-324)),
     "an integer from 0 to 2^64 at jobs[0].write.runtime"),
    # fio_text: a percentile, a cpu figure and an error number that do not read
    ("percentile NaN", lambda: _text("fio-2.16/two-groups.txt", "99.00th=[  346]", "99.00th=[NaN]"),
     "a fio percentile line"),
    ("cpu '.'", lambda: _text("fio-3.33-mixed/both.txt", "usr=14.71%", "usr=.%"),
     "a fio cpu line"),
    ("err of 5000 digits", lambda: _text("fio-2.16/two-groups.txt", "err= 0:", "err= " + "9" * 5000 + ":"),
     "a fio job header"),
    # fsmark: float() took inf and nan, and Sample.of then raised ValueError
    ("fs_mark -inf", lambda: _text("fs_mark-3.3/plain.txt", "      28384.9", " -inf"),
     "an fs_mark row"),
    ("fs_mark nan", lambda: _text("fs_mark-3.3/verbose.txt", "       5643.3", " nan"),
     "an fs_mark row"),
    ("fs_mark 1e400", lambda: _text("fs_mark-3.3/plain.txt", "      23663.0", " 1" + "0" * 400),
     "below 2^64"),
]


@pytest.mark.parametrize("case, make, expected", FOUND, ids=[c[0] for c in FOUND])
def test_found_failures(case, make, expected):
    outcome = check(make(), "auto", "found.out")
    if expected is None:
        assert outcome == "parsed"  # io_kbytes gone: read as fio 2's KiB, still finite
        return
    assert outcome == "refused"
    with pytest.raises(ParseError) as e:
        parse_text(make(), "auto", "found.out")
    assert expected in str(e.value)


def iowatch_parse(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess:
    # Strict UTF-8 on the standard streams, as under a UTF-8 locale (not the C locale's surrogateescape).
    env = {**os.environ, "PYTHONIOENCODING": "utf-8:strict"}
    return subprocess.run([sys.executable, "-m", "iowatch.cli", "parse", *args],
                          input=stdin, capture_output=True, timeout=60, env=env)


@pytest.mark.parametrize("case", ["deep nesting", "NaN figure", "fs_mark -inf", "percentile NaN"])
def test_iowatch_parse_refuses_in_one_line(case, tmp_path):
    make = next(m for c, m, _ in FOUND if c == case)
    path = tmp_path / "bad.out"
    path.write_text(make())
    p = iowatch_parse(str(path))
    err = p.stderr.decode()
    assert p.returncode == 2 and p.stdout == b""
    assert err.startswith(f"iowatch parse: {path}") and err.count("\n") == 1, err
    assert "Traceback" not in err


def test_iowatch_parse_takes_any_bytes_on_stdin():
    p = iowatch_parse("-", stdin=b"\xff\xfe" + (FIXTURES / "fio-3.33" / "md-raid0.json").read_bytes()[:500])
    err = p.stderr.decode()
    assert p.returncode == 2 and err.startswith("iowatch parse: <stdin>:") and err.count("\n") == 1, err
    assert "Traceback" not in err
