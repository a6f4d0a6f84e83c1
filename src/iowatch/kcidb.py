"""Runs, checks and regressions as KCIDB data: what KernelCI's dashboards read.

KCIDB (the kcidb-io schema, major version 5) has checkouts (a commit and the
patches applied to it), builds of a checkout, and tests of a build, each test
with an optional number. iowatch maps onto it as follows:

- checkout: the kernel's base commit and, for a variant of a series, the
  patches 1..k applied to it (patchset_hash over the patches' sha256 as the
  bundle's kernel.series.patches keeps them; patchset_files when the series
  was fetched from a public inbox; message_id the cover letter's);
- build: the kernel release and config of that checkout; status FAIL when
  the variant did not build (its failure bundle says build-failed);
- tests: a `boot` test (FAIL when the variant did not boot), and one test per
  cell and deciding metric, path `iowatch.<study>.<device class>.<filesystem>.
  <group>.<metric>`, its number the median of the run's repetitions in the
  metric's unit.

A test's status is the verdict on that cell (iowatch.judging's, never
recomputed here for a regression: the server's stored verdict is used):

    regression                      FAIL   the test reported the code as faulty
    no change, improvement          PASS
    inconclusive, suspected         ERROR  the test (an A/B verdict) did not complete:
                                           undecided at its repetition cap, so the
                                           code's status is unknown
    no repetition passed (failed)   MISS   the measurement did not happen (the tool
                                           or harness failed): nothing is known
    skipped (not applicable)        SKIP
    a run with no comparison        DONE   a performance measurement, no verdict

ERROR rather than DONE for an undecided cell: a verdict was asked for and not
reached, and ERROR ranks above PASS, so a build's summary status does not read
as passing while a cell is undecided.

Ids are "<origin>:<stable id>": a checkout by its commit and patchset hash, a
build by its checkout and config hash, a measurement by its run id, cell and
metric, and a verdict by those and the run it was compared with (":vs:<run
id>"). So a check and the server's regression of the same two runs name the
same test, while a run exported alone (DONE) never shares an id with a verdict:
KCIDB keeps one object per id and takes each field from any submission of it.
"""
from __future__ import annotations

import re
import statistics
from datetime import datetime
from pathlib import Path

from iowatch.vocabulary.outcomes import Outcome
from iowatch.metrics import METRICS
from iowatch.kernel.series import patchset_hash

DEFAULT_ORIGIN = "iowatch"
ORIGIN = re.compile(r"^[a-z0-9_]+$")
_SHA1 = re.compile(r"^[0-9a-f]{40}$")
_PATH_PART = re.compile(r"[^a-zA-Z0-9_-]+")



class KcidbError(ValueError):
    """Data that cannot be exported, or an export kcidb-io refuses: the message says where."""


def validate(data: dict) -> dict:
    """Check the data against the newest schema kcidb-io knows."""
    try:
        from kcidb_io.schema import LATEST
    except ImportError:
        raise KcidbError("kcidb-io is not installed: pip install 'iowatch[kcidb]' "
                         "(or pass --no-validate)") from None
    import jsonschema
    try:
        LATEST.validate(data)
    except jsonschema.exceptions.ValidationError as e:
        where = "/".join(str(p) for p in e.absolute_path) or "the document"
        raise KcidbError(f"KCIDB v{LATEST.major}.{LATEST.minor} refuses {where}: {e.message[:400]}") from None
    return data


def schema_version() -> dict:
    try:
        from kcidb_io.schema import LATEST
        return {"major": LATEST.major, "minor": LATEST.minor}
    except ImportError:
        return {"major": 5, "minor": 3}  # what this module was written against


def _time(value: str | None) -> str | None:
    """A bundle's time (ISO 8601, offset maybe without a colon) as RFC 3339."""
    if not value:
        return None
    try:
        return datetime.fromisoformat(value).isoformat()
    except ValueError:
        try:
            return datetime.strptime(value, "%Y-%m-%dT%H:%M:%S%z").isoformat()
        except ValueError:
            return None


