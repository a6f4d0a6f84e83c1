"""The mailing-list report of a stored regression: one pure function, no Django.

render(detail, fmt) turns the JSON of GET /api/v1/regressions/{id} into the
e-mail a kernel developer would send (fmt "email": headers and body) or its
body under the subject line (fmt "text"). The server's report endpoint, the
regression page and `iowatch report` all call it on that same JSON, so they
give one text. The numbers are the stored verdict's (the detail's cells),
never recomputed here.

What it says, in the shape of 0-day's reports: a subject of at most 72
characters ("[iowatch] ext4: yield to buffered read...: write bandwidth
-33.2% on hdd"), the regression page's link, the device class, model and
test machine, a parameters block, a base-versus-commit table, the
Reported-by:/Closes: tags to paste, before and after with the change, its
95% CI and the repetitions a side, the trade-off (the study's other deciding
cells that moved), the first bad commit with its author, who found it and
how many runs a side, the confounders, the workload as it ran, a
reproduction without iowatch (iowatch.replay: what the runner did, as a
shell script) and the commands that reproduce it with iowatch
(iowatch.reproduce). The body is folded at 72 columns, commands with a
backslash; the mail is 7bit or 8bit UTF-8, never base64. Its Message-ID is
one per regression; its Date, when it is written. When the bad kernel is a
patch of a series that came by mail, the e-mail replies in its thread
(In-Reply-To the patch, References the cover letter and patch), to the
patch's author with the series' To and Cc copied; without an author, to the
series' own To.
"""
from __future__ import annotations

import email.policy
import re
import textwrap
from datetime import datetime, timezone
from email.message import EmailMessage
from email.utils import format_datetime, getaddresses

from iowatch import figures, replay, reproduce
from iowatch.kernel.build import DEFAULT_BASE, DEFAULT_FRAGMENTS
from iowatch.vocabulary.outcomes import boots_words, outcome_label
from iowatch.judging.worst import severity, worst_order
from iowatch.metrics import METRICS
from iowatch.stats.confounders import Confounder, shown
from iowatch.vocabulary.wording import metric_phrase

FORMATS = ("email", "text")
# Plain text the lists take: 7bit, or 8bit UTF-8 (RFC 6532 headers), never
# base64 or RFC 2047 words (lore and the list archives show those as blobs).
# Headers are not folded below RFC 5322's limit, so the subject stays one line
# (mail clients and lore show it whole); the body is folded at BODY_WIDTH by fold().
_POLICY = email.policy.default.clone(linesep="\n", max_line_length=998, utf8=True)
BODY_WIDTH = 72
SUBJECT_WIDTH = 72
DEFAULT_FROM = "iowatch <iowatch@localhost>"
# Lines that are shell commands: folded with a backslash, never mid-word.
_COMMANDS = ("iowatch ", "fio ", "fs_mark ", "mkfs", "mount ", "umount ", "mdadm ", "(cd ",
             "echo ", "seq ", "sed ", ": ")
_KIND_WORDS = {"nightly": "the nightly", "check": "a check of a patch series",
               "ab": "a comparison of two kernels"}


def _worst(cell: dict, outcome: str) -> tuple:
    """A cell's or change point's place in judging's worst-first order (iowatch.judging.worst)."""
    return worst_order(outcome, severity(cell.get("change_pct"), METRICS[cell["metric"]].direction,
                                         cell.get("min_effect_pct")))


def _cells(detail: dict) -> list[dict]:
    """The regressed cells, worst first (the bisect's cell leads when it has one)."""
    cells = list(detail.get("cells") or [])
    followed = ((detail.get("bisect") or {}).get("cell") or {})
    cells.sort(key=lambda c: (not (c["cell_key"], c["group"], c["metric"]) ==
                              (followed.get("key"), followed.get("group"), followed.get("metric")),
                              _worst(c, c.get("outcome") or "regression"), c["cell_key"], c["group"],
                              c["metric"]))
    return cells


def _points(detail: dict) -> list[dict]:
    return sorted(detail.get("change_points") or [], key=lambda p: _worst(p, "regression"))


