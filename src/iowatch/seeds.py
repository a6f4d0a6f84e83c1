"""The five seeds reproduced on Linux 6.12: which series, study and published
labels stand for a seed post's before and after, and the claim judge.

Each seed's series directory (kernels/series/seed-NNN-*/) holds a
`reproduce.yml` (schema reproduce-v1.json): the study, and which variant of
the series (1: base+p1, 2: base+p1+p2) stands for the post's before and
which for its after, by the labels of the study's `published:` sets. Where
6.12 has the post's after (001, 003, 004) variant 1 is the after; where it
never got the change (000, 002) variant 1 is the before.

A claim is what the Published results page calls one (webapp
iowatch_web/dashboard/published.py): one metric of one job group between two
published sets of one device class that follow each other in the study file,
the earlier the before. The lab's side of a claim is the check's bundles of
the two variants those sets stand for, judged by iowatch.judging.compare_sides
(the one verdict policy) with the post's before as the base, so the lab's
change reads in the same direction as the post's. Each claim and lab device
gets one OUTCOMES word.
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path

from iowatch import bundle, figures
from iowatch import ratio as fs_ratio
from iowatch.side_data import Side
from iowatch.judging import Comparison, compare_sides, min_effect
from iowatch.metrics import INFO, METRICS
from iowatch.resources import matrix_path
from iowatch.stats import CellVerdict
from iowatch.studies import JudgedOn, PublishedSet, Study
from iowatch.yamlfile import DataFileError, line_at, load_with_nodes

REPRODUCE_FILE = "reproduce.yml"
REPRODUCED, NOT_REPRODUCED, OPPOSITE = "reproduced", "not-reproduced", "opposite"
NOT_REPRODUCIBLE, NOT_COMPARABLE = "not-reproducible", "not-comparable"
# The claim judge's outcomes with their words, best first.
OUTCOMES = {REPRODUCED: "reproduced", NOT_REPRODUCED: "not reproduced", OPPOSITE: "opposite",
            NOT_REPRODUCIBLE: "not reproducible here", NOT_COMPARABLE: "not comparable"}
CONFIRMED = ("regression", "improvement")  # the verdicts that confirm a change
# Each outcome's rule, in the words the text report's readers and the Published
# results page are given.
OUTCOME_RULES = {
    REPRODUCED: "the lab's verdict is confirmed (regression or improvement) and its change has "
                "the post's sign; a post's change under the study's minimum effect is reproduced "
                "by no change",
    OPPOSITE: "confirmed, the other way",
    NOT_REPRODUCED: "the lab's verdict is no change, suspected or unsure",
    NOT_REPRODUCIBLE: "the study names the metric as needing real hardware, and the lab measured "
                      "it without reproducing it",
    NOT_COMPARABLE: "the metric does not decide in the study or is not measured, the lab has no "
                    "cell of the claim's class with the study's first filesystem, the cell "
                    "failed, or the lab has no runs of a side",
}
# A reproduced claim's size against the post's: "in size" when the lab's log-ratio
# (ln of after over before) is within a factor of two of the post's, the same sign
# (SIZE_FACTOR); else smaller or larger. A claim not reproduced in direction has no size.
IN_SIZE, SMALLER, LARGER = "in-size", "smaller", "larger"
SIZE_FACTOR = 2.0
SIZES = {IN_SIZE: "in size", SMALLER: "in direction, under half the post's size",
         LARGER: "in direction, over twice the post's size"}
# A claim judged on several lab devices is reproduced only where each reproduced it:
# the first of these that a device gave is the claim's.
_CLAIM_ORDER = (OPPOSITE, NOT_REPRODUCED, NOT_REPRODUCIBLE, REPRODUCED)


class SeedError(ValueError):
    """A seed, series directory or check directory iowatch cannot use; the message says which."""


@dataclass(frozen=True)
class SeedSide:
    """The variant of the series that stands for one side of the post."""
    variant: int
    labels: tuple[str, ...]  # the first labels the lab's runs

    @property
    def label(self) -> str:
        return self.labels[0]


@dataclass(frozen=True)
class Seed:
    """A seed's series directory, its study, and what its variants stand for."""
    number: str  # "000" .. "004"
    series_dir: Path
    study: Study
    before: SeedSide
    after: SeedSide
    why: str
    matrix: str | None = None  # reproduce.yml's `matrix`: what each variant runs, else the study
    host: str | None = None  # reproduce.yml's `host`: the qemu host the variants boot on, else vlab

    @property
    def name(self) -> str:
        return self.series_dir.name

    def variant_of(self, label: str) -> int | None:
        """The variant that stands for the post's set with this label."""
        for side in (self.before, self.after):
            if label in side.labels:
                return side.variant
        return None

    def run_labels(self) -> dict[int, str]:
        """variant -> the label its runs carry (variant 0, the base, keeps "base")."""
        return {self.before.variant: self.before.label, self.after.variant: self.after.label}