def kcidb_path(*parts: str) -> str:
    """A KCIDB path: dot-separated names of letters, digits, _ and -."""
    return ".".join(_PATH_PART.sub("_", p).strip("_") or "_" for part in parts for p in part.split("."))


def _clean(d: dict) -> dict:
    """KCIDB allows no nulls: drop them (and empty misc)."""
    return {k: v for k, v in d.items() if v is not None and v != {}}


class Export:
    """KCIDB data being assembled; objects with the same id are kept once."""

    def __init__(self, origin: str = DEFAULT_ORIGIN, *, repository: str | None = None,
                 branch: str | None = None):
        if not ORIGIN.match(origin or ""):
            raise KcidbError(f"origin {origin!r}: KCIDB origins are lowercase letters, digits "
                             "and _ (such as iowatch or iowatch_lab1)")
        if repository and not repository.startswith("https://"):
            raise KcidbError(f"repository {repository!r}: KCIDB takes an https:// git URL")
        self.origin, self.repository, self.branch = origin, repository, branch
        self.objects: dict[str, dict[str, dict]] = {"checkouts": {}, "builds": {}, "tests": {}}

    def id(self, stable: str) -> str:
        return f"{self.origin}:{stable}"

    def add(self, kind: str, obj: dict) -> str:
        obj = _clean({**obj, "origin": self.origin})
        self.objects[kind].setdefault(obj["id"], {}).update(obj)
        return obj["id"]

    def data(self) -> dict:
        return {"version": schema_version(),
                **{k: list(v.values()) for k, v in self.objects.items() if v}}

    # --- checkouts and builds ------------------------------------------------

    def checkout(self, run: dict, *, valid: bool = True, log: str | None = None) -> str:
        """The checkout a run's kernel came from: base commit plus patches 1..k
        (valid False, with the log, when patch k did not apply)."""
        k = run.get("kernel") or {}
        series, patch = k.get("series") or {}, k.get("patch") or {}
        index = patch.get("index", k.get("patch_index"))
        applied = [p for p in series.get("patches") or [] if p.get("index", 0) <= (index or 0)]
        hashed = series and index is not None and len(applied) == index and \
            all(p.get("sha256") for p in applied)
        if series and index == 0 and _SHA1.match(series.get("base") or ""):
            commit, pset = series["base"], ""
        elif hashed and _SHA1.match(series.get("base") or ""):
            commit, pset = series["base"], patchset_hash(applied)
        else:
            # A kernel outside a series, or a bundle that did not keep the patches'
            # hashes: the commit it was built from (a variant's own commit).
            commit, pset = k.get("git_commit"), None
        if commit or not series:
            stable = (commit or k.get("release", "unknown")) + (f"+{pset[:16]}" if pset else "")
        else:  # a patch that did not apply made no commit: the series and the place in it
            stable = f"{series['name']}@{series.get('base')}+p1..p{index}"
        archive = series.get("archive")
        files = [{"name": f"{p['index']:04d}.patch", "url": f"{archive}{p['message_id']}/raw"}
                 for p in applied if archive and p.get("message_id")] if pset else []
        subject = patch.get("subject")
        comment = (f"{series['name']}: base + patches 1..{index}" + (f" ({subject})" if subject else "")
                   if series and index else k.get("release"))
        return self.add("checkouts", {
            "id": self.id(stable),
            "git_commit_hash": commit if commit and _SHA1.match(commit) else None,
            "git_commit_name": None if commit and _SHA1.match(commit) else (commit or k.get("release")),
            "git_repository_url": self.repository, "git_repository_branch": self.branch,
            "patchset_hash": pset,
            "patchset_files": files if files and len(files) == len(applied) else None,
            "message_id": series.get("message_id") if index else None,
            "comment": comment, "valid": valid,
            "log_excerpt": log[-16000:] if log else None,
            "misc": _clean({"series": series.get("name"), "patch_index": index,
                            "patch_count": series.get("patch_count"),
                            "commit": k.get("git_commit"),
                            "patch_message_id": patch.get("message_id")}),
        })

    def build(self, run: dict, checkout_id: str) -> str:
        k = run.get("kernel") or {}
        env = run.get("environment") or {}
        failure = env.get("failure") or {}
        uname = ((env.get("host") or {}).get("uname") or "").split()
        arch = uname[-1] if uname and uname[-1] in ("x86_64", "aarch64", "arm64", "riscv64",
                                                    "ppc64le", "s390x", "i686") else None
        config = k.get("config_hash")
        stable = checkout_id.split(":", 1)[1] + f"/{(config or k.get('release', ''))[:16]}"
        status = "FAIL" if run.get("status") == "build-failed" else "PASS"
        return self.add("builds", {
            "id": self.id(stable), "checkout_id": checkout_id,
            "comment": k.get("release"), "architecture": arch,
            "config_name": f"iowatch-{config[:12]}" if config else None,
            "start_time": _time(run.get("started_at")),
            "status": status,
            "log_excerpt": failure.get("reason")[-16000:] if status == "FAIL" and failure.get("reason") else None,
            "misc": _clean({"release": k.get("release"), "config_hash": config,
                            "options": k.get("config") or None}),
        })

    # --- tests ----------------------------------------------------------------

    def boot(self, run: dict, build_id: str) -> str | None:
        """A `boot` test: FAIL for a variant that did not boot, PASS for one that ran."""
        status = {"boot-failed": "FAIL", "passed": "PASS", "failed": "PASS"}.get(run.get("status"))
        if status is None or not run.get("run_id"):
            return None
        failure = (run.get("environment") or {}).get("failure") or {}
        return self.add("tests", {
            "id": self.id(f"{run['run_id']}:boot"), "build_id": build_id, "path": "boot",
            "status": status, "start_time": _time(run.get("started_at")),
            "log_excerpt": (failure.get("console_tail") or failure.get("reason") or "")[-16000:] or None,
            "environment": _environment(run),
        })

    def cell_test(self, run: dict, build_id: str, cell: dict, group: str, metric: str,
                  status: str, value: float | None, misc: dict, versus: str | None = None) -> str:
        cls = _device_class(run, cell.get("device"))
        path = kcidb_path("iowatch", cell["study"], cls or "unknown", cell.get("filesystem") or "raw",
                         group, metric)
        unit = METRICS[metric].unit if metric in METRICS else None
        return self.add("tests", {
            "id": self.id(f"{run['run_id']}:{cell['id']}:{group}:{metric}"
                          + (f":vs:{versus}" if versus else "")),
            "build_id": build_id, "path": path, "status": status,
            "number": {"value": value, **({"unit": unit} if unit else {})}
            if value is not None and status != "MISS" else None,
            "start_time": _time(run.get("started_at")),
            "environment": _environment(run, cell.get("device")),
            "comment": misc.get("words"),
            "misc": _clean({"cell": cell["id"], "group": group, "metric": metric, **misc}),
        })

    def run(self, run: dict, studies: dict, verdicts: dict | None = None,
            versus: str | None = None) -> str:
        """A run: its checkout, build, boot and one test per cell and deciding
        metric. verdicts maps (cell id, group, metric) to the verdict (a dict
        with outcome, ...) against the run `versus`; without one a cell is DONE."""
        from iowatch.judging import deciding
        checkout_id = self.checkout(run)
        build_id = self.build(run, checkout_id)
        self.boot(run, build_id)
        verdicts = verdicts or {}
        for cell in run.get("cells") or []:
            study = studies.get(cell["study"])
            for group, metric in sorted(deciding(study)):
                values = cell_values(cell, group, metric)
                v = verdicts.get((cell["id"], group, metric))
                if cell.get("status") == "skipped":
                    status = "SKIP"
                elif not values:
                    status = "MISS"
                elif v is None:
                    status = "DONE"
                else:
                    status = Outcome(v["outcome"]).kcidb
                misc = {"repetitions": len(values)}
                if v is not None:
                    misc.update({k: v.get(k) for k in ("outcome", "words", "change_pct", "ci_low",
                                                       "ci_high", "p_adjusted", "base_median",
                                                       "base_n", "compared_with")})
                self.cell_test(run, build_id, cell, group, metric, status,
                               statistics.median(values) if values else None, misc,
                               versus if verdicts else None)
        return build_id


