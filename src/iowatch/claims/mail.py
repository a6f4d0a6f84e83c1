"""The performance claims of a patch mail, the way kernel developers paste them.

A mail about a storage patch carries its evidence as text: fio's output pasted
whole or in part (fio 2.x group lines `WRITE: io=..., aggrb=..., minb=...,
maxb=..., mint=..., maxt=...`, per-job lines `write: io=... bw=... iops=...
runt=...`, newer `WRITE: bw=...` lines, latency lines), fs_mark's table, an ad
hoc table of conditions against columns (markdown pipes or aligned words), and
prose ("improved from 466KB/s to 477KB/s", "158 → 11 ms", "lose up to 50% ...
raw IO"). extract() turns one mail's text into Claims: the condition as the
mail names it (label), the metric (an iowatch metric name where one fits, from
iowatch.metrics), the value and unit as published, and the workload and device
the mail describes before it.

Pure text in, data out: no Django, no network. Reading an mbox or a thread
fetched by Message-ID is load(); `iowatch claims` prints the result.
"""
from __future__ import annotations

import email
import email.policy
import re
from dataclasses import asdict, dataclass
from pathlib import Path

from iowatch.metrics import METRICS

# A number as mails write it: thousands separators, a decimal point.
NUM = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?"
_UNIT = (r"(?:[KMGT]i?B/s|[KMGT]B/s|B/s|kB/s|[KMGT]i?B|kB|msec|usec|nsec|ms|us|µs|ns|"
         r"IOPS|iops|files/s(?:ec)?|ops/s|%|s)(?![A-Za-z/])")


@dataclass(frozen=True)
class Claim:
    """One number a mail publishes, with what it is a number of."""
    label: str | None        # the condition as the mail names it: before, patched, 2.6.32-rc7 ...
    metric: str | None       # iowatch metric name (iowatch.metrics), None when none fits
    quantity: str            # what the mail calls it: aggrb, Files/sec, flush time ...
    value: float
    unit: str                # as published (KB/s, MB/s, ms, files/s, IOPS, count, ratio, %)
    kind: str                # fio-group, fio-job, fio-latency, fs_mark, table, prose, change
    line: int                # 1-based line of the mail's text
    as_published: str        # the text the number came from
    group: str | None = None     # job or reader/writer group the mail names
    workload: str | None = None  # fio command line or job file, fs_mark arguments, steps
    device: str | None = None    # the device as the mail describes it
    device_class: str | None = None  # iowatch's device class for it, when one is clear
    spread: float | None = None      # a +/- the mail gives
    message_id: str | None = None
    subject: str | None = None

    def to_dict(self) -> dict:
        return asdict(self) | {"metric_value": self.metric_value()}

    def metric_value(self) -> float | None:
        """The value in its metric's unit (iowatch.metrics), where the units convert;
        fio 2.x's KB and MB are KiB and MiB, as fio meant them."""
        if self.metric is None:
            return None
        factor = UNIT_FACTORS.get((self.unit, METRICS[self.metric].unit))
        return None if factor is None else self.value * factor


# (unit as published, metric's unit) -> factor.
UNIT_FACTORS = {
    **{(u, "KiB/s"): f for u, f in (("B/s", 1 / 1024), ("KB/s", 1), ("KiB/s", 1), ("MB/s", 1024),
                                    ("MiB/s", 1024), ("GB/s", 1024 ** 2), ("GiB/s", 1024 ** 2))},
    **{(u, "KiB"): f for u, f in (("KB", 1), ("KiB", 1), ("MB", 1024), ("MiB", 1024),
                                  ("GB", 1024 ** 2), ("GiB", 1024 ** 2))},
    ("ms", "ms"): 1, ("s", "ms"): 1000, ("us", "ms"): 1e-3,
    ("us", "us"): 1, ("ms", "us"): 1000, ("s", "us"): 1e6, ("ns", "us"): 1e-3,
    ("s", "s"): 1, ("ms", "s"): 1e-3,
    ("IOPS", "IO/s"): 1, ("files/s", "files/s"): 1, ("ratio", "ratio"): 1, ("count", "count"): 1,
}


class ClaimsError(ValueError):
    pass


# --- numbers and units ------------------------------------------------------

def number(text: str) -> float:
    return float(text.replace(",", ""))


def _unit(u: str | None) -> str | None:
    if not u:
        return None
    return {"msec": "ms", "usec": "us", "µs": "us", "nsec": "ns", "iops": "IOPS",
            "files/sec": "files/s"}.get(u, u)


def _duration_s(token: str) -> float | None:
    """5m54s, 1h2m3s, 17.823s as seconds."""
    m = re.fullmatch(r"(?:(\d+)h)?(?:(\d+)m)?(\d+(?:\.\d+)?)s", token)
    if not m or not (m.group(1) or m.group(2) or token.endswith("s")):
        return None
    h, mi, s = m.groups()
    return int(h or 0) * 3600 + int(mi or 0) * 60 + float(s)


# --- what the mail describes: workloads, devices, labels ---------------------

@dataclass(frozen=True)
class _Context:
    line: int
    text: str


