"""Claims from patch mails (issue 25, item 5).

The five seeds: every number of each study's `published:` section (the study
files are written by hand from the posts, independently of iowatch.claims.mail) is
extracted from the seed's text with its metric, unit and label; and every
number on the seeds' own result lines (found here by a plain regex over the
text) is extracted. Two real mails of other series (tests/fixtures/mails,
README there) are read the same way, checked against their own lines.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from iowatch.claims.mail import ClaimsError, Claim, extract, load
from iowatch.cli import main
from iowatch.metrics import METRICS
from iowatch.studies import load_studies

REPO = Path(__file__).resolve().parents[1]
SEEDS = REPO / "tests" / "fixtures" / "seeds"
MAILS = REPO / "tests" / "fixtures" / "mails"
STUDIES = load_studies(REPO / "jobs" / "studies")
# The studies of a seed post (the platform canary has none).
# The studies that carry a post's numbers: a seed's second study (seed 003's wbt
# half) has none, and the post's mail matches the study that has them.
SEEDED = sorted(slug for slug, study in STUDIES.items() if study.seed and study.published)


def _norm(label: str) -> str:
    return re.sub(r"[\s_()]+", "", label.lower()).replace("branch", "")


def _label_matches(claim_label: str | None, entry) -> bool:
    """The mail's condition names the study's result set: the study's label, or
    (where the study named the set by what the post says of it, as 001 does) a
    name the study's kernel line gives."""
    if not claim_label:
        return False
    got, want = _norm(claim_label), _norm(entry.label)
    return got == want or (got and got in _norm(entry.kernel))


def _claims(study):
    return extract((SEEDS / study.seed).read_text())


@pytest.mark.parametrize("slug", SEEDED, ids=str)
def test_every_published_number_of_a_seed_is_extracted_with_label_and_unit(slug):
    study = STUDIES[slug]
    claims = _claims(study)
    missing = []
    for entry in study.published:
        for r in entry.results:
            found = [c for c in claims if c.metric == r.metric and c.unit == r.unit
                     and c.value == pytest.approx(r.value) and _label_matches(c.label, entry)]
            if not found:
                near = [(c.label, c.metric, c.value, c.unit) for c in claims
                        if c.value == pytest.approx(r.value)]
                missing.append(f"{entry.label}: {r.metric} = {r.value} {r.unit} "
                               f"({r.as_published!r}); claims with that value: {near}")
                continue
            c = found[0]
            if r.spread is not None:
                assert c.spread == pytest.approx(r.spread), f"{slug} {r.metric}: spread {c.spread}"
            if c.device_class is not None:
                assert c.device_class == entry.device_class, \
                    f"{slug} {entry.label} {r.metric}: device {c.device!r} read as {c.device_class}"
    assert not missing, f"{study.seed}: " + "; ".join(missing)


@pytest.mark.parametrize("slug,device_class", [("f2fs-dio-write", {"sdcard", "emmc"}),
                                               ("ext4-dio-randread", {"ssd"}),
                                               ("xfs-smallfile-writeback", {"ssd-raid0"})])
def test_the_device_a_seed_names_is_read(slug, device_class):
    got = {c.device_class for c in _claims(STUDIES[slug]) if c.kind != "change"}
    assert got == device_class


def test_seed_000_both_environments_keep_their_own_command_line_and_device():
    claims = [c for c in _claims(STUDIES["f2fs-dio-write"]) if c.quantity == "aggrb"]
    assert [(c.label, c.device_class, c.value) for c in claims] == [
        ("before", "sdcard", 5125), ("patched", "sdcard", 10424),
        ("before", "emmc", 103583), ("patched", "emmc", 124860)]
    assert claims[0].workload.endswith("--numjobs=10")   # the option on its own line in the mail
    assert "--directory=/data/test/" in claims[2].workload and claims[2].workload.endswith("--numjobs=16")


def _numbers(line: str) -> list[float]:
    return [float(n.replace(",", "")) for n in re.findall(r"=\s*(\d[\d,]*(?:\.\d+)?)", line)]


@pytest.mark.parametrize("seed", ["000_6a601ae0651ac377.txt", "003_19c316252e130d8a.txt"])
def test_every_number_on_a_seeds_fio_lines_is_extracted(seed):
    text = (SEEDS / seed).read_text()
    claims = extract(text)
    lines = [(n, line) for n, line in enumerate(text.splitlines(), 1) if "aggrb=" in line]
    assert lines
    for n, line in lines:
        got = sorted(c.value for c in claims if c.line == n)
        assert got == sorted(_numbers(line)), f"{seed}:{n}: {line!r}"


