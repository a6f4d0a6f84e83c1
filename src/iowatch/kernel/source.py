"""The kernel tree to build: Debian's linux-source-6.12, unpacked once into the
cache and made a git repository, or any kernel git tree the user names."""
from __future__ import annotations

import glob
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


def debian_source() -> Path:
    """The unpacked, committed Debian kernel source; made on first use."""
    tarballs = sorted(glob.glob(DEBIAN_TARBALLS))
    if not tarballs:
        raise SourceError("no Debian kernel source in /usr/src: install linux-source-6.12 "
                          "(scripts/setup.sh --kernel does) or pass --source TREE")
    tarball = Path(tarballs[-1])
    tree = cache_dir() / tarball.name.removesuffix(".tar.xz")
    if (tree / ".git").is_dir() and git(tree, "rev-parse", "-q", "--verify", BASE_TAG,
                                        check=False).returncode == 0:
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
    version = _makefile_version(tree)
    git(tree, "commit", "-q", "-m", f"{tarball.name}: Linux {version} as Debian ships it")
    git(tree, "tag", BASE_TAG)
    return tree


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
