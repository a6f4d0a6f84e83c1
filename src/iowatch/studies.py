"""Studies and matrices as data: load, check, and resolve them into workloads.

A study (jobs/studies/<slug>.yml) is one mailing-list workload: what it runs,
on which device classes and filesystems, which metrics decide, and the numbers
the post published. A profile (`full`: the seed's parameters, `quick`: the same
shape scaled down, the scaling said in words in the file) and the device class
pick the concrete parameters. A matrix (such as jobs/smoke.yml) lists studies
to run together.

A canary study (`canary: true`, such as jobs/studies/canary-tmpfs-read.yml)
watches the platform instead of the kernel: a workload no storage patch can
change much, run on a tmpfs, whose metrics never decide a verdict; the judging
policy reads it as a platform check (iowatch.judging, docs/verdicts.md).
"""
from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from iowatch.metrics import INFO, METRICS
from iowatch.resources import matrix_path
from iowatch.vocabulary.defaults import DEFAULT_MIN_EFFECT
from iowatch.vocabulary import DEFAULT_CAP
from iowatch.yamlfile import DataFileError, line_at, load_with_nodes, parse as parse_yaml, read as read_yaml

# Published units and how they become the metric table's units. fio's KB and
# MB are KiB and MiB; the XFS post's MB/s is read the same way.
PUBLISHED_UNITS = {
    "KB/s": ("KiB/s", 1), "MB/s": ("KiB/s", 1024), "ms": ("ms", 1), "s": ("s", 1),
    "files/s": ("files/s", 1), "IOPS": ("IO/s", 1), "ratio": ("ratio", 1), "count": ("count", 1),
}


@dataclass(frozen=True)
class JudgedOn:
    """How a published metric's claim is judged when the lab cannot measure it,
    or measures it only through a noisier derived value: in direction, on the
    deciding `metric` of the same group that carries the mechanism, and why;
    with a `control` (filesystem, metric) of the same device that must be
    measured on both sides and hold (no confirmed change), when the claim's
    metric is a ratio against it."""
    metric: str
    why: str
    control: tuple[str, str] | None = None
    # Only for runs that did not measure the figure (runs of a kernel that could
    # not time it); runs that did are judged on the figure itself.
    unless_measured: bool = False


@dataclass(frozen=True)
class StudyMetric:
    """A metric a study reports: in which group, which way is better, and
    whether it decides the study's verdict (the others are shown beside it)."""
    metric: str
    group: str
    direction: str
    decides: bool = False
    # Why a deciding metric decides: what the post decided on. A deciding metric
    # without one that is too noisy for the study's minimum effect is shown, not
    # judged (iowatch.judging.policy.NOISY_TIMES).
    why: str | None = None


Scalar = str | int | float | bool


@dataclass(frozen=True)
class FioJob:
    name: str
    options: dict[str, Scalar]


@dataclass(frozen=True)
class FioSection:
    """fio's job file as data: the [global] options and the jobs in order."""
    global_options: dict[str, Scalar]
    jobs: tuple[FioJob, ...]


@dataclass(frozen=True)
class FsMarkSection:
    options: dict[str, int | str]  # fs_mark's one-letter flags
    dirs: int | None = None  # how many -d directories


@dataclass(frozen=True)
class ScriptSection:
    """The f2fs checkpoint steps: create, sync, delete one in every N, drop caches, timed sync."""
    create_files: int
    workers: int
    delete_every: int
    # metric -> kernel function timed during the final sync (iowatch.ftrace)
    time_functions: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Ratio:
    """A metric reported as filesystem/against per repetition (ext4 over the raw device)."""
    metric: str
    group: str
    filesystem: str
    against: str


@dataclass(frozen=True)
class Overrides:
    """What a profile, or its layer for one device class, changes in the workload."""
    fio_global: dict[str, Scalar] = field(default_factory=dict)
    fio_jobs: dict[str, dict[str, Scalar]] = field(default_factory=dict)  # by job name
    fs_mark: dict[str, int | str] = field(default_factory=dict)
    script: dict[str, int] = field(default_factory=dict)

    @classmethod
    def from_file(cls, d: dict) -> Overrides:
        return cls(dict(d.get("global", {})), {k: dict(v) for k, v in d.get("jobs", {}).items()},
                   dict(d.get("fs_mark", {})), dict(d.get("script", {})))


