"""Issue 44, item 2: the debian-base commit iowatch makes of the kernel
tarball (iowatch.kernel.source) has the same hash on every machine, whatever
the clock, the user's git identity or the GIT_* variables of the shell: the
mail's `iowatch check --base <commit>` then works in a clean clone."""
from __future__ import annotations

import subprocess
import tarfile

from iowatch.kernel import source

# A tiny kernel tarball the way Debian ships linux-source: a top directory, a
# Makefile, the kernel's dotfiles and Debian's .gitignore block that ignores all.
FILES = {"Makefile": "VERSION = 6\nPATCHLEVEL = 12\nSUBLEVEL = 57\nEXTRAVERSION =\n",
         "Kconfig": "mainmenu \"Linux\"\n",
         ".gitignore": ".*\n!.gitignore\n#\n# Debian packaging\n/*\n",
         ".clang-format": "BasedOnStyle: LLVM\n",
         "block/blk-wbt.c": "/* wbt */\n"}


def tarball(where):
    top = where / "linux-source-6.12"
    for name, text in FILES.items():
        (top / name).parent.mkdir(parents=True, exist_ok=True)
        (top / name).write_text(text)
    out = where / "linux-source-6.12.tar.xz"
    with tarfile.open(out, "w:xz") as tar:
        tar.add(top, arcname="linux-source-6.12")
    return out


def made(tmp_path, monkeypatch, name: str, when: str, who: str) -> str:
    """The base commit as one machine makes it: its own clock and identity."""
    home = tmp_path / f"home-{name}"
    home.mkdir()
    (home / ".gitconfig").write_text(f"[user]\n\tname = {who}\n\temail = {who}@{name}.example\n")
    monkeypatch.setenv("HOME", str(home))
    for var in ("GIT_AUTHOR_DATE", "GIT_COMMITTER_DATE"):
        monkeypatch.setenv(var, when)
    monkeypatch.setenv("GIT_AUTHOR_NAME", who)
    parent = tmp_path / f"cache-{name}"
    parent.mkdir()
    tree = source.committed_tarball(tarball(tmp_path / f"src-{name}"), parent)
    return source.resolve(tree, source.BASE_TAG)


def test_the_base_commit_is_the_same_on_two_machines(tmp_path, monkeypatch):
    one = made(tmp_path, monkeypatch, "a", "2026-11-28T10:00:00+0000", "ann")
    two = made(tmp_path, monkeypatch, "b", "2027-03-01T23:59:59+0100", "bob")
    assert one == two
    tree = tmp_path / "cache-a" / "linux-source-6.12"
    shown = source.git(tree, "log", "-1", "--format=%an <%ae> %aI|%cn %cI|%s", one).stdout.strip()
    assert shown == ("iowatch <iowatch@localhost> 2024-11-17T00:00:00+00:00|iowatch "
                     "2024-11-17T00:00:00+00:00|linux-source-6.12.tar.xz: Linux 6.12.57 as Debian "
                     "ships it")
    # The kernel's own dotfiles are in it, Debian's ignore-everything block is not.
    files = source.git(tree, "ls-files").stdout.split()
    assert ".clang-format" in files and "block/blk-wbt.c" in files


def test_a_tree_an_older_iowatch_committed_gets_the_reproducible_tag(tmp_path, monkeypatch):
    wanted = made(tmp_path, monkeypatch, "a", "2026-11-28T10:00:00+0000", "ann")
    tree = tmp_path / "cache-a" / "linux-source-6.12"
    # What the old code left: the same files committed with the day's date.
    old = subprocess.run(["git", "-C", str(tree), "commit-tree", f"{source.BASE_TAG}^{{tree}}",
                          "-m", "linux-source-6.12.tar.xz: Linux 6.12.57 as Debian ships it"],
                         capture_output=True, text=True, check=True).stdout.strip()
    source.git(tree, "tag", "-f", source.BASE_TAG, old)
    assert old != wanted
    again = source.committed_tarball(tmp_path / "src-a" / "linux-source-6.12.tar.xz",
                                     tmp_path / "cache-a")
    assert source.resolve(again, source.BASE_TAG) == wanted
