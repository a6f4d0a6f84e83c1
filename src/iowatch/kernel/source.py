"""The kernel tree to build: Debian's linux-source-6.12, unpacked once into the
cache and made a git repository, or any kernel git tree the user names."""
from __future__ import annotations

import glob
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


def resolve(tree: Path, ref: str) -> str:
    out = git(tree, "rev-parse", "-q", "--verify", f"{ref}^{{commit}}", check=False)
    if out.returncode:
        raise SourceError(f"{ref!r} is not a commit, tag or branch in {tree}")
    return out.stdout.strip()
