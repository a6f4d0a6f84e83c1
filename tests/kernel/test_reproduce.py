"""`iowatch reproduce`: every seed maps to its series, study and published
labels, and the claim judge (iowatch.judging.claims) gives each published claim its
outcome from the lab's verdict (iowatch.judging.compare_sides, not a copy).

The check directories here are written as `iowatch check` writes them: one
bundle per variant made with iowatch's BundleWriter (guest-NN/bundle) and a
check.json. Their samples are made up to look like the guests' (five
repetitions, a few percent apart, at the magnitudes the virtual lab's vssd and
vhdd give), so that each outcome is decided by the policy, not by the test.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from iowatch import bundle, resources
from iowatch.bundle import BundleWriter
from iowatch.kernel.series_input import load_series
from iowatch.judging.claims import (NOT_COMPARABLE, NOT_REPRODUCED, NOT_REPRODUCIBLE, OPPOSITE,
                                    REPRODUCED, published_claims)
from iowatch.claims.seeds import SeedError, find_seed, judge_check_dir, label_bundle, load_seed, report
from iowatch.studies import load_studies, load_study
from iowatch.yamlfile import DataFileError

REPO = Path(__file__).resolve().parents[2]
SERIES = REPO / "kernels" / "series"
IOWATCH = str(Path(sys.executable).parent / "iowatch")
# Five repetitions' spread around a median: about 2% apart, as the guests' runs are.
SPREAD = (0.97, 1.02, 0.99, 1.03, 1.00)
DEVICES = {"vssd": "ssd", "vhdd": "hdd", "vsd": "sdcard", "vraid0": "ssd-raid0"}


@pytest.fixture(scope="module")
def studies():
    return load_studies(resources.studies_dir())


def write_variant(path: Path, seed, index: int, cells: dict[tuple[str, str], dict[tuple[str, str], float]],
                  boot: float = 1.0):
    """A variant's bundle, one boot: per (device, filesystem) cell, per (group,
    metric) the median its five repetitions spread around, times the boot's offset."""
    w = BundleWriter(path, run_id=str(uuid.uuid4()),
                     kernel={"release": f"6.12.117-iowatch-{index}",
                             "series": {"name": seed.name, "base": "debian-base"},
                             "patch": {"index": index}},
                     host={"name": "vlab", "kind": "qemu"},
                     devices=[{"name": d, "class": c} for d, c in DEVICES.items()],
                     label="base" if index == 0 else f"base+p1..p{index}")
    for (device, fs), medians in cells.items():
        # The raw device's repetitions spread on their own, so a ratio to raw per
        # repetition pair (iowatch.ratio) spreads as a measured one does.
        spread = SPREAD[::-1] if fs == "raw" else SPREAD
        for rep, factor in enumerate(spread, 1):
            samples = [{"metric": metric, "value": round(value * factor * boot, 4), "group": group,
                        "job": None} for (group, metric), value in medians.items()]
            w.add_repetition(f"{seed.study.slug}/{device}/{fs}", seed.study.slug, rep, samples,
                             device=device, filesystem=fs, params={"profile": "quick"})
    w.close("passed")
    return path


def write_check(out: Path, seed, variants: dict[int, dict], *, regressing=(2,),
                failed: dict[int, str] | None = None, states: dict[int, str] | None = None) -> Path:
    """A check directory as `iowatch check` writes one: per measured variant its
    round 0 of two boots (guest-NN/bundle, then variant-NN-boot2/bundle, 2% apart:
    a check never judges one boot a side), and check.json (states: each patch's
    state against its parent, as the check judged it)."""
    rows = []
    states = states or {i: "regression" if i in regressing else "no-change"
                        for i in variants if i > 0}
    for index, cells in variants.items():
        where = out / f"guest-{index:02d}" / "bundle"
        write_variant(where, seed, index, cells, boot=0.99)
        again = out / f"variant-{index:02d}-boot2" / "bundle"
        write_variant(again, seed, index, cells, boot=1.01)
        rows.append({"index": index, "status": "passed", "bundle": str(where),
                     "extra_bundles": [str(again)], "state": states.get(index)})
    for index, status in (failed or {}).items():
        rows.append({"index": index, "status": status, "bundle": None, "extra_bundles": []})
    (out / "check.json").write_text(json.dumps(
        {"series": seed.name, "base": "debian-base", "regressing_patches": list(regressing),
         "variants": sorted(rows, key=lambda r: r["index"])}, indent=1))
    return out