def _patch(detail: dict, index: int | None) -> dict:
    series = detail.get("series") or {}
    return next((p for p in series.get("patches") or [] if p.get("index") == index), {})


def first_bad(detail: dict) -> dict | None:
    """The first bad commit: the bisect's, else for a series check the patch
    itself (compared with its parent); None when nothing names one yet."""
    bisect = detail.get("bisect") or {}
    if bisect.get("state") == "done" and (bisect.get("result") or {}).get("first_bad"):
        return {**bisect["result"]["first_bad"], "found_by": f"bisect #{bisect['id']}"}
    kernel = detail.get("candidate_kernel") or {}
    if detail.get("kind") == "check" and kernel.get("patch_index"):
        patch = _patch(detail, kernel["patch_index"])
        return {"commit": patch.get("commit") or kernel.get("git_commit"),
                "subject": patch.get("subject") or "", "author": patch.get("author") or "",
                "found_by": f"the check of series {kernel.get('series')}: patch "
                            f"{kernel['patch_index']} against its parent"}
    return None


def _end(detail: dict, side: str) -> reproduce.End:
    kernel = detail.get(f"{side}_kernel") or {}
    series = detail.get("series") or {}
    in_series = kernel.get("series") and kernel.get("series") == series.get("name")
    return reproduce.End(kernel.get("release"), kernel.get("git_commit"), kernel.get("series"),
                         series.get("base") if in_series else None,
                         series.get("message_id") if in_series else None,
                         kernel.get("patch_index"))


def _subsystem(title: str) -> str | None:
    """"ext4" of "ext4: yield to readers" (the prefix a patch subject starts with)."""
    prefix, sep, _ = title.partition(": ")
    # One word, or several joined by commas ("block, iomap: ...").
    return prefix if sep and re.fullmatch(r"[\w./-]+(?:, ?[\w./-]+)*", prefix) else None


def subject(detail: dict) -> str:
    """One line of at most SUBJECT_WIDTH, in the shape of 0-day's reports:
    "[iowatch] <subsystem>: <commit subject>: <metric> <change> on <device
    class>". The commit subject is the first bad commit's (it carries its
    subsystem prefix; else the filesystem is put before it), or the bad
    kernel's name; it is the part shortened with "..." to fit."""
    cells, points = _cells(detail), _points(detail)
    lead = cells[0] if cells else (points[0] if points else None)
    bad = first_bad(detail) or {}
    title = (bad.get("subject") or "").strip() or _end(detail, "candidate").name
    fs = (lead or {}).get("filesystem") or "block"
    if not _subsystem(title):
        title = f"{fs}: {title}"
    if lead is None:
        tail = ": regression"
    else:
        change = figures.change(lead.get("change_pct")).replace(figures.TIMES, "x")
        tail = (f": {metric_phrase(lead['metric'])} {change} on "
                f"{lead.get('device_class') or '?'}")
    room = SUBJECT_WIDTH - len("[iowatch] ") - len(tail)
    if len(title) > room:
        title = title[:max(room - 3, 0)].rstrip() + "..."
    return f"[iowatch] {title}{tail}"


def _where(c: dict) -> str:
    return " ".join(x for x in (c["study"], c.get("device"), c.get("filesystem"),
                                f"[{c['group']}]", c["metric"]) if x)


def _before_after(c: dict) -> tuple[str, str, str, str]:
    """A verdict's one number a side, in a readable unit, and what they are:
    the numbers its words compare (geometric means, or means), or the
    medians of a verdict stored before the server kept those."""
    unit = c.get("unit") or METRICS[c["metric"]].unit
    statistic = c.get("centre_statistic")
    if statistic and c["base"].get("centre") is not None and c["candidate"].get("centre") is not None:
        numbers = (c["base"]["centre"], c["candidate"]["centre"])
    else:
        statistic, numbers = "median", (c["base"]["median"], c["candidate"]["median"])
    (b, a), shown_unit = figures.amount(numbers, unit)
    return b, a, shown_unit, figures.statistic(statistic, 2)


