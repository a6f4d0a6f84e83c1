"""Cumulative variants of a series as commits, and their builds.

Variant 0 is the base; variant k is the base plus patches 1..k, each a commit
on a branch of one work tree. The variants are built one after another into
one build directory with ccache, so each patch costs an incremental build.
A patch that does not apply stops the series there (later variants cannot
exist) and names the patch and its rejected hunks; a variant that does not
build is recorded build-failed with its log, and later variants are still tried.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path

from iowatch import progress
from iowatch.kernel.series import Series
from iowatch.resources import kernel_config_dir
from iowatch.kernel.source import SourceError, cache_dir, git, resolve

CONFIG_DIR = kernel_config_dir()
BASE_FRAGMENT = "guest-base.config"  # the allnoconfig base's own fragment
DEFAULT_FRAGMENTS = (BASE_FRAGMENT, "iowatch.config", "no-debug.config")
# Where a guest kernel's config starts. "allnoconfig": nothing, plus
# guest-base.config (what a virtme-ng guest needs) and the studies' fragments:
# 1,944 build steps and 1,493 objects, a clean build of 267 s on an idle 2-core
# machine, against 3,506 steps, 2,919 objects and 678 s for "vng", virtme-ng's
# `--kconfig` (x86_64_defconfig plus its desktop-guest list: DRM, sound,
# wireless, USB ...) with the studies' fragments, which bench/kernel still builds
# for the before/after figure (README, "Checking a patch series"). A lab host's
# agent builds the same with kernels/config/lab-host.config after the fragments
# (iowatch.agent.loop.source_builds).
CONFIG_BASES = ("allnoconfig", "vng")
DEFAULT_BASE = "allnoconfig"
NOT_SET = re.compile(r"^# (CONFIG_\w+) is not set$")
# kbuild's quiet output (no V=1) names each step and its target, such as
# "  CC      fs/xfs/xfs_buf.o" or "  LD [M]  fs/xfs/xfs.ko": the steps that make an
# object (compile, assemble, link, archive) are what a build's progress counts.
OBJECT_STEP = re.compile(r"^  (?:CC|AS|LD|AR|HOSTCC|HOSTCXX|HOSTLD)(?: \[M\])?\s+\S")
# The object count and time of the last build per build directory, config and
# kind (full or incremental): the next build's progress total and estimate.
BUILD_COUNTS = "build-counts.json"


@dataclass
class Variant:
    index: int                       # 0: the base; k: base + patches 1..k
    commit: str
    subject: str | None = None       # the patch's subject (None for the base)
    patch_name: str | None = None
    status: str = "pending"          # pending, built, build-failed, apply-failed
    error: str | None = None
    artifacts: str | None = None     # directory with bzImage, .config, build.log, meta.json
    build_s: float | None = None
    release: str | None = None
    config_hash: str | None = None
    compiler: str | None = None
    incremental: bool = False

    @property
    def label(self) -> str:
        return "base" if self.index == 0 else f"base+p1..p{self.index}"

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class Plan:
    tree: Path
    work: Path                       # the work tree the variants are checked out in
    build: Path                      # the one O= build directory
    series: Series
    base: str
    variants: list[Variant] = field(default_factory=list)


def _work_tree(tree: Path) -> Path:
    """One work tree per source tree, always at the same path: kbuild remembers
    the source path in the build directory, so a stable path keeps builds incremental."""
    work = cache_dir() / "work" / tree.name
    if not (work / ".git").exists():
        work.parent.mkdir(parents=True, exist_ok=True)
        git(tree, "worktree", "prune")
        git(tree, "worktree", "add", "-f", "--detach", str(work), "HEAD")
    return work


def _rejected_hunks(work: Path, patch_text: str) -> str:
    """What `git apply --reject` could not place, for the error message."""
    with tempfile.NamedTemporaryFile("w", suffix=".patch", delete=False) as f:
        f.write(patch_text)
    try:
        out = git(work, "apply", "--reject", "--verbose", f.name, check=False)
        rejects = [p for p in git(work, "ls-files", "-o", "--exclude-standard").stdout.split()
                   if p.endswith(".rej")]
        hunks = "\n".join(f"--- {r}\n{(work / r).read_text(errors='replace')}" for r in rejects)
        return (hunks or out.stderr).strip()[-3000:]
    finally:
        os.unlink(f.name)
        git(work, "checkout", "-q", "-f", "HEAD")
        git(work, "clean", "-q", "-f", "-d")


def branch_name(series_name: str) -> str:
    """The work tree's branch for a series: its name made a valid git branch name.
    A series is named by what it came from (a directory, a mail subject, a
    range `good..bad`), and git refuses "..", spaces, "~^:?*[\\" and more in a
    branch name: a bisect of a nightly regression (a range) could not start."""
    safe = re.sub(r"[^A-Za-z0-9._-]+", "-", series_name)
    safe = re.sub(r"\.{2,}", "-", safe).strip(".-")
    if safe.endswith(".lock"):
        safe = safe[:-5]
    return f"iowatch/{safe[:120] or 'series'}"


def make_variants(tree: Path, base_ref: str, series: Series) -> Plan:
    base = resolve(tree, base_ref)
    work = _work_tree(tree)
    git(work, "am", "--abort", check=False)
    git(work, "checkout", "-q", "-f", "-B", branch_name(series.name), base)
    git(work, "clean", "-q", "-f", "-d")
    plan = Plan(tree, work, cache_dir() / "build" / tree.name, series, base,
                [Variant(0, base)])
    for patch in series.patches:
        out = git(work, "am", "--keep-cr", "--no-3way", input=patch.text, check=False)
        if out.returncode:
            git(work, "am", "--abort", check=False)
            hunks = _rejected_hunks(work, patch.text)
            plan.variants.append(Variant(
                patch.index, "", patch.subject, patch.name, status="apply-failed",
                error=f"patch {patch.index} ({patch.name}: {patch.subject}) does not apply to "
                      f"{plan.variants[-1].commit[:12]}:\n{hunks}"))
            break
        commit = git(work, "rev-parse", "HEAD").stdout.strip()
        plan.variants.append(Variant(patch.index, commit, patch.subject, patch.name))
    return plan


def _fragments_hash(fragments: list[Path]) -> str:
    h = hashlib.sha256()
    for f in fragments:
        h.update(f.name.encode() + b"\0" + f.read_bytes())
    return h.hexdigest()


def _env() -> dict:
    env = dict(os.environ)
    # vng --kconfig calls virtme-configkernel from the same installation.
    env["PATH"] = f"{Path(os.sys.executable).parent}:{env.get('PATH', '')}"
    env.setdefault("CCACHE_DIR", str(cache_dir() / "ccache"))
    # Relative paths in ccache's hashes: a build in another work tree still hits.
    env.setdefault("CCACHE_BASEDIR", str(cache_dir()))
    env.setdefault("CCACHE_NOHASHDIR", "1")
    return env


def _cc() -> str:
    """gcc through ccache, so each patch costs an incremental build; plain gcc
    when ccache is missing (scripts/setup.sh --kernel installs it), with a warning
    rather than a build that fails on "ccache: No such file or directory"."""
    if shutil.which("ccache"):
        return "ccache gcc"
    warnings.warn("ccache is not installed: every variant is compiled in full "
                  "(scripts/setup.sh --kernel installs it)", stacklevel=3)
    return "gcc"


def configure(plan: Plan, fragments: list[Path] | None = None, *,
              base: str = DEFAULT_BASE) -> Path:
    """The build directory's .config: the base (CONFIG_BASES) plus the fragments;
    made again only when the base or the fragments change."""
    fragments = fragments or default_fragments()
    stamp = plan.build / ".iowatch-fragments"
    digest = f"{base}:{_fragments_hash(fragments)}"
    if (plan.build / ".config").is_file() and stamp.is_file() and stamp.read_text() == digest:
        return plan.build / ".config"
    with progress.current().phase("configure", detail=f"{base} and the fragments", each=False):
        make_config(plan.work, plan.build, fragments, base=base)
        stamp.write_text(digest)
    return plan.build / ".config"


def default_fragments() -> list[Path]:
    return [CONFIG_DIR / f for f in DEFAULT_FRAGMENTS]


def make_config(work: Path, build: Path, fragments: list[Path], *,
                base: str = DEFAULT_BASE) -> Path:
    """Write build/.config for the source tree `work`: the base, then the
    fragments appended in order (a later line overrides an earlier one, as
    kconfig reads them), then olddefconfig. Every option a fragment sets must
    survive olddefconfig: one that does not lacks a dependency, and a guest
    without it would fail at run time, far from here. So it is refused here."""
    if base not in CONFIG_BASES:
        raise SourceError(f"unknown kernel config base {base!r}: one of {', '.join(CONFIG_BASES)}")
    build.mkdir(parents=True, exist_ok=True)
    env = _env()
    make = ["make", "-s", "-C", str(work), f"O={build}", "ARCH=x86_64"]
    if base == "vng":
        # guest-base.config is what allnoconfig lacks (and what it leaves out,
        # which x86_64_defconfig turns on): the old base takes the studies' fragments only.
        fragments = [f for f in fragments if f.name != BASE_FRAGMENT]
        _vng_kconfig(work, build, fragments, env)
    else:
        _make_target(make, "allnoconfig", work, env)
    config = build / ".config"
    with open(config, "a") as f:
        for frag in fragments:
            f.write(f"\n# {frag.name}\n" + frag.read_text())
    _make_target(make, "olddefconfig", work, env)
    missing = config_mismatches(config, fragments)
    if missing:
        raise SourceError(
            f"{len(missing)} option(s) of the config fragments did not survive olddefconfig on "
            f"the {base} base ({', '.join(f.name for f in fragments)}): "
            + "; ".join(f"{name} wanted {want}, got {got}" for name, want, got in missing)
            + ". Each lacks a dependency: add it to the fragment (`make menuconfig`, then / and "
              "the option's name, shows what it depends on).")
    return config


def _make_target(make: list[str], target: str, work: Path, env: dict) -> None:
    out = subprocess.run(make + [target], env=env, capture_output=True, text=True)
    if out.returncode:
        raise SourceError(f"make {target} failed in {work}: "
                          f"{(out.stderr or out.stdout).strip()[-800:]}")


def read_config(text: str) -> dict[str, str]:
    """CONFIG_FOO -> its value ("y", "m", "n" for "is not set", or the literal)."""
    values = {}
    for line in text.splitlines():
        line = line.strip()
        unset = NOT_SET.match(line)
        if unset:
            values[unset.group(1)] = "n"
        elif line.startswith("CONFIG_") and "=" in line:
            name, _, value = line.partition("=")
            values[name] = value
    return values


def config_mismatches(config: Path, fragments: list[Path]) -> list[tuple[str, str, str]]:
    """(option, wanted, got) for each option the fragments set that the .config
    does not have as set (the last fragment to name an option wins, as in kconfig)."""
    wanted: dict[str, str] = {}
    for frag in fragments:
        wanted.update(read_config(frag.read_text()))
    got = read_config(config.read_text())
    return [(name, want, got.get(name, "n")) for name, want in wanted.items()
            if got.get(name, "n") != want]


def _vng_kconfig(work: Path, build: Path, fragments: list[Path], env: dict) -> None:
    """The old base: virtme-ng's config (x86_64_defconfig plus its own list)."""
    args = ["vng", "--kconfig"] + [a for f in fragments for a in ("--config", str(f))]
    out = subprocess.run(args, cwd=work, env=env, capture_output=True, text=True)
    if out.returncode or not (work / ".config").is_file():
        raise SourceError(f"vng --kconfig failed: {(out.stderr or out.stdout).strip()[-800:]}")
    shutil.move(str(work / ".config"), build / ".config")
    # vng configures in the source tree; an O= build needs it clean again.
    subprocess.run(["make", "-s", "mrproper"], cwd=work, env=env, check=True)


