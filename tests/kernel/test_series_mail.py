"""Series from mail (issue 16, item 4), with real git and real b4: an mbox made
by `git format-patch --thread --cover-letter` in a throwaway repository is read
with `b4 am -m`; its Message-IDs, authors and list reach the bundle's kernel
record; a Message-ID b4 cannot fetch is refused naming it. No lore here: the
fetch is pointed at a closed local port so the refusal does not depend on the
network."""
from __future__ import annotations

import json
import subprocess
import types
from pathlib import Path

import pytest

from iowatch import bundle
from iowatch.kernel import lore
from iowatch.kernel.build import make_variants
from iowatch.kernel.series import SeriesError, patchset_hash
from iowatch.kernel.series_input import load_series
from iowatch.kernel.source import open_source

from test_variants import sh, tree  # noqa: F401  (the kernel-shaped git tree, tag v-base)

GIT = ["git", "-c", "user.name=Ann Dev", "-c", "user.email=ann@example.org"]


@pytest.fixture
def mailed(tree, tmp_path):
    """(the tree at tag base, the series' mbox, the Message-IDs git gave)."""
    t = tree
    sh(t, "git", "tag", "base", "v-base")
    for n, word in ((2, "two"), (7, "seven")):
        f = t / "fs" / "file.c"
        f.write_text(f.read_text().replace(f"line {n}\n", f"line {word}\n"))
        sh(t, *GIT, "commit", "-qam", f"fs: spell out line {n}")
    out = tmp_path / "outgoing"
    sh(t, *GIT, "format-patch", "-q", "--thread", "--cover-letter", "-o", str(out),
       "--to", "linux-fsdevel@vger.kernel.org", "--cc", "Bob Reviewer <bob@example.org>",
       "base..HEAD")
    mbox = tmp_path / "series.mbox"
    files = sorted(out.glob("*.patch"))
    mbox.write_text("".join(p.read_text() for p in files))
    ids = [next(line.split(":", 1)[1].strip().strip("<>") for line in p.read_text().splitlines()
                if line.lower().startswith("message-id:")) for p in files]
    sh(t, "git", "tag", "tip")
    sh(t, "git", "checkout", "-q", "base")
    return t, mbox, ids


def test_an_mbox_read_with_b4_keeps_the_message_ids_authors_and_list(mailed):
    tree, mbox, (cover_id, *patch_ids) = mailed
    series = load_series(str(mbox))
    assert [p.subject for p in series.patches] == ["fs: spell out line 2", "fs: spell out line 7"]
    assert [p.message_id for p in series.patches] == patch_ids
    assert {p.author for p in series.patches} == {"Ann Dev <ann@example.org>"}
    assert series.message_id == cover_id and series.subject == "*** SUBJECT HERE ***"
    assert "*** BLURB HERE ***" in series.cover  # the cover letter's text, for its claims
    assert series.to == ("linux-fsdevel@vger.kernel.org",)
    assert series.cc == ("Bob Reviewer <bob@example.org>",)
    # The patches b4 wrote are what the kernel series code applies.
    plan = make_variants(open_source(str(tree)), "base", series)
    assert [v.subject for v in plan.variants[1:]] == [p.subject for p in series.patches]
    assert "line seven" in sh(plan.work, "git", "show", f"{plan.variants[2].commit}:fs/file.c")


def test_the_record_reaches_the_bundle_the_guest_writes(mailed, tmp_path):
    """Series.record() → the file the virtual lab hands the guest → `iowatch run
    --series-record` → the bundle's kernel.series and kernel.patch."""
    from iowatch.commands.run import _series, register
    from iowatch.runner import _kernel_entry
    from iowatch.vlab import guest_run_command
    import argparse

    _, mbox, (cover_id, *patch_ids) = mailed
    series = load_series(str(mbox))
    record_file = tmp_path / "series.json"
    record_file.write_text(json.dumps(series.record("ab" * 20)))
    host = types.SimpleNamespace(name="vlab")
    argv = guest_run_command("jobs/e2e.yml", host, Path("hardware-inventory.yml"), tmp_path / "b",
                             profile=None, reps=None, kernel_commit="cd" * 20, label="base+p1..p2",
                             series={"name": series.name, "index": 2, "subject": "s",
                                     "base": "ab" * 20, "record": record_file})
    parser = argparse.ArgumentParser()
    register(parser.add_subparsers())
    args = parser.parse_args(argv[argv.index("run"):])
    entry = _kernel_entry({}, "cd" * 20, _series(args))
    assert entry["series"]["message_id"] == cover_id
    assert entry["series"]["cc"] == ["Bob Reviewer <bob@example.org>"]
    assert [p["message_id"] for p in entry["series"]["patches"]] == patch_ids
    assert entry["patch"] == {"index": 2, "subject": "s", "commit": "cd" * 20,
                              "message_id": patch_ids[1], "author": "Ann Dev <ann@example.org>"}
    doc = {"schema_version": bundle.SCHEMA_VERSION, "run_id": "4f3a6c1e-0000-4000-8000-000000000001",
           "status": "passed", "kernel": {"release": "6.12.0", **entry},
           "host": {"name": "vlab", "kind": "qemu"}, "devices": [], "cells": []}
    bundle.validate(doc)  # the new fields are in the schema
    assert patchset_hash(entry["series"]["patches"]) == patchset_hash(series.patches)


def test_a_message_id_b4_cannot_fetch_is_refused_naming_it(monkeypatch):
    # b4 reads git config: its lookups go to a closed port, not to lore.
    monkeypatch.setenv("GIT_CONFIG_COUNT", "1")
    monkeypatch.setenv("GIT_CONFIG_KEY_0", "b4.midmask")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", "http://127.0.0.1:9/%s")
    mid = "20261122.no-such-series@example.org"
    with pytest.raises(SeriesError) as e:
        load_series(f"<{mid}>")
    assert f"Message-ID {mid}: b4 could not fetch its thread" in str(e.value)
    assert "pass that file to --series" in str(e.value)
    assert "127.0.0.1:9" in str(e.value)  # b4 asked where it was told, not lore


def test_what_names_a_message_id():
    assert lore.message_id("<a.b@example.org>") == "a.b@example.org"
    assert lore.message_id("https://lore.kernel.org/linux-xfs/20240101.x@y.z/T/#u") == "20240101.x@y.z"
    assert lore.message_id("https://patch.msgid.link/a@b.c") == "a@b.c"
    for not_one in ("v6.12..topic", "HEAD@{1}..HEAD", "kernels/series/x@y", "topic"):
        assert lore.message_id(not_one) is None


def test_an_mbox_without_message_ids_is_still_read(tmp_path, mailed):
    """`git format-patch` without --thread: b4 finds no thread; the patches are
    read in order, with no Message-ID to keep."""
    tree, _, _ = mailed
    out = tmp_path / "plain"
    sh(tree, *GIT, "format-patch", "-q", "-o", str(out), "base..tip")
    mbox = tmp_path / "plain.mbox"
    mbox.write_text("".join(p.read_text() for p in sorted(out.glob("*.patch"))))
    series = load_series(str(mbox))
    assert [p.subject for p in series.patches] == ["fs: spell out line 2", "fs: spell out line 7"]
    assert series.message_id is None and all(p.message_id is None for p in series.patches)