def outcomes(rep) -> dict[tuple[str, str, str, str], str]:
    return {(r.claim.metric, r.claim.before.label, r.claim.after.label, r.claim.device_class):
            r.outcome for r in rep.rows}


# --- every seed maps to what exists ---------------------------------------------------

@pytest.mark.parametrize("number", ["000", "001", "002", "003", "004"])
def test_every_seed_maps_to_its_series_study_and_published_labels(number, studies):
    seed = find_seed(number, studies, SERIES)
    assert seed.series_dir.parent == SERIES and seed.name.startswith(f"seed-{number}-")
    series = load_series(str(seed.series_dir))
    assert len(series.patches) == 2
    assert seed.study.slug in studies and seed.study.seed.startswith(number)
    published = {p.label for p in seed.study.published}
    assert set(seed.before.labels) | set(seed.after.labels) <= published
    assert {seed.before.variant, seed.after.variant} == {1, 2}
    # docs/seeds.md: 6.12 is the post's before for 000 and 002, its after for the others.
    assert seed.before.variant == (1 if number in ("000", "002") else 2)
    # Every claim of the study has a variant on both sides: none is left out by a label.
    found = published_claims(seed.study)
    assert found
    for c in found:
        assert {seed.variant_of(c.before.label), seed.variant_of(c.after.label)} == {1, 2}, c
    # The same seed by its series name, its series directory, and its study.
    for spec in (seed.name, str(seed.series_dir), seed.study.slug, str(int(number))):
        assert find_seed(spec, studies, SERIES).name == seed.name


def test_an_unknown_seed_names_the_seeds_there_are(studies):
    with pytest.raises(SeedError, match="seed-003-odirect-wbt"):
        find_seed("007", studies, SERIES)


def test_a_label_the_study_did_not_publish_is_refused_with_file_and_line(tmp_path, studies):
    d = tmp_path / "seed-001-ext4-dio-read-lock"
    shutil.copytree(SERIES / d.name, d)
    text = (d / "reproduce.yml").read_text().replace("[DIO_LOCKING]", "[DIO-LOCKING]")
    (d / "reproduce.yml").write_text(text)
    with pytest.raises(DataFileError) as e:
        load_seed(d, studies)
    line = next(i for i, s in enumerate(text.splitlines(), 1) if "DIO-LOCKING" in s)
    assert e.value.line == line and "reproduce.yml" in str(e.value)
    assert "'DIO-LOCKING' is not a label of ext4-dio-randread's published sets" in str(e.value)
    (d / "reproduce.yml").write_text(text.replace("DIO-LOCKING", "DIO_LOCKING") + "variants: 2\n")
    with pytest.raises(DataFileError, match="variants"):
        load_seed(d, studies)


def test_a_series_can_name_the_matrix_its_variants_run(tmp_path, studies):
    """Seed 002's reproduce.yml runs its study on the post's class only (a
    packaged matrix by name); a matrix that is neither beside the series nor
    packaged is refused with the file and line."""
    assert Path(find_seed("002", studies, SERIES).matrix).name == "reproduce-seed-002.yml"
    assert find_seed("001", studies, SERIES).matrix is None  # the study file, by default
    d = tmp_path / "seed-002-f2fs-nat-readahead"
    shutil.copytree(SERIES / d.name, d)
    (d / "mine.yml").write_text("matrix: mine\nstudies:\n  - study: f2fs-nat-flush\n")
    text = (d / "reproduce.yml").read_text()
    (d / "reproduce.yml").write_text(text.replace("matrix: reproduce-seed-002", "matrix: mine.yml"))
    assert load_seed(d, studies).matrix == str(d / "mine.yml")
    (d / "reproduce.yml").write_text(text.replace("matrix: reproduce-seed-002", "matrix: nowhere"))
    with pytest.raises(DataFileError, match="'nowhere' is neither a file in") as e:
        load_seed(d, studies)
    assert e.value.line == text.splitlines().index("matrix: reproduce-seed-002") + 1