@dataclass(frozen=True)
class Profile:
    """`full` (the seed's parameters) or `quick` (the same shape scaled down)."""
    name: str
    scaling: str  # how the profile differs from the seed, in words
    overrides: Overrides
    by_class: dict[str, Overrides]  # device class -> its layer on top


@dataclass(frozen=True)
class Workload:
    """The study file's workload: one tool's section, the group names, and extras."""
    tool: FioSection | FsMarkSection | ScriptSection
    groups: dict[str, str]  # the tool's group ids -> the names the study reports them by
    ratio: Ratio | None = None
    device_stats: bool | None = None

    @property
    def kind(self) -> str:
        return {FioSection: "fio", FsMarkSection: "fs_mark", ScriptSection: "script"}[type(self.tool)]

    @classmethod
    def from_file(cls, w: dict) -> Workload:
        if "fio" in w:
            tool = FioSection(dict(w["fio"]["global"]),
                              tuple(FioJob(j["name"], dict(j.get("options", {}))) for j in w["fio"]["jobs"]))
        elif "fs_mark" in w:
            tool = FsMarkSection(dict(w["fs_mark"]["options"]), w["fs_mark"].get("dirs"))
        else:
            tool = ScriptSection(**w["script"])
        return cls(tool, dict(w["groups"]), Ratio(**w["ratio"]) if "ratio" in w else None,
                   w.get("device_stats"))

    def resolved(self, layers: list[Overrides]) -> dict:
        """The workload with the layers merged in, as the runner and the bundle
        carry it (cell params `workload`): a fresh dict the caller may change."""
        tool = self.tool
        out: dict = {}
        if isinstance(tool, FioSection):
            glob = dict(tool.global_options)
            jobs = [{"name": j.name, "options": dict(j.options)} for j in tool.jobs]
            for layer in layers:
                glob.update(layer.fio_global)
                for job in jobs:
                    job["options"].update(layer.fio_jobs.get(job["name"], {}))
            out["fio"] = {"global": glob, "jobs": jobs}
        elif isinstance(tool, FsMarkSection):
            options = dict(tool.options)
            for layer in layers:
                options.update(layer.fs_mark)
            out["fs_mark"] = {"options": options, **({"dirs": tool.dirs} if tool.dirs is not None else {})}
        else:
            script = {"create_files": tool.create_files, "workers": tool.workers,
                      "delete_every": tool.delete_every,
                      **({"time_functions": dict(tool.time_functions)} if tool.time_functions else {})}
            for layer in layers:
                script.update(layer.script)
            out["script"] = script
        out["groups"] = dict(self.groups)
        if self.ratio is not None:
            out["ratio"] = asdict(self.ratio)
        if self.device_stats is not None:
            out["device_stats"] = self.device_stats
        return out


# The device classes with a flash translation layer that preconditioning can
# bring to a steady state (an SD card or eMMC has one too, but no rated
# endurance to spend on it, and an HDD has none).
PRECONDITION_CLASSES = ("ssd", "ssd-raid0", "nvme")


@dataclass(frozen=True)
class Precondition:
    """A study's `precondition`: the fill, then 4k random-write rounds until the
    SNIA PTS steady state (iowatch.stats.steady_state) or rounds_max."""
    rounds_max: int
    window: int
    fill: int = 1  # sequential passes over the whole device
    slope_pct_max: float = 10.0
    excursion_pct_max: float = 20.0
    round_s: int = 60
    bs: str = "4k"
    iodepth: int = 32

    @classmethod
    def from_file(cls, d: dict) -> Precondition:
        return cls(**d)


