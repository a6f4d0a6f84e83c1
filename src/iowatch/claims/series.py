"""The performance claims a series' own mails make, judged by `iowatch check`.

A patch mail that says what it does to performance ("5125 KB/s before and
10424 KB/s after", a before/after table, pasted fio output) makes a claim a
check can test: the patch's variant against its parent is the mail's "after"
against its "before". Per patch this module extracts the claims
(iowatch.claims.mail), finds the study they are about (the study their workload
and metrics match, else the one study of the check's matrix that measures
what they claim), pairs each metric's before and after, and judges each pair
with the claim judge of `iowatch reproduce` (iowatch.judging.claims.judge_claim) on
the check's own comparison of the patch with its parent: reproduced, not
reproduced, opposite, not reproducible here, not comparable.

A study the claims match that the check's matrix does not run is added to it
(`matrix_with`), so the check measures what the mail claims.

A mail whose workload no study has (a pasted fio job file, a fio or
fs_mark command line with its options) gets a study made from it
(iowatch.claims.mail_study), written into the check's output directory, so the
check runs what the mail ran and judges the mail's claims on it.

A cover letter's claims (a series read from an mbox or Message-ID, or a
directory with `git format-patch --cover-letter`'s 0000-cover-letter.patch)
are the whole series': they are judged on the last patch against the series
base.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from iowatch.claims import mail
from iowatch.claims import mail_study
from iowatch.judging import Comparison
from iowatch.kernel.series import Patch
from iowatch.metrics import METRICS
from iowatch.judging.claims import OUTCOMES, Claim, Judged, judge_claim
from iowatch.claims.seeds import claims_table
from iowatch.studies import PublishedResult, PublishedSet, Study, load_study

# A mail's words for the two sides, as kernel developers write them.
_BEFORE = re.compile(r"\b(before|unpatched|baseline|base|vanilla|without|old|orig(?:inal)?|stock)\b",
                     re.I)
_AFTER = re.compile(r"\b(after|patched|with|new|fixed)\b", re.I)


@dataclass
class PatchClaims:
    """One patch mail's claims and what they are about."""
    patch: int
    subject: str
    found: list[mail.Claim]                 # every claim with a metric, as extracted
    study: str | None = None
    why_study: str = ""                     # how the study was found, or why none was
    pairs: list[Claim] = field(default_factory=list)   # before/after per metric, ready to judge
    unpaired: str = ""                      # why some claims could not be paired
    rows: list[Judged] = field(default_factory=list)   # the pairs judged on the check
    made: Path | None = None                # the study file made from the mail's workload
    whole_series: bool = False              # the cover letter's: the last patch against the base

    def as_dict(self) -> dict:
        return {"patch": self.patch, "whole_series": self.whole_series,
                "subject": self.subject, "study": self.study,
                "why_study": self.why_study, "unpaired": self.unpaired,
                "claims": [r.as_dict() for r in self.rows]}


def from_series(series, studies: dict[str, Study], matrix_studies: list[str],
                made_dir: Path | None = None) -> list[PatchClaims]:
    """The claims of each patch mail that makes any, with their study and pairs.
    With `made_dir`, a mail whose workload no study has gets a study made from
    it there (iowatch.claims.mail_study), added to `studies`."""
    out = []
    mails = list(series.patches)
    if series.cover and series.patches:
        # The cover letter speaks for the series: its claims are the last patch's against the base.
        mails.append(Patch(len(series.patches), "cover letter", series.subject or "cover letter",
                           series.cover, series.message_id))
    for patch in mails:
        found = [c for c in mail.extract(patch.text, subject=patch.subject) if c.metric]
        if not found:
            continue
        pc = PatchClaims(patch.index, patch.subject, found,
                         whole_series=patch.name == "cover letter")
        match = mail.match_study(found, studies)
        if match is not None:
            pc.study, pc.why_study = match.study, f"the mail's workload: {match.why()}"
        else:
            pc.study, pc.why_study = _by_metrics(found, studies, matrix_studies)
        if pc.study is None and made_dir is not None:
            _made(pc, patch, studies, made_dir)
        if pc.study:
            pc.pairs, pc.unpaired = pair(found, studies[pc.study])
        out.append(pc)
    return out