def test_a_series_can_name_the_host_its_variants_boot_on(tmp_path, studies):
    """Seed 002 boots on the host whose SSD has a latency of its own (the
    guest's null_blk); --hosts still overrides it, and an inventory without that
    host stops the run before anything is built, naming it."""
    assert find_seed("002", studies, SERIES).host == "vlab-nullblk"
    assert find_seed("001", studies, SERIES).host is None  # vlab, by default
    inv = tmp_path / "lab.yml"
    inv.write_text((REPO / "hardware-inventory.yml").read_text().replace("vlab-nullblk:", "vlab-other:"))

    def reproduce(*args):
        return subprocess.run([IOWATCH, "reproduce", "002", "--inventory", str(inv), "--source",
                               str(tmp_path), "--out", str(tmp_path / "out"), "--no-progress", *args],
                              capture_output=True, text=True, timeout=300, cwd=REPO)
    out = reproduce()
    assert out.returncode == 2 and "reproduce.yml boots the variants on host 'vlab-nullblk', " \
        f"which {inv} does not have" in out.stderr, out.stderr
    out = reproduce("--hosts", "vlab-other")  # the host passes: the next refusal is the tree's
    assert out.returncode == 2 and f"{tmp_path} is not a kernel tree" in out.stderr, out.stderr


def test_a_study_cannot_excuse_a_metric_the_post_did_not_publish(tmp_path):
    src = resources.studies_dir() / "f2fs-dio-write.yml"
    text = src.read_text().replace("  write.bw_max_kib_s: *ftl", "  write.iops: *ftl")
    (tmp_path / src.name).write_text(text)
    with pytest.raises(DataFileError, match="not_reproducible_in_vlab: 'write.iops' is not a "
                                            "metric the post published"):
        load_studies(tmp_path)


# --- the claim judge on recorded bundles ------------------------------------------------

def seed_001_cells(ratio: float, iops: float, raw_iops: float = 20000.0, with_ratio: bool = True):
    """The ratio as a recorded bundle may hold it; the judge derives its own from
    the IOPS per repetition pair (iowatch.ratio), so iops/raw_iops is what counts."""
    ext4 = {("randread", "read.iops"): iops, ("randread", "read.clat_p99_us"): 900.0}
    if with_ratio:
        ext4[("randread", "ratio.fs_to_raw")] = ratio
    return {("vssd", "ext4"): ext4, ("vssd", "raw"): {("randread", "read.iops"): raw_iops}}


def seed_003_cells(writer: float, readers: float):
    return {("vhdd", "ext4"): {("writer", "write.bw_kib_s"): writer,
                               ("readers", "read.bw_kib_s"): readers}}


def test_seed_001_the_lock_taken_exclusively_reproduces_the_ratio_to_raw(tmp_path, studies):
    """Variant 2 (DIO_LOCKING's exclusive lock) at 60% of raw, variant 1 (shared) at 95%:
    the post's 0.5 -> 0.99 is reproduced, judged with DIO_LOCKING as the base."""
    seed = find_seed("001", studies, SERIES)
    check = write_check(tmp_path, seed, {0: seed_001_cells(0.95, 19000), 1: seed_001_cells(0.95, 19000),
                                         2: seed_001_cells(0.60, 12000)})
    rep = judge_check_dir(check, seed, studies)
    (row,) = rep.rows
    assert row.outcome == REPRODUCED, row.why
    assert (row.lab.device, row.lab.filesystem, row.lab.verdict) == ("vssd", "ext4", "improvement")
    assert (row.lab.before_n, row.lab.after_n) == (10, 10)  # two boots of 5 a side
    assert 50 < row.lab.change_pct < 65 and row.lab.ci_low < row.lab.change_pct < row.lab.ci_high
    assert round(row.claim.change_pct) == 98
    text = report(rep)
    assert "ratio.fs_to_raw [randread] DIO_LOCKING -> blockdev_direct_IO_no_locking" in text
    assert "+98.0%" in text and "10+10" in text and "reproduced" in text