def _cell_lines(c: dict) -> list[str]:
    b, a, shown_unit, statistic = _before_after(c)
    ci = figures.ci(c.get("ci_low"), c.get("ci_high"), missing="n/a (a side has one sample)")
    out = [f"  {_where(c)}",
           f"    before {b} {shown_unit}, after {a} {shown_unit} ({statistic})",
           f"    change {figures.change(c.get('change_pct'))}, 95% CI {ci}, "
           f"{c['base']['n']} vs {c['candidate']['n']} repetitions"]
    if c.get("words"):
        out.append(f"    {c['words']}.")
    return out


def _point_lines(p: dict) -> list[str]:
    unit = METRICS[p["metric"]].unit
    (b, a), shown_unit = figures.amount((p["before_mean"], p["after_mean"]), unit)
    return [f"  {_where(p)}",
            f"    a step in the nightly history: {b} -> {a} {shown_unit} (means of the nights "
            f"either side), {figures.change(p.get('change_pct'))}"]


def _machine_words(detail: dict) -> str:
    """What the test machine is: its kind, or for a board class of a LAVA lab
    the device type and tags of its boards (LAVA picks the board a job runs on)."""
    kind = detail.get("host_kind") or "host"
    if kind != "lava":
        return kind
    board = detail.get("host_lava") or {}
    return ", ".join(["LAVA board class",
                      *([f"device type {board['device_type']}"] if board.get("device_type") else []),
                      *([f"device tags {' '.join(board['tags'])}"] if board.get("tags") else [])])


def _setup_lines(detail: dict, lead: dict | None) -> list[str]:
    good, bad = _end(detail, "base"), _end(detail, "candidate")
    host = detail.get("host") or "?"
    out = []
    if lead is not None:
        model = lead.get("device_model") or "model not recorded"
        out += [f"  device class:  {lead.get('device_class') or '?'}",
                f"  device:        {lead.get('device') or 'none'} ({model})",
                f"  filesystem:    {lead.get('filesystem') or 'none (raw device)'}",
                f"  study:         {lead['study']}"]
    out += [f"  test machine:  {host} ({_machine_words(detail)})",
            f"  matrix:        {detail.get('matrix') or '?'}",
            f"  good kernel:   {good.name}",
            f"  bad kernel:    {bad.name}"]
    if detail.get("boots"):
        # The host's record, when it stood in for a side of one boot (a detail
        # from before the server kept it has none, and says what it said then).
        words = boots_words(tuple(detail["boots"]), detail.get("recorded_boots"))
        out.append(f"  boots:         {words}")
    trigger = detail.get("trigger") or {}
    if trigger.get("branch"):
        out.append(f"  nightly:       branch {trigger['branch']}"
                   + (f", night of {trigger['night']}" if trigger.get("night") else ""))
    return out


def _first_bad_lines(detail: dict) -> list[str]:
    bad = first_bad(detail)
    bisect = detail.get("bisect") or {}
    good_runs = (detail.get("good") or {}).get("runs") or []
    bad_runs = (detail.get("bad") or {}).get("runs") or []
    if bad is None:
        state = bisect.get("state")
        if state in ("queued", "running"):
            head = [f"first bad commit: not known yet (bisect #{bisect['id']} {state}, "
                    f"{len(bisect.get('steps') or [])} steps so far)"]
        elif state == "failed":
            head = [f"first bad commit: bisect #{bisect['id']} failed: {bisect.get('error')}"]
        elif state == "done":
            head = [f"first bad commit: not one commit (bisect #{bisect['id']})"]
        else:
            head = ["first bad commit: not bisected"]
    else:
        chance = (bisect.get("result") or {}).get("probability")
        head = [f"first bad commit: {(bad.get('commit') or '?')[:12]} (\"{bad.get('subject') or '?'}\")"
                + (f", probability {chance:.1%}" if chance is not None else ""),
                f"  author:    {bad.get('author') or 'not recorded'}",
                f"  found by:  {bad['found_by']}"]
        result = bisect.get("result") or {}
        if result.get("skipped"):
            head.append("  skipped (did not build or boot): "
                        + ", ".join(c[:12] for c in result["skipped"]))
    result = bisect.get("result") or {}
    if result.get("candidates") and not result.get("first_bad"):
        chance = result.get("probability")
        head.append("  the first bad commit is one of: "
                    + ", ".join(c[:12] for c in result["candidates"])
                    + (f" (probability {chance:.1%} together)" if chance is not None else ""))
    prov = result.get("provenance") or {}
    good_n = len(prov.get("good_runs") or []) or len(good_runs)
    bad_n = len(prov.get("bad_runs") or []) or len(bad_runs)
    page = (detail.get("mail") or {}).get("page")
    head.append(f"  provenance: runs: {good_n} good, {bad_n} bad"
                + (f", listed on {page}" if page else ""))
    if prov.get("nightly"):
        head.append(f"    nightly run {prov['nightly']}")
    steps = bisect.get("steps") or []
    if steps:
        head.append(f"  steps ({len(steps)} measured):")
        for s in steps:
            median = ("" if s.get("median") is None
                      else f", median {figures.with_unit(s['median'], s.get('unit') or '')}")
            head.append(f"    {s['commit'][:12]} {s['outcome']}{median}, "
                        f"{s.get('repetitions') or 0} repetitions  {s.get('subject') or ''}".rstrip())
    return head


