"""The seeds' kernel series (issue 25, item 1) against Debian's 6.12 source.

Every kernels/series/seed-* is applied patch after patch with `git apply
--check` and `git apply` to the files it touches, extracted from
/usr/src/linux-source-6.12.tar.xz (the tarball debian-base is made from, with
the same top directory), and read with iowatch's own series loader. The first
patch of each series must change comments only, the second code: a check of
the series must be able to name patch 2 and not patch 1.

The build is the slow check (iowatch check); this one needs no compiler. In CI
(CI=true) a missing tarball is a failure: scripts/setup.sh installs it.
"""
from __future__ import annotations

import email
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from iowatch.kernel.series import from_directory

REPO = Path(__file__).resolve().parents[2]
SERIES = REPO / "kernels" / "series"
SEEDS = REPO / "tests" / "fixtures" / "seeds"
TARBALL = Path("/usr/src/linux-source-6.12.tar.xz")
SEED_DIRS = sorted(SERIES.glob("seed-*"))


def _touched(patch: Path) -> set[str]:
    """The tree paths a git-format patch changes (both sides of a rename)."""
    paths = set()
    for m in re.finditer(r"^diff --git a/(\S+) b/(\S+)$", patch.read_text(), re.M):
        paths.update(m.groups())
    if not paths:
        raise AssertionError(f"{patch}: no `diff --git a/... b/...` line: not a git-format patch")
    return paths


def _patches(d: Path) -> list[Path]:
    return [d / line.split()[0] for line in (d / "series").read_text().splitlines()
            if line.strip() and not line.lstrip().startswith("#")]


@pytest.fixture(scope="module")
def extracted(tmp_path_factory) -> Path:
    """The files the seed series touch, as the tarball holds them: the top
    directory debian-base's tree is (iowatch.kernel.source.debian_source)."""
    if not TARBALL.is_file():
        message = (f"{TARBALL} is missing: install Debian's linux-source-6.12 "
                   "(scripts/setup.sh does) to check the seed series apply")
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(message)
        pytest.skip(message)
    top = TARBALL.name.removesuffix(".tar.xz")
    paths = sorted({p for d in SEED_DIRS for f in _patches(d) for p in _touched(f)})
    out = tmp_path_factory.mktemp("linux-6.12")
    # Only the touched files: xz still decompresses the whole tarball, but
    # nothing else is written.
    run = subprocess.run(["tar", "-xJf", str(TARBALL), "-C", str(out),
                          *(f"{top}/{p}" for p in paths)], capture_output=True, text=True)
    assert run.returncode == 0, f"tar -xJf {TARBALL}: {run.stderr.strip()[-800:]}"
    return out / top


def test_there_is_a_series_per_seed():
    seeds = sorted(p.name[:3] for p in SEEDS.glob("[0-9][0-9][0-9]_*.txt"))
    series = sorted(d.name.split("-")[1] for d in SEED_DIRS)
    assert seeds and series == seeds, f"seeds {seeds}, series under {SERIES}: {series}"


def _git(tree: Path, *args: str, input: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-c", "user.name=iowatch test", "-c", "user.email=t@localhost",
                           *args], cwd=tree, capture_output=True, text=True, input=input)


@pytest.mark.parametrize("series_dir", SEED_DIRS, ids=lambda d: d.name)
def test_series_applies_to_debian_6_12_in_order(series_dir, extracted, tmp_path):
    tree = tmp_path / "tree"
    shutil.copytree(extracted, tree)
    for patch in _patches(series_dir):
        out = _git(tree, "apply", "--check", str(patch))
        assert out.returncode == 0, (
            f"{patch.relative_to(REPO)} does not apply to linux-source-6.12 after the "
            f"patches before it: {out.stderr.strip()[-800:]}")
        assert _git(tree, "apply", str(patch)).returncode == 0


@pytest.mark.parametrize("series_dir", SEED_DIRS, ids=lambda d: d.name)
def test_series_applies_as_iowatch_applies_it(series_dir, extracted, tmp_path):
    """As iowatch.kernel.build makes the variants: `git am --keep-cr --no-3way` of
    each patch's text as the series loader gives it, one commit per patch."""
    tree = tmp_path / "tree"
    shutil.copytree(extracted, tree)
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "base"]):
        assert _git(tree, *args).returncode == 0
    for patch in from_directory(series_dir).patches:
        out = _git(tree, "am", "--keep-cr", "--no-3way", input=patch.text)
        assert out.returncode == 0, f"{series_dir.name} patch {patch.index}: git am: " \
                                    f"{(out.stderr or out.stdout).strip()[-800:]}"
        assert _git(tree, "log", "-1", "--format=%s").stdout.strip() == patch.subject


def _mail(patch: Path):
    return email.message_from_string(patch.read_text())


@pytest.mark.parametrize("series_dir", SEED_DIRS, ids=lambda d: d.name)
def test_series_reads_with_the_loader_and_is_mail_formatted(series_dir):
    series = from_directory(series_dir)
    files = _patches(series_dir)
    assert [p.index for p in series.patches] == list(range(1, len(files) + 1))
    assert len(files) >= 2, f"{series_dir}: a harmless patch, then the seed's"
    for p, f in zip(series.patches, files):
        text = f.read_text()
        assert re.match(r"From [0-9a-f]{40} ", text), f"{f}: no mbox `From <sha>` first line"
        msg = _mail(f)
        for header in ("From", "Date", "Subject"):
            assert msg[header], f"{f}: no {header}: header"
        subject = " ".join(msg["Subject"].split())
        m = re.match(r"\[PATCH (\d+)/(\d+)\] (.+)$", subject)
        assert m, f"{f}: Subject {subject!r} is not `[PATCH n/m] subsystem: summary`"
        assert (int(m.group(1)), int(m.group(2))) == (p.index, len(files)), f"{f}: {subject!r}"
        assert p.subject == m.group(3), f"{f}: the loader read {p.subject!r}"
        assert re.match(r"[a-z0-9_, -]+: \S", p.subject), f"{f}: no subsystem prefix: {p.subject!r}"
        body = msg.get_payload().split("\n---\n")[0]
        assert re.search(r"^Signed-off-by: .+ <[^>]*iowatch[^>]*>$", body, re.M), \
            f"{f}: no Signed-off-by of an iowatch address"
        # A kernel developer's message: what changes and why, not a subject alone.
        assert len(body.split()) >= 25, f"{f}: commit message of {len(body.split())} words"


def _changed_lines(patch: Path) -> list[str]:
    diff = patch.read_text().split("\ndiff --git ", 1)[1].split("\n-- \n", 1)[0]  # not the signature
    return [ln[1:] for ln in diff.splitlines()
            if ln[:1] in "+-" and not ln.startswith(("+++ ", "--- "))]


def _is_comment(line: str) -> bool:
    s = line.strip()
    return not s or s.startswith(("/*", "*", "*/", "//"))


@pytest.mark.parametrize("series_dir", SEED_DIRS, ids=lambda d: d.name)
def test_first_patch_is_comments_only_and_second_changes_code(series_dir):
    first, second = _patches(series_dir)[:2]
    code = [ln for ln in _changed_lines(first) if not _is_comment(ln)]
    assert not code, f"{first}: the harmless patch changes code: {code[:3]}"
    code = [ln for ln in _changed_lines(second) if not _is_comment(ln)]
    assert code, f"{second}: changes no code, so a check could not name it"


def test_readme_describes_every_seed_series():
    readme = (SERIES / "README.md").read_text()
    missing = [d.name for d in SEED_DIRS if d.name not in readme]
    assert not missing, f"{SERIES / 'README.md'} does not describe {missing}"
