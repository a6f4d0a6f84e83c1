"""Reading LKP result roots.

LKP keeps a run at
/lkp/result/<suite>/<params>/<testbox>/<rootfs>/<kconfig>/<compiler>/<commit>/<N>/
with job.yaml (the atomic job it ran, '#!' comments and all), env.yaml (the
disk and mount points its setup chose), the tools' output and stats.json (flat
name -> number); the <commit> directory above the iterations holds matrix.json
(name -> one number per iteration). This module finds and reads them; bad
input is refused naming the file and what to do.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

SUITES = ("fio-basic", "fsmark")


class ResultRootError(ValueError):
    """A result root iowatch cannot read; the message names the file."""


@dataclass
class Iteration:
    dir: Path | None  # the <N> directory; None when only matrix.json holds the numbers
    index: int  # 1-based, as iowatch counts repetitions
    stats: dict[str, float]


@dataclass
class ResultRoot:
    path: Path  # the <commit> directory (LKP's _result_root)
    job: dict
    env: dict
    iterations: list[Iteration] = field(default_factory=list)

    @property
    def suite(self) -> str:
        return self.job["suite"]

    @property
    def params(self) -> str:
        """LKP's parameter directory name (4k-1HDD-xfs-sync-1-10s-write-128M)."""
        return self.path.parents[4].name if len(self.path.parents) > 4 else self.path.name


def read_yaml(path: Path) -> dict:
    try:
        data = yaml.safe_load(path.read_text())
    except OSError as e:
        raise ResultRootError(f"{path}: cannot read: {e.strerror}") from None
    except yaml.YAMLError as e:
        raise ResultRootError(f"{path}: not valid YAML: {e}") from None
    if not isinstance(data, dict):
        raise ResultRootError(f"{path}: expected a mapping of LKP's job or env keys")
    return data


def _numbers(data: dict) -> dict:
    return {k: v for k, v in data.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}


def read_json(path: Path) -> dict:
    try:
        data = json.loads(path.read_text())
    except OSError as e:
        raise ResultRootError(f"{path}: cannot read: {e.strerror}") from None
    except ValueError as e:
        raise ResultRootError(f"{path}: not valid JSON: {e}") from None
    if not isinstance(data, dict):
        raise ResultRootError(f"{path}: expected LKP's flat object of stat names")
    return data


def read_env(path: Path) -> dict:
    """env.yaml: LKP's setup scripts append `key: value` lines; the values are
    shell words (`disks:  /dev/loop ` has spaces), so read them as text."""
    env: dict = {}
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return env
    for line in lines:
        m = re.match(r"^([A-Za-z_][A-Za-z0-9_]*):(.*)$", line)
        if m:
            env[m.group(1)] = m.group(2).strip()
    return env


def _iteration_dirs(commit_dir: Path) -> list[Path]:
    return sorted((d for d in commit_dir.iterdir() if d.is_dir() and d.name.isdigit()
                   and (d / "job.yaml").is_file()), key=lambda d: int(d.name))


def load(commit_dir: Path) -> ResultRoot:
    """One <commit> directory: every iteration's stats.json, else matrix.json."""
    dirs = _iteration_dirs(commit_dir)
    job_file = dirs[0] / "job.yaml" if dirs else commit_dir / "job.yaml"
    if not job_file.is_file():
        raise ResultRootError(f"{commit_dir}: no job.yaml in an iteration directory (<N>/job.yaml); "
                              "give an LKP result root such as /lkp/result/<suite>/<params>/...")
    job = read_yaml(job_file)
    suite = job.get("suite")
    if suite not in SUITES:
        raise ResultRootError(f"{job_file}: suite {suite!r} is not one iowatch maps onto its metrics "
                              f"(it reads {', '.join(SUITES)})")
    env = read_env(job_file.parent / "env.yaml")
    root = ResultRoot(commit_dir, job, env)
    if dirs and all((d / "stats.json").is_file() for d in dirs):
        for i, d in enumerate(dirs, 1):
            root.iterations.append(Iteration(d, i, _numbers(read_json(d / "stats.json"))))
        return root
    matrix = commit_dir / "matrix.json"
    if not matrix.is_file():
        missing = next((d / "stats.json" for d in dirs if not (d / "stats.json").is_file()),
                       commit_dir / "stats.json")
        raise ResultRootError(f"{missing}: missing, and no {matrix} beside the iterations; LKP "
                              "writes them after the run (`lkp run` finished?); without them "
                              "there are no numbers to import")
    columns = {k: v for k, v in read_json(matrix).items()
               if isinstance(v, list) and all(isinstance(x, (int, float)) for x in v)}
    count = max((len(v) for v in columns.values()), default=0)
    for i in range(count):
        stats = {k: v[i] for k, v in columns.items() if i < len(v)}
        root.iterations.append(Iteration(dirs[i] if i < len(dirs) else None, i + 1, stats))
    return root


def find(paths: list[str | Path]) -> list[ResultRoot]:
    """Every <commit> directory at or under the given paths (an <N> directory
    stands for its <commit> directory), each read once."""
    seen: dict[Path, None] = {}
    for given in paths:
        p = Path(given)
        if not p.exists():
            raise ResultRootError(f"{p}: no such file or directory")
        if p.is_file():
            p = p.parent
        if p.name.isdigit() and (p / "job.yaml").is_file():
            p = p.parent
        found = {j.parent.parent for j in p.rglob("job.yaml") if j.parent.name.isdigit()}
        found |= {m.parent for m in p.rglob("matrix.json")}
        if (p / "matrix.json").is_file() or _iteration_dirs(p):
            found.add(p)
        if not found:
            raise ResultRootError(f"{p}: no LKP result root here (no <N>/job.yaml, no matrix.json); "
                                  "give a directory under /lkp/result")
        for d in sorted(found):
            seen.setdefault(d.resolve(), None)
    return [load(d) for d in seen]


def mkfs_and_mount(iteration_dir: Path) -> tuple[str | None, str | None]:
    """The mkfs and mount options LKP used, from its reproduce.sh."""
    try:
        text = (iteration_dir / "reproduce.sh").read_text()
    except OSError:
        return None, None
    mkfs = re.search(r"^mkfs -t \S+ (.*?)\s*/dev/\S+$", text, re.M)
    mount = re.search(r"^mount -t \S+ -o (\S+) ", text, re.M)
    return (mkfs.group(1) if mkfs else None), (mount.group(1) if mount else None)


ARTIFACT_NAME = re.compile(r"[^A-Za-z0-9._-]")
MAX_ARTIFACT = 4 << 20


def artifacts(iteration_dir: Path | None) -> dict[str, bytes]:
    """The iteration's raw files as bundle artifacts ("lkp.<file>"): the raw
    result root travels, so a better parser can read it again."""
    out: dict[str, bytes] = {}
    if iteration_dir is None:
        return out
    for f in sorted(iteration_dir.iterdir()):
        if f.is_file() and not f.is_symlink() and f.stat().st_size <= MAX_ARTIFACT:
            out["lkp." + ARTIFACT_NAME.sub("_", f.name)] = f.read_bytes()
    return out