def _trade_off_lines(detail: dict, cells: list[dict]) -> list[str]:
    """The other deciding cells of the regressed studies that moved (the
    readers' gain beside the writer's loss is the story of such a change)."""
    regressed = {(c["cell_key"], c["group"], c["metric"]) for c in cells}
    studies = {c["study"] for c in cells}
    moved = [v for v in detail.get("verdicts") or []
             if v["study"] in studies and (v["cell_key"], v["group"], v["metric"]) not in regressed
             and v["outcome"] != "no-change"]
    if not moved:
        return []
    out = ["", "the trade-off (the same studies' other deciding cells that moved):"]
    for v in sorted(moved, key=lambda v: -abs(v.get("change_pct") or 0)):
        b, a, shown_unit, statistic = _before_after(v)
        ci = ("" if v.get("ci_low") is None
              else f", 95% CI {figures.ci(v['ci_low'], v['ci_high'])}")
        out += [f"  {_where(v)}",
                f"    {figures.change(v.get('change_pct'))} ({_label(v)}): {b} -> {a} {shown_unit} "
                f"({statistic}){ci}"]
    return out


def _label(v: dict) -> str:
    """A stored verdict's label, by the policy's words ("slower by less than X%,
    not confirmed", "no change within X%")."""
    return outcome_label(v["outcome"], (v.get("ci_low"), v.get("ci_high")),
                         v.get("direction") or METRICS[v["metric"]].direction,
                         v.get("min_effect_pct") or 0.0)


def _lead_work(detail: dict, cells: list[dict]) -> tuple[dict | None, dict | None]:
    lead = cells[0] if cells else None
    work = (detail.get("workloads") or {}).get(lead["cell_key"]) if lead else None
    return lead, work


def _replay(work: dict, lead: dict) -> replay.CellRun:
    return replay.cell_run(work["cell"], work["device"], work.get("text"), lead["candidate"]["n"],
                           work.get("declared"))


def _workload_lines(detail: dict, cells: list[dict]) -> list[str]:
    """Each regressed cell's workload as it ran and the same without iowatch
    (iowatch.replay: the queue, the md array, mkfs, mount, caches dropped, the
    tool): two studies of one device may differ in all of that (seed 003's
    halves: BFQ with wbt off, no scheduler with wbt on)."""
    works = {}
    for c in cells:
        work = (detail.get("workloads") or {}).get(c["cell_key"])
        if work and c["cell_key"] not in works:
            works[c["cell_key"]] = (c, work)
    if not works:
        return []
    out = []
    for key, (_, work) in works.items():
        if work.get("text"):
            out += ["", f"the workload as run ({work['file']} of {key}):"]
            out += [f"  {line}".rstrip() for line in work["text"].rstrip("\n").splitlines()]
    out += ["", "the kernels' config, the same for both: " + _config_words(detail)]
    for key, (cell, work) in works.items():
        if "cell" not in work:  # a detail from a server older than iowatch.replay
            continue
        saved = f" (job.fio: the job file of {key} above)" if work.get("tool") == "fio" else ""
        out += ["", f"to reproduce without iowatch, booted into each kernel in turn{saved}:"]
        out += [f"  {step}" for step in replay.steps(_replay(work, cell))]
    return out


