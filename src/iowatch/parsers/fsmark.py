"""Parser of fs_mark's output: the `#` header and the table of iterations.

fs_mark prints one table row per iteration (-L): file system use, the count of
files written so far (cumulative), the file size, the iteration's files per
second and its application overhead; with -v, min/avg/max microseconds of each
system call. Several -d directories or -t threads change only the counts. Each
row becomes samples of job "iteration N" in group "fsmark"; the whole run gets
a group-level files/s (total files over total time) and mean app overhead.

Every figure in a row must read as fs_mark prints it (digits, a decimal point):
`inf`, `nan`, a negative number, a figure past 2^64 or a Count below the row
before is a ParseError naming the line.
"""

from __future__ import annotations

import math
import re

from iowatch.metrics import FSMARK_SYSCALLS
from iowatch.samples import ParseError, ParseResult, Sample, plausible

GROUP = "fsmark"

_HEADER = re.compile(r"^\s*FSUse%\s+Count\s+Size\s+Files/sec\s+App Overhead(.*)$")
_SYSCALL_COLUMN = re.compile(r"(\w+) \(Min/Avg/Max\)")
_VERSION = re.compile(r"^#\s*Version ([\d.]+),")
_ROW_START = re.compile(r"^\s*\d")
_FIGURE = re.compile(r"^\d+(?:\.\d+)?$")


def _header_syscalls(rest: str, path: str, lineno: int) -> list[str]:
    calls = [c.lower() for c in _SYSCALL_COLUMN.findall(rest)]
    unknown = [c for c in calls if c not in FSMARK_SYSCALLS]
    if unknown:
        raise ParseError(path, lineno, f"fs_mark -v columns among {', '.join(FSMARK_SYSCALLS)}",
                         unknown[0])
    return calls


def parse(text: str, path: str = "<stdin>") -> ParseResult:
    result = ParseResult(tool="fs_mark", tool_version=None)
    calls: list[str] | None = None      # None: not inside a table
    iteration = 0
    previous_count = 0.0
    files_and_rates: list[tuple[float, float]] = []
    overheads: list[float] = []

    for lineno, line in enumerate(text.splitlines(), 1):
        if m := _VERSION.match(line):
            result.tool_version = m.group(1)
        elif m := _HEADER.match(line):
            calls = _header_syscalls(m.group(1), path, lineno)
            previous_count = 0.0   # a new run: Count starts again
        elif calls is not None and _ROW_START.match(line):
            columns = ["fs_use_pct", "files", "file_size_bytes", "files_per_s", "app_overhead_us"]
            columns += [f"{call}_{stat}_us" for call in calls for stat in ("min", "avg", "max")]
            expected = f"an fs_mark row of {len(columns)} numbers ({', '.join(columns[:5])}"
            expected += ", then min/avg/max per system call)" if calls else ")"
            figures = line.split()
            # float() would also take 'inf', 'nan', '1_0': fs_mark prints digits only.
            if len(figures) != len(columns) or not all(_FIGURE.match(v) for v in figures):
                raise ParseError(path, lineno, expected, line.strip())
            values = [float(v) for v in figures]
            if not all(map(plausible, values)):
                raise ParseError(path, lineno, expected + " below 2^64", line.strip())
            iteration += 1
            row = dict(zip(columns, values))
            if row["files"] < previous_count:
                raise ParseError(path, lineno, f"a Count of at least {previous_count:.0f} "
                                 "(fs_mark's Count is cumulative)", line.strip())
            job = f"iteration {iteration}"
            result.samples += [Sample.of(f"fsmark.{name}", value, GROUP, job)
                               for name, value in row.items()]
            # Count is cumulative: this iteration wrote the difference.
            files_and_rates.append((row["files"] - previous_count, row["files_per_s"]))
            previous_count = row["files"]
            overheads.append(row["app_overhead_us"])
        else:
            calls = None  # blank line or text: the table has ended

    if iteration == 0:
        raise ParseError(path, None, "an fs_mark table (a 'FSUse%  Count  Size  Files/sec  "
                         "App Overhead' header and its rows)", text.strip()[:60])
    # Files over time, i.e. the files-weighted harmonic mean of the rows' rates.
    total_files = sum(files for files, _ in files_and_rates)
    total_seconds = sum(files / rate for files, rate in files_and_rates if rate > 0)
    if not math.isfinite(total_seconds):
        raise ParseError(path, None, "fs_mark rates whose files take a finite time "
                         "(Count over Files/sec)", f"{total_files:.0f} files")
    if total_seconds > 0:
        result.samples.append(Sample.of("fsmark.files_per_s", total_files / total_seconds, GROUP))
    result.samples.append(Sample.of("fsmark.app_overhead_us", sum(overheads) / len(overheads), GROUP))
    return result