@dataclass(frozen=True)
class PublishedResult:
    """One number of a seed post's result set, in the post's own unit."""
    metric: str
    group: str
    value: float
    unit: str  # one of PUBLISHED_UNITS
    as_published: str  # the post's own words for it
    spread: float | None = None
    qualifier: str | None = None

    def sample(self) -> dict:
        """As a bundle sample, converted to the metric table's unit."""
        unit, factor = PUBLISHED_UNITS[self.unit]
        m = METRICS[self.metric]
        return {"metric": m.name, "value": self.value * factor, "unit": m.unit,
                "direction": m.direction, "group": self.group, "job": None}


@dataclass(frozen=True)
class PublishedSet:
    """One result set a seed post published: a kernel (label) on a device class."""
    label: str
    kernel: str
    device_class: str
    setup: str | None
    results: tuple[PublishedResult, ...]
    # The file's mapping as given: import-published derives the run id from it, so a
    # published run keeps its id for as long as the study file says the same thing.
    as_given: dict = field(compare=False, hash=False, repr=False)

    @classmethod
    def from_file(cls, d: dict) -> PublishedSet:
        return cls(label=d["label"], kernel=d["kernel"], device_class=d["device_class"],
                   setup=d.get("setup"), as_given=d,
                   results=tuple(PublishedResult(r["metric"], r["group"], r["value"], r["unit"],
                                                 r["as_published"], r.get("spread"), r.get("qualifier"))
                                 for r in d["results"]))

    def samples(self) -> list[dict]:
        """The set as bundle samples, converted to the metric table's units."""
        return [r.sample() for r in self.results]

    def result(self, group: str, metric: str) -> PublishedResult | None:
        return next((r for r in self.results if (r.group, r.metric) == (group, metric)), None)


