"""The kernel tree to build: Debian's linux-source-6.12, unpacked once into the
cache and made a git repository, or any kernel git tree the user names."""
from __future__ import annotations

import datetime
import glob
import hashlib
import os
import subprocess
from pathlib import Path

from iowatch import paths

DEBIAN_TARBALLS = "/usr/src/linux-source-*.tar.xz"
BASE_TAG = "debian-base"


class SourceError(RuntimeError):
    pass


def git(tree: Path, *args: str, check: bool = True, **kw) -> subprocess.CompletedProcess:
    out = subprocess.run(["git", "-C", str(tree), *args], capture_output=True, text=True, **kw)
    if check and out.returncode:
        raise SourceError(f"git {' '.join(args[:3])} in {tree} failed: "
                          f"{(out.stderr or out.stdout).strip()[-800:]}")
    return out


def cache_dir() -> Path:
    d = paths.data_dir() / "kernel"
    d.mkdir(parents=True, exist_ok=True)
    return d


def _identity(tree: Path) -> None:
    git(tree, "config", "user.email", "iowatch@localhost")
    git(tree, "config", "user.name", "iowatch")


# The debian-base commit's identity and dates, the same on every machine, so
# that its hash (which `iowatch check --base` and the mail's reproduction name)
# is the tarball's alone: Linux 6.12's release day, not the day it was unpacked.
BASE_COMMIT_ENV = {"GIT_AUTHOR_NAME": "iowatch", "GIT_AUTHOR_EMAIL": "iowatch@localhost",
                   "GIT_AUTHOR_DATE": "2024-11-17T00:00:00+0000",
                   "GIT_COMMITTER_NAME": "iowatch", "GIT_COMMITTER_EMAIL": "iowatch@localhost",
                   "GIT_COMMITTER_DATE": "2024-11-17T00:00:00+0000"}


def debian_source() -> Path:
    """The unpacked, committed Debian kernel source; made on first use."""
    tarballs = sorted(glob.glob(DEBIAN_TARBALLS))
    if not tarballs:
        raise SourceError("no Debian kernel source in /usr/src: install linux-source-6.12 "
                          "(scripts/setup.sh --kernel does) or pass --source TREE")
    return committed_tarball(Path(tarballs[-1]), cache_dir())


def committed_tarball(tarball: Path, parent: Path) -> Path:
    """The kernel tarball unpacked under `parent` and committed as BASE_TAG, a
    commit whose hash depends on the tarball only (BASE_COMMIT_ENV). A tree
    unpacked by an older iowatch, whose commit carries the day it was made, gets
    its tag moved to the reproducible commit of the same files."""
    tree = parent / tarball.name.removesuffix(".tar.xz")
    if (tree / ".git").is_dir() and git(tree, "rev-parse", "-q", "--verify", BASE_TAG,
                                        check=False).returncode == 0:
        _reproducible_tag(tree)
        return tree
    if tree.exists():
        subprocess.run(["rm", "-rf", str(tree)], check=True)
    subprocess.run(["tar", "-xf", str(tarball), "-C", str(tree.parent)], check=True)
    # Debian's packaging .gitignore ignores every top-level path: drop that block
    # so the tree can be committed, and keep the kernel's own ignore rules.
    gi = tree / ".gitignore"
    text = gi.read_text()
    cut = text.find("#\n# Debian packaging")
    if cut != -1:
        gi.write_text(text[:cut])
    git(tree, "init", "-q")
    _identity(tree)
    git(tree, "add", "-A")
    # The kernel's ".*" rule hides its own dotfiles (.gitignore, .clang-format ...).
    dotfiles = git(tree, "ls-files", "-o", "-i", "--exclude-standard", "--", ".*", "*/.*").stdout.split()
    for i in range(0, len(dotfiles), 500):
        git(tree, "add", "-f", "--", *dotfiles[i:i + 500])
    message = f"{tarball.name}: Linux {_makefile_version(tree)} as Debian ships it"
    git(tree, "-c", "commit.gpgsign=false", "commit", "-q", "--no-verify", "-m", message,
        env={**os.environ, **BASE_COMMIT_ENV})
    git(tree, "tag", BASE_TAG)
    return tree


def _reproducible_tag(tree: Path) -> None:
    """Point BASE_TAG at the commit BASE_COMMIT_ENV makes of its tree and message."""
    message = git(tree, "log", "-1", "--format=%B", BASE_TAG).stdout.rstrip("\n") + "\n"
    commit = git(tree, "commit-tree", f"{BASE_TAG}^{{tree}}", input=message,
                 env={**os.environ, **BASE_COMMIT_ENV}).stdout.strip()
    if commit != resolve(tree, BASE_TAG):
        git(tree, "tag", "-f", BASE_TAG, commit)