def _compiler() -> str:
    out = subprocess.run(["gcc", "--version"], capture_output=True, text=True)
    return out.stdout.splitlines()[0] if out.stdout else "gcc (unknown)"


def is_object_step(line: str) -> bool:
    return OBJECT_STEP.match(line) is not None


def _counts_key(plan: Plan, config: bytes, incremental: bool) -> str:
    return (f"{plan.build.name}/{hashlib.sha256(config).hexdigest()[:16]}/"
            f"{'incremental' if incremental else 'full'}")


def last_build(key: str) -> dict:
    """{"objects": n, "build_s": s} of the last build under this key, or {}."""
    try:
        return json.loads((cache_dir() / BUILD_COUNTS).read_text()).get(key, {})
    except (OSError, ValueError):
        return {}


def _remember_build(key: str, objects: int, build_s: float) -> None:
    path = cache_dir() / BUILD_COUNTS
    try:
        counts = json.loads(path.read_text())
    except (OSError, ValueError):
        counts = {}
    counts[key] = {"objects": objects, "build_s": build_s, "at": progress.stamp()}
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(counts, indent=1, sort_keys=True) + "\n")
    tmp.replace(path)


def _make(argv: list[str], env: dict, logf, phase: progress.Phase) -> int:
    """Run make with its output into the log, counting the object steps into the phase."""
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, errors="replace", bufsize=1)
    try:
        for line in proc.stdout:
            logf.write(line)
            if is_object_step(line):
                phase.advance(1, line.split(None, 1)[-1].strip())
                if phase.total is not None and phase.completed > phase.total:
                    phase.set_total(None)  # more than last time: no total to show
        return proc.wait()
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    finally:
        proc.stdout.close()