@dataclass(frozen=True)
class Study:
    """A study file as typed fields, made by load_study once the schema passed."""
    slug: str
    path: Path
    title: str
    seed: str | None  # the seed post's file name, such as 003_19c316252e130d8a.txt; None: a canary
    source: str  # the post: subject, author, list, date
    question: str | None
    device_classes: tuple[str, ...]
    filesystems: tuple[str, ...]
    scheduler: str | None
    min_effect_pct: float
    # The adaptive loop's cap: at most this many repetitions a side in a cell
    # (iowatch.stats.sequential; the looks' levels depend on it).
    max_runs: int
    spec: Workload  # the workload as the file gives it; workload() resolves a profile
    profiles: dict[str, Profile]
    metrics: tuple[StudyMetric, ...]
    published: tuple[PublishedSet, ...]  # the post's result sets, in the file's order
    # Published metric -> why the virtual lab cannot show its change (real hardware only).
    not_reproducible_in_vlab: dict[str, str] = field(default_factory=dict, compare=False, hash=False)
    # A published metric -> how its claim is judged instead (JudgedOn).
    judged_on: dict[str, JudgedOn] = field(default_factory=dict, compare=False, hash=False)
    # A canary watches the platform: its `decides` metrics are watched (`watched`),
    # never deciding (`deciding` is empty), and it runs on tmpfs in every boot.
    canary: bool = False
    # Before the study's cells on an ssd, ssd-raid0 or nvme device (iowatch.precondition).
    precondition: Precondition | None = None
    # Writeback throttling's latency target on the device (queue/wbt_lat_usec): 0 off,
    # None the kernel's default. Set after the scheduler, which may turn wbt off.
    wbt_lat_usec: int | None = None

    @classmethod
    def from_file(cls, path: Path, d: dict) -> Study:
        """From a study file's data that passed the schema (study-v1.json)."""
        return cls(
            slug=d["study"], path=path, title=d["title"], seed=d.get("seed"), source=d["source"],
            question=d.get("question"), device_classes=tuple(d["device_classes"]),
            filesystems=tuple(d["filesystems"]), scheduler=d.get("scheduler"),
            wbt_lat_usec=d.get("wbt_lat_usec"),
            min_effect_pct=float(d.get("min_effect_pct", DEFAULT_MIN_EFFECT)),
            max_runs=int(d.get("max_runs", DEFAULT_CAP)), spec=Workload.from_file(d["workload"]),
            profiles={name: Profile(name, p["scaling"], Overrides.from_file(p),
                                    {cls_: Overrides.from_file(o) for cls_, o in p.get("by_class", {}).items()})
                      for name, p in d["profiles"].items()},
            metrics=tuple(StudyMetric(m["metric"], m["group"], m["direction"], bool(m.get("decides")),
                                      " ".join(m["why"].split()) if m.get("why") else None)
                          for m in d["metrics"]),
            published=tuple(PublishedSet.from_file(p) for p in d["published"]),
            not_reproducible_in_vlab=dict(d.get("not_reproducible_in_vlab", {})),
            judged_on={k: JudgedOn(v["metric"], " ".join(v["why"].split()),
                                   (v["control"]["filesystem"], v["control"]["metric"])
                                   if "control" in v else None, bool(v.get("unless_measured", False)))
                       for k, v in d.get("judged_on", {}).items()},
            canary=bool(d.get("canary", False)),
            precondition=Precondition.from_file(d["precondition"]) if "precondition" in d else None)

    @property
    def deciding(self) -> set[tuple[str, str]]:
        """(group, metric) of each metric that decides the verdict; none for a
        canary, whose cells are never the patch's effect."""
        if self.canary:
            return set()
        return self._marked

    @property
    def decides_why(self) -> dict[tuple[str, str], str]:
        """(group, metric) -> why, of each deciding metric whose study says why it decides."""
        return {(m.group, m.metric): m.why for m in self.metrics
                if m.why and (m.group, m.metric) in self.deciding}

    @property
    def watched(self) -> set[tuple[str, str]]:
        """A canary's (group, metric) that watch the platform: its `decides` metrics."""
        return self._marked if self.canary else set()

    @property
    def _marked(self) -> set[tuple[str, str]]:
        return {(m.group, m.metric) for m in self.metrics if m.decides and m.direction != INFO}

    def scaling(self, profile: str) -> str | None:
        """How a profile scales the seed's workload down, in the file's words."""
        p = self.profiles.get(profile)
        return p.scaling if p else None

    @property
    def kind(self) -> str:
        return self.spec.kind

    @property
    def groups(self) -> dict[str, str]:
        return self.spec.groups

    def workload(self, profile: str, device_class: str) -> dict:
        """The workload with the profile's and the class's overrides merged in."""
        if profile not in self.profiles:
            raise ValueError(f"{self.path}: no profile {profile!r}; it has {', '.join(self.profiles)}")
        p = self.profiles[profile]
        return self.spec.resolved([p.overrides, *([p.by_class[device_class]]
                                                  if device_class in p.by_class else [])])


def load_study(path: str | Path) -> Study:
    path = Path(path)
    data, root = load_with_nodes(path, "study-v1.json")
    study = Study.from_file(path, data)
    _check(study, root)
    return study


def _check(study: Study, root=None) -> None:
    """What a schema cannot say: names must exist in the metric table, in the
    workload's groups and jobs, and published units must fit the metric; a
    profile changes only what the workload has. Each refusal names the line of
    the key at fault (root: the file's node tree)."""
    where = str(study.path)

    def refuse(path: list, message: str):
        raise DataFileError(where, line_at(root, path), message)

    _check_file(study, refuse)
    _check_metrics(study, refuse)
    _check_claims(study, refuse)
    _check_profiles(study, refuse)


def _check_file(study: Study, refuse) -> None:
    """The file's name, a canary's watched metric, the precondition's window and classes."""
    if study.path.stem != study.slug:
        refuse(["study"], f"study {study.slug!r} must live in {study.slug}.yml")
    if study.canary and not study.watched:
        refuse(["metrics"], "a canary needs a metric to watch (decides: true, higher or lower)")
    pre = study.precondition
    if pre is not None:
        if pre.window > pre.rounds_max:
            refuse(["precondition", "window"], f"precondition: window {pre.window} is more than "
                   f"rounds_max {pre.rounds_max}: steady state could never be judged")
        if not set(study.device_classes) & set(PRECONDITION_CLASSES):
            refuse(["precondition"], f"precondition: applies to {', '.join(PRECONDITION_CLASSES)} "
                   f"devices, and the study runs on none ({', '.join(study.device_classes)})")


