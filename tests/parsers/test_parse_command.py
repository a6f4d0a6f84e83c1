"""iowatch parse, run as a command: JSON lines out, failures on stderr, exit 0/1/2."""

from __future__ import annotations

import json
import subprocess
import sys

from .conftest import FIXTURES, split_normal_json


def iowatch_parse(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "iowatch.cli", "parse", *args],
                          input=stdin, capture_output=True, text=True, timeout=60)


def test_real_fio_json_prints_json_lines(run_fio, tmp_path):
    out = run_fio("--name=w", "--rw=write", "--bs=64k", "--size=2m", "--direct=1")
    (tmp_path / "w.json").write_text(out)
    p = iowatch_parse(str(tmp_path / "w.json"))
    assert p.returncode == 0, p.stderr
    lines = [json.loads(line) for line in p.stdout.splitlines()]
    job = json.loads(out)["jobs"][0]["write"]
    by_key = {(s["metric"], s["group"], s["job"]): s for s in lines}
    sample = by_key["write.io_kib", "0", "w"]
    assert sample == {"metric": "write.io_kib", "value": job["io_kbytes"], "unit": "KiB",
                      "direction": "info", "group": "0", "job": "w"}
    assert by_key["write.bw_kib_s", "0", "w"]["value"] == job["bw"]

    from_stdin = iowatch_parse("-", stdin=out)
    assert from_stdin.returncode == 0 and from_stdin.stdout == p.stdout


def test_format_can_be_forced(run_fio, tmp_path):
    out = run_fio("--name=w", "--rw=write", "--bs=64k", "--size=2m", "--direct=1",
                  output_format="normal,json")
    (tmp_path / "both.out").write_text(out)
    auto = iowatch_parse(str(tmp_path / "both.out"))
    text = iowatch_parse(str(tmp_path / "both.out"), "--format", "fio-text")
    assert auto.returncode == text.returncode == 0
    bw = {fmt: next(json.loads(line)["value"] for line in p.stdout.splitlines()
                    if '"write.bw_kib_s"' in line and '"job": "w"' in line)
          for fmt, p in (("auto", auto), ("text", text))}
    json_part, _ = split_normal_json(out)
    assert bw["auto"] == json.loads(json_part)["jobs"][0]["write"]["bw"]   # the JSON's exact figure
    assert bw["text"] != bw["auto"] or bw["auto"] % 1024 == 0             # the text's rounded one

    as_fsmark = iowatch_parse(str(tmp_path / "both.out"), "--format", "fsmark")
    assert as_fsmark.returncode == 2 and "expected an fs_mark table" in as_fsmark.stderr


def test_garbage_exits_2_naming_file_line_and_expectation(tmp_path):
    path = tmp_path / "garbage.txt"
    path.write_text("\nhello, this is not benchmark output\n")
    p = iowatch_parse(str(path))
    assert p.returncode == 2 and p.stdout == ""
    assert f"{path}:2: expected fio JSON, fio text or fs_mark output, found 'hello," in p.stderr


def test_truncated_json_exits_2_naming_the_line(tmp_path):
    lines = (FIXTURES / "fio-2.16" / "seqw-group.json").read_text().splitlines()[:25]
    path = tmp_path / "cut.json"
    path.write_text("\n".join(lines) + "\n")
    p = iowatch_parse(str(path))
    assert p.returncode == 2
    assert f"{path}:26: expected fio JSON" in p.stderr


def test_malformed_group_line_exits_2(tmp_path):
    path = tmp_path / "seed.txt"
    path.write_text("WRITE: io=163840KB, aggrb=fast, minb=512KB/s, maxb=776KB/s, mint=1msec, maxt=2msec\n")
    p = iowatch_parse(str(path))
    assert p.returncode == 2
    assert f"{path}:1: expected a fio group line" in p.stderr and "aggrb=fast" in p.stderr


def test_missing_file_exits_2(tmp_path):
    p = iowatch_parse(str(tmp_path / "nope.json"))
    assert p.returncode == 2
    assert f"cannot read {tmp_path / 'nope.json'}: No such file or directory" in p.stderr


def test_failed_job_exits_1_with_the_rest_parsed(run_fio, tmp_path):
    (tmp_path / "plain").write_text("a file, so plain/x cannot be created\n")
    out = run_fio("--name=ok", "--rw=write", "--size=1m",
                  "--name=bad", "--rw=write", "--size=1m", "--filename=plain/x", expect_rc=1)
    (tmp_path / "run.json").write_text(out)
    p = iowatch_parse(str(tmp_path / "run.json"))
    assert p.returncode == 1
    assert "fio job 'bad' in group 0 failed with error 20 (Not a directory)" in p.stderr
    jobs = {json.loads(line)["job"] for line in p.stdout.splitlines()}
    assert "ok" in jobs and "bad" not in jobs


def test_seed_file_parses_its_quoted_lines():
    p = iowatch_parse(str(FIXTURES / "seeds" / "000_6a601ae0651ac377.txt"))
    assert p.returncode == 0, p.stderr
    samples = [json.loads(line) for line in p.stdout.splitlines()]
    aggrb = [s["value"] for s in samples if s["metric"] == "write.bw_kib_s"]
    assert aggrb == [5125, 10424, 103583, 124860]