def _made(pc: PatchClaims, patch, studies: dict[str, Study], made_dir: Path) -> None:
    """A study from the mail's own workload, written and loaded like any study
    file; why not, beside the other reason, when it cannot be made."""
    try:
        doc = mail_study.study_from_mail(pc.found, patch.subject, patch.message_id, patch.text)
    except mail_study.NoStudy as e:
        pc.why_study += f"; no study made from the mail: {e}"
        return
    made_dir.mkdir(parents=True, exist_ok=True)
    path = made_dir / f"{doc['study']}.yml"
    path.write_text("# Made by iowatch check from a patch mail's workload (iowatch.claims.mail_study).\n"
                    + yaml.safe_dump(doc, sort_keys=False))
    study = load_study(path)
    studies[study.slug] = study
    pc.study, pc.made = study.slug, path
    pc.why_study = f"made from the mail's workload ({path.name}): no study had it"


def _by_metrics(found: list[mail.Claim], studies: dict[str, Study],
                matrix_studies: list[str]) -> tuple[str | None, str]:
    """The one study of the check's matrix that measures every metric claimed
    (on a class the mail names, when it names one)."""
    claimed = {c.metric for c in found}
    classes = {c.device_class for c in found if c.device_class}
    fits = [slug for slug in matrix_studies if slug in studies and not studies[slug].canary
            and claimed <= {m.metric for m in studies[slug].metrics}
            and (not classes or classes & set(studies[slug].device_classes))]
    if len(fits) == 1:
        return fits[0], f"the only study of the matrix that measures {', '.join(sorted(claimed))}"
    if fits:
        return None, f"several studies of the matrix measure what it claims ({', '.join(fits)})"
    return None, "no study has its workload or measures what it claims"


def _sides(labels: list[str]) -> tuple[str, str] | None:
    """The mail's before and after labels: by their words, else in order."""
    before = next((x for x in labels if _BEFORE.search(x)), None)
    after = next((x for x in labels if _AFTER.search(x) and x != before), None)
    if before and after:
        return before, after
    return (labels[0], labels[1]) if len(labels) == 2 else None


def pair(found: list[mail.Claim], study: Study) -> tuple[list[Claim], str]:
    """Each metric's before and after value as a claim the judge takes, and
    why any claim was left out."""
    labels = list(dict.fromkeys(c.label for c in found if c.label))
    sides = _sides(labels)
    if sides is None:
        return [], (f"no before and after among its labels ({', '.join(labels) or 'none'})")
    groups: dict[str, list[str]] = {}
    for m in study.metrics:
        groups.setdefault(m.metric, []).append(m.group)
    pairs, left = [], []
    by_key: dict[tuple, dict[str, mail.Claim]] = {}
    for c in found:
        if c.label in sides:
            # A mail names one class per number at most; without one, the study's own.
            classes = [c.device_class] if c.device_class else list(study.device_classes)
            for cls in classes:
                by_key.setdefault((c.metric, c.group, cls), {}).setdefault(c.label, c)
    for (metric, group, cls), got in by_key.items():
        if len(got) < 2:
            continue
        where = groups.get(metric, [])
        group = group if group in where else (where[0] if len(where) == 1 else None)
        if group is None:
            left.append(f"{metric} (the study has it in {len(where)} groups)" if where
                        else f"{metric} (not a metric of {study.slug})")
            continue
        b, a = got[sides[0]], got[sides[1]]
        bv, av, unit = b.value, a.value, b.unit
        if b.unit != a.unit:  # "512 KB/s before, 1 MB/s after": both in the metric's unit
            bv, av, unit = b.metric_value(), a.metric_value(), METRICS[metric].unit
            if bv is None or av is None:
                left.append(f"{metric} ({b.unit} against {a.unit})")
                continue
        pairs.append(Claim(group, metric, cls, _set(sides[0], cls, group, metric, bv, unit, b),
                           _set(sides[1], cls, group, metric, av, unit, a), bv, av, unit))
    return pairs, "; ".join(left)