def test_every_cell_of_seed_002s_table_is_extracted():
    text = (SEEDS / "002_5c5f7f53b18cc9f0.txt").read_text()
    claims = extract(text)
    rows = [(n, [c.strip() for c in line.strip().strip("|").split("|")])
            for n, line in enumerate(text.splitlines(), 1)
            if line.startswith("|") and re.search(r"\|\s*\d", line)]
    assert len(rows) == 2
    for n, cells in rows:
        got = sorted(c.value for c in claims if c.line == n)
        assert got == sorted(float(c) for c in cells[1:]) and \
            {c.label for c in claims if c.line == n} == {cells[0]}


def test_seed_004s_collapsed_table_reads_every_row_value():
    text = (SEEDS / "004_b8b3fff2e441691a.txt").read_text()
    claims = [c for c in extract(text) if c.kind == "table"]
    for label in ("unpatched", "patched"):
        # The row as the post has it: the label, then five values up to the next row.
        row = re.search(rf"\s{label} ((?:\S+ ){{4}}\S+)", text).group(1).split()
        got = [c for c in claims if c.label == label]
        assert [c.as_published.split()[-1] for c in got] == row
    assert {c.metric for c in claims} == {"wall_s", "cpu.sys_s", "fsmark.files_per_s",
                                          "device.members.write_iops", "device.members.write_bw_kib_s"}


def test_every_metric_a_claim_names_is_in_the_metric_table():
    names = {c.metric for f in list(SEEDS.glob("0*.txt")) + list(MAILS.glob("*.txt"))
             for c in load(str(f)) if c.metric}
    assert names and names <= set(METRICS), names - set(METRICS)


# --- two real mails of other series (tests/fixtures/mails/README.md) -----------

def test_fio_job_lines_of_the_io_submit_mail():
    path = MAILS / "io_submit-non-blocking-2012.txt"
    text = path.read_text()
    claims = load(str(path))
    job_lines = [(n, line) for n, line in enumerate(text.splitlines(), 1)
                 if re.match(r"(read|write)\s*: io=", line)]
    assert len(job_lines) == 4
    for n, line in job_lines:
        ddir = line.split(":")[0].strip()
        got = {c.quantity: c for c in claims if c.line == n}
        assert sorted(c.value for c in got.values()) == sorted(_numbers(line)), line
        assert (got["bw"].metric, got["bw"].unit) == (f"{ddir}.bw_kib_s", "B/s")
        assert (got["iops"].metric, got["runt"].unit) == (f"{ddir}.iops", "ms")
        assert got["bw"].label == ("Unpatched" if n < text.index("**Patched**") and
                                   n < text[:text.index("**Patched**")].count("\n") + 1 else "Patched")
        assert got["bw"].workload == "fio rand-rw-disk.fio --max-jobs=2 --latency-log --bandwidth-log"
    slat = [c for c in claims if c.kind == "fio-latency"]
    assert len(slat) == 16 and {c.unit for c in slat} == {"us"}
    assert {c.metric for c in slat} == {f"{d}.slat_{s}_us" for d in ("read", "write")
                                        for s in ("min", "max", "mean", "stddev")}


def test_prose_claims_of_the_cfq_slice_mail():
    path = MAILS / "cfq-adapt-slice-2009.txt"
    claims = load(str(path))
    pairs = re.findall(r"the (bandwidth|maximum latency) is \w+ from ([\d.]+)(\S*) to ([\d.]+)(\S*)",
                       path.read_text())
    assert len(pairs) == 4 and len(claims) == 8
    for i, (what, a, ua, b, ub) in enumerate(pairs):
        before, after = claims[2 * i], claims[2 * i + 1]
        assert (before.label, after.label) == ("before", "after")
        assert (before.value, after.value) == (float(a), float(b))
        # "from 7.667s to 1.728": the second number takes the first one's unit.
        assert before.unit == after.unit == (ua or ub)
        assert before.metric == ("read.bw_kib_s" if what == "bandwidth" else "read.lat_max_us")
        assert before.device_class == "hdd"   # "on a rotational disk"
    assert claims[0].group == "32 concurrent processes performing random reads"
    assert claims[-1].group == "32 concurrent processes performing sequential reads"