def _parameters_lines(detail: dict, cells: list[dict]) -> list[str]:
    """0-day's parameters block: what the cell ran with, one per line."""
    lead, work = _lead_work(detail, cells)
    if lead is None:
        return []
    out = ["", f"parameters ({lead['cell_key']}):"]
    if work and "cell" in work:
        run = _replay(work, lead)
        out += [f"  scheduler:     {run.scheduler or 'the kernel default'}",
                f"  wbt_lat_usec:  "
                f"{run.wbt_lat_usec if run.wbt_lat_usec is not None else 'the kernel default'}"]
        if run.md_members is not None:
            out.append(f"  md RAID0:      of {run.md_members or 'its'} members")
        profile = (work["cell"].get("params") or {}).get("profile")
        if profile:
            out.append(f"  profile:       {profile}")
        if run.mkfs_options or run.mount_options:
            out += [f"  mkfs options:  {run.mkfs_options or 'none'}",
                    f"  mount options: {run.mount_options or 'none'}"]
    out.append(f"  repetitions:   {lead['base']['n']} vs {lead['candidate']['n']}")
    return out


def _table_lines(detail: dict, cells: list[dict]) -> list[str]:
    """0-day's base-versus-commit table: the regressed cells, then the same
    studies' other deciding cells that moved, one number a side."""
    regressed = {(c["cell_key"], c["group"], c["metric"]) for c in cells}
    studies = {c["study"] for c in cells}
    moved = [v for v in detail.get("verdicts") or []
             if v["study"] in studies and (v["cell_key"], v["group"], v["metric"]) not in regressed
             and v["outcome"] != "no-change"]
    rows = cells + sorted(moved, key=lambda v: -abs(v.get("change_pct") or 0))
    if not rows:
        return []
    names = [(_end(detail, side).commit or _end(detail, side).name)[:12] for side in ("base", "candidate")]
    statistic = _before_after(rows[0])[3]
    out = ["", f"base versus commit ({statistic}):", "",
           f"  {names[0]:>16} {'%change':>9} {names[1]:>16}",
           f"  {'-' * 16} {'-' * 9} {'-' * 16}"]
    for study in dict.fromkeys(r["study"] for r in rows):
        out.append(f"  {study}:")
        for r in (r for r in rows if r["study"] == study):
            b, a, unit, _ = _before_after(r)
            out.append(f"  {b + ' ' + unit:>16} {figures.change(r.get('change_pct')):>9} "
                       f"{a + ' ' + unit:>16}  {r['group']}.{r['metric']}")
    return out


def _tag_lines(detail: dict) -> list[str]:
    """The trailers to paste, as 0-day's reports give them."""
    sender = (detail.get("mail") or {}).get("from") or DEFAULT_FROM
    page = (detail.get("mail") or {}).get("page")
    out = ["", "If you fix the issue in a separate patch (not just a new version of the",
           "same patch), kindly add the following tags:",
           f"| Reported-by: {sender}"]
    if page:
        out.append(f"| Closes: {page}")
    return out


def _config_words(detail: dict) -> str:
    """How the kernels were configured, in kbuild's own terms: the virtual
    lab's (iowatch.kernel.build) and a lab host's, whose agent builds the same
    with lab-host.config after (iowatch.agent.loop.source_builds; a LAVA board
    class's too)."""
    merge = (f"make {DEFAULT_BASE}, then scripts/kconfig/merge_config.sh -m .config "
             + " ".join(DEFAULT_FRAGMENTS))
    if detail.get("host_kind") == "qemu":
        return merge + " (iowatch's kernels/config/) and make olddefconfig"
    return (merge + " lab-host.config (iowatch's kernels/config/; the host's agent adds the files of its "
            "--fragment after them, and --config-base vng starts from virtme-ng's config) and make "
            "olddefconfig")