def series_root() -> Path:
    """kernels/series of the checkout iowatch runs from (the series are not packaged)."""
    here = Path.cwd() / "kernels" / "series"
    return here if here.is_dir() else Path(__file__).resolve().parents[2] / "kernels" / "series"


def load_seed(series_dir: Path, studies: dict[str, Study]) -> Seed:
    """A seed series' reproduce.yml, checked against its study's published labels."""
    path = series_dir / REPRODUCE_FILE
    if not path.is_file():
        raise SeedError(f"{series_dir}: no {REPRODUCE_FILE} (what the variants stand for)")
    data, root = load_with_nodes(path, "reproduce-v1.json")

    def refuse(where: list, message: str):
        raise DataFileError(str(path), line_at(root, where), message)

    if not series_dir.name.startswith(f"seed-{data['seed']}-"):
        refuse(["seed"], f"seed {data['seed']!r} is not this directory's ({series_dir.name})")
    study = studies.get(data["study"])
    if study is None:
        refuse(["study"], f"no study {data['study']!r} among the study files "
               f"({', '.join(sorted(studies))})")
    if data["before"]["variant"] == data["after"]["variant"]:
        refuse(["after", "variant"], "before and after must be different variants (1 and 2)")
    published = {p.label for p in study.published}
    for role in ("before", "after"):
        for i, label in enumerate(data[role]["labels"]):
            if label not in published:
                refuse([role, "labels", i], f"{role}.labels: {label!r} is not a label of "
                       f"{study.slug}'s published sets ({', '.join(sorted(published))})")
    matrix = None
    if "matrix" in data:
        given = series_dir / data["matrix"]
        matrix = str(given if given.is_file() else matrix_path(data["matrix"]))
        if not Path(matrix).is_file():
            refuse(["matrix"], f"matrix: {data['matrix']!r} is neither a file in {series_dir} "
                   "nor a packaged matrix")
    return Seed(data["seed"], series_dir, study,
                *(SeedSide(data[r]["variant"], tuple(data[r]["labels"])) for r in ("before", "after")),
                why=" ".join(data["why"].split()), matrix=matrix, host=data.get("host"))


def find_seed(spec: str, studies: dict[str, Study], root: Path | None = None) -> Seed:
    """A seed by number (001 or 1), series directory name or path, or study name."""
    root = root or series_root()
    given = Path(spec)
    if (given / REPRODUCE_FILE).is_file():
        return load_seed(given, studies)
    dirs = sorted(d for d in root.glob("seed-*") if (d / REPRODUCE_FILE).is_file())
    for d in dirs:
        number = d.name.split("-")[1]
        if spec in (d.name, f"seed-{number}") or (spec.isdigit() and int(spec) == int(number)):
            return load_seed(d, studies)
    for d in dirs:
        seed = load_seed(d, studies)
        if seed.study.slug == spec:
            return seed
    raise SeedError(f"seed {spec!r}: not a seed number, series directory or study of "
                    f"{root} ({', '.join(d.name for d in dirs) or 'no seed-*/reproduce.yml there'})")


def run_label_of(study: Study, studies: dict[str, Study], root: Path | None = None) -> dict[str, str]:
    """For a seed's study: each published label -> the label `iowatch reproduce`
    gives the runs of the variant that stands for it (a side of several labels,
    such as 003's after, is run once, under its first label). Empty for a study
    no seed series reproduces, or where kernels/series is not at hand."""
    root = root or series_root()
    for d in sorted(root.glob(f"seed-*/{REPRODUCE_FILE}")):
        try:
            seed = load_seed(d.parent, studies)
        except (SeedError, DataFileError):
            continue  # a broken reproduce.yml is refused where a seed is asked for by name
        if seed.study.slug == study.slug:
            return {label: side.label for side in (seed.before, seed.after) for label in side.labels}
    return {}