def build_variant(plan: Plan, v: Variant, jobs: int | None = None,
                  log=None) -> Variant:
    """Check the variant out and build its bzImage incrementally."""
    env = _env()
    git(plan.work, "checkout", "-q", "-f", v.commit)
    artifacts = cache_dir() / "artifacts" / plan.series.name / f"{v.index:02d}-{v.commit[:12]}"
    artifacts.mkdir(parents=True, exist_ok=True)
    v.incremental = (plan.build / "vmlinux").exists()
    jobs = jobs or os.cpu_count() or 2
    config_path = plan.build / ".config"
    key = _counts_key(plan, config_path.read_bytes() if config_path.is_file() else b"", v.incremental)
    last = last_build(key)
    detail = (f"{'incremental' if v.incremental else 'full'}; last time {last['objects']} objects "
              f"in {last['build_s']:.0f} s" if last else
              f"{'incremental' if v.incremental else 'full'}; no earlier build of this tree and "
              "config to estimate from")
    t0 = time.monotonic()
    with progress.current().phase(f"build variant {v.index}", total=last.get("objects"),
                                  detail=detail, each=False) as phase:
        with open(artifacts / "build.log", "w") as logf:
            argv = ["make", "-C", str(plan.work), f"O={plan.build}", f"-j{jobs}", f"CC={_cc()}",
                    "olddefconfig", "bzImage"]
            logf.write("$ " + " ".join(argv) + "\n")
            logf.flush()
            rc = _make(argv, env, logf, phase)
        objects = f"{phase.completed} object{'' if phase.completed == 1 else 's'}"
        if rc:
            phase.end("build-failed", f"make exited {rc}; {objects}")
        else:
            phase.end("built", objects)
            _remember_build(key, phase.completed, round(time.monotonic() - t0, 1))
    v.build_s = round(time.monotonic() - t0, 1)
    v.artifacts = str(artifacts)
    v.compiler = _compiler()
    config = (plan.build / ".config").read_bytes()
    v.config_hash = hashlib.sha256(config).hexdigest()
    (artifacts / "config").write_bytes(config)
    if rc:
        lines = (artifacts / "build.log").read_text(errors="replace").splitlines()
        first = next((line for line in lines if ": error: " in line), "")
        v.status = "build-failed"
        v.error = f"make exited {rc}: {first.replace(str(plan.work) + '/', '')}\n" + "\n".join(lines[-40:])
    else:
        shutil.copy(plan.build / "arch/x86/boot/bzImage", artifacts / "bzImage")
        v.release = subprocess.run(["make", "-s", "-C", str(plan.work), f"O={plan.build}",
                                    "kernelrelease"], env=env, capture_output=True,
                                   text=True).stdout.strip()
        v.status = "built"
    (artifacts / "meta.json").write_text(json.dumps(
        {**v.to_dict(), "series": plan.series.name, "base": plan.base}, indent=1) + "\n")
    return v


def build_all(plan: Plan, jobs: int | None = None, on_variant=lambda v: None) -> Plan:
    configure(plan)
    for v in plan.variants:
        if v.status == "apply-failed":
            on_variant(v)
            continue
        build_variant(plan, v, jobs)
        on_variant(v)
    return plan
