"""fs_mark parser against the real fs_mark: the samples equal the numbers of the printed table."""

from __future__ import annotations

import pytest

from iowatch.metrics import FSMARK_SYSCALLS
from iowatch.parsers import detect_format, fsmark, parse_text
from iowatch.samples import ParseError

from .conftest import values


def printed_rows(output: str) -> list[list[float]]:
    """The table's rows, read independently of the parser: numbers after the FSUse% header."""
    lines = output.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("FSUse%"))
    rows = []
    for line in lines[header + 1:]:
        if not line.strip():
            break
        rows.append([float(x) for x in line.split()])
    return rows


def check_run(output: str, syscalls: tuple[str, ...] = ()) -> dict:
    assert detect_format(output) == "fsmark"
    result = parse_text(output)
    assert result.tool == "fs_mark" and result.tool_version == "3.3"
    v = values(result)
    rows = printed_rows(output)
    assert len(rows) == 2                                     # -L 2
    names = ["fs_use_pct", "files", "file_size_bytes", "files_per_s", "app_overhead_us"]
    names += [f"{c}_{s}_us" for c in syscalls for s in ("min", "avg", "max")]
    for n, row in enumerate(rows, 1):
        assert len(row) == len(names)
        for name, number in zip(names, row):
            assert v[f"fsmark.{name}", "fsmark", f"iteration {n}"] == number, (n, name)
    # The whole run: total files over total time, Count being cumulative.
    files = [rows[0][1], rows[1][1] - rows[0][1]]
    seconds = sum(f / row[3] for f, row in zip(files, rows))
    assert v["fsmark.files_per_s", "fsmark", None] == pytest.approx(sum(files) / seconds)
    assert v["fsmark.app_overhead_us", "fsmark", None] == pytest.approx((rows[0][4] + rows[1][4]) / 2)
    return v


def test_plain_run(run_fsmark):
    v = check_run(run_fsmark("-n", "200", "-s", "4096", "-L", "2", "-S0"))
    assert v["fsmark.files", "fsmark", "iteration 2"] == 400
    assert v["fsmark.file_size_bytes", "fsmark", "iteration 1"] == 4096


def test_verbose_run_has_syscall_times(run_fsmark):
    output = run_fsmark("-n", "100", "-s", "4096", "-L", "2", "-S1", "-v")
    v = check_run(output, syscalls=FSMARK_SYSCALLS)
    assert v["fsmark.fsync_avg_us", "fsmark", "iteration 1"] > 0


def test_threads_and_directories(run_fsmark):
    output = run_fsmark("-t", "2", "-D", "10", "-N", "5", "-n", "100", "-s", "4096", "-L", "2", "-S0",
                        dirs=("d0", "d1"))
    v = check_run(output)
    # -n files per thread, -t threads in all (shared by the directories)
    assert v["fsmark.files", "fsmark", "iteration 1"] == 100 * 2
    assert "Round Robin between directories across 10 subdirectories" in output


HEADER = "FSUse%        Count         Size    Files/sec     App Overhead\n"


def test_files_per_s_is_the_files_weighted_harmonic_mean():
    text = HEADER + "    68          100         4096        100.0              10\n" \
                    "    68          400         4096        300.0              30\n"
    v = values(parse_text(text))
    # 100 files in 1 s, then 300 files in 1 s
    assert v["fsmark.files_per_s", "fsmark", None] == pytest.approx(200.0)
    assert v["fsmark.app_overhead_us", "fsmark", None] == 20.0


def test_malformed_row_names_the_line():
    text = "#  fs_mark  -d /x\n" + HEADER + "    68          200         4096      16177.3\n"
    with pytest.raises(ParseError) as e:
        fsmark.parse(text, "fsmark.out")
    assert (e.value.path, e.value.line) == ("fsmark.out", 3)
    assert "an fs_mark row of 5 numbers" in str(e.value)


def test_output_without_a_table():
    with pytest.raises(ParseError) as e:
        parse_text("#  fs_mark  -d /x -n 10\n#\tVersion 3.3, 1 thread(s)\n", path="cut.out")
    assert "an fs_mark table" in str(e.value)