# --- the claims and their judge -------------------------------------------------

@dataclass(frozen=True)
class Claim:
    """One published change: a metric of a group between two sets of one class."""
    group: str
    metric: str
    device_class: str
    before: PublishedSet
    after: PublishedSet
    before_value: float  # in the post's unit
    after_value: float
    unit: str  # the post's unit

    @property
    def change_pct(self) -> float | None:
        b = self.before_value
        return (self.after_value - b) / b * 100 if b else None


def published_claims(study: Study) -> list[Claim]:
    """Per device class, each two published sets that follow each other in the
    study file, and each metric both report (the Published results page's rule)."""
    out = []
    classes = list(dict.fromkeys(p.device_class for p in study.published))
    for cls in classes:
        sets = [p for p in study.published if p.device_class == cls]
        for before, after in zip(sets, sets[1:]):
            for r in before.results:
                a = after.result(r.group, r.metric)
                if a is not None:
                    out.append(Claim(r.group, r.metric, cls, before, after, r.value, a.value, r.unit))
    return out


@dataclass
class LabChange:
    """The lab's change of a claim's metric on one device, as compare_sides judged it."""
    device: str
    filesystem: str
    before_n: int
    after_n: int
    # The two numbers the change is computed from (the verdict's centre: its
    # geometric means or means), one "before" number wherever the cell is shown.
    before: float
    after: float
    change_pct: float | None
    ci_low: float | None
    ci_high: float | None
    verdict: str  # the policy's outcome; "diagnostic" when the metric does not decide
    words: str
    statistic: str = "median"  # what before and after are
    metric: str = ""  # the metric measured: the claim's, or the one it is judged on (judged_on)


@dataclass
class Judged:
    """A claim beside the lab's change, and the outcome (OUTCOMES)."""
    claim: Claim
    outcome: str
    why: str
    lab: LabChange | None = None
    hardware: str = ""  # the study's reason the virtual lab cannot show it (not reproducible here)

    @property
    def size(self) -> str:
        """SIZES' key for a claim reproduced in direction with a change of its
        own (not one reproduced by "no change" under the minimum effect); else ""."""
        if self.outcome != REPRODUCED or self.lab is None or self.lab.verdict not in CONFIRMED:
            return ""
        return size_of(self.claim.change_pct, self.lab.change_pct)

    def as_dict(self) -> dict:
        c = self.claim
        return {"group": c.group, "metric": c.metric, "device_class": c.device_class,
                "post": {"before": c.before.label, "after": c.after.label,
                         "before_value": c.before_value, "after_value": c.after_value,
                         "unit": c.unit, "change_pct": c.change_pct},
                "lab": asdict(self.lab) if self.lab else None,
                "outcome": self.outcome, "outcome_label": OUTCOMES[self.outcome], "why": self.why,
                "size": self.size or None, "size_label": SIZES.get(self.size),
                "not_reproducible_in_vlab": self.hardware or None}


def size_of(post_pct: float | None, lab_pct: float | None) -> str:
    """IN_SIZE, SMALLER or LARGER: the lab's change against the post's on the
    log-ratio scale; "" when either is missing, not a ratio (-100% or less), or
    the two have opposite signs (not a size: a direction, which the outcome says)."""
    if post_pct is None or lab_pct is None or post_pct <= -100 or lab_pct <= -100 or not post_pct:
        return ""
    post, lab = math.log1p(post_pct / 100), math.log1p(lab_pct / 100)
    share = lab / post
    if share <= 0:
        return ""
    return IN_SIZE if 1 / SIZE_FACTOR <= share <= SIZE_FACTOR else SMALLER if share < 1 else LARGER


def _sign(pct: float | None, floor: float) -> int:
    """+1 or -1 for a change of at least `floor` %, else 0."""
    if pct is None or abs(pct) < floor:
        return 0
    return 1 if pct > 0 else -1