def _set(label: str, cls: str, group: str, metric: str, value: float, unit: str,
         c: mail.Claim) -> PublishedSet:
    return PublishedSet(label=label, kernel="as the mail says", device_class=cls, setup=c.device,
                        results=(PublishedResult(metric, group, value, unit, c.as_published,
                                                 c.spread, None),),
                        as_given={})


def judge(found: list[PatchClaims], comparisons: dict[int, Comparison | None],
          studies: dict[str, Study], whole: Comparison | None = None) -> None:
    """Each patch's pairs judged on its comparison with its parent (patch
    index -> Comparison, None when the patch or its parent was not measured);
    the cover letter's on `whole`, the last patch against the series base."""
    for pc in found:
        cmp = whole if pc.whole_series else comparisons.get(pc.patch)
        why = "" if cmp is not None else (
            "the series base or its last patch was not measured" if pc.whole_series
            else f"patch {pc.patch} or its parent was not measured")
        pc.rows = [row for claim in pc.pairs
                   for row in judge_claim(claim, cmp, studies[pc.study], why)]


def report_lines(found: list[PatchClaims]) -> list[str]:
    """What `iowatch check` prints after its verdicts: per patch whose mail
    claims something, the claims beside the lab's change."""
    lines = []
    for pc in found:
        lines += ["", f"claims of the cover letter ({pc.subject}), judged on the whole series "
                      f"(patch {pc.patch} against the base):" if pc.whole_series
                  else f"claims of patch {pc.patch}'s mail ({pc.subject}):"]
        if pc.study is None:
            lines.append(f"  not judged: {pc.why_study}")
            continue
        lines.append(f"  study {pc.study} ({pc.why_study})")
        if pc.unpaired:
            lines.append(f"  left out: {pc.unpaired}")
        if not pc.rows:
            lines.append("  no before/after pair to judge")
            continue
        lines += ["  " + x if x else x for x in claims_table(pc.rows)]
        counts = {o: sum(r.outcome == o for r in pc.rows) for o in OUTCOMES}
        lines.append("  claims: " + ", ".join(f"{n} {OUTCOMES[o]}" for o, n in counts.items() if n))
    return lines


def made_studies(found: list[PatchClaims]) -> list[Path]:
    """The study files made from the mails' workloads."""
    return [pc.made for pc in found if pc.made]


def missing_studies(found: list[PatchClaims], matrix_studies: list[str]) -> list[str]:
    """The studies the mails' claims are about that the matrix does not run."""
    return list(dict.fromkeys(pc.study for pc in found
                              if pc.study and pc.study not in matrix_studies))


def matrix_with(matrix_file: Path, studies_dir: Path, extra: list[str], out: Path,
                made: list[Path] | None = None) -> Path:
    """A matrix of the given one's studies and `extra`, written into the check's
    output directory (with its studies beside it, as load_matrix reads them),
    so the guests run what the mails claim. Studies `made` from mails join the
    study files there: a directory of links to every study and to those."""
    data = yaml.safe_load(matrix_file.read_text())
    if "study" in data:  # a study file is a matrix of one
        data = {"matrix": data["study"], "studies": [{"study": data["study"]}]}
    data = {**data, "matrix": f"{data['matrix']}-and-claims",
            "studies": [*data["studies"], *({"study": s} for s in extra)]}
    out.mkdir(parents=True, exist_ok=True)
    link = out / "studies"
    if made:
        if link.is_symlink():  # an earlier run's link to the packaged studies: never write there
            link.unlink()
        link.mkdir(exist_ok=True)
        for f in [*sorted(studies_dir.resolve().glob("*.yml")), *made]:
            if not (link / f.name).exists():
                (link / f.name).symlink_to(f.resolve())
    elif not link.exists():
        link.symlink_to(studies_dir.resolve(), target_is_directory=True)
    path = out / "matrix-with-claims.yml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path