def _fio_command_lines(lines: list[str]) -> list[_Context]:
    """`fio --name ... ` or `fio job.fio ...`, with continuation lines that start with --."""
    found = []
    for i, line in enumerate(lines):
        m = re.search(r"(?:^|[\s($])fio\s+((?:--?\w|\S+\.fio\b).*)$", line)
        if not m:
            continue
        words = [m.group(1)]
        for nxt in lines[i + 1:]:
            if not nxt.strip().startswith("--"):
                break
            words.append(nxt.strip())
        found.append(_Context(i + 1, ("fio " + " ".join(words)).rstrip(")").strip()))
    return found


def _fio_job_files(lines: list[str]) -> list[_Context]:
    """Blocks of `[section]` and `key=value` lines: a job file pasted into the mail."""
    found, i = [], 0
    while i < len(lines):
        if re.fullmatch(r"\s*\[[\w .-]+\]\s*", lines[i]):
            start, body = i, []
            while i < len(lines) and (not lines[i].strip() or
                                      re.fullmatch(r"\s*\[[\w .-]+\]\s*", lines[i]) or
                                      re.fullmatch(r"\s*[\w.]+(?:\s*=\s*\S.*)?\s*", lines[i])):
                if lines[i].strip():
                    body.append(lines[i].strip())
                i += 1
            if any("=" in b for b in body):
                found.append(_Context(start + 1, "\n".join(body)))
            continue
        i += 1
    return found


def _fs_mark_commands(lines: list[str]) -> list[_Context]:
    """fs_mark's command line: its options and their arguments, up to the first word
    that is neither."""
    found = []
    for i, line in enumerate(lines):
        for m in re.finditer(r"(?:\./)?fs_mark((?:\s+-\w+(?:\s+(?!-)[^\s-]\S*)?)+)", line):
            found.append(_Context(i + 1, " ".join(("fs_mark" + m.group(1)).split())))
    return found


def _steps(lines: list[str]) -> list[_Context]:
    """A numbered list of commands after a line that says it reproduces the issue."""
    found = []
    for i, line in enumerate(lines):
        if re.search(r"workload|reproduc", line, re.I) and line.rstrip().endswith(":"):
            steps = []
            for nxt in lines[i + 1:]:
                if not re.match(r"\s*\d+\.\s+\S", nxt):
                    break
                steps.append(nxt.strip())
            if len(steps) >= 2:
                found.append(_Context(i + 1, "; ".join(steps)))
    return found


# Device words, most specific first: (pattern, device class).
DEVICE_WORDS = (
    (r"raid ?0\b.*\bssd|\bssds?\b.*\braid ?0|\d+ ?x ?ssd.*raid", "ssd-raid0"),
    (r"\bsd ?card\b|\bsd card\b", "sdcard"),
    (r"\bemmc\b", "emmc"),
    (r"\bnvme\b", "nvme"),
    (r"\bssds?\b", "ssd"),
    (r"\bhdd\b|\bhard (?:disk|drive)\b|\brotational\b|\bspinning\b", "hdd"),
)


def _devices(lines: list[str]) -> list[tuple[int, str, str]]:
    found = []
    for i, line in enumerate(lines):
        for pattern, cls in DEVICE_WORDS:
            m = re.search(pattern, line, re.I)
            if m:
                found.append((i + 1, _around(line, m.start(), m.end()), cls))
                break
    return found


def _around(line: str, start: int, end: int, width: int = 40) -> str:
    """The words around a match: a collapsed one-line mail must not give a whole page."""
    a = line.rfind(" ", 0, max(0, start - width)) + 1
    b = line.find(" ", end + width)
    return " ".join(line[a:b if b != -1 else len(line)].split())


_GENERIC_HEADINGS = re.compile(r"^(?:tests?|results?|test environment.*|after the fix|summary|"
                               r"the test|setup|environment|run status group.*|disk stats.*|"
                               # fio's own section lines are not conditions
                               r"[cs]?lat percentiles.*|io depths|submit|complete|issued.*|"
                               r"latency|cpu|bw.*|iops.*)$", re.I)


def _labels(lines: list[str]) -> list[tuple[int, str]]:
    """Lines that name a condition: `before:`, `**Patched**`, or an underlined heading."""
    found = []
    for i, line in enumerate(lines):
        s = line.strip()
        label = None
        m = re.fullmatch(r"\*\*(.{1,60}?)\*\*", s) or re.fullmatch(r"([^:=,]{1,40}):", s)
        if m:
            label = m.group(1).strip()
        elif s and i + 1 < len(lines) and re.fullmatch(r"[=-]{3,}", lines[i + 1].strip()) \
                and len(s) <= 60 and "=" not in s:
            label = s
        if label and not _GENERIC_HEADINGS.match(label):
            found.append((i + 1, label))
    return found


def _nearest(items, line: int):
    """The last item at or before `line`, else the first after it."""
    before = [it for it in items if it[0] <= line]
    if before:
        return before[-1]
    return items[0] if items else None


# --- metric names ------------------------------------------------------------

# fio's keys: group lines (aggregates) and job lines.
FIO_GROUP_KEYS = {"aggrb": "bw_kib_s", "bw": "bw_kib_s", "minb": "bw_min_kib_s",
                  "maxb": "bw_max_kib_s", "mint": "runtime_min_ms", "maxt": "runtime_max_ms",
                  "io": "io_kib"}
