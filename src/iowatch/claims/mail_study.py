"""A study made from a patch mail's own workload, when no study has it.

A mail that claims "X before, Y after" under a pasted fio job file, a fio
command line that carries its options (`fio --name=... --rw=... `) or an
fs_mark command line has said what to run: `iowatch check` runs it beside the
matrix and judges the mail's claims on it (iowatch.claims.series). The study is
written like a hand-made one (jobs/studies): the workload as the mail gave it,
every job its own reporting group (named after the job), the claimed metrics
deciding, each in the group of the job that reads or writes it, and a quick
profile that scales the sizes and the runtime down.

What is left out, and why:
- where the mail's files went (directory, filename, ...): the runner's
  scratch filesystem replaces them (the safety rule: a study never names a
  device or a path);
- the mail's logs and output options: the runner reads fio's JSON itself;
- a fio command line that only names a job file (`fio job.fio`): the file is
  not in the mail, so there is nothing to run; the check says so.
The device class is the mail's when it names one, else ssd (the virtual lab's
general-purpose disk); the filesystem the mail names (ext4, xfs, btrfs, f2fs),
else ext4. Both are said in the study's words.
"""
from __future__ import annotations

import re

from iowatch.claims import mail
from iowatch.filesystems import MKFS
from iowatch.metrics import INFO, METRICS
from iowatch.studies import PUBLISHED_UNITS

QUICK_SIZE_MIB = 256
QUICK_RUNTIME_S = 3
# Options about where the files go, or what fio writes besides its JSON.
_LEFT_OUT = re.compile(r"^(directory|filename|filename_format|opendir|output|output-format|"
                       r"max-jobs|minimal|eta|eta-newline|.*log.*)$")
_FILESYSTEM_WORDS = re.compile(r"\b(ext4|xfs|btrfs|f2fs)\b", re.I)


class NoStudy(ValueError):
    """The mail's workload cannot make a study; the message says why."""


def slug_for(subject: str) -> str:
    words = re.sub(r"^\[[^]]*\]\s*", "", subject or "").lower()
    slug = re.sub(r"[^a-z0-9]+", "-", words).strip("-")
    if len(slug) > 40:  # whole words only
        slug = slug[:41].rsplit("-", 1)[0]
    return f"mail-{slug or 'workload'}"


def _size_mib(value: str) -> float | None:
    m = re.fullmatch(r"(\d+(?:\.\d+)?)([kmgt]?)i?b?", str(value).strip().lower())
    if not m:
        return None
    return float(m[1]) * {"": 1 / 2 ** 20, "k": 1 / 1024, "m": 1, "g": 1024, "t": 2 ** 20}[m[2]]


def _scalar(value: str):
    return int(value) if re.fullmatch(r"\d+", value) else value


def _fio_sections(workload: str) -> tuple[dict, list[tuple[str, dict]]]:
    """(global options, [(job name, options)]) of a pasted job file or of a fio
    command line that carries its options."""
    if workload.lstrip().startswith("fio"):
        words = workload.split()[1:]
        named = [w for w in words if not w.startswith("-")]
        if named:
            raise NoStudy(f"its fio command line runs the job file {named[0]}, which is not in "
                          "the mail")
        pairs = [w.lstrip("-").split("=", 1) for w in words]
        sections, current = [("global", {})], None
        for kv in pairs:
            key, value = kv[0], kv[1] if len(kv) > 1 else ""
            if key == "name":
                current = (value or f"job{len(sections)}", {})
                sections.append(current)
            else:
                (current or sections[0])[1][key] = value
    else:
        sections = []
        for line in workload.splitlines():
            head = re.fullmatch(r"\s*\[([\w .-]+)\]\s*", line)
            if head:
                sections.append((head[1].strip(), {}))
            elif sections and line.strip():
                key, _, value = line.strip().partition("=")
                sections[-1][1][key.strip()] = value.strip()
    glob = next((o for n, o in sections if n == "global"), {})
    jobs = [(n, o) for n, o in sections if n != "global"]
    if not jobs:
        raise NoStudy("its fio workload names no job")
    return glob, jobs


def _kept(options: dict) -> dict:
    return {k: _scalar(v) for k, v in options.items() if not _LEFT_OUT.match(k)}


def _group_of(metric: str, jobs: list[tuple[str, dict]], glob: dict) -> str | None:
    """The job that reads (read.*) or writes (write.*) what the metric measures."""
    side = metric.split(".", 1)[0]
    for name, options in jobs:
        rw = str(options.get("rw", options.get("readwrite", glob.get("rw", "read")))).lower()
        reads = "read" in rw or rw in ("rw", "randrw")
        writes = "write" in rw or rw in ("rw", "randrw", "trim")
        if (side == "read" and reads) or (side == "write" and writes):
            return name
    return None