def _check_metrics(study: Study, refuse) -> None:
    """Every metric named (the study's, the ratio's, the published results'):
    in the metric table, of one of the workload's groups, with its direction
    and unit; the ratio's filesystems and the published sets' device classes
    the study's own."""
    groups = set(study.groups.values())

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
    ratio = study.spec.ratio
    if ratio is not None:
        metric(ratio.metric, ratio.group, ["workload", "ratio"], "workload.ratio")
        for key in ("filesystem", "against"):
            if getattr(ratio, key) not in study.filesystems:
                refuse(["workload", "ratio", key], f"workload.ratio.{key}: {getattr(ratio, key)!r} "
                       f"is not one of the study's filesystems ({', '.join(study.filesystems)})")
    timed = getattr(study.spec.tool, "time_functions", {})
    listed = {m.metric for m in study.metrics}
    for name in timed:
        if name not in listed:
            refuse(["workload", "script", "time_functions", name], f"workload.script.time_functions: "
                   f"{name!r} is not one of the study's metrics ({', '.join(sorted(listed))})")
    for i, p in enumerate(study.published):
        if p.device_class not in study.device_classes:
            refuse(["published", i, "device_class"], f"published[{i}]: device class "
                   f"{p.device_class!r} is not one of the study's device_classes")
        for j, r in enumerate(p.results):
            path, ctx = ["published", i, "results", j], f"published[{i}].results[{j}]"
            metric(r.metric, r.group, path, ctx)
            unit = PUBLISHED_UNITS[r.unit][0]
            if unit != METRICS[r.metric].unit:
                refuse([*path, "unit"], f"{ctx}: unit {r.unit!r} cannot be "
                       f"{r.metric}'s unit {METRICS[r.metric].unit!r}")


def _check_claims(study: Study, refuse) -> None:
    """not_reproducible_in_vlab and judged_on name metrics the post published,
    judged on deciding metrics with a control the study measures."""
    published_metrics = {r.metric for p in study.published for r in p.results}
    for name in study.not_reproducible_in_vlab:
        if name not in published_metrics:
            refuse(["not_reproducible_in_vlab", name], f"not_reproducible_in_vlab: {name!r} is "
                   f"not a metric the post published ({', '.join(sorted(published_metrics))})")
    deciding = {m.metric for m in study.metrics if m.decides}
    for name, judged in study.judged_on.items():
        if name not in published_metrics:
            refuse(["judged_on", name], f"judged_on: {name!r} is not a metric the post published "
                   f"({', '.join(sorted(published_metrics))})")
        if judged.metric not in deciding:
            refuse(["judged_on", name, "metric"], f"judged_on: {name} is judged on "
                   f"{judged.metric!r}, which is not a deciding metric of the study "
                   f"({', '.join(sorted(deciding))})")
        if judged.control and judged.control[0] not in study.filesystems:
            refuse(["judged_on", name, "control", "filesystem"], f"judged_on: {name}'s control "
                   f"filesystem {judged.control[0]!r} is not one of the study's "
                   f"({', '.join(study.filesystems)})")
        if judged.control and judged.control[1] not in deciding:
            refuse(["judged_on", name, "control", "metric"], f"judged_on: {name}'s control "
                   f"metric {judged.control[1]!r} is not a deciding metric of the study "
                   f"({', '.join(sorted(deciding))})")


