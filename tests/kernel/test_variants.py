"""Patch series into variants, with real git: directory, mbox and git-range
series, cumulative commits, and a patch that does not apply named with its hunk."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from iowatch.kernel.build import branch_name, make_variants
from iowatch.kernel.series import SeriesError
from iowatch.kernel.series_input import load_series
from iowatch.kernel.source import SourceError, open_source

REPO = Path(__file__).resolve().parents[2]


def sh(cwd, *argv) -> str:
    return subprocess.run(argv, cwd=cwd, check=True, capture_output=True, text=True).stdout


@pytest.fixture
def tree(tmp_path, monkeypatch):
    """A small git tree shaped like a kernel's top (Makefile, Kconfig) with one file."""
    monkeypatch.setenv("IOWATCH_DATA_DIR", str(tmp_path / "data"))
    t = tmp_path / "linux"
    (t / "fs").mkdir(parents=True)
    (t / "Makefile").write_text("VERSION = 6\nPATCHLEVEL = 12\nSUBLEVEL = 0\nEXTRAVERSION =\n")
    (t / "Kconfig").write_text("mainmenu \"test\"\n")
    (t / "fs" / "file.c").write_text("".join(f"line {i}\n" for i in range(1, 21)))
    sh(t, "git", "init", "-q")
    sh(t, "git", "-c", "user.name=t", "-c", "user.email=t@t", "add", "-A")
    sh(t, "git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base")
    sh(t, "git", "tag", "v-base")
    return t


def make_series(t: Path, out: Path, edits: list[tuple[str, str, str]]) -> Path:
    """Commit each (subject, old, new) edit of fs/file.c on a branch and export it
    with git format-patch into a quilt-style directory."""
    sh(t, "git", "checkout", "-q", "-b", "topic", "v-base")
    for subject, old, new in edits:
        f = t / "fs" / "file.c"
        f.write_text(f.read_text().replace(old, new))
        sh(t, "git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", subject)
    out.mkdir()
    sh(t, "git", "format-patch", "-q", "-o", str(out), f"v-base..topic")
    (out / "series").write_text("".join(p.name + "\n" for p in sorted(out.glob("*.patch"))))
    sh(t, "git", "checkout", "-q", "v-base")
    return out


def test_a_series_directory_becomes_cumulative_commits(tree, tmp_path):
    d = make_series(tree, tmp_path / "s", [("fs: first", "line 3\n", "line three\n"),
                                           ("fs: second", "line 15\n", "line fifteen\n")])
    series = load_series(str(d))
    assert [p.subject for p in series.patches] == ["fs: first", "fs: second"]
    plan = make_variants(open_source(str(tree)), "v-base", series)
    assert [v.index for v in plan.variants] == [0, 1, 2]
    assert [v.status for v in plan.variants] == ["pending"] * 3
    shown = sh(plan.work, "git", "show", f"{plan.variants[2].commit}:fs/file.c")
    assert "line three\n" in shown and "line fifteen\n" in shown
    assert "line fifteen" not in sh(plan.work, "git", "show", f"{plan.variants[1].commit}:fs/file.c")
    assert sh(plan.work, "git", "rev-parse", f"{plan.variants[1].commit}^").strip() == plan.base


def test_a_git_range_and_an_mbox_give_the_same_series(tree, tmp_path):
    d = make_series(tree, tmp_path / "s", [("fs: one", "line 1\n", "line one\n"),
                                           ("fs: two", "line 2\n", "line two\n")])
    by_range = load_series("v-base..topic", open_source(str(tree)))
    mbox = tmp_path / "series.mbox"
    mbox.write_text("".join(p.read_text() for p in sorted(d.glob("*.patch"))))
    by_mbox = load_series(str(mbox))
    assert [p.subject for p in by_range.patches] == [p.subject for p in by_mbox.patches] == \
        ["fs: one", "fs: two"]


def test_a_patch_that_does_not_apply_is_named_with_its_rejected_hunk(tree, tmp_path):
    d = make_series(tree, tmp_path / "s", [("fs: good", "line 4\n", "line four\n"),
                                           ("fs: stale", "line 10\n", "line ten\n")])
    # Change the base under patch 2 so its context no longer matches.
    f = tree / "fs" / "file.c"
    f.write_text(f.read_text().replace("line 10\n", "line X\n").replace("line 9\n", "line IX\n"))
    sh(tree, "git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "moved on")
    plan = make_variants(open_source(str(tree)), "HEAD", load_series(str(d)))
    assert [v.status for v in plan.variants] == ["pending", "pending", "apply-failed"]
    err = plan.variants[2].error
    assert "patch 2" in err and "0002-fs-stale.patch" in err and "fs: stale" in err
    assert "line 10" in err  # the rejected hunk itself
    assert sh(plan.work, "git", "status", "--porcelain").strip() == ""


def test_bad_series_and_sources_are_refused_clearly(tree, tmp_path):
    with pytest.raises(SeriesError, match="needs a `series` file"):
        (tmp_path / "empty").mkdir()
        load_series(str(tmp_path / "empty"))
    with pytest.raises(SeriesError, match="neither a series directory"):
        load_series("no-such-thing")
    with pytest.raises(SourceError, match="not a kernel tree"):
        open_source(str(tmp_path))
    with pytest.raises(SourceError, match="is not a commit"):
        make_variants(open_source(str(tree)), "no-such-ref",
                      load_series(str(make_series(tree, tmp_path / "s", [("a", "line 1\n", "x\n")]))))


def test_the_e2e_series_lists_a_harmless_and_a_slow_patch():
    series = load_series(str(REPO / "kernels/series/e2e-slow-ext4-dio"))
    assert [p.subject for p in series.patches] == [
        "xfs: say that statfs results must not be cached",
        "ext4: yield to buffered readers before each direct write"]
    assert "msleep(10);" in series.patches[1].text


@pytest.mark.parametrize("name", [
    "68d0214bbd25ecfcd657d1cd096b2501218acf05..547ba20b7e43849bd5a81473c0932ae22eaf6d04",
    "[PATCH v2 0/3] ext4: yield ~readers^ before: direct writes?", "..", "a.lock", "e2e-slow-ext4-dio"])
def test_a_series_name_becomes_a_branch_name_git_takes(name):
    """A nightly regression's bisect is a series named by its range good..bad;
    git refused `iowatch/good..bad` as a branch and the bisect could not start."""
    branch = branch_name(name)
    assert branch.startswith("iowatch/")
    assert subprocess.run(["git", "check-ref-format", "--branch", branch],
                          capture_output=True).returncode == 0, branch


def test_what_a_series_is_does_not_import_where_it_is_fetched_from():
    """series (the data) under lore (b4) under series_input (load_series): no cycle."""
    import ast
    import iowatch.kernel.series as series_module

    tree = ast.parse(Path(series_module.__file__).read_text())
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)} | \
        {f"{n.module}.{a.name}" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)
         for a in n.names}
    assert not {m for m in imported if m and ("lore" in m or "series_input" in m)}
