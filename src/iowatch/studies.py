"""Studies and matrices as data: load, check, and resolve them into workloads.

A study (jobs/studies/<slug>.yml) is one mailing-list workload: what it runs,
on which device classes and filesystems, which metrics decide, and the numbers
the post published. A profile (`full`: the seed's parameters, `quick`: the same
shape scaled down, the scaling said in words in the file) and the device class
pick the concrete parameters. A matrix (such as jobs/smoke.yml) lists studies
to run together.
"""
from __future__ import annotations

import copy
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from iowatch.metrics import INFO, METRICS
from iowatch.resources import matrix_path
from iowatch.yamlfile import DataFileError, line_at, load_with_nodes, parse as parse_yaml, read as read_yaml

# Published units and how they become the metric table's units. fio's KB and
# MB are KiB and MiB; the XFS post's MB/s is read the same way.
PUBLISHED_UNITS = {
    "KB/s": ("KiB/s", 1), "MB/s": ("KiB/s", 1024), "ms": ("ms", 1), "s": ("s", 1),
    "files/s": ("files/s", 1), "IOPS": ("IO/s", 1), "ratio": ("ratio", 1), "count": ("count", 1),
}


@dataclass(frozen=True)
class StudyMetric:
    """A metric a study reports: in which group, which way is better, and
    whether it decides the study's verdict (the others are shown beside it)."""
    metric: str
    group: str
    direction: str
    decides: bool = False


@dataclass
class Study:
    """A study file as typed fields. `data` keeps the file as read, for what is
    not typed yet (the workload and its profiles are read through workload())."""
    slug: str
    path: Path
    data: dict
    title: str = field(init=False)
    seed: str = field(init=False)       # the seed post's file name, such as 003_19c316252e130d8a.txt
    source: str = field(init=False)     # the post: subject, author, list, date
    device_classes: tuple[str, ...] = field(init=False)
    filesystems: tuple[str, ...] = field(init=False)
    scheduler: str | None = field(init=False)
    min_effect_pct: float = field(init=False)
    metrics: tuple[StudyMetric, ...] = field(init=False)
    published: list[dict] = field(init=False)  # the post's result sets, as the file gives them

    def __post_init__(self) -> None:
        d = self.data
        self.title, self.seed, self.source = d["title"], d["seed"], d["source"]
        self.device_classes = tuple(d["device_classes"])
        self.filesystems = tuple(d["filesystems"])
        self.scheduler = d.get("scheduler")
        self.min_effect_pct = float(d.get("min_effect_pct", 5))
        self.metrics = tuple(StudyMetric(m["metric"], m["group"], m["direction"],
                                         bool(m.get("decides"))) for m in d["metrics"])
        self.published = d["published"]

    @property
    def deciding(self) -> set[tuple[str, str]]:
        """(group, metric) of each metric that decides the verdict."""
        return {(m.group, m.metric) for m in self.metrics if m.decides and m.direction != INFO}

    def scaling(self, profile: str) -> str | None:
        """How a profile scales the seed's workload down, in the file's words."""
        return self.data["profiles"].get(profile, {}).get("scaling")

    @property
    def kind(self) -> str:
        w = self.data["workload"]
        return "fio" if "fio" in w else "fs_mark" if "fs_mark" in w else "script"

    @property
    def groups(self) -> dict[str, str]:
        return self.data["workload"]["groups"]

    def workload(self, profile: str, device_class: str) -> dict:
        """The workload section with the profile's and the class's overrides merged in."""
        if profile not in self.data["profiles"]:
            raise ValueError(f"{self.path}: no profile {profile!r}; it has "
                             f"{', '.join(self.data['profiles'])}")
        w = copy.deepcopy(self.data["workload"])
        prof = self.data["profiles"][profile]
        for layer in (prof, prof.get("by_class", {}).get(device_class, {})):
            if "fio" in w:
                w["fio"]["global"].update(layer.get("global", {}))
                for job in w["fio"]["jobs"]:
                    job.setdefault("options", {}).update(layer.get("jobs", {}).get(job["name"], {}))
            if "fs_mark" in w:
                w["fs_mark"]["options"].update(layer.get("fs_mark", {}))
            if "script" in w:
                w["script"].update(layer.get("script", {}))
        return w

    def published_samples(self, entry: dict) -> list[dict]:
        """One published result set as bundle samples, converted to the table's units."""
        out = []
        for r in entry["results"]:
            unit, factor = PUBLISHED_UNITS[r["unit"]]
            m = METRICS[r["metric"]]
            out.append({"metric": m.name, "value": r["value"] * factor, "unit": m.unit,
                        "direction": m.direction, "group": r["group"], "job": None})
        return out


def load_study(path: str | Path) -> Study:
    path = Path(path)
    data, root = load_with_nodes(path, "study-v1.json")
    study = Study(slug=data["study"], path=path, data=data)
    _check(study, root)
    return study