def cell_values(cell: dict, group: str, metric: str) -> list[float]:
    """The group-level values of a metric over a cell's passed repetitions."""
    return [float(s["value"]) for r in cell.get("repetitions") or []
            if r.get("status", "passed") == "passed"
            for s in r.get("samples") or []
            if s.get("job") is None and s["group"] == group and s["metric"] == metric]


def _device_class(run: dict, device: str | None) -> str | None:
    for d in run.get("devices") or []:
        if d.get("name") == device:
            return d.get("class") or d.get("device_class")
    return None


def _environment(run: dict, device: str | None = None) -> dict:
    host = (run.get("host") or {}).get("name")
    model = next((d.get("model") for d in run.get("devices") or [] if d.get("name") == device), None)
    where = f"{host}, {device}" + (f" ({model})" if model else "") if device else host
    return _clean({"comment": where, "misc": _clean({"host": host, "device": device,
                                                     "device_class": _device_class(run, device),
                                                     "device_model": model})})


def _verdict_fields(v, compared_with: str) -> dict:
    """A verdict (iowatch.stats CellVerdict) as the fields a test's misc keeps."""
    return {"outcome": v.outcome, "words": v.words, "change_pct": v.change_pct,
            "ci_low": v.ci_low, "ci_high": v.ci_high, "p_adjusted": v.p_adjusted,
            "base_median": v.base.median, "base_n": v.base.n, "compared_with": compared_with}


