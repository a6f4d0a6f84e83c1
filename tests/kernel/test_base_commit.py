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


def test_commit_hash_is_the_hash_git_gives(tmp_path, monkeypatch):
    """commit_hash computes, without git, what git commit-tree gives a root
    commit of a tree and message at a date."""
    made(tmp_path, monkeypatch, "a", "2026-11-28T10:00:00+0000", "ann")
    tree = tmp_path / "cache-a" / "linux-source-6.12"
    tree_hash = source.git(tree, "rev-parse", f"{source.BASE_TAG}^{{tree}}").stdout.strip()
    message = "any message\n"
    env = {**source.BASE_COMMIT_ENV, "GIT_AUTHOR_DATE": "2026-11-26T11:01:05+00:00",
           "GIT_COMMITTER_DATE": "2026-11-26T11:01:05+00:00"}
    by_git = subprocess.run(["git", "-C", str(tree), "commit-tree", tree_hash], input=message,
                            capture_output=True, text=True, check=True, env=env).stdout.strip()
    assert source.commit_hash(tree_hash, message, "2026-11-26T11:01:05+00:00") == by_git


def test_every_earlier_base_is_the_reproducible_commits_files_on_its_day():
    """Each debian-base commit the kept reproductions name is the commit of
    the reproducible commit's tree and message, made on the day recorded:
    so it is the same files, and a command naming it builds the reproducible
    one. A hash listed wrongly, or a tree or message that is not the one, fails."""
    reproducible = source.commit_hash(source.EARLIER_BASE_TREE, source.EARLIER_BASE_MESSAGE,
                                      source.BASE_COMMIT_ENV["GIT_AUTHOR_DATE"])
    for commit, day in source.EARLIER_BASES.items():
        assert source.commit_hash(source.EARLIER_BASE_TREE, source.EARLIER_BASE_MESSAGE, day) == commit
        assert source.reproducible_base(commit) == reproducible
    assert source.reproducible_base("0123456789abcdef0123456789abcdef01234567") == \
        "0123456789abcdef0123456789abcdef01234567"
    assert source.reproducible_base(None) is None


def test_an_earlier_base_resolves_to_the_trees_reproducible_commit(tmp_path, monkeypatch):
    """`iowatch check --base <an earlier base>` (an earlier mail's command)
    resolves in a tree whose debian-base is the reproducible commit; another
    unknown commit is refused, naming it."""
    import pytest
    wanted = made(tmp_path, monkeypatch, "a", "2026-11-28T10:00:00+0000", "ann")
    tree = tmp_path / "cache-a" / "linux-source-6.12"
    tree_hash = source.git(tree, "rev-parse", f"{source.BASE_TAG}^{{tree}}").stdout.strip()
    message = source.git(tree, "log", "-1", "--format=%B", wanted).stdout.rstrip("\n") + "\n"
    earlier = source.commit_hash(tree_hash, message, "2026-11-26T11:01:05+00:00")
    monkeypatch.setattr(source, "EARLIER_BASE_TREE", tree_hash)
    monkeypatch.setattr(source, "EARLIER_BASE_MESSAGE", message)
    monkeypatch.setattr(source, "EARLIER_BASES", {earlier: "2026-11-26T11:01:05+00:00"})
    assert source.resolve(tree, earlier) == wanted
    with pytest.raises(source.SourceError, match="'0123456789abcdef0123456789abcdef01234567' is not a commit"):
        source.resolve(tree, "0123456789abcdef0123456789abcdef01234567")