def test_seed_001_a_control_that_moved_leaves_the_claim_not_comparable(tmp_path, studies):
    """ext4's IOPS rise as the post's ratio did, but the raw device's rose as
    much: the machine, not the lock. The claim judged on ext4's IOPS needs its
    control to hold, so it is not comparable, and says why."""
    seed = find_seed("001", studies, SERIES)
    check = write_check(tmp_path, seed, {0: seed_001_cells(0.95, 19000, 20000),
                                         1: seed_001_cells(0.95, 19000, 20000),
                                         2: seed_001_cells(0.95, 12000, 12600)})
    (row,) = judge_check_dir(check, seed, studies).rows
    assert row.outcome == NOT_COMPARABLE, row.why
    assert "raw read.iops as the control, which moved (+58.7%, improvement)" in row.why


def test_seed_001_without_the_raw_cell_the_ratio_is_not_comparable(tmp_path, studies):
    seed = find_seed("001", studies, SERIES)
    cells = {i: {k: v for k, v in seed_001_cells(0.9, 19000 if i < 2 else 12000,
                                                 with_ratio=False).items() if k[1] == "ext4"}
             for i in range(3)}
    rep = judge_check_dir(write_check(tmp_path, seed, cells), seed, studies)
    (row,) = rep.rows
    assert row.outcome == NOT_COMPARABLE and row.lab is None
    # Judged on ext4's read IOPS, whose control (the raw device's) was never measured.
    assert "with raw read.iops as the control, which was not measured on both sides" in row.why


def test_seed_003_the_writer_reproduced_and_the_readers_opposite(tmp_path, studies):
    """Without REQ_SYNC | REQ_IDLE (variant 2) the writer halves, and here the
    readers fall too, where the post had them rise: opposite, both ways round."""
    seed = find_seed("003", studies, SERIES)
    check = write_check(tmp_path, seed, {0: seed_003_cells(300, 17000), 1: seed_003_cells(300, 17000),
                                         2: seed_003_cells(150, 15000)})
    rep = judge_check_dir(check, seed, studies)
    assert outcomes(rep) == {
        ("write.bw_kib_s", "2.6.32-rc7", "for-2.6.33", "hdd"): REPRODUCED,
        ("read.bw_kib_s", "2.6.32-rc7", "for-2.6.33", "hdd"): OPPOSITE,
        ("write.bw_kib_s", "for-2.6.33", "for-2.6.33+fix", "hdd"): REPRODUCED,
        ("read.bw_kib_s", "for-2.6.33", "for-2.6.33+fix", "hdd"): OPPOSITE}
    # Each claim reads the lab in its own direction: before as the base.
    by = {(r.claim.metric, r.claim.before.label): r.lab for r in rep.rows}
    assert by["write.bw_kib_s", "2.6.32-rc7"].change_pct == pytest.approx(-50, abs=1)
    assert by["write.bw_kib_s", "for-2.6.33"].change_pct == pytest.approx(100, abs=2)
    assert rep.regressing_patches == [2]


@pytest.mark.parametrize("after_ms, expected", [(70.0, REPRODUCED), (100.0, NOT_REPRODUCED)])
def test_seed_002_the_flush_time_is_judged_on_the_sync_that_holds_it(tmp_path, studies,
                                                                     after_ms, expected):
    """The post timed the NAT flush inside the checkpoint; a run times the sync
    that writes it (the study's judged_on). A sync 30% faster with the readahead
    reproduces the flush's fall in direction, one that did not move does not;
    the NAT block counts stay not comparable (no run counts them)."""
    seed = find_seed("002", studies, SERIES)
    cells = {i: {("vssd", "f2fs"): {("checkpoint", "sync.time_ms"): after_ms if i == 2 else 100.0}}
             for i in range(3)}
    rep = judge_check_dir(write_check(tmp_path, seed, cells, regressing=()), seed, studies)
    got = outcomes(rep)
    assert got["f2fs.nat_flush_ms", "Before change", "After change", "ssd"] == expected
    assert got["f2fs.nat_blocks_read", "Before change", "After change", "ssd"] == NOT_COMPARABLE
    flush = next(r for r in rep.rows if r.claim.metric == "f2fs.nat_flush_ms")
    assert flush.why.startswith("judged on sync.time_ms (the sync that writes the checkpoint")
    assert flush.lab.device == "vssd" and flush.lab.after_n == 10