def test_nothing_in_a_patch_hunk_is_a_claim():
    # C code's `a->b` and a hunk's numbers are not claims: only the text before the diff.
    text = (MAILS / "cfq-adapt-slice-2009.txt").read_text()
    assert all(c.line < text.splitlines().index("diff --git a/block/cfq-iosched.c b/block/cfq-iosched.c")
               for c in extract(text))


def test_an_mbox_keeps_each_message_and_a_quoted_number_once(tmp_path):
    seed = (SEEDS / "000_6a601ae0651ac377.txt").read_text()
    quoted = "\n".join("> " + line for line in seed.splitlines())
    mbox = tmp_path / "thread.mbox"
    mbox.write_text(
        "From chao Mon Dec 28 05:05:55 2015\nFrom: Chao Yu <chao@example.org>\n"
        "Subject: [RFC PATCH 1/2] f2fs: enhance multithread dio write performance\n"
        "Message-Id: <one@example.org>\n\n" + seed + "\n\n"
        "From reviewer Mon Dec 28 09:00:00 2015\nFrom: A Reviewer <r@example.org>\n"
        "Subject: Re: [RFC PATCH 1/2] f2fs: enhance multithread dio write performance\n"
        "Message-Id: <two@example.org>\n\n" + quoted + "\n")
    claims = load(str(mbox))
    assert len(claims) == len(extract(seed)) == 24
    assert {c.message_id for c in claims} == {"one@example.org"}
    assert claims[0].subject.startswith("[RFC PATCH 1/2]")