FIO_JOB_KEYS = {"io": "io_kib", "bw": "bw_kib_s", "iops": "iops", "runt": "runtime_ms"}

# Device classes built of other disks (md RAID0): their members' counters are
# recorded as device.members.* (iowatch.diskstats).
STACKED_CLASSES = frozenset({"ssd-raid0"})

# Column and prose words -> metric, in the order they are tried. `needs` must also
# appear in the table's header or the mail's line; {d} is the read/write direction.
COLUMN_WORDS = (
    (r"nat blocks accessed", None, "f2fs.nat_blocks_accessed", "count"),
    (r"nat blocks read", None, "f2fs.nat_blocks_read", "count"),
    (r"flush time", r"\bnat\b", "f2fs.nat_flush_ms", None),
    (r"\bwall\b|wall time|runtime", None, "wall_s", "s"),
    (r"\bsys\b|system time", None, "cpu.sys_s", "s"),
    (r"create rate|files/s(?:ec)?|files per second", None, "fsmark.files_per_s", "files/s"),
    # fio's group keys, when a mail names them in prose ("minb 512 -> 1042 KB/s")
    (r"\baggrb\b", None, "{d}.bw_kib_s", None),
    (r"\bminb\b", None, "{d}.bw_min_kib_s", None),
    (r"\bmaxb\b", None, "{d}.bw_max_kib_s", None),
    (r"\biops\b", r"physical|device", "device.{d}_iops", "IOPS"),
    (r"\biops\b", None, "{d}.iops", "IOPS"),
    (r"bandwidth|throughput|\bbw\b", r"physical|device", "device.{d}_bw_kib_s", None),
    (r"bandwidth|throughput|\bbw\b", None, "{d}.bw_kib_s", None),
    (r"max(?:imum)? latency", None, "{d}.lat_max_us", None),
    (r"latency", None, "{d}.lat_mean_us", None),
    # A rate of something iowatch does not measure: a column all the same.
    (r"\brate\b", None, "rate", None),
)


def _direction(text: str) -> str | None:
    reads = re.search(r"\bread(?:s|ers?|ing)?\b|randread", text, re.I)
    writes = re.search(r"\bwrit(?:e|es|ers?|ing)\b|randwrite", text, re.I)
    if reads and not writes:
        return "read"
    if writes and not reads:
        return "write"
    return None


def _metric(template: str, direction: str | None) -> str | None:
    if "{d}" in template:
        if direction is None:
            return None
        template = template.format(d=direction)
    return template if template in METRICS else None


def _column(header: str, context: str) -> tuple[str | None, str | None]:
    """(metric, default unit) of a column or prose quantity; context gives the direction
    and words such as `physical` or `NAT` the header itself may lack."""
    for words, needs, template, unit in COLUMN_WORDS:
        if re.search(words, header, re.I) and (needs is None or re.search(needs, header + " " + context, re.I)):
            return _metric(template, _direction(header) or _direction(context)), unit
    return None, None


# --- the extractors ------------------------------------------------------------

_FIO_PAIR = re.compile(rf"\b([a-zA-Z]+)=\s*({NUM})\s*([KMGT]?i?B/s|B/s|[KMGT]?i?B\b|msec|usec|nsec|s\b|"
                       r"[kKMG](?![A-Za-z/]))?")