def fold(line: str, width: int = BODY_WIDTH) -> list[str]:
    """A body line as lines of at most `width` columns: a command is split
    between words with a trailing backslash, prose wraps under its indent."""
    if len(line) <= width:
        return [line]
    indent = line[:len(line) - len(line.lstrip())]
    text = line.strip()
    if indent and text.startswith(_COMMANDS):  # the body's commands are indented
        out, current = [], indent
        for word in text.split(" "):
            candidate = f"{current} {word}" if current.strip() else current + word
            if len(candidate) + 2 > width and current.strip():
                out.append(current + " \\")
                current = indent + "    " + word
            else:
                current = candidate
        return out + [current]
    if text.startswith("# "):  # a shell comment goes on as one
        return textwrap.wrap(text, width, initial_indent=indent, subsequent_indent=indent + "# ",
                             break_long_words=True, break_on_hyphens=False)
    # A paragraph wraps flush; an indented line's continuation goes two further in.
    return textwrap.wrap(text, width, initial_indent=indent,
                         subsequent_indent=indent + "  " if indent else "",
                         break_long_words=True, break_on_hyphens=False)


def _confounder_lines(detail: dict) -> list[str]:
    found = [Confounder(**c) for c in detail.get("confounders") or []]
    if not found:
        return ["  none: no difference in what both sides recorded (debug options, preemption "
                "model, command line without the virtual lab's per-run parameters, tools, "
                "governor, device queue and device state)"]
    kernel = [c for c in found if c.name.startswith("kernel ")]
    other = [c for c in found if not c.name.startswith("kernel ")]
    out = []
    for c in kernel + other:
        base, candidate = shown(c)
        out.append(f"  {c.name}: {base} -> {candidate}")
        out.append(f"    ({c.why})")
    return out


def _confirmation_lines(detail: dict) -> list[str]:
    """A second lab host's confirmation (the server's regressions/confirm.py):
    confirmed on N of M hosts, only on one, or why it could not be."""
    conf = detail.get("confirmation") or {}
    if not conf.get("words"):
        return []
    out = ["", f"second host: {conf['words']}"]
    for job in conf.get("jobs") or []:
        for r in job.get("verdicts") or []:
            out.append(f"  {job['host']}: {r['metric']} {figures.change(r.get('change_pct'))} "
                       f"(95% CI {figures.ci(r.get('ci_low'), r.get('ci_high'))}, "
                       f"{r.get('base_n')} vs {r.get('candidate_n')} runs, ABAB): {r['outcome']}")
    return out


def body(detail: dict) -> str:
    cells, points = _cells(detail), _points(detail)
    lead = cells[0] if cells else (points[0] if points else None)
    kind = _KIND_WORDS.get(detail.get("kind"), "a comparison")
    page = (detail.get("mail") or {}).get("page")
    out = ["Hi,", "", f"iowatch (storage performance CI) found a regression in {kind}, "
                      f"regression #{detail['id']}" + (f" ({page})" if page else "") + ":", ""]
    out += _setup_lines(detail, lead)
    out += _parameters_lines(detail, cells) + _table_lines(detail, cells) + _tag_lines(detail)
    out += ["", "before and after (the stored verdict):"]
    for c in cells:
        out += _cell_lines(c)
    if not cells:
        for p in points:
            out += _point_lines(p)
    out += _trade_off_lines(detail, cells)
    out += _confirmation_lines(detail)
    out += ["", *_first_bad_lines(detail), "", "kernel config and setup confounders:",
            *_confounder_lines(detail)]
    out += _workload_lines(detail, cells)
    out += ["", "to reproduce with iowatch:"]
    trigger = detail.get("trigger") or {}
    out += reproduce.lines(_end(detail, "base"), _end(detail, "candidate"),
                           matrix=detail.get("matrix"), host=detail.get("host"),
                           host_kind=detail.get("host_kind"), tree=trigger.get("tree"),
                           branch=trigger.get("branch"),
                           reps=max((c["candidate"]["n"] for c in cells), default=None))
    # The footer names the report, not its triage (a state is the server's, not the list's).
    out += ["", "-- ", f"iowatch regression #{detail['id']}"]
    return "\n".join(folded for line in out for folded in fold(line)) + "\n"