def _lab(v: CellVerdict, judged: bool) -> LabChange:
    before, after = v.centre or (v.base.median, v.candidate.median)
    return LabChange(v.key.device, v.key.filesystem, v.base.n, v.candidate.n, before, after,
                     v.change_pct, v.ci_low, v.ci_high, v.outcome if judged else "diagnostic",
                     v.words, (v.statistic or "mean") if v.centre else "median", v.key.metric)


def modelled_devices(runs: list[dict]) -> frozenset[str]:
    """The devices of these runs that a device model served (vlab-mech: the
    bundle's `device_model`, iowatch.vlab.note_device_models)."""
    return frozenset(d["name"] for r in runs for d in r.get("devices", []) if d.get("device_model"))


def judge_claim(claim: Claim, cmp: Comparison | None, study: Study,
                why_missing: str = "", modelled: frozenset[str] = frozenset()) -> list[Judged]:
    """The claim against the lab's comparison of its two sides (None: no
    comparison to read, why_missing says why), one row per lab device of the
    claim's class. A study's "not reproducible in the virtual lab" excuses a
    device without mechanics only: on a `modelled` device (a card with
    allocation units, a disk that seeks) a claim the lab does not show is "not
    reproduced". `iowatch reproduce` and the Published results page both call it."""
    hardware = study.not_reproducible_in_vlab.get(claim.metric, "")

    def unmeasured(why: str) -> list[Judged]:
        # Not measured is not comparable, whatever the study says the lab could show.
        return [Judged(claim, NOT_COMPARABLE, why)]

    if cmp is None:
        return unmeasured(why_missing)
    # The post's numbers are of the study's first filesystem (as import-published stores them).
    fs = study.filesystems[0]
    # A figure a run cannot measure is judged, in direction, on the one that contains it.
    judged_on = study.judged_on.get(claim.metric)
    measured_as, on_why = (judged_on.metric, judged_on.why) if judged_on else (claim.metric, "")
    rows = [(v, judged) for judged, vs in ((True, cmp.verdicts), (False, cmp.diagnostics)) for v in vs
            if (v.key.study, v.key.group, v.key.metric, v.key.device_class, v.key.filesystem)
            == (study.slug, claim.group, measured_as, claim.device_class, fs)]
    if not rows:
        failed = [f for f in cmp.failed if (f.study, f.device_class, f.filesystem)
                  == (study.slug, claim.device_class, fs)]
        if failed:
            # compare_sides' base is the post's before here, its candidate the after.
            side = {"base": "before", "candidate": "after", "both": "before and after"}
            return unmeasured("; ".join(f"the {f.device} cell {f.status} on the "
                                        f"{side.get(f.side, f.side)} side" for f in failed))
        if claim.metric not in METRICS or METRICS[claim.metric].direction == INFO:
            what = "is not a metric iowatch measures" if claim.metric not in METRICS else \
                "is a count the lab records but never compares (info)"
            return unmeasured(f"{claim.metric} {what}")
        return unmeasured(f"the lab's runs of both sides have no {claim.metric} sample in "
                          f"group {claim.group} on a device of class {claim.device_class} "
                          f"with {fs}")
    out = []
    floor = min_effect(study)
    expected = _sign(claim.change_pct, floor)
    for v, judged in rows:
        if judged_on and judged_on.control and (held := _control(judged_on, cmp, v)):
            out.append(Judged(claim, NOT_COMPARABLE, held))
            continue
        lab = _lab(v, judged)
        post, measured = figures.change(claim.change_pct), figures.change(v.change_pct)
        if not judged:
            outcome, why = NOT_COMPARABLE, (f"{claim.metric} does not decide in {study.slug}: "
                                            f"the lab's change ({measured}) is shown, not judged")
        elif v.outcome in CONFIRMED and expected and _sign(v.change_pct, 0) == expected:
            outcome, why = REPRODUCED, f"the post {post}, the lab {measured} ({v.outcome})"
        elif v.outcome in CONFIRMED and expected:
            outcome, why = OPPOSITE, f"the post {post}, the lab {measured} ({v.outcome})"
        elif v.outcome == "no-change" and not expected:
            outcome, why = REPRODUCED, (f"the post {post} (under the study's {floor:g}% minimum "
                                        f"effect), the lab {measured} (no change)")
        else:
            moved = _sign(v.change_pct, floor)
            way = ("in the post's direction, not confirmed" if moved and moved == expected else
                   "the other way, not confirmed" if moved else
                   f"under the study's {floor:g}% minimum effect")
            ci = (f" (95% CI {figures.ci(v.ci_low, v.ci_high)})"
                  if v.ci_low is not None and v.ci_high is not None else "")
            outcome, why = NOT_REPRODUCED, (f"the post {post}, the lab {measured}{ci}: {way}; "
                                            f"{v.words}")
        if hardware and outcome != REPRODUCED and v.key.device not in modelled:
            outcome, why = NOT_REPRODUCIBLE, (f"the post {post}, the lab {measured} "
                                              f"({lab.verdict}); the study: not reproducible "
                                              f"in the virtual lab (below)")
        if measured_as != claim.metric:
            why = f"judged on {measured_as} ({on_why}): {why}" + _itself(claim, cmp, v)
        out.append(Judged(claim, outcome, why, lab, hardware if outcome == NOT_REPRODUCIBLE else ""))
    return out