def test_the_command_prints_a_table_and_json(tmp_path, capsys):
    path = str(SEEDS / "002_5c5f7f53b18cc9f0.txt")
    assert main(["claims", path]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split()[:4] == ["line", "label", "metric", "value"]
    assert any("Before change" in row and "f2fs.nat_flush_ms" in row and " 158 " in row for row in out)
    assert out[-1].startswith("study: f2fs-nat-flush (its own metrics claimed")
    assert main(["claims", path, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    claims = load(path)
    assert [d.pop("metric_value") for d in data] == [c.metric_value() for c in claims]
    assert [Claim(**d) for d in data] == claims
    assert data[2]["unit"] == "ms" and claims[2].metric_value() == 158  # Flush time (ms)
    empty = tmp_path / "no-numbers.txt"
    empty.write_text("A patch mail that claims nothing.\n")
    assert main(["claims", str(empty)]) == 1
    assert "no performance claims" in capsys.readouterr().err


def test_a_message_id_that_cannot_be_fetched_is_a_clear_error(monkeypatch, capsys):
    # b4 reads git config: its lookups go to a closed port, not to lore.
    monkeypatch.setenv("GIT_CONFIG_COUNT", "1")
    monkeypatch.setenv("GIT_CONFIG_KEY_0", "b4.midmask")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", "http://127.0.0.1:9/%s")
    assert main(["claims", "<500E89D1.9010303@suse.de>"]) == 2
    err = capsys.readouterr().err
    assert "500E89D1.9010303@suse.de" in err and "pass that file to iowatch claims" in err
    with pytest.raises(ClaimsError, match="neither a file"):
        load("no/such/file.mbox")


def test_a_pasted_fs_mark_table_reads_as_iowatchs_own_fs_mark_parser_does():
    # Real fs_mark 3.3 output (tests/fixtures/fs_mark-3.3/README.md), as a mail pastes it.
    from iowatch.parsers import parse_file

    path = REPO / "tests" / "fixtures" / "fs_mark-3.3" / "plain.txt"
    rows = [s.value for s in parse_file(str(path), "auto").samples
            if s.metric == "fsmark.files_per_s" and s.job and s.job.startswith("iteration")]
    claims = [c for c in load(str(path)) if c.metric == "fsmark.files_per_s"]
    assert rows and [c.value for c in claims] == pytest.approx(rows)
    assert {c.workload for c in claims} == {"fs_mark -d d0 -n 200 -s 4096 -L 3 -S0"}


GROUP_METRICS = ("io_kib", "bw_kib_s", "bw_min_kib_s", "bw_max_kib_s", "runtime_min_ms",
                 "runtime_max_ms")


@pytest.mark.parametrize("path", sorted((REPO / "tests" / "fixtures").glob("fio-*/*.txt")),
                         ids=lambda p: f"{p.parent.name}/{p.name}")
def test_pasted_fio_group_lines_read_as_iowatchs_own_fio_parser_does(path):
    # Real fio output (fio 2.16's aggrb= lines and fio 3.33's bw= lines; the fixtures'
    # READMEs say how each was made), as a mail pastes it whole.
    from iowatch.parsers import parse_file

    want = {(s.metric, s.group): s.value for s in parse_file(str(path), "fio-text").samples
            if s.job is None and s.metric.split(".", 1)[1] in GROUP_METRICS}
    got = {(c.metric, c.group): c.metric_value() for c in load(str(path))
           if c.kind == "fio-group" and c.metric}
    assert want and got == pytest.approx(want)


def test_an_aligned_ad_hoc_table_of_the_bulkstat_patch():
    # Dave Chinner's xfs_io patch (tests/fixtures/mails/README.md): a header line,
    # then one line per condition, `with -q` two words long.
    path = MAILS / "xfs_io-bulkstat-quiet.txt"
    lines = path.read_text().splitlines()
    claims = load(str(path))
    assert {c.label for c in claims} == {"unpatched", "with -q"}
    for c in claims:
        row = lines[c.line - 1]
        assert row.startswith(c.label) and c.as_published.split()[-1] in row.split()
    wall = {c.label: (c.value, c.unit) for c in claims if c.metric == "wall_s"}
    assert wall == {"unpatched": (17.823, "s"), "with -q": (15.682, "s")}   # "15.682": the column's s
    iops = {c.label: c.value for c in claims if c.quantity == "IOPS"}
    assert iops == {"unpatched": 70_000, "with -q": 150_000}
    assert {c.unit for c in claims if c.quantity == "bandwidth"} == {"GB/s"}


def test_a_series_directory_reads_each_patch_mail():
    # seed-000's patch 2 quotes the post's numbers in its commit message: each claim
    # there is a published number of the study, under the same condition.
    claims = load(str(REPO / "kernels" / "series" / "seed-000-f2fs-dio-write-alloc"))
    assert claims and {c.subject for c in claims} == {
        "[2/2] f2fs: serialise block allocation of big direct writes"}
    published = {(r.metric, r.value, e.label) for e in STUDIES["f2fs-dio-write"].published
                 for r in e.results}
    for c in claims:
        assert (c.metric, c.value, {"after": "patched"}.get(c.label, c.label)) in published, c
    with pytest.raises(ClaimsError, match="`series` file"):
        load(str(REPO / "kernels" / "series"))


@pytest.mark.parametrize("slug", SEEDED, ids=str)
def test_each_seeds_claims_match_its_own_study(slug):
    from iowatch.claims.mail import match_study

    match = match_study(_claims(STUDIES[slug]), STUDIES)
    assert match is not None and match.study == slug, match
    assert match.options or match.metrics


def test_a_seeds_second_study_without_numbers_does_not_take_its_posts_claims():
    from iowatch.claims.mail import match_study

    wbt = STUDIES["odirect-vs-readers-wbt"]
    assert wbt.seed == STUDIES["odirect-vs-readers"].seed and not wbt.published
    assert match_study(_claims(STUDIES["odirect-vs-readers"]), STUDIES).study == "odirect-vs-readers"


@pytest.mark.parametrize("name", ["io_submit-non-blocking-2012.txt", "cfq-adapt-slice-2009.txt",
                                  "xfs_io-bulkstat-quiet.txt"])
def test_a_mail_of_another_workload_matches_no_study(name):
    # aio random read/write, CFQ slices for 32 readers, bulkstat: none is a study's
    # workload, and read/write bandwidth or wall time alone does not make one.
    from iowatch.claims.mail import match_study

    assert match_study(load(str(MAILS / name)), STUDIES) is None


def test_fs_mark_flags_keep_their_case():
    from iowatch.claims.mail import workload_options

    assert workload_options("fs_mark -D 10000 -S0 -n 10000 -s 4096 -L 120 -d /mnt/0 -d /mnt/1") >= {
        ("D", "10000"), ("S", "0"), ("n", "10000"), ("s", "4096"), ("L", "120")}
    assert workload_options("fio --name seqw --rw=write --bs=2M") == {("rw", "write"), ("bs", "2m")}
