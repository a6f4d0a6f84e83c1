"""The five seeds reproduced on Linux 6.12: which series, study and published
labels stand for a seed post's before and after, and the claim judge.

Each seed's series directory (kernels/series/seed-NNN-*/) holds a
`reproduce.yml` (schema reproduce-v1.json): the study, and which variant of
the series (1: base+p1, 2: base+p1+p2) stands for the post's before and
which for its after, by the labels of the study's `published:` sets. Where
6.12 has the post's after (001, 003, 004) variant 1 is the after; where it
never got the change (000, 002) variant 1 is the before.

Each seed's claims are judged by iowatch.judging.claims (the claim verdict
and its words, with the one verdict policy's comparison of the variants).
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

from iowatch import bundle, figures, ratio as fs_ratio
from iowatch.side_data import Side
from iowatch.judging import Comparison, compare_sides
from iowatch.judging.claims import (IN_SIZE, OUTCOMES, REPRODUCED, SIZE_FACTOR, SIZES, Judged,
                                    judge_claim, published_claims)
from iowatch.resources import matrix_path
from iowatch.studies import Study
from iowatch.yamlfile import DataFileError, line_at, load_with_nodes

REPRODUCE_FILE = "reproduce.yml"


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


def modelled_devices(runs: list[dict]) -> frozenset[str]:
    """The devices of these runs that a device model served (vlab-mech: the
    bundle's `device_model`, iowatch.vlab.note_device_models)."""
    return frozenset(d["name"] for r in runs for d in r.get("devices", []) if d.get("device_model"))


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
    state: str | None = None  # its comparison with its parent (iowatch.vocabulary.PATCH_STATES)

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