def _makefile_version(tree: Path) -> str:
    v = {}
    for line in (tree / "Makefile").read_text().splitlines()[:6]:
        if "=" in line:
            k, _, val = line.partition("=")
            v[k.strip()] = val.strip()
    return f"{v.get('VERSION')}.{v.get('PATCHLEVEL')}.{v.get('SUBLEVEL')}{v.get('EXTRAVERSION', '')}"


def open_source(source: str | None) -> Path:
    """--source TREE (a kernel git tree) or the Debian default."""
    if source is None:
        return debian_source()
    tree = Path(source).resolve()
    if not (tree / "Makefile").is_file() or not (tree / "Kconfig").is_file():
        raise SourceError(f"{tree} is not a kernel tree (no Makefile and Kconfig at its top)")
    if git(tree, "rev-parse", "--git-dir", check=False).returncode:
        raise SourceError(f"{tree} is not a git repository; iowatch makes variants as commits")
    _identity(tree)
    return tree


# The debian-base commits iowatch made before BASE_COMMIT_ENV (until
# 2026-11-28), each on the day it unpacked the tarball, and named in the kept
# reproductions and in the mails sent about them. Each is the commit of one
# tree, EARLIER_BASE_TREE (Debian's 6.12.117-1~deb12u1 as unpacked and
# committed here), and message, by the same identity, on the date given:
# tests/kernel/test_base_commit.py recomputes every hash from these. So each
# is the reproducible commit's files, and a command that names one (an
# earlier mail's `iowatch check --base`) builds the reproducible one.
EARLIER_BASE_TREE = "659a1a30be7cba82040dfba06949603898fe3ff5"
EARLIER_BASE_MESSAGE = "linux-source-6.12.tar.xz: Linux 6.12.117 as Debian ships it\n"
EARLIER_BASES = {
    "0219de372a8d33969650e7501755cea3eabb93a8": "2026-11-26T11:01:05+00:00",
    "391ec51a40b30a0fde4c130d01b074e30599876e": "2026-11-26T16:23:15+00:00",
    "b9588307357ddbe28f242b053b3fd7d83d2d52f7": "2026-11-26T21:51:04+00:00",
    "a7d6925f404661628d630ca6e97ce725012ba8ac": "2026-11-27T22:50:13+00:00",
    "f29a64cd63a0995ba570e2ca3f5ebcb54991f4c0": "2026-11-27T23:36:06+00:00",
    "63c1454e961e5da4c05e4b2d0b077be4e48ae45d": "2026-11-28T16:25:28+00:00",
}


def commit_hash(tree_hash: str, message: str, date: str) -> str:
    """The hash git gives a root commit of `tree_hash` and `message` by
    BASE_COMMIT_ENV's identity, authored and committed at `date` (ISO 8601)."""
    env = BASE_COMMIT_ENV
    when = int(datetime.datetime.fromisoformat(date).timestamp())
    author = f"{env['GIT_AUTHOR_NAME']} <{env['GIT_AUTHOR_EMAIL']}> {when} +0000"
    committer = f"{env['GIT_COMMITTER_NAME']} <{env['GIT_COMMITTER_EMAIL']}> {when} +0000"
    body = f"tree {tree_hash}\nauthor {author}\ncommitter {committer}\n\n{message}".encode()
    return hashlib.sha1(b"commit %d\x00" % len(body) + body).hexdigest()


def reproducible_base(commit: str | None) -> str | None:
    """The reproducible debian-base commit for an earlier one (EARLIER_BASES),
    else `commit` as it is."""
    if commit not in EARLIER_BASES:
        return commit
    return commit_hash(EARLIER_BASE_TREE, EARLIER_BASE_MESSAGE, BASE_COMMIT_ENV["GIT_AUTHOR_DATE"])


def resolve(tree: Path, ref: str) -> str:
    out = git(tree, "rev-parse", "-q", "--verify", f"{ref}^{{commit}}", check=False)
    if out.returncode:
        again = reproducible_base(ref)
        if again != ref:
            # An earlier debian-base: the tree's own, when it is the same files.
            out = git(tree, "rev-parse", "-q", "--verify", f"{again}^{{commit}}", check=False)
        if out.returncode:
            raise SourceError(f"{ref!r} is not a commit, tag or branch in {tree}")
    return out.stdout.strip()