def _thread(detail: dict) -> tuple[str | None, list[str]]:
    """(In-Reply-To, References) of the bad patch's mail thread, if it came by mail."""
    series = detail.get("series") or {}
    kernel = detail.get("candidate_kernel") or {}
    patch = _patch(detail, kernel.get("patch_index"))
    refs = [m for m in (series.get("message_id"), patch.get("message_id")) if m]
    refs = [m if m.startswith("<") else f"<{m}>" for m in dict.fromkeys(refs)]
    return (refs[-1] if refs else None), refs


def _recipients(detail: dict) -> tuple[list[str], list[str]]:
    """A reply to all, as the lists expect. To: the bad patch's author and the
    configured To, Cc: the series' own To and Cc (the lists it went to) and
    the configured Cc; without an author or a configured To, To: the series' To."""
    mail = detail.get("mail") or {}
    series = detail.get("series") or {}
    patch = _patch(detail, (detail.get("candidate_kernel") or {}).get("patch_index"))
    to = [a for a in [patch.get("author"), *(mail.get("to") or [])] if a]
    copied = [*(series.get("to") or []), *(series.get("cc") or [])]
    if not to:
        to, copied = list(series.get("to") or []), list(series.get("cc") or [])
    cc = [*copied, *(mail.get("cc") or [])]
    seen = {addr.lower() for _, addr in getaddresses(to)}
    cc = [a for a in dict.fromkeys(cc) if getaddresses([a])[0][1].lower() not in seen]
    return list(dict.fromkeys(to)), cc


def with_recipients(detail: dict, to: list[str] | tuple = (), cc: list[str] | tuple = (),
                    page: str | None = None) -> dict:
    """The detail with more To and Cc (`iowatch report --to/--cc`, the API's
    to= and cc=) and the regression page's address when the server has none
    configured."""
    mail = dict(detail.get("mail") or {})
    mail["to"] = [*(mail.get("to") or []), *to]
    mail["cc"] = [*(mail.get("cc") or []), *cc]
    if page and not mail.get("page"):
        mail["page"] = page
    return {**detail, "mail": mail}


def message_id(detail: dict) -> str:
    """The report's Message-ID: one per regression, whatever its state or
    bisect, on the configured domain (IOWATCH_MAIL_DOMAIN), else the sender's."""
    mail = detail.get("mail") or {}
    sender = mail.get("from") or DEFAULT_FROM
    domain = mail.get("domain") or getaddresses([sender])[0][1].rpartition("@")[2] or "localhost"
    return f"<iowatch-regression-{detail['id']}@{domain}>"


def render(detail: dict, fmt: str = "email", now: datetime | None = None) -> str:
    """The report of a regression detail (the API's JSON) as `fmt`: "email"
    (headers and body, ready for git send-email or a mail client; Date: `now`,
    the time it is written) or "text"."""
    if fmt not in FORMATS:
        raise ValueError(f"format {fmt!r} is not one of {', '.join(FORMATS)}")
    text = body(detail)
    if fmt == "text":
        return f"{subject(detail)}\n\n{text}"
    msg = EmailMessage(policy=_POLICY)
    mail = detail.get("mail") or {}
    to, cc = _recipients(detail)
    msg["From"] = mail.get("from") or DEFAULT_FROM
    msg["To"] = ", ".join(to) if to else "undisclosed-recipients:;"
    if cc:
        msg["Cc"] = ", ".join(cc)
    msg["Subject"] = subject(detail)
    msg["Date"] = format_datetime(now or datetime.now(timezone.utc))
    msg["Message-ID"] = message_id(detail)
    reply_to, refs = _thread(detail)
    if reply_to:
        msg["In-Reply-To"] = reply_to
        msg["References"] = " ".join(refs)
    msg.set_content(text, cte="7bit" if text.isascii() else "8bit")
    return msg.as_bytes().decode("utf-8")