def _beside(verdicts: list[CellVerdict], v: CellVerdict, metric: str,
            filesystem: str) -> CellVerdict | None:
    """The verdict of `metric` on `filesystem` of v's study, group and device."""
    k = v.key
    return next((c for c in verdicts
                 if (c.key.study, c.key.group, c.key.metric, c.key.device, c.key.filesystem)
                 == (k.study, k.group, metric, k.device, filesystem)), None)


def _control(judged_on: JudgedOn, cmp: Comparison, v: CellVerdict) -> str:
    """Why the claim cannot be judged on v because its control (the same
    device's other cell) was not measured on both sides or moved; "" when it held."""
    fs, metric = judged_on.control
    k = v.key
    control = _beside(cmp.verdicts, v, metric, fs)
    if control is None:
        return (f"judged on {judged_on.metric} with {fs} {metric} as the control, which was "
                f"not measured on both sides on {k.device}")
    if control.outcome in CONFIRMED:
        return (f"judged on {judged_on.metric} with {fs} {metric} as the control, which moved "
                f"({figures.change(control.change_pct)}, {control.outcome}): the change is not the "
                f"{k.filesystem} cell's alone")
    return ""


def _itself(claim: Claim, cmp: Comparison, judged_as: CellVerdict) -> str:
    """What the lab measured of the claim's own metric, beside the one it was
    judged on, when the lab measures it too: shown, so the reader sees both."""
    own = _beside(cmp.verdicts + cmp.diagnostics, judged_as, claim.metric,
                  judged_as.key.filesystem)
    if own is None or own.change_pct is None:
        return ""
    ci = (f", 95% CI {figures.ci(own.ci_low, own.ci_high)}"
          if own.ci_low is not None and own.ci_high is not None else "")
    return (f"; {claim.metric} itself: {figures.change(own.change_pct)}{ci}, {own.outcome} "
            f"[{own.base.n} vs {own.candidate.n}]")


def claim_outcome(rows: list[Judged]) -> str:
    """One outcome for a claim judged on several lab devices (or hosts): not
    comparable without a compared row, else the first of _CLAIM_ORDER given."""
    given = {r.outcome for r in rows if r.outcome != NOT_COMPARABLE}
    return next((o for o in _CLAIM_ORDER if o in given), NOT_COMPARABLE)



@dataclass
class Reproduction:
    """A seed's claims judged on a check's variants."""
    seed: Seed
    check_dir: Path
    rows: list[Judged] = field(default_factory=list)
    regressing_patches: list[int] = field(default_factory=list)  # the check's, for the exit status
    check_states: list[str] = field(default_factory=list)  # each patch's state against its parent

    def counts(self) -> dict[str, int]:
        return {o: n for o in OUTCOMES if (n := sum(r.outcome == o for r in self.rows))}

    def as_dict(self) -> dict:
        s = self.seed
        return {"seed": s.number, "series": s.name, "study": s.study.slug,
                "before": {"variant": s.before.variant, "labels": list(s.before.labels)},
                "after": {"variant": s.after.variant, "labels": list(s.after.labels)},
                "check_dir": str(self.check_dir), "regressing_patches": self.regressing_patches,
                "check_states": self.check_states,
                "counts": self.counts(), "claims": [r.as_dict() for r in self.rows]}