def test_seed_002_the_flush_time_timed_by_the_runs_is_judged_on_itself(tmp_path, studies):
    """Runs that timed f2fs_flush_nat_entries() (the function graph tracer)
    are judged on the flush, not on the sync that holds it: a flush 90% shorter
    beside a sync that did not move reproduces the post's claim."""
    seed = find_seed("002", studies, SERIES)
    cells = {i: {("vssd", "f2fs"): {("checkpoint", "sync.time_ms"): 100.0,
                                    ("checkpoint", "f2fs.nat_flush_ms"): 4.0 if i == 2 else 40.0}}
             for i in range(3)}
    rep = judge_check_dir(write_check(tmp_path, seed, cells, regressing=()), seed, studies)
    flush = next(r for r in rep.rows if r.claim.metric == "f2fs.nat_flush_ms")
    assert flush.outcome == REPRODUCED, flush.why
    assert not flush.why.startswith("judged on"), flush.why
    assert flush.lab.metric == "f2fs.nat_flush_ms"
    assert flush.lab.change_pct == pytest.approx(-90, abs=2)


def test_a_study_judges_a_figure_only_on_a_deciding_metric(tmp_path):
    src = (resources.studies_dir() / "f2fs-nat-flush.yml").read_text()
    bad = tmp_path / "f2fs-nat-flush.yml"
    bad.write_text(src.replace("    metric: sync.time_ms", "    metric: step.time_ms"))
    with pytest.raises(DataFileError, match="judged on 'step.time_ms', which is not a deciding"):
        load_study(bad)


def test_seed_003_a_writer_that_does_not_move_is_not_reproduced(tmp_path, studies):
    seed = find_seed("003", studies, SERIES)
    check = write_check(tmp_path, seed, {i: seed_003_cells(300, 17000) for i in range(3)},
                        regressing=())
    rep = judge_check_dir(check, seed, studies)
    assert set(outcomes(rep).values()) == {NOT_REPRODUCED}
    assert all(r.lab.verdict == "no-change" for r in rep.rows)


def test_a_variant_that_did_not_boot_leaves_its_claims_not_comparable(tmp_path, studies):
    seed = find_seed("003", studies, SERIES)
    check = write_check(tmp_path, seed, {i: seed_003_cells(300, 17000) for i in range(2)},
                        failed={2: "boot-failed"}, regressing=())
    rep = judge_check_dir(check, seed, studies)
    assert {r.outcome for r in rep.rows} == {NOT_COMPARABLE}
    assert "variant 2 of the check has no measured bundle" in rep.rows[0].why


def test_seed_000_bandwidth_the_lab_does_not_move_is_not_reproducible_here(tmp_path, studies):
    """f2fs-dio-write's bandwidths are excused by the study (an FTL the lab's SD
    card lacks) where the lab measured them; its runtimes are shown, not judged;
    no emmc cell ran here, so nothing of the eMMC's is comparable."""
    seed = find_seed("000", studies, SERIES)
    sd = {("vsd", "f2fs"): {("seqw", "write.bw_kib_s"): 19000.0, ("seqw", "write.bw_min_kib_s"): 4700.0,
                            ("seqw", "write.runtime_min_ms"): 1700.0}}
    rep = judge_check_dir(write_check(tmp_path, seed, {i: sd for i in range(3)}, regressing=()),
                          seed, studies)
    got = outcomes(rep)
    assert got["write.bw_kib_s", "before", "patched", "sdcard"] == NOT_REPRODUCIBLE
    assert got["write.bw_min_kib_s", "before", "patched", "sdcard"] == NOT_REPRODUCIBLE
    assert got["write.runtime_min_ms", "before", "patched", "sdcard"] == NOT_COMPARABLE
    assert got["write.bw_kib_s", "before", "patched", "emmc"] == NOT_COMPARABLE
    assert got["write.runtime_max_ms", "before", "patched", "emmc"] == NOT_COMPARABLE
    bw = next(r for r in rep.rows if (r.claim.metric, r.claim.device_class) == ("write.bw_kib_s", "sdcard"))
    assert "flash translation layer" in bw.hardware and "(no-change)" in bw.why
    text = report(rep)
    assert text.count("flash translation layer") == 1  # the reason once, below the table
    assert "not reproducible in the virtual lab (write.bw_kib_s, write.bw_min_kib_s, " in text
    # A bandwidth the lab does move as the post did is reproduced all the same.
    faster = {("vsd", "f2fs"): {("seqw", "write.bw_kib_s"): 26000.0}}
    rep = judge_check_dir(write_check(tmp_path / "moved", seed, {0: sd, 1: sd, 2: faster},
                                      regressing=()), seed, studies)
    assert outcomes(rep)["write.bw_kib_s", "before", "patched", "sdcard"] == REPRODUCED