def from_runs(runs: list[dict], studies: dict, export: Export) -> dict:
    """Runs alone (bundles or the server's): measurements without a verdict (DONE)."""
    for run in runs:
        export.run(run, studies)
    return export.data()


def from_check(check_dir: Path, studies: dict, export: Export, history=None) -> dict:
    """A check's directory (check.json and its bundles): each variant judged
    against its parent by the check's own comparison (iowatch.check);
    `history`: the host's record of its noise between boots, for a check made
    before round 0 booted every variant twice (iowatch.judging.boots)."""
    import json

    from iowatch import bundle
    from iowatch.check import CheckResult, VariantRun, compare_with_parents
    from iowatch.kernel.build import Variant

    summary_file = check_dir / "check.json"
    try:
        summary = json.loads(summary_file.read_text())
    except (OSError, ValueError) as e:
        raise KcidbError(f"{summary_file}: not a check's summary ({e}); pass the directory "
                         "`iowatch check` wrote (its --out)") from None
    result = CheckResult(series=None, plan=None, history=history)  # compare_with_parents reads the runs
    for row in summary.get("variants") or []:
        v = Variant(row["index"], row.get("commit") or "", row.get("subject"))
        found = _relocated(check_dir, row.get("bundle"))
        extra = [p for p in (_relocated(check_dir, e) for e in row.get("extra_bundles") or []) if p]
        if row.get("bundle") and found is None:
            raise KcidbError(f"{summary_file}: variant {row['index']}'s bundle {row['bundle']} "
                             f"is not under {check_dir}")
        result.runs.append(VariantRun(v, found, status=row["status"], reason=row.get("reason", ""),
                                      extra=extra))
    compare_with_parents(result)
    loaded = {vr.variant.index: [bundle.load(p) for p in [vr.bundle, *vr.extra]]
              for vr in result.runs if vr.bundle is not None}
    kept = next((runs[0]["kernel"].get("series") for runs in loaded.values()
                 if runs[0]["kernel"].get("series")), None)
    series = kept or {"name": summary.get("series") or check_dir.name, "base": summary.get("base")}
    for vr in result.runs:
        if vr.status == "apply-failed":
            # A patch that did not apply: a checkout that failed, nothing built.
            export.checkout({"kernel": {"release": "unapplied", "series": series,
                                        "patch": {"index": vr.variant.index,
                                                  "subject": vr.variant.subject}}},
                            valid=False, log=vr.reason)
        if vr.bundle is None:
            continue
        runs = loaded[vr.variant.index]
        verdicts, versus = {}, None
        if vr.vs_parent is not None:
            parent = vr.vs_parent.base
            versus = parent.runs[0]["run_id"]
            for c in vr.vs_parent.verdicts:
                k = c.key
                verdicts[(f"{k.study}/{k.device}/{k.filesystem}", k.group, k.metric)] = \
                    _verdict_fields(c, parent.title)
        export.run(_pooled(runs), studies, verdicts, versus)
    return export.data()