def judge(seed: Seed, sides: dict[int, Side], studies: dict[str, Study], check_dir: Path,
          regressing_patches: list[int] | None = None) -> Reproduction:
    """Every claim of the seed's study, judged on the variants' sides (variant -> Side)."""
    result = Reproduction(seed, check_dir, regressing_patches=list(regressing_patches or []))
    compared: dict[tuple[int, int], Comparison] = {}
    for claim in published_claims(seed.study):
        b, a = seed.variant_of(claim.before.label), seed.variant_of(claim.after.label)
        cmp, why = None, ""
        if b is None or a is None:
            missing = claim.before.label if b is None else claim.after.label
            why = f"the post's set {missing!r} stands for no variant of {seed.name} ({REPRODUCE_FILE})"
        elif a == b:
            why = f"{claim.before.label!r} and {claim.after.label!r} stand for one variant"
        elif b not in sides or a not in sides:
            gone = b if b not in sides else a
            why = f"variant {gone} of the check has no measured bundle (it did not build, boot or run)"
        else:
            if (b, a) not in compared:
                compared[b, a] = compare_sides(sides[b], sides[a], studies=studies)
            cmp = compared[b, a]
        used = [r for v in (b, a) if v in sides for r in sides[v].runs]
        result.rows.extend(judge_claim(claim, cmp, seed.study, why, modelled_devices(used)))
    return result


# --- a check's output directory ------------------------------------------------------

def _bundle_path(check_dir: Path, recorded: str, kept: bool = False) -> Path:
    """A bundle the check recorded, found under check_dir first (the check ran
    elsewhere, or its directory was copied, as the stored fixtures were: the
    longest tail of its path that exists there), else where it was recorded,
    unless the directory is `kept`: a kept reproduction holds every bundle it
    names, and one missing there must not be read from whatever a later run
    wrote at the recorded path on this machine."""
    path = Path(recorded)
    parts = path.parts
    for k in range(1, len(parts)):
        candidate = check_dir.joinpath(*parts[k:])
        if (candidate / bundle.MANIFEST).is_file():
            return candidate
    if not kept and (path / bundle.MANIFEST).is_file():
        return path
    if kept:
        raise SeedError(f"{check_dir / 'check.json'}: bundle {recorded} is not under {check_dir} "
                        f"(a kept reproduction holds every bundle it names; copy it there)")
    raise SeedError(f"{check_dir / 'check.json'}: bundle {recorded} is neither there nor "
                    f"under {check_dir}")


@dataclass
class CheckedVariant:
    """A variant as a check's check.json records it, its bundles found on disk."""
    index: int
    status: str  # passed, failed, build-failed, boot-failed, apply-failed
    bundles: list[Path]  # the first run, then the rounds that added repetitions
    state: str | None = None  # its comparison with its parent (judging.PATCH_STATES)

    @property
    def measured(self) -> bool:
        return self.status in ("passed", "failed") and bool(self.bundles)


def checked_variants(check_dir: Path, seed: Seed,
                     kept: bool = False) -> tuple[list[CheckedVariant], list[int]]:
    """The variants of a check of the seed's series that ran (its check.json, as
    `iowatch check` writes it), and the check's regressing patches. `kept`: the
    bundles are read from check_dir only (_bundle_path)."""
    path = check_dir / "check.json"
    if not path.is_file():
        raise SeedError(f"{check_dir}: no check.json (the output directory of `iowatch check` "
                        f"or `iowatch reproduce`)")
    try:
        doc = json.loads(path.read_text())
        series, variants = doc["series"], doc["variants"]
    except (ValueError, KeyError, TypeError) as e:
        raise SeedError(f"{path}: not a check summary ({e})") from None
    if series != seed.name:
        raise SeedError(f"{path}: the check ran series {series!r}, not seed {seed.number}'s "
                        f"{seed.name!r}")
    out = []
    for i, v in enumerate(variants):
        try:
            index, recorded, status = v["index"], v["bundle"], v["status"]
        except (KeyError, TypeError):
            raise SeedError(f"{path}: variants[{i}] lacks index, bundle or status") from None
        paths = [recorded, *v.get("extra_bundles", [])] if recorded else []
        out.append(CheckedVariant(index, status, [_bundle_path(check_dir, p, kept) for p in paths],
                                  v.get("state")))
    return out, list(doc.get("regressing_patches") or [])