def _check(study: Study, root=None) -> None:
    """What a schema cannot say: names must exist in the metric table, in the
    workload's groups and jobs, and published units must fit the metric. Each
    refusal names the line of the key at fault (root: the file's node tree)."""
    d, where = study.data, str(study.path)

    def refuse(path: list, message: str):
        raise DataFileError(where, line_at(root, path), message)

    if study.path.stem != study.slug:
        refuse(["study"], f"study {study.slug!r} must live in {study.slug}.yml")
    groups = set(study.groups.values())
    jobs = {j["name"] for j in d["workload"].get("fio", {}).get("jobs", [])}

    def metric(name: str, group: str, path: list, ctx: str, direction: str | None = None) -> None:
        if name not in METRICS:
            refuse([*path, "metric"], f"{ctx}: unknown metric {name!r}; see iowatch.metrics")
        if group not in groups:
            refuse([*path, "group"], f"{ctx}: group {group!r} is not one of the workload's "
                   f"groups ({', '.join(sorted(groups))})")
        if direction and direction != METRICS[name].direction:
            refuse([*path, "direction"], f"{ctx}: {name} is {METRICS[name].direction}-is-better "
                   f"in the metric table, not {direction}")

    for i, m in enumerate(study.metrics):
        metric(m.metric, m.group, ["metrics", i], f"metrics[{i}]", m.direction)
    for i, p in enumerate(study.published):
        if p["device_class"] not in study.device_classes:
            refuse(["published", i, "device_class"], f"published[{i}]: device class "
                   f"{p['device_class']!r} is not one of the study's device_classes")
        for j, r in enumerate(p["results"]):
            path, ctx = ["published", i, "results", j], f"published[{i}].results[{j}]"
            metric(r["metric"], r["group"], path, ctx)
            unit = PUBLISHED_UNITS[r["unit"]][0]
            if unit != METRICS[r["metric"]].unit:
                refuse([*path, "unit"], f"{ctx}: unit {r['unit']!r} cannot be "
                       f"{r['metric']}'s unit {METRICS[r['metric']].unit!r}")
    for name, prof in d["profiles"].items():
        for cls, layer in [(None, prof), *prof.get("by_class", {}).items()]:
            for job in layer.get("jobs", {}):
                if job not in jobs:
                    at = ["profiles", name, *(["by_class", cls] if cls else []), "jobs", job]
                    refuse(at, f"profiles.{name}: job {job!r} is not in "
                           f"workload.fio.jobs ({', '.join(sorted(jobs))})")


def load_studies(directory: str | Path) -> dict[str, Study]:
    paths = sorted(Path(directory).glob("*.yml"))
    if not paths:
        raise DataFileError(str(directory), None, "no study files (*.yml) here")
    studies = {}
    for p in paths:
        s = load_study(p)
        studies[s.slug] = s
    return studies


@dataclass
class Matrix:
    name: str
    path: Path
    studies: list[Study]
    profile: str = "quick"
    reps: int = 3
    filesystems: dict[str, list[str]] = field(default_factory=dict)  # per study, optional subset


def load_matrix(path: str | Path, studies_dir: str | Path | None = None) -> Matrix:
    """A matrix file (kind: matrix) or a single study file run on its own."""
    path = matrix_path(path)
    head = load_yaml_head(path)
    if "study" in head:
        s = load_study(path)
        return Matrix(name=s.slug, path=path, studies=[s])
    data, root = load_with_nodes(path, "matrix-v1.json")
    # --studies DIR / $IOWATCH_STUDIES name the study files for every matrix; else
    # a matrix reads the studies/ beside it (the packaged matrices: the packaged studies).
    studies_dir = Path(studies_dir or os.environ.get("IOWATCH_STUDIES") or path.parent / "studies")
    studies, filesystems = [], {}
    for i, entry in enumerate(data["studies"]):
        study_path = studies_dir / f"{entry['study']}.yml"
        if not study_path.is_file():
            raise DataFileError(str(path), line_at(root, ["studies", i, "study"]),
                                f"studies[{i}]: no study {entry['study']!r} ({study_path} does not exist)")
        s = load_study(study_path)
        if "filesystems" in entry:
            bad = set(entry["filesystems"]) - set(s.filesystems)
            if bad:
                raise DataFileError(str(path), line_at(root, ["studies", i, "filesystems"]),
                                    f"studies[{i}]: {s.slug} does not run on {', '.join(sorted(bad))}")
            filesystems[s.slug] = entry["filesystems"]
        studies.append(s)
    return Matrix(name=data["matrix"], path=path, studies=studies,
                  profile=data.get("profile", "quick"), reps=data.get("reps", 3),
                  filesystems=filesystems)


def load_yaml_head(path: Path) -> dict:
    data, _ = parse_yaml(read_yaml(path), str(path))
    if not isinstance(data, dict):
        raise DataFileError(str(path), 1, "expected a mapping with `study:` or `matrix:`")
    return data