def _check_profiles(study: Study, refuse) -> None:
    """A profile's layers change only what the workload has, on the study's classes."""
    tool = study.spec.tool
    jobs = {j.name for j in tool.jobs} if isinstance(tool, FioSection) else set()
    script_keys = {"create_files", "workers", "delete_every"}
    for name, prof in study.profiles.items():
        for cls, layer in [(None, prof.overrides), *prof.by_class.items()]:
            at = ["profiles", name, *(["by_class", cls] if cls else [])]
            ctx = f"profiles.{name}" + (f".by_class.{cls}" if cls else "")
            if cls is not None and cls not in study.device_classes:
                refuse(at, f"{ctx}: device class {cls!r} is not one of the study's device_classes")
            # A layer for another tool would be dropped without a word (LKP's lesson).
            for key, given, tool_name in (("global", layer.fio_global, "fio"), ("jobs", layer.fio_jobs, "fio"),
                                          ("fs_mark", layer.fs_mark, "fs_mark"),
                                          ("script", layer.script, "script")):
                if given and study.kind != tool_name:
                    refuse([*at, key], f"{ctx}.{key}: changes {tool_name}, but the workload "
                           f"runs {study.kind}")
            for job in layer.fio_jobs:
                if job not in jobs:
                    refuse([*at, "jobs", job], f"{ctx}: job {job!r} is not in "
                           f"workload.fio.jobs ({', '.join(sorted(jobs))})")
            for key in layer.script:
                if key not in script_keys:
                    refuse([*at, "script", key], f"{ctx}.script: {key!r} is not one of "
                           f"workload.script's keys ({', '.join(sorted(script_keys))})")


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
    device_classes: dict[str, list[str]] = field(default_factory=dict)  # per study, optional subset


def canaries_in(directory: Path) -> list[Study]:
    """The canary studies (`canary: true`) among a directory's study files."""
    if not directory.is_dir():
        return []
    return [load_study(p) for p in sorted(directory.glob("*.yml"))
            if load_yaml_head(p).get("canary") is True]


def with_canaries(studies: list[Study], directory: Path) -> list[Study]:
    """A matrix's studies with the platform canary in every boot (issue 41 item
    7): a matrix or a study run alone that lists no canary gets its studies
    directory's canaries after its own studies, so every path (check,
    reproduce, bisect, nightly, the agents' jobs, run) measures the platform
    beside what it was asked for. A directory with no canary adds none."""
    if any(s.canary for s in studies):
        return studies
    return [*studies, *canaries_in(directory)]


def load_matrix(path: str | Path, studies_dir: str | Path | None = None) -> Matrix:
    """A matrix file (kind: matrix) or a single study file run on its own, with
    the canary of its studies directory when it lists none (with_canaries)."""
    path = matrix_path(path)
    head = load_yaml_head(path)
    if "study" in head:
        s = load_study(path)
        beside = Path(studies_dir or os.environ.get("IOWATCH_STUDIES") or path.parent)
        return Matrix(name=s.slug, path=path, studies=with_canaries([s], beside))
    data, root = load_with_nodes(path, "matrix-v1.json")
    # --studies DIR / $IOWATCH_STUDIES name the study files for every matrix; else
    # a matrix reads the studies/ beside it (the packaged matrices: the packaged studies).
    studies_dir = Path(studies_dir or os.environ.get("IOWATCH_STUDIES") or path.parent / "studies")
    studies, filesystems, classes = [], {}, {}
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
        if "device_classes" in entry:
            bad = set(entry["device_classes"]) - set(s.device_classes)
            if bad:
                raise DataFileError(str(path), line_at(root, ["studies", i, "device_classes"]),
                                    f"studies[{i}]: {s.slug} does not run on device class "
                                    f"{', '.join(sorted(bad))} (its classes: "
                                    f"{', '.join(s.device_classes)})")
            classes[s.slug] = entry["device_classes"]
        studies.append(s)
    return Matrix(name=data["matrix"], path=path, studies=with_canaries(studies, studies_dir),
                  profile=data.get("profile", "quick"), reps=data.get("reps", 3),
                  filesystems=filesystems, device_classes=classes)


def load_yaml_head(path: Path) -> dict:
    data, _ = parse_yaml(read_yaml(path), str(path))
    if not isinstance(data, dict):
        raise DataFileError(str(path), 1, "expected a mapping with `study:` or `matrix:`")
    return data