def judge_check_dir(check_dir: Path, seed: Seed, studies: dict[str, Study]) -> Reproduction:
    """The seed's claims judged on a check that already ran: nothing built or
    booted. Each measured variant's side is its first bundle pooled with the
    rounds that added repetitions, as the check compares them, with the ratio
    of a ratio study derived by iowatch.ratio from the recorded repetitions."""
    variants, regressing = checked_variants(check_dir, seed)
    # Each run's ratio made again by today's rule: a kept check may predate it.
    sides = {v.index: Side(spec=f"variant {v.index}", source=str(v.bundles[0]),
                           runs=[fs_ratio.derive(bundle.load(d), studies) for d in v.bundles])
             for v in variants if v.measured}
    rep = judge(seed, sides, studies, check_dir, regressing)
    rep.check_states = [v.state for v in variants if v.state]
    return rep


def label_bundle(path: Path, seed: Seed) -> str | None:
    """Give a variant's bundle the post's label of the side it stands for (the
    Published results page pairs lab runs with the post's sets by label).
    Returns the label given, None for the base or a bundle of another series."""
    doc = bundle.load(path)
    kernel = doc.get("kernel") or {}
    index = (kernel.get("patch") or {}).get("index")
    if (kernel.get("series") or {}).get("name") != seed.name or index not in seed.run_labels():
        return None
    doc["label"] = seed.run_labels()[index]
    bundle.write_manifest(path, doc)
    return doc["label"]


# --- kept reproductions (tests/fixtures/reproductions) ---------------------------

# A kept reproduction's directory: seed-NNN, or seed-NNN-<anything> (a second run of a seed).
KEPT_DIR = re.compile(r"seed-(\d{3})(-.+)?$")


@dataclass
class KeptReproduction:
    """An `iowatch reproduce` output directory kept whole, its bundles checked."""
    seed: Seed
    check_dir: Path
    bundles: list[tuple[int, Path]]  # (variant index, bundle directory), in check.json's order

    # Whether a run of it measured the platform canary: the kept reproductions
    # made before the canary ran in every boot (issue 41 item 7) did not, so
    # their verdicts cannot say the platform held; they are marked, not re-made.
    with_canary: bool = False


def kept_dirs(root: Path) -> list[Path]:
    """The seed-* directories under root, each one reproduction (sorted by name)."""
    if not root.is_dir():
        raise SeedError(f"{root}: not a directory of kept reproductions")
    return sorted(d for d in root.iterdir() if d.is_dir() and d.name.startswith("seed-"))


def load_kept(check_dir: Path, studies: dict[str, Study], root: Path | None = None) -> KeptReproduction:
    """A kept reproduction, refused whole with the file at fault when a part is
    missing or unreadable, or a variant's run lacks the post's label that the
    Published results page pairs it by (`iowatch reproduce` gives it)."""
    m = KEPT_DIR.match(check_dir.name)
    if not m:
        raise SeedError(f"{check_dir}: a kept reproduction's directory is named seed-NNN "
                        f"(or seed-NNN-SUFFIX), after the seed it reproduces")
    seed = find_seed(m.group(1), studies, root)
    variants, _ = checked_variants(check_dir, seed, kept=True)
    if not any(v.measured for v in variants):
        raise SeedError(f"{check_dir / 'check.json'}: no variant of the check has a measured bundle")
    labels = seed.run_labels()
    out, canary = [], False
    for v in variants:
        if not v.measured:
            continue  # did not build or boot: the judge says so, nothing to store
        for path in v.bundles:
            try:
                doc = bundle.load(path)
            except bundle.BundleError as e:
                raise SeedError(f"{path / bundle.MANIFEST}: {e}") from None
            want = labels.get(v.index, "base")
            if doc.get("label") != want:
                raise SeedError(f"{path / bundle.MANIFEST}: variant {v.index}'s run is labelled "
                                f"{doc.get('label')!r}, not {want!r} (iowatch reproduce labels "
                                f"each variant's runs with the post's label of its side)")
            out.append((v.index, path))
            canary = canary or any(studies.get(c.get("study")) is not None
                                   and studies[c["study"]].canary for c in doc.get("cells") or [])
    return KeptReproduction(seed, check_dir, out, with_canary=canary)