def _pooled(runs: list[dict]) -> dict:
    """A variant's first run with the repetitions of the rounds that added some."""
    first = dict(runs[0])
    cells = {c["id"]: {**c, "repetitions": list(c.get("repetitions") or [])}
             for c in first.get("cells") or []}
    for more in runs[1:]:
        for c in more.get("cells") or []:
            if c["id"] in cells:
                cells[c["id"]]["repetitions"] += c.get("repetitions") or []
            else:
                cells[c["id"]] = c
    first["cells"] = list(cells.values())
    return first


def _relocated(check_dir: Path, path: str | None) -> Path | None:
    """A bundle the summary names by the path it had when the check ran: the
    same path, else the longest tail of it found under check_dir (a check
    directory copied elsewhere, such as a test fixture)."""
    if not path:
        return None
    p = Path(path)
    if (p / "bundle.json").is_file():
        return p
    for i in range(1, len(p.parts)):
        candidate = check_dir.joinpath(*p.parts[i:])
        if (candidate / "bundle.json").is_file():
            return candidate
    return None


def from_regression(detail: dict, candidate: dict, studies: dict, export: Export) -> dict:
    """A regression as the server stores it (GET /api/v1/regressions/ID) and its
    first candidate run's manifest: the run's checkout and build, and one test
    per deciding cell of the comparison with the stored verdict's status and
    numbers (a server that lists only the regressed cells gives those)."""
    checkout_id = export.checkout(candidate)
    build_id = export.build(candidate, checkout_id)
    base = detail.get("base_kernel") or {}
    compared = f"{base.get('release', '?')}" + (f" (commit {base['git_commit'][:12]})"
                                                 if base.get("git_commit") else "")
    cells = {c["id"]: c for c in candidate.get("cells") or []}
    for v in detail.get("verdicts") or detail.get("cells") or []:
        cell = cells.get(v["cell_key"]) or {"id": v["cell_key"], "study": v["study"],
                                            "device": v.get("device"),
                                            "filesystem": v.get("filesystem")}
        misc = {"outcome": v["outcome"], "words": v.get("words"), "change_pct": v.get("change_pct"),
                "ci_low": v.get("ci_low"), "ci_high": v.get("ci_high"),
                "p_adjusted": v.get("p_adjusted"), "base_median": v["base"]["median"],
                "base_n": v["base"]["n"], "repetitions": v["candidate"]["n"],
                "compared_with": compared, "regression": detail["id"],
                "regression_state": detail.get("state")}
        export.cell_test(candidate, build_id, cell, v["group"], v["metric"], Outcome(v["outcome"]).kcidb,
                         v["candidate"]["median"], misc, versus=str(detail["base_runs"][0]))
    return export.data()