def test_a_check_of_another_series_is_refused(tmp_path, studies):
    seed = find_seed("003", studies, SERIES)
    write_check(tmp_path, find_seed("001", studies, SERIES), {0: seed_001_cells(0.9, 19000)})
    with pytest.raises(SeedError, match="ran series 'seed-001-ext4-dio-read-lock', not seed 003"):
        judge_check_dir(tmp_path, seed, studies)


def test_labels_are_the_posts_and_a_moved_check_is_found_again(tmp_path, studies):
    """The bundles get the post's labels (the Published results page pairs by
    label); a check directory moved from where it ran is read from its new place."""
    seed = find_seed("003", studies, SERIES)
    ran = write_check(tmp_path / "ran", seed, {0: seed_003_cells(300, 17000),
                                               1: seed_003_cells(300, 17000),
                                               2: seed_003_cells(150, 22000)})
    labels = [label_bundle(ran / f"guest-{i:02d}" / "bundle", seed) for i in range(3)]
    assert labels == [None, "for-2.6.33+fix", "for-2.6.33"]
    assert bundle.load(ran / "guest-00" / "bundle")["label"] == "base"
    assert bundle.load(ran / "guest-02" / "bundle")["label"] == "for-2.6.33"
    moved = tmp_path / "stored" / "seed-003"
    shutil.move(ran, moved)
    out = subprocess.run([IOWATCH, "reproduce", "003", "--from", str(moved), "--json"],
                         capture_output=True, text=True, timeout=300, cwd=REPO)
    assert out.returncode == 1, out.stderr  # the check named patch 2
    doc = json.loads(out.stdout)
    assert doc["series"] == seed.name and doc["counts"] == {"reproduced": 4}
    assert {c["lab"]["device"] for c in doc["claims"]} == {"vhdd"}
    assert not (moved / "reproduce.json").exists()  # a stored check is only read
    # The check's exit status, read from its check.json: 3 when a patch stayed unsure.
    unsure = write_check(tmp_path / "unsure", seed, {i: seed_003_cells(300, 17000) for i in range(3)},
                         regressing=(), states={1: "no-change", 2: "unsure"})
    out = subprocess.run([IOWATCH, "reproduce", "003", "--from", str(unsure)],
                         capture_output=True, text=True, timeout=300, cwd=REPO)
    assert out.returncode == 3, out.stderr
    assert "claims: 4 not reproduced" in out.stdout


def test_the_command_says_what_it_cannot_use_and_exits_2(tmp_path):
    """Nothing is built or booted: a directory that is no check, and a run whose
    kernel tree is not one, stop before the lab with the reason."""
    def reproduce(*args):
        return subprocess.run([IOWATCH, "reproduce", *args], capture_output=True, text=True,
                              timeout=300, cwd=REPO)
    out = reproduce("001", "--from", str(tmp_path))
    assert out.returncode == 2 and f"{tmp_path}: no check.json" in out.stderr
    out = reproduce("001", "--source", str(tmp_path), "--out", str(tmp_path / "out"),
                    "--no-progress")
    assert out.returncode == 2 and f"{tmp_path} is not a kernel tree" in out.stderr
    assert not (tmp_path / "out" / "check.json").exists()
