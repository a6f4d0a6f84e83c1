"""Series from the mailing lists, through b4 (PyPI: b4), the tool maintainers
use to take patches from lore.

A Message-ID is fetched with `b4 mbox` (the whole thread, headers and all),
and the thread or a local mbox is made into the series with `b4 am -m`: the
newest revision, in order, with the trailers the thread gave. b4's output
keeps each patch's Message-ID but not To/Cc, so the list the series went to
is read from the thread itself. What comes out is the Series the kernel code
applies (iowatch.kernel.series), with the Message-IDs a report replies to.
"""
from __future__ import annotations

import contextlib
import dataclasses
import email.utils
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from iowatch.kernel.series import Series, SeriesError, bare_message_id, from_mbox, read_mbox

LORE = "https://lore.kernel.org/all/"
# A lore or patch.msgid.link URL names the message in its first path part after the list.
_URL = re.compile(r"^https?://(?:lore\.kernel\.org/[^/]+|patch\.msgid\.link)/([^/]+@[^/]+)(?:/.*)?$")
_MESSAGE_ID = re.compile(r"^<?([^<>\s@{}]+@[^<>\s@{}]+)>?$")


def message_id(spec: str) -> str | None:
    """The Message-ID `spec` names (<id@host>, id@host, or a lore URL), or None."""
    spec = spec.strip()
    m = _URL.match(spec)
    if m is None and (spec.startswith("<") or ".." not in spec and "/" not in spec):
        m = _MESSAGE_ID.match(spec)  # a bare id: not a path, nor a git range A..B
    return m.group(1).replace("%40", "@") if m else None


def b4() -> str:
    """The b4 beside this Python (the venv's), else the one on PATH."""
    here = Path(sys.executable).parent / "b4"
    found = str(here) if here.is_file() else shutil.which("b4")
    if not found:
        raise SeriesError("b4 is not installed: a series from mail is read with b4 "
                          "(pip install 'iowatch[lore]', or pip install b4)")
    return found


def _b4(*argv: str, timeout: int = 300) -> subprocess.CompletedProcess:
    try:
        return subprocess.run([b4(), *argv], capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise SeriesError(f"b4 {' '.join(argv[:2])}: no answer in {timeout} s") from None


def _said(out: subprocess.CompletedProcess) -> str:
    """b4's last line, with a failed request cut to its URL and its cause
    (requests' own text repeats the URL inside three nested reprs)."""
    lines = [ln for ln in (out.stderr + out.stdout).splitlines() if ln.strip()]
    if not lines:
        return f"b4 exited {out.returncode} and said nothing"
    last = lines[-1].strip()
    cause = re.search(r"\[Errno -?\d+\] [^'\")]+", last)
    return f"{last.split(': HTTP')[0]}: {cause.group(0)}" if cause else last[:400]


def _archive() -> str:
    """Where b4 fetches a message by its id (git config b4.midmask, else lore)."""
    out = subprocess.run(["git", "config", "--get", "b4.midmask"], capture_output=True, text=True)
    mask = out.stdout.strip()
    return mask.split("%s")[0] if mask and "%s" in mask else LORE


@contextlib.contextmanager
def thread_mbox(spec: str, *, instead: str = "pass that file to --series"):
    """The thread of a Message-ID as an mbox file, fetched with `b4 mbox` into a
    directory that lasts as long as the `with` block. `instead` says what to do
    with a thread saved by hand when b4 cannot reach the archive."""
    mid = message_id(spec)
    if mid is None:
        raise SeriesError(f"{spec!r} is not a Message-ID")
    with tempfile.TemporaryDirectory(prefix="iowatch-b4-") as d:
        out = _b4("mbox", "-o", d, mid)
        threads = sorted(Path(d).glob("*.mbx"))
        if out.returncode or not threads:
            raise SeriesError(
                f"Message-ID {mid}: b4 could not fetch its thread ({_said(out)}). Without "
                f"network, save the thread as an mbox where there is network ({_archive()}{mid}"
                f"/t.mbox.gz, gunzipped, or `b4 mbox {mid}`) and {instead}")
        yield threads[0]


def series_from_message_id(spec: str) -> Series:
    """Fetch the thread of a Message-ID with `b4 mbox` and read its series."""
    with thread_mbox(spec) as thread:
        return _series(thread, str(thread.parent), source=spec, wanted=message_id(spec),
                       archive=_archive())


def series_from_mbox(path: Path) -> Series:
    """Read an mbox with `b4 am -m` (offline: the trailers are those in the mbox)."""
    with tempfile.TemporaryDirectory(prefix="iowatch-b4-") as d:
        return _series(path, d, source=str(path))


def _series(mbox: Path, workdir: str, *, source: str, wanted: str | None = None,
            archive: str | None = None) -> Series:
    if not read_mbox(mbox):
        raise SeriesError(f"{mbox}: not an mbox, or an empty one")
    originals = {bare_message_id(m.get("Message-Id")): m for m in read_mbox(mbox)}
    originals.pop(None, None)
    out_dir = Path(workdir) / "am"
    out = _b4("--offline-mode", "am", "-m", str(mbox),
              "-o", str(out_dir), *([wanted] if wanted else []))
    made = sorted(out_dir.glob("*.mbx")) if out_dir.is_dir() else []
    if out.returncode or not made:
        if not originals:
            # b4 threads by Message-ID and finds nothing in an mbox without one
            # (`git format-patch` without --thread): such patches have no thread
            # to reply in, so they are read in their order as they are.
            return from_mbox(mbox)
        raise SeriesError(f"{mbox}: b4 am found no series in it ({_said(out)})")
    covers = sorted(out_dir.glob("*.cover"))
    series = from_mbox(made[0], covers[0] if covers else None)
    root = originals.get(series.message_id) or next(iter(originals.values()))
    to, cc = (tuple(email.utils.formataddr(a) for a in email.utils.getaddresses(root.get_all(h, []))
                    if a[1]) for h in ("To", "Cc"))
    return dataclasses.replace(series, name=made[0].stem, source=source, to=to, cc=cc,
                               archive=archive)