def study_from_mail(found: list[mail.Claim], subject: str, message_id: str | None,
                    text: str) -> dict:
    """The study document (study-v1.json) made from the mail's claims and its
    workload; NoStudy when the workload cannot make one."""
    workloads = [c.workload for c in found if c.workload]
    if not workloads:
        raise NoStudy("it quotes no workload (fio job or command line, fs_mark command line)")
    workload = workloads[0]
    classes = sorted({c.device_class for c in found if c.device_class}) or ["ssd"]
    named = sorted({m.lower() for m in _FILESYSTEM_WORDS.findall(text)} & set(MKFS))
    filesystems = named or ["ext4"]
    metrics, published_groups = [], {}
    if workload.startswith("fs_mark"):
        options = {k: _scalar(v) if v else 0 for k, v in mail.workload_options(workload) if k != "d"}
        dirs = max(1, len(re.findall(r"\s-d\s", f" {workload} ")))
        spec = {"fs_mark": {"options": options, "dirs": dirs}, "groups": {"fsmark": "fsmark"}}
        quick = {"fs_mark": {k: min(int(v), 1000) for k, v in options.items()
                             if k in ("n", "D") and str(v).isdigit()}}
        scaling = "at most 1,000 files a directory and a thread"
        group_of = (lambda metric: "fsmark")  # noqa: E731 - one group
    else:
        glob, jobs = _fio_sections(workload)
        job_list = []
        for i, (name, options) in enumerate(jobs):
            kept = _kept(options)
            if i and "new_group" not in kept and "stonewall" not in kept:
                kept["new_group"] = 1  # each job its own reporting group, as the mail reported them
            job_list.append({"name": re.sub(r"[^\w-]+", "-", name), **({"options": kept} if kept else {})})
        spec = {"fio": {"global": {**_kept(glob), "directory": "{mountpoint}"}, "jobs": job_list},
                "groups": {str(i): j["name"] for i, j in enumerate(job_list)}}
        sizes = {j["name"]: f"{QUICK_SIZE_MIB}M" for j, (_, o) in zip(job_list, jobs)
                 if (_size_mib(o.get("size", glob.get("size", ""))) or 0) > QUICK_SIZE_MIB}
        quick = {"global": {"runtime": QUICK_RUNTIME_S}, **({"jobs": {n: {"size": s}
                                                                       for n, s in sizes.items()}}
                                                          if sizes else {})}
        scaling = (f"runtime {QUICK_RUNTIME_S} s, sizes at most {QUICK_SIZE_MIB} MiB a job; the "
                   "same jobs beside each other")
        names = {re.sub(r"[^\w-]+", "-", n): n for n, _ in jobs}

        def group_of(metric: str) -> str | None:
            found_job = _group_of(metric, jobs, glob)
            return next((k for k, v in names.items() if v == found_job), None)
    for metric in dict.fromkeys(c.metric for c in found if c.metric):
        if METRICS[metric].direction == INFO or (group := group_of(metric)) is None:
            continue
        said = next(c.as_published for c in found if c.metric == metric)
        # The mail decided on it: its own figure is why it decides (judging.policy.too_noisy).
        metrics.append({"metric": metric, "group": group, "direction": METRICS[metric].direction,
                        "decides": True, "why": f"the mail's own figure: {' '.join(said.split())[:160]}"})
        published_groups[metric] = group
    if not metrics:
        raise NoStudy("none of its claimed metrics is one a job of its workload measures")
    published = []
    for label in dict.fromkeys(c.label for c in found if c.label):
        results = [{"metric": c.metric, "group": published_groups[c.metric], "value": c.value,
                    "unit": c.unit, "as_published": c.as_published[:200]}
                   for c in found if c.label == label and c.metric in published_groups
                   and c.unit in PUBLISHED_UNITS]
        if results:
            published.append({"label": label, "kernel": "as the mail says",
                              "device_class": classes[0], "results": results})
    where = f"{subject} <{message_id}>" if message_id else subject
    return {
        "study": slug_for(subject),
        "title": f"The workload of the mail: {subject}"[:200],
        "mail": where,
        "source": f"made by iowatch check from the mail {where}",
        "question": "Does the patch move what its own mail measured, as the mail says?",
        "device_classes": classes,
        "filesystems": filesystems,
        "workload": spec,
        "profiles": {"full": {"scaling": "none: the mail's workload as given, on the runner's "
                                         "scratch filesystem instead of the mail's paths"},
                     "quick": {"scaling": scaling, **quick}},
        "metrics": metrics,
        "published": published,
    }