# --- the text report -------------------------------------------------------------

def report(rep: Reproduction) -> str:
    """The claims as a table: the post's change, the lab's with its CI and
    repetitions, the device class and the outcome, then why, claim by claim."""
    s = rep.seed
    head = [f"iowatch reproduce: seed {s.number} ({s.study.slug}) with series {s.name}",
            f"  the post's before {', '.join(map(repr, s.before.labels))} = variant "
            f"{s.before.variant} ({_variant(s.before.variant)}); its after "
            f"{', '.join(map(repr, s.after.labels))} = variant {s.after.variant} "
            f"({_variant(s.after.variant)})",
            f"  {s.why}", f"  check: {rep.check_dir}", ""]
    lines = head + claims_table(rep.rows)
    reasons: dict[str, list[str]] = {}
    for r in rep.rows:
        if r.hardware and r.claim.metric not in reasons.setdefault(r.hardware, []):
            reasons[r.hardware].append(r.claim.metric)
    for reason, metrics in reasons.items():
        lines += ["", f"not reproducible in the virtual lab ({', '.join(metrics)}, "
                      f"{s.study.slug}): {reason}"]
    counts = rep.counts()
    sized = [r.size for r in rep.rows if r.size]
    in_size = f" ({sized.count(IN_SIZE)} of them in size)" if sized else ""
    lines += ["", "claims: " + (", ".join(f"{n} {OUTCOMES[o]}" + (in_size if o == REPRODUCED else "")
                                          for o, n in counts.items())
                                or "none in the study's published sets")]
    return "\n".join(lines)


def claims_table(rows: list[Judged]) -> list[str]:
    """Judged claims as a table (the post's change, the lab's with its CI and
    repetitions, the class, the outcome), then why, claim by claim: the lines
    `iowatch reproduce` and `iowatch check` print."""
    table = [("#", "claim", "class", "post: before -> after", "post", "lab (95% CI)",
              "runs", "outcome", "size")]
    for i, r in enumerate(rows, 1):
        c, lab = r.claim, r.lab
        post = f"{figures.value(c.before_value, '?')} -> {figures.value(c.after_value, '?')} {c.unit}"
        if lab is None:
            measured, runs = "-", "-"
        else:
            ci = f" {figures.ci(lab.ci_low, lab.ci_high, missing='')}".rstrip()
            measured = f"{figures.change(lab.change_pct)}{ci}"
            runs = f"{lab.before_n}+{lab.after_n}"
        table.append((str(i), f"{c.metric} [{c.group}] {c.before.label} -> {c.after.label}",
                      c.device_class, post, figures.change(c.change_pct), measured, runs,
                      OUTCOMES[r.outcome], SIZES[r.size] if r.size else "-"))
    widths = [max(len(row[k]) for row in table) for k in range(len(table[0]))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in table]
    lines.append("")
    for i, r in enumerate(rows, 1):
        where = f" on {r.lab.device} ({r.lab.filesystem})" if r.lab else ""
        size = f", {SIZES[r.size]}" if r.size else ""
        lines.append(f"{i}. {OUTCOMES[r.outcome]}{size}{where}: {r.why}")
    sized = [(i, r) for i, r in enumerate(rows, 1) if r.size]
    if sized:
        lines += ["", size_rule(*sized[0])]
    return lines


def size_rule(number: int, judged: Judged) -> str:
    """The "in size" rule in words, with the bounds it sets on one judged claim."""
    post = judged.claim.change_pct
    ln = math.log1p(post / 100)
    low, high = (figures.change(math.expm1(ln * f) * 100) for f in (1 / SIZE_FACTOR, SIZE_FACTOR))
    return (f"size: in size when the lab's log-ratio (ln of after over before) is within a factor "
            f"of {SIZE_FACTOR:g} of the post's; claim {number}'s post {figures.change(post)} "
            f"(ln {ln:.2f}) is met in size by the lab's {low} to {high}")


def _variant(index: int) -> str:
    return "base+p1" if index == 1 else "base+p1+p2"