# fio 3 prints counts with a multiplier: IOPS=41.0k, IOPS=1.2M.
_MULTIPLIER = {"k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9}
# `WRITE: io=...`, `read : io=...`, and a mail's own `direct writes: aggrb=...` or
# `readers aggrb=...`: a name, perhaps a colon, then fio's keys.
_FIO_LINE = re.compile(r"(?:^|\s)(READ|WRITE|TRIM|MIXED|read|write|trim|mixed|[A-Za-z][\w ]{0,30}?)\s*:?\s*"
                       r"(?=(?:io|aggrb|bw|iops|IOPS|BW)=)")
_LATENCY_LINE = re.compile(r"\b(slat|clat|lat)\s*\((usec|msec|nsec)\)\s*:\s*(.*)")


def _fio3_group(rest: str) -> str:
    """fio 3's group line as fio 2's keys: `bw=X (..), A-B (..)` gives minb and maxb,
    `run=A-Bmsec` mint and maxt."""
    rest = re.sub(rf"\bbw=(\S+)\s*\([^)]*\),\s*({NUM}\S*?)-({NUM}\S*?)\s*\([^)]*\)",
                  r"bw=\1, minb=\2, maxb=\3", rest)
    return re.sub(rf"\brun=({NUM})-({NUM})msec", r"mint=\1msec, maxt=\2msec", rest)


def _fio_claims(lines, emit) -> None:
    ddir, status_group = None, None
    for i, line in enumerate(lines, 1):
        status = re.search(r"Run status group (\d+)", line)
        if status:
            status_group = status.group(1)
            continue
        lat = _LATENCY_LINE.search(line)
        if lat and ddir:
            kind, unit = lat.group(1), _unit(lat.group(2))
            for key, value, _ in _FIO_PAIR.findall(lat.group(3)):
                stat = {"avg": "mean", "min": "min", "max": "max", "stdev": "stddev"}.get(key)
                if stat:
                    emit(i, "fio-latency", f"{kind} {key}", number(value), unit,
                         _metric(f"{ddir}.{kind}_{stat}_us", None) if unit == "us" else None,
                         f"{kind} ({lat.group(2)}): {key}={value}", group=None)
            continue
        for m in _FIO_LINE.finditer(line):
            head = m.group(1).strip()
            rest = line[m.end():]
            nxt = _FIO_LINE.search(rest)
            rest = rest[:nxt.start()] if nxt else rest
            if head.isupper():
                rest = _fio3_group(rest)
            pairs = _FIO_PAIR.findall(rest)
            if not pairs:
                continue
            is_group = head.isupper() or any(k in ("aggrb", "minb", "maxb", "mint", "maxt")
                                             for k, _, _ in pairs)
            ddir = head.lower() if head.lower() in ("read", "write", "trim", "mixed") \
                else _direction(head)
            group = (status_group if is_group else None) \
                if head.lower() in ("read", "write", "trim", "mixed") else head
            keys = FIO_GROUP_KEYS if is_group else FIO_JOB_KEYS
            for key, value, unit in pairs:
                key_l = key.lower()
                suffix = keys.get(key_l)
                metric = _metric(f"{ddir}.{suffix}", None) if suffix and ddir else None
                amount = number(value) * _MULTIPLIER.get(unit, 1)
                emit(i, "fio-group" if is_group else "fio-job", key_l, amount,
                     (None if unit in _MULTIPLIER else _unit(unit))
                     or ("IOPS" if key_l == "iops" else "count"), metric,
                     f"{head}: {key}={value}{unit or ''}", group=group)


_FSMARK_HEADER = re.compile(r"FSUse%\s+Count\s+Size\s+Files/sec\s+App Overhead")


def _fs_mark_claims(lines, emit) -> None:
    in_table = False
    for i, line in enumerate(lines, 1):
        if _FSMARK_HEADER.search(line):
            in_table = True
            continue
        m = re.match(r"\s*(\d+)\s+(\d+)\s+(\d+)\s+(\d+(?:\.\d+)?)\s+(\d+)\b", line) if in_table else None
        if not m:
            in_table = in_table and not line.strip() == ""
            continue
        emit(i, "fs_mark", "Files/sec", float(m.group(4)), "files/s", "fsmark.files_per_s",
             line.strip(), group=f"Count {m.group(2)}")
        emit(i, "fs_mark", "App Overhead", float(m.group(5)), "us", "fsmark.app_overhead_us",
             line.strip(), group=f"Count {m.group(2)}")


def _markdown_tables(lines, emit) -> None:
    """| label | col | col |: the first row names the columns, --- rows are rules."""
    i = 0
    while i < len(lines):
        if lines[i].strip().startswith("|") and lines[i].count("|") >= 3:
            block = []
            while i < len(lines) and lines[i].strip().startswith("|"):
                block.append((i + 1, [c.strip() for c in lines[i].strip().strip("|").split("|")]))
                i += 1
            header = block[0][1]
            context = " ".join(" ".join(c) for _, c in block)
            for line_no, cells in block[1:]:
                if all(re.fullmatch(r":?-{2,}:?|", c) for c in cells):
                    continue
                for col, cell in zip(header[1:], cells[1:]):
                    m = re.fullmatch(rf"({NUM})\s*({_UNIT})?", cell)
                    if not m:
                        continue
                    metric, unit = _column(col, context)
                    paren = re.search(r"\((\w+(?:/\w+)?)\)", col)
                    unit = _unit(m.group(2)) or (paren.group(1) if paren else None) or unit or "count"
                    emit(line_no, "table", col, number(m.group(1)), unit, metric,
                         f"{cells[0]} | {col}: {cell}", label=cells[0])
            continue
        i += 1


# A value in an ad hoc table: a duration, a number with its unit or spread.
_VALUE = re.compile(rf"^(?:(?:\d+h)?\d+m\d+(?:\.\d+)?s|[+-]?(?:{NUM})(?:\+/-(?:{NUM}))?"
                    rf"(?:[KMGT]?i?B/s|[kKMG]/s|[kKMG]|%|ms|s|IOPS)?)$")


def _value(token: str, unit_hint: str | None) -> tuple[float, str, float | None] | None:
    if not _VALUE.match(token):
        return None
    seconds = _duration_s(token) if re.search(r"\d[hm]\d", token) else None
    if seconds is not None:
        return seconds, "s", None
    m = re.fullmatch(rf"([+-]?)({NUM})(?:\+/-({NUM}))?([KMGT]?i?B/s|[kKMG]/s|[kKMG]|%|ms|s|IOPS)?",
                     token)
    value = number(m.group(2)) * (-1 if m.group(1) == "-" else 1)
    spread = number(m.group(3)) if m.group(3) else None
    suffix = m.group(4)
    if suffix and suffix.rstrip("/s") in ("k", "K", "M", "G"):   # 70k IOPS, 3.4M/s: a multiplier
        value *= {"k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9}[suffix[0]]
        suffix = "/s" if suffix.endswith("/s") else None
    return value, suffix or unit_hint or "count", spread


def _adhoc_rows(tokens: list[str]) -> list[tuple[int, int, int]]:
    """(label start, first value, end) of each run `label words... v v v` with two
    or more values, over a token stream."""
    rows, i = [], 0
    while i < len(tokens):
        j = i
        while j < len(tokens) and _value(tokens[j], None) is None:
            j += 1
        k = j
        while k < len(tokens) and _value(tokens[k], None) is not None:
            k += 1
        if k - j >= 2 and j > i:
            rows.append((max(i, j - 3), j, k))
        i = max(k, i + 1)
    return rows


def _adhoc_tables(lines, emit, context: str) -> None:
    """Rows of one label and as many values as the header has columns: aligned one
    per line, or run together in a mail whose line breaks were lost (seed 004)."""
    if len(lines) <= 2 and max((len(x) for x in lines), default=0) > 300:
        _adhoc_one_line(lines[0].split(), emit, context)
    else:
        _adhoc_lines(lines, emit, context)


def _adhoc_one_line(tokens: list[str], emit, context: str) -> None:
    # A table is two or more consecutive rows with the same number of values; its
    # header is the words before the first row, after the last colon (`Result:`).
    for rows in _consecutive(_adhoc_rows(tokens)):
        first = rows[0]
        header = " ".join(t for t in tokens[max(0, first[0] - 40):first[0]] if not re.fullmatch(r"-+", t))
        header = header.split(":")[-1]
        for start, j, k in rows:
            _emit_row(emit, 1, _row_label(tokens[start:j]), tokens[j:k], header, context)


def _adhoc_lines(lines: list[str], emit, context: str) -> None:
    rows = []
    for n, line in enumerate(lines, 1):
        # A row: label words (the first starts with a letter), then two or more values.
        tokens, row = line.split(), None
        for k in range(1, min(len(tokens) - 1, 4)):
            if re.match(r"[A-Za-z]", tokens[0]) and all(_value(v, None) is not None for v in tokens[k:]):
                row = (n, " ".join(tokens[:k]), tokens[k:])
                break
        rows.append(row)
    i = 0
    while i < len(rows):
        if rows[i] is None:
            i += 1
            continue
        j = i
        while j < len(rows) and rows[j] is not None and len(rows[j][2]) == len(rows[i][2]):
            j += 1
        if j - i >= 2:
            # The header: the non-rule lines just above the first row.
            first_line = rows[i][0]
            header = " ".join(x for x in lines[max(0, first_line - 4):first_line - 1]
                              if not re.fullmatch(r"[\s-]*", x))
            for n, label, values in rows[i:j]:
                _emit_row(emit, n, label, values, header, context)
        i = max(j, i + 1)


def _consecutive(rows):
    tables, current = [], []
    for r in rows:
        if current and r[0] <= current[-1][2] + 1 and (r[2] - r[1]) == (current[-1][2] - current[-1][1]):
            current.append(r)
        else:
            if len(current) >= 2:
                tables.append(current)
            current = [r]
    if len(current) >= 2:
        tables.append(current)
    return tables


def _row_label(words: list[str]) -> str:
    # The label is the words just before the values; stop at a rule or a colon.
    kept = []
    for w in reversed(words):
        if re.fullmatch(r"-+", w) or w.endswith(":"):
            break
        kept.append(w)
    kept = kept[:1] if kept and not re.search(r"[-+.]", " ".join(kept[:1])) else kept[:2]
    return " ".join(reversed(kept))


def _columns(header: str, count: int, context: str) -> list[tuple[str, str | None, str | None]]:
    """The header's columns in order, one per value, when the header names exactly that
    many (a two-line header reads as one: `wall sys create rate Physical write`)."""
    found = []
    for words, needs, template, unit in COLUMN_WORDS:
        for m in re.finditer(words, header, re.I):
            if needs and not re.search(needs, header + " " + context, re.I):
                continue
            metric = _metric(template, _direction(header) or _direction(context))
            if any(f[0] <= m.start() < f[1] or f[2] == template for f in found):
                continue
            found.append((m.start(), m.end(), template, m.group(0), metric, unit))
    found.sort()
    if len(found) != count:
        return [(f"column {n + 1}", None, None) for n in range(count)]
    return [(f[3], f[4], f[5]) for f in found]


def _emit_row(emit, line, label, values, header, context) -> None:
    columns = _columns(header, len(values), context)
    is_change = all(v.endswith("%") for v in values)
    for (name, metric, unit_hint), token in zip(columns, values):
        parsed = _value(token, unit_hint)
        if parsed is None:
            continue
        value, unit, spread = parsed
        emit(line, "change" if is_change else "table", name, value, unit,
             None if is_change else metric, f"{label}: {name} {token}", label=label, spread=spread)


_PROSE_FROM_TO = re.compile(
    rf"(?P<what>[A-Za-z][\w /%-]{{0,60}}?)\s+(?:is |was |are |were |has |have )?"
    rf"(?:\w+\s+){{0,2}}?from\s+(?P<a>{NUM})\s*(?P<ua>{_UNIT})?\s+to\s+(?P<b>{NUM})\s*(?P<ub>{_UNIT})?")
_PROSE_ARROW = re.compile(
    rf"(?P<what>(?:[A-Za-z][\w/%-]*\s+){{0,2}}[A-Za-z][\w/%-]*)?[\s:]*(?P<a>{NUM})\s*(?P<ua>{_UNIT})?"
    rf"\s*(?:→|->|=>)\s*(?P<b>{NUM})\s*(?P<ub>{_UNIT})?")
# "5125 KB/s before and 10424 KB/s after"
_PROSE_BEFORE_AFTER = re.compile(
    rf"(?P<what>(?:[A-Za-z][\w/%-]*\s+){{0,2}}[A-Za-z][\w/%-]*)?[\s:]*(?P<a>{NUM})\s*(?P<ua>{_UNIT})?"
    rf"\s+before\s+and\s+(?P<b>{NUM})\s*(?P<ub>{_UNIT})?\s+after\b")
_PROSE_LOSE_RAW = re.compile(rf"\blos(?:e|es|t|ing)\s+(?:up to\s+|about\s+|around\s+)?(?P<p>{NUM})%"
                             r"[^.]{0,80}?\braw\b", re.I)
_PROSE_OF_RAW = re.compile(rf"(?P<p>{NUM})%\s+(?:of\s+)?(?:the\s+)?(?:performance|throughput)\s+"
                           r"(?:as|of)\s+(?:the\s+)?raw\b", re.I)
_PROSE_CHANGE = re.compile(rf"(?P<p>{NUM})%\s+(?P<how>better|worse|less|more|lower|higher|faster|slower)"
                           r"\s+(?P<what>[A-Za-z][\w/]*(?:\s+(?!and\b|with\b|in\b|on\b|for\b|"
                           r"consuming\b)[A-Za-z][\w/]*)?)")
_PROSE_BY = re.compile(rf"\b(?P<what>(?:[A-Za-z][\w/]*\s+){{0,3}}[A-Za-z][\w/]*)\s+by\s+"
                       rf"(?:more than\s+|over\s+|about\s+|almost\s+)?(?P<p>{NUM})%")
_IDENTIFIER = re.compile(r"\b[A-Za-z][A-Za-z0-9]*_[A-Za-z0-9_]*\b")


def _sentences(text: str) -> list[str]:
    return [s for s in re.split(r"(?<=[.!?])\s+(?=[A-Z>])", text) if s.strip()]


def _prose_units(lines: list[str]) -> list[tuple[int, str]]:
    """(first line, text) of each sentence group: a paragraph's wrapped lines joined,
    a bullet (`*`, `**`, `-`, `1.`) starting a unit of its own."""
    units: list[list] = []
    for n, line in enumerate(lines, 1):
        s = line.strip()
        if not s:
            units.append(None)
            continue
        if units and units[-1] is not None and not re.match(r"(?:[*•-]+|\d+[.)])\s", s):
            units[-1][1] += " " + s
        else:
            units.append([n, s])
    return [(u[0], u[1]) for u in units if u is not None]


def _prose_claims(lines, emit) -> None:
    units = _prose_units(lines)
    for index, (n, unit) in enumerate(units):
        # Quote marks of a reply, inside a line when the mail's breaks were lost.
        text = re.sub(r"(?:^|\s)>(?=\s)", " ", unit)
        context = " ".join(u for _, u in reversed(units[max(0, index - 3):index]))
        taken: list[tuple[int, int]] = []

        def free(m) -> bool:
            if any(a < m.end() and m.start() < b for a, b in taken):
                return False
            taken.append((m.start(), m.end()))
            return True

        for pattern in (_PROSE_FROM_TO, _PROSE_BEFORE_AFTER, _PROSE_ARROW):
            for m in pattern.finditer(text):
                if not free(m):
                    continue
                what = (m.group("what") or "").strip()
                ua, ub = _unit(m.group("ua")), _unit(m.group("ub"))
                unit = ua or ub or "count"
                before_text = text[:m.start()] + " " + context
                metric, _ = _column(what, before_text) if what else (None, None)
                if metric is None and unit.endswith("B/s"):   # a bandwidth by its unit alone
                    metric = _metric("{d}.bw_kib_s", _direction(text) or _direction(context))
                for label, key, u in (("before", "a", ua or unit), ("after", "b", ub or unit)):
                    emit(n, "prose", what or "value", number(m.group(key)), u, metric,
                         m.group(0).strip(), label=label, group=_parent_bullet(units, index))
        sentences = _sentences(text)
        for s_index, sentence in enumerate(sentences):
            for pattern, ratio in ((_PROSE_LOSE_RAW, lambda p: 1 - p / 100),
                                   (_PROSE_OF_RAW, lambda p: p / 100)):
                for m in pattern.finditer(sentence):
                    label = _condition(sentences, s_index)
                    emit(n, "prose", "share of raw device", round(ratio(number(m.group("p"))), 4),
                         "ratio", "ratio.fs_to_raw", m.group(0).strip(), label=label)
            for m in list(_PROSE_CHANGE.finditer(sentence)) + list(_PROSE_BY.finditer(sentence)):
                what = m.group("what").strip()
                how = m.groupdict().get("how")
                emit(n, "change", f"{how} {what}" if how else what, number(m.group("p")), "%",
                     None, m.group(0).strip(), label="change")


def _parent_bullet(units: list[tuple[int, str]], index: int) -> str | None:
    """The bullet a `** ...` line sits under: the workload its numbers belong to."""
    depth = len(re.match(r"[*•-]*", units[index][1]).group(0))
    if depth < 2:
        return None
    for _, text in reversed(units[:index]):
        d = len(re.match(r"[*•-]*", text).group(0))
        if 0 < d < depth:
            return text[d:].strip()
    return None


def _condition(sentences: list[str], index: int) -> str | None:
    """The code a prose claim's condition is named by: an identifier in its own
    sentence (`by calling blockdev_direct_IO_no_locking()`), else in the two after it
    (`... is caused by the use of i_mutex`)."""
    for s in [sentences[index]] + sentences[index + 1:index + 3]:
        ids = _IDENTIFIER.findall(s)
        if ids:
            return ids[0]
    return None


# --- one mail ------------------------------------------------------------------

def _claim_text(text: str) -> str:
    """The mail without its diff: C code's `a->b` and hunk numbers are not claims."""
    return re.split(r"(?m)^(?:diff --git |Index: \S|--- a/)|\sdiff --git a/", text, maxsplit=1)[0]


def extract(text: str, *, message_id: str | None = None, subject: str | None = None) -> list[Claim]:
    """The claims of one mail's text, in the order they appear."""
    # A reply's quote marks: the quoted mail's lines read as the mail's own.
    lines = [re.sub(r"^(?:>[ \t]?)+", "", line) for line in _claim_text(text).splitlines()]
    workloads = sorted([(c.line, c.text) for c in _fio_command_lines(lines) + _fio_job_files(lines)
                        + _fs_mark_commands(lines) + _steps(lines)])
    devices = _devices(lines)
    labels = _labels(lines)
    claims: list[Claim] = []
    seen: set = set()

    def emit(line, kind, quantity, value, unit, metric, as_published, *, label=None, group=None,
             spread=None):
        key = (line, quantity, value, unit, label)
        if key in seen:
            return
        seen.add(key)
        if label is None:
            near = _nearest(labels, line)
            label = near[1] if near and near[0] <= line else None
        workload = _nearest(workloads, line)
        device = _nearest(devices, line)
        if metric and metric.startswith("device.") and device and device[2] in STACKED_CLASSES \
                and re.search(r"\bphysical\b", lines[line - 1], re.I):
            # A stacked device's "physical" IOs are its disks': the members' counters.
            metric = _metric(metric.replace("device.", "device.members.", 1), None) or metric
        claims.append(Claim(label=label, metric=metric, quantity=quantity, value=value, unit=unit,
                            kind=kind, line=line, as_published=as_published, group=group,
                            workload=workload[1] if workload else None,
                            device=device[1] if device else None,
                            device_class=device[2] if device else None, spread=spread,
                            message_id=message_id, subject=subject))

    _fio_claims(lines, emit)
    _fs_mark_claims(lines, emit)
    _markdown_tables(lines, emit)
    _adhoc_tables(lines, emit, " ".join(lines)[:4000])
    _prose_claims(lines, emit)
    return sorted(claims, key=lambda c: c.line)


# --- files, mboxes, threads ----------------------------------------------------

def _body(msg) -> str:
    parts = msg.walk() if msg.is_multipart() else [msg]
    texts = []
    for part in parts:
        if part.get_content_type() != "text/plain":
            continue
        payload = part.get_payload(decode=True)
        if payload is None:
            continue
        texts.append(payload.decode(part.get_content_charset() or "utf-8", "replace"))
    return "\n".join(texts)


def from_mbox(path: Path) -> list[Claim]:
    """Every message's claims; a number a later reply quotes is kept once, with the
    message that published it first."""
    import mailbox

    claims, seen = [], set()
    box = mailbox.mbox(str(path), factory=lambda f: email.message_from_binary_file(
        f, policy=email.policy.compat32))
    for msg in box:
        mid = (msg.get("Message-Id") or "").strip().strip("<>") or None
        subject = " ".join(str(msg.get("Subject", "")).split()) or None
        for c in extract(_body(msg), message_id=mid, subject=subject):
            key = (c.metric or c.quantity, c.value, c.unit, c.label)
            if key not in seen:
                seen.add(key)
                claims.append(c)
    return claims


def load(spec: str) -> list[Claim]:
    """A file (an mbox, one mail with headers, or a mail's text as pasted), a series
    directory (kernels/series/*: each patch's mail), or a Message-ID whose thread
    lore gives (through b4, as iowatch.kernel.lore does)."""
    p = Path(spec)
    if p.is_dir():
        from iowatch.kernel.series import SeriesError, from_directory

        try:
            series = from_directory(p)
        except SeriesError as e:
            raise ClaimsError(str(e)) from None
        return [c for patch in series.patches
                for c in extract(_body(email.message_from_string(patch.text)),
                                 subject=f"[{patch.index}/{len(series.patches)}] {patch.subject}")]
    if p.is_file():
        raw = p.read_bytes()
        if raw.startswith(b"From "):
            claims = from_mbox(p)
            if claims or b"\nFrom: " in raw[:4000]:
                return claims
        msg = email.message_from_bytes(raw, policy=email.policy.compat32)
        if msg.get("Subject") and msg.get("From") and msg.get_payload():
            return extract(_body(msg), message_id=(msg.get("Message-Id") or "").strip("<> ") or None,
                           subject=" ".join(str(msg["Subject"]).split()))
        return extract(raw.decode("utf-8", "replace"))
    if p.exists():
        raise ClaimsError(f"{spec}: not a file")
    from iowatch.kernel import lore
    from iowatch.kernel.series import SeriesError

    if lore.message_id(spec) is None:
        raise ClaimsError(f"{spec!r} is neither a file (an mbox or a mail's text), a series "
                          "directory, nor a Message-ID")
    try:
        with lore.thread_mbox(spec, instead="pass that file to iowatch claims") as mbox:
            return from_mbox(mbox)
    except SeriesError as e:
        raise ClaimsError(str(e)) from None


# --- which study a mail's claims belong to -------------------------------------

@dataclass(frozen=True)
class StudyMatch:
    study: str            # the study's slug
    options: tuple[str, ...]   # workload options the mail and the study agree on
    metrics: tuple[str, ...]   # metrics only this study has, that the mail claims
    device_class: str | None   # a device class the mail names and the study runs on

    def why(self) -> str:
        parts = []
        if self.options:
            parts.append(f"{len(self.options)} workload options agree ({', '.join(self.options)})")
        if self.metrics:
            parts.append(f"its own metrics claimed ({', '.join(self.metrics)})")
        if self.device_class:
            parts.append(f"device class {self.device_class}")
        return "; ".join(parts)


def workload_options(text: str) -> set[tuple[str, str]]:
    """(option, value) pairs of a fio command line (--k=v) or job file (k=v), lower-cased,
    or of an fs_mark command line (-k v, -S0), whose flags keep their case (-s, -S)."""
    if text.startswith("fs_mark"):
        return set(re.findall(r"-(\w)\s*((?!-)\S*)", text[len("fs_mark"):]))
    pairs = re.findall(r"(?:^|\s|--)([a-z_]+)=(\S+)", text, re.M)
    return {(k.lower(), v.lower()) for k, v in pairs}


def _study_options(study) -> set[tuple[str, str]]:
    out = set()
    for cls in study.device_classes:
        w = study.workload("full", cls)
        if "fio" in w:
            opts = [w["fio"].get("global", {})] + [j.get("options", {}) for j in w["fio"].get("jobs", [])]
            out |= {(k.lower(), str(v).lower()) for o in opts for k, v in o.items()
                    if not str(v).startswith("{")}
        if "fs_mark" in w:
            out |= {(k, str(v)) for k, v in w["fs_mark"].get("options", {}).items()}
    return out


_GENERIC_METRIC = re.compile(r"^(?:read|write|trim|mixed|device|cpu)\.|^wall_s$")


def match_study(claims: list[Claim], studies: dict) -> StudyMatch | None:
    """The study whose workload the mail's claims describe: two or more workload
    options in common, or a metric that no other study has (the ext4/raw ratio, the
    f2fs NAT counters) with nothing against it. None when no study fits."""
    # A canary watches the platform: no mail's workload is its.
    studies = {slug: s for slug, s in studies.items() if not s.canary}
    counts: dict[str, int] = {}
    for s in studies.values():
        for m in {m.metric for m in s.metrics} | {r.metric for e in s.published for r in e.results}:
            counts[m] = counts.get(m, 0) + 1
    mail_options = set().union(*(workload_options(c.workload) for c in claims if c.workload)) \
        if any(c.workload for c in claims) else set()
    claimed = {c.metric for c in claims if c.metric}
    classes = {c.device_class for c in claims if c.device_class}
    best = None
    mail_rw = {v for k, v in mail_options if k in ("rw", "readwrite")}
    for slug, s in sorted(studies.items()):
        study_options = _study_options(s)
        study_rw = {v for k, v in study_options if k in ("rw", "readwrite")}
        if mail_rw and study_rw and not mail_rw <= study_rw:
            # The mail runs an I/O pattern the study does not: sizes and flags in
            # common do not make it the same workload.
            continue
        options = tuple(sorted(f"{k}={v}" if v else k for k, v in mail_options & study_options))
        own = {m.metric for m in s.metrics} | {r.metric for e in s.published for r in e.results}
        metrics = tuple(sorted(m for m in claimed & own if counts.get(m) == 1
                               and not _GENERIC_METRIC.match(m)))
        device = next(iter(sorted(classes & set(s.device_classes))), None)
        if len(options) < 2 and not metrics:
            continue
        match = StudyMatch(slug, options, metrics, device)
        score = (2 * len(options) + 2 * len(metrics) + (1 if device else 0))
        if best is None or score > best[0]:
            best = (score, match)
    return best[1] if best else None
