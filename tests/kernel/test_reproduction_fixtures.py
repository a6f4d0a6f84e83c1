"""The seeds' reproductions as recorded on the virtual lab (tests/fixtures/reproductions,
README there): the claim judge and the check's verdict on the real guest bundles, as
docs/seeds.md reports them. A reproduction moved into the repository is judged again
from its own directory, not from the paths it was recorded at."""
from __future__ import annotations

import json
import re
import statistics
from pathlib import Path

import pytest

from iowatch import bundle, ftrace, resources
from iowatch.side_data import Side
from iowatch.judging import compare_sides
from iowatch.judging.claims import IN_SIZE, NOT_REPRODUCED, REPRODUCED, SMALLER
from iowatch.claims.seeds import find_seed, judge_check_dir
from iowatch.studies import load_studies

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "reproductions"


@pytest.fixture(scope="module")
def studies():
    return load_studies(resources.studies_dir())


def _side(paths: list[Path]) -> Side:
    return Side("recorded", str(paths[0].parent), [bundle.load(p) for p in paths])


def _variant_bundles(check: Path, index: int) -> list[Path]:
    return [check / f"guest-{index:02d}" / "bundle",
            *sorted(check.glob(f"variant-{index:02d}-round*/guest-{index:02d}-round*/bundle"))]


def _paired_ratios(paths: list[Path]) -> list[float]:
    """ext4's read IOPS over the raw device's, repetition i with repetition i of
    the same run; a run (a round) that re-ran only the ext4 cell gives none."""
    out = []
    for doc in map(bundle.load, paths):
        iops = {c["filesystem"]: {r["index"]: s["value"] for r in c["repetitions"]
                                  for s in r["samples"]
                                  if (s["group"], s["metric"], s.get("job")) == ("randread", "read.iops", None)}
                for c in doc["cells"]}
        raw = iops.get("raw", {})
        out += [v / raw[i] for i, v in iops.get("ext4", {}).items() if i in raw]
    return out


def test_seed_001_the_exclusive_lock_is_suspected_today_and_its_claim_not_confirmed(studies):
    """Seed 001 on the virtual lab's SSD (TCG guests, quick profile, four adaptive
    rounds, 2026-11-26): the check named patch 2 (ext4_dio_read_iter() takes the
    inode lock exclusively) a confirmed regression of ext4's random-read IOPS,
    the raw device unchanged. Judged again by today's rule (q 3.5% spent
    linearly, stop 51) the same bundles make it "suspected": -37.7% with its CI
    wholly below zero, but its family-adjusted p (0.0041 at 5 boots a side)
    above the look's level (0.0029; the rule it ran under gave 0.0044), and the
    check's loop, which stopped on the old confirmation, would have measured
    on. The post's claim is the ext4/raw ratio, judged in direction on ext4's
    read IOPS (the raw device takes no lock: the control, which held): in the
    post's direction, not confirmed, so "not reproduced". The ratio itself, one
    value per repetition pair (iowatch.ratio) derived again from the recorded
    IOPS, is shown beside it: up, not confirmed at 5 pairs a side, as
    docs/seeds.md says."""
    check = FIXTURES / "seed-001"
    seed = find_seed("001", studies, REPO / "kernels" / "series")
    rep = judge_check_dir(check, seed, studies)
    (row,) = rep.rows
    assert (row.claim.metric, row.outcome) == ("ratio.fs_to_raw", NOT_REPRODUCED)
    assert row.why.startswith("judged on read.iops (") and "in the post's direction, not confirmed" in row.why
    # The lab row is ext4's read IOPS, before (DIO_LOCKING, variant 2) -> after (variant 1).
    assert (row.lab.before_n, row.lab.after_n) == (25, 25)
    assert row.lab.verdict not in ("improvement", "regression") and row.lab.ci_low > 0
    # The ratio itself, from the repetition pairs, is said beside it, unconfirmed.
    before, after = _paired_ratios(_variant_bundles(check, 2)), _paired_ratios(_variant_bundles(check, 1))
    itself = re.search(r"ratio\.fs_to_raw itself: ([+-][\d.]+)%, ([^[]*CI[^[]*) \[([^]]*)\], ([\w-]+) "
                       r"\[(\d+) vs (\d+)\]", row.why)
    assert itself and float(itself[1]) > 0  # up, in the post's direction
    assert itself[4] not in ("regression", "improvement")  # not confirmed
    assert (int(itself[5]), int(itself[6])) == (len(before), len(after))
    # Its interval is the one the outcome was decided on, and named so: the
    # family-adjusted one, which spans zero (an unconfirmed cell's must).
    assert "family-adjusted over" in itself[2], itself[2]
    low = re.match(r"([+-][\d,.]+)%", itself[3])
    assert low and float(low[1].replace(",", "")) < 0, itself[3]
    # What the check said when it ran, under the rule of its day.
    assert json.loads((check / "check.json").read_text())["regressing_patches"] == [2]
    # The mechanism itself, judged again from the bundles by the one policy.
    cmp = compare_sides(_side(_variant_bundles(check, 1)), _side(_variant_bundles(check, 2)),
                        studies=studies)
    by = {(v.key.filesystem, v.key.metric): v for v in cmp.verdicts}
    ext4 = by[("ext4", "read.iops")]
    assert ext4.outcome == "suspected" and ext4.change_pct < -20 and ext4.ci_high < 0
    assert ext4.level < ext4.p_adjusted < 0.0044, (ext4.level, ext4.p_adjusted)
    assert by[("raw", "read.iops")].outcome != "regression"
    ratio = by[("ext4", "ratio.fs_to_raw")]
    assert ratio.change_pct < 0 and ratio.outcome not in ("regression", "improvement")


def test_seed_001_on_null_blk_the_exclusive_lock_is_named_on_a_quiet_machine(studies):
    """Seed 001 again, on the vlab-nullblk host's SSD (the guest's null_blk,
    100 us a request, so the host's page cache is out of the path; TCG guests,
    quick profile, one repetition a boot, the canary in every boot; a quiet
    machine; stopped at the start of round 5, README): at 20 boots a side the
    check names patch 2, ext4's random-read IOPS a confirmed fall while the
    raw device, which takes no inode lock, is not, and the canary held. The
    post's claim is reproduced in its direction (ext4's IOPS up from the
    post's before to its after, the control held), under half its size."""
    check = FIXTURES / "seed-001-nullblk"
    assert json.loads((check / "check.json").read_text())["regressing_patches"] == [2]
    sides = {i: _side(_booted_bundles(check, i)) for i in (0, 1, 2)}
    assert [len(s.runs) for s in sides.values()] == [10, 20, 20]
    runs = [r for s in sides.values() for r in s.runs]
    assert {r["host"]["name"] for r in runs} == {"vlab-nullblk"}
    assert all(any(c["id"].startswith("canary-") for c in r["cells"]) for r in runs)
    patch2 = compare_sides(sides[1], sides[2], studies=studies)
    assert not patch2.platform  # the canary held
    by = {(v.key.filesystem, v.key.metric): v for v in patch2.verdicts}
    ext4 = by[("ext4", "read.iops")]
    assert ext4.outcome == "regression" and ext4.change_pct < -10 and ext4.ci_high < 0, ext4.words
    assert by[("raw", "read.iops")].outcome not in ("regression", "improvement")
    patch1 = compare_sides(sides[0], sides[1], studies=studies)
    assert patch1.state not in ("regression", "improvement")
    seed = find_seed("001", studies, REPO / "kernels" / "series")
    (row,) = judge_check_dir(check, seed, studies).rows
    assert (row.outcome, row.size) == (REPRODUCED, SMALLER), row.why
    assert (row.lab.before_n, row.lab.after_n) == (20, 20) and row.lab.ci_low > 0
    assert row.lab.change_pct < 98.0 / 2  # the post's +98%, on the log scale under half


def _booted_bundles(check: Path, index: int) -> list[Path]:
    """A variant's bundles of a check at one repetition a boot: its first boot,
    then round 0's later boots (variant-NN-bootK) and any rounds'."""
    return [check / f"guest-{index:02d}" / "bundle",
            *sorted(check.glob(f"variant-{index:02d}-*/guest-{index:02d}-*/bundle"))]


def test_seed_003_unmarked_direct_writes_starve_beside_readers(studies):
    """Seed 003 on vlab-mech's rotational disk, the ST1000DM003 model (TCG
    guests, quick profile, one repetition a boot; stopped in round 2 of its
    rounds, 10 boots a side for the base and patch 1, 5 for patch 2): patch 2
    (direct writes no longer REQ_SYNC | REQ_IDLE) is named in both halves.
    Under BFQ the writer starves beside the readers, the readers faster, as in
    the post; with no scheduler and wbt on (the half QEMU's throttle hid), the
    writer is throttled as background writeback. Patch 1 (a comment in
    blk-wbt.c) is still unsure at 10 a side: the writer's bandwidth on a disk
    that seeks has a CV about 40% between boots. All four of the post's claims
    are reproduced in direction, confirmed; none in size."""
    check = FIXTURES / "seed-003"
    seed = find_seed("003", studies, REPO / "kernels" / "series")
    rep = judge_check_dir(check, seed, studies)
    assert len(rep.rows) == 4
    assert {row.outcome for row in rep.rows} == {"reproduced"}
    summary = json.loads((check / "check.json").read_text())
    assert summary["regressing_patches"] == [2]
    sides = {i: _side(_booted_bundles(check, i)) for i in (0, 1, 2)}
    assert [len(s.runs) for s in sides.values()] == [10, 10, 5]
    assert all(r["host"]["name"] == "vlab-mech" for s in sides.values() for r in s.runs)
    patch1 = compare_sides(sides[0], sides[1], studies=studies)
    assert patch1.state not in ("regression", "improvement"), [v.words for v in patch1.verdicts]
    patch2 = compare_sides(sides[1], sides[2], studies=studies)
    by = {(v.key.study, v.key.group): v for v in patch2.verdicts}
    bfq_writer = by[("odirect-vs-readers", "writer")]
    assert bfq_writer.outcome == "regression" and bfq_writer.change_pct < -70
    assert by[("odirect-vs-readers", "readers")].outcome == "improvement"
    assert by[("odirect-vs-readers", "readers")].change_pct > 80
    wbt_writer = by[("odirect-vs-readers-wbt", "writer")]
    assert wbt_writer.outcome == "regression" and wbt_writer.change_pct < -30


def test_seed_004_without_the_plug_the_member_ssds_serve_three_times_the_writes(studies):
    """Seed 004 on vlab-mech's md RAID0 of two SSD models (the 860 EVO profile,
    every cost x25 under TCG; TCG guests, quick profile, one repetition a boot,
    5 a side: the check was stopped in round 2, README): without
    blk_start_plug() in wb_writeback() the member SSDs served about three times
    the writes at under a third of the size for the same files (the plug's own
    signature, shown), and what decides, the members' write IOPS (the post's
    "physical" IOPS are its SSDs'), is a confirmed change the post's way: the
    claim is reproduced. Files/s and wall time, CPU-bound under TCG on a host
    shared with another guest, stay unsure."""
    check = FIXTURES / "seed-004"
    sides = {i: _side(_booted_bundles(check, i)) for i in (1, 2)}
    assert [len(s.runs) for s in sides.values()] == [5, 5]
    models = {d["name"]: d.get("device_model", {}) for d in sides[1].runs[0]["devices"]}
    assert models["mraid0"]["model"] == "ssd-860evo" and models["mraid0"]["time_scale"] == 25
    cmp = compare_sides(sides[1], sides[2], studies=studies)
    by = {v.key.metric: v for v in cmp.verdicts}
    shown = {v.key.metric: v for v in cmp.diagnostics}
    # The plug's signature, shown beside the verdict to explain it.
    assert shown["device.members.write_ios"].change_pct > 150
    assert shown["device.members.write_kib_per_io"].change_pct < -60
    iops = by["device.members.write_iops"]
    assert iops.outcome == "regression" and iops.ci_low > 100, iops.words   # patched -> unpatched
    assert by["fsmark.files_per_s"].outcome not in ("regression", "improvement")
    seed = find_seed("004", studies, REPO / "kernels" / "series")
    outcomes = {row.claim.metric: row.outcome for row in judge_check_dir(check, seed, studies).rows}
    assert outcomes["device.members.write_iops"] == REPRODUCED
    assert "device.write_iops" not in outcomes
    assert outcomes["fsmark.files_per_s"] == NOT_REPRODUCED


def test_seed_000_six_twelve_does_not_interleave_on_the_modelled_cards(studies):
    """Seed 000 on vlab-mech's SD card and eMMC models (every cost x16 and x64
    under TCG, the SD card with its 16 KiB program unit; rounds 0 and 1, 5
    boots a side: the check was stopped in round 2, README): four writers'
    2 MiB direct writes reach each card in the same
    number of requests of the same size with and without patch 2's
    serialisation, so 6.12 did not interleave their allocations, and the
    cards, which now pay per command and per open unit, had nothing to pay
    for. The bandwidth claims are judged plainly on the modelled devices (no
    "not reproducible here"): in the post's direction, not confirmed, so not
    reproduced."""
    check = FIXTURES / "seed-000"
    sides = {i: _side(_booted_bundles(check, i)) for i in (1, 2)}
    assert [len(s.runs) for s in sides.values()] == [5, 5]
    models = {d["name"]: d.get("device_model", {}) for d in sides[1].runs[0]["devices"]}
    assert (models["msd"]["model"], models["msd"]["time_scale"]) == ("sd-lexar-633x", 16)
    assert (models["memmc"]["model"], models["memmc"]["time_scale"]) == ("emmc-seed000", 64)
    cmp = compare_sides(sides[1], sides[2], studies=studies)
    by = {(v.key.device, v.key.metric): v for v in cmp.verdicts + cmp.diagnostics}
    for device in ("msd", "memmc"):
        ios = by[device, "device.write_ios"]      # shown, not judged: the post decided on bandwidth
        assert abs(ios.change_pct) < 6 and abs(ios.ci_low) < 15 and abs(ios.ci_high) < 15, ios.words
        assert by[device, "device.write_kib_per_io"].candidate.median > 350  # whole extents
        assert by[device, "write.bw_kib_s"].outcome not in ("regression", "improvement")
    seed = find_seed("000", studies, REPO / "kernels" / "series")
    rows = judge_check_dir(check, seed, studies).rows
    assert {r.outcome for r in rows if r.claim.metric == "write.bw_kib_s"} == {NOT_REPRODUCED}
    assert {r.outcome for r in rows} == {NOT_REPRODUCED, "not-comparable"}


def test_seed_002_the_flush_the_post_timed_falls_by_three_quarters_with_its_readahead(studies):
    """Seed 002 on the vlab-nullblk host's SSD (the guest's null_blk, 100 us a
    request, 64 in flight; TCG guests, quick profile of 100,000 files, one
    repetition a boot, the canary in every boot; made again on 2026-12-01 with
    the NAT flush itself timed: f2fs_flush_nat_entries() by ftrace's function
    graph tracer around the checkpoint's sync). Patch 2, the post's readahead,
    is named an improvement of the flush at round 0, the device serving the
    same reads either way (the readahead puts them in flight together; it
    does not save any). Each run's flush sample is the call the trace kept
    beside it. The post's claim is judged on the flush itself, not on the sync
    that holds it: reproduced, and in size (within a factor of two of the
    post's -93% on the log scale)."""
    check = FIXTURES / "seed-002"
    assert json.loads((check / "check.json").read_text())["regressing_patches"] == []
    sides = {i: _side(_booted_bundles(check, i)) for i in (0, 1, 2)}
    runs = [r for s in sides.values() for r in s.runs]
    assert len(sides[2].runs) == 3 and len(sides[1].runs) >= 3
    assert {r["host"]["name"] for r in runs} == {"vlab-nullblk"}
    assert all(any(c["id"].startswith("canary-") for c in r["cells"]) for r in runs)
    for path in (p for i in (0, 1, 2) for p in _booted_bundles(check, i)):
        rep = next(c for c in bundle.load(path)["cells"] if c["study"] == "f2fs-nat-flush")["repetitions"][0]
        trace = (path / "cells" / "f2fs-nat-flush" / "vnullb" / "f2fs" / "rep-1" / "function-graph.txt").read_text()
        (call,) = ftrace.parse(trace, ["f2fs_flush_nat_entries"])["f2fs_flush_nat_entries"]
        (sample,) = [s["value"] for s in rep["samples"] if s["metric"] == "f2fs.nat_flush_ms"]
        assert sample == pytest.approx(call), path
    patch2 = compare_sides(sides[1], sides[2], studies=studies)
    assert not patch2.platform  # the canary held
    by = {v.key.metric: v for v in patch2.verdicts}
    flush = by["f2fs.nat_flush_ms"]
    assert flush.outcome == "improvement" and flush.change_pct < -60 and flush.ci_high < -40, flush.words
    reads = {v.key.metric: v for v in patch2.diagnostics}["device.read_ios"]
    assert abs(reads.change_pct) < 5  # the same reads either way, in flight together
    seed = find_seed("002", studies, REPO / "kernels" / "series")
    rows = {row.claim.metric: row for row in judge_check_dir(check, seed, studies).rows}
    claim = rows["f2fs.nat_flush_ms"]
    assert (claim.outcome, claim.size) == (REPRODUCED, IN_SIZE), claim.why
    assert not claim.why.startswith("judged on") and claim.lab.metric == "f2fs.nat_flush_ms"
    assert {rows[m].outcome for m in ("f2fs.nat_blocks_accessed", "f2fs.nat_blocks_read")} == {
        "not-comparable"}


def test_the_claim_judge_says_in_size_or_under_half_on_the_recorded_numbers(studies):
    """The size word (iowatch.judging.claims.size_of): a reproduced claim is "in size"
    when the lab's log-ratio is within a factor of two of the post's. On the
    kept reproductions: seed 003's writer on the modelled disk (-99.4%, ln -5.1,
    against the lab's -84.9%, ln -1.9) is under half the post's size, and its
    readers (+35.6%, ln 0.30, against x2.18, ln 0.78) over twice it. Seed 001's
    ext4 read IOPS (+98% in the post, +60.5% in the lab: ln 0.68 against 0.47)
    would be in size, but is no longer confirmed (stop 51's rule): a size is
    said only of a reproduced claim. Its run on the null_blk SSD is
    reproduced, under half the post's size (+23.7%, ln 0.21). Seed 002's NAT
    flush, timed by the runs since 2026-12-01, is in size (the post -93%, ln
    -2.66; the lab about -75%, ln -1.4: the bound is -73.6%)."""
    from iowatch.judging.claims import LARGER, size_of

    def sizes(seed: str) -> dict[tuple[str, str, str], str]:
        rep = judge_check_dir(FIXTURES / seed, find_seed(seed.split("-")[1], studies), studies)
        return {(r.claim.metric, r.claim.before.label, r.claim.after.label): r.size
                for r in rep.rows if r.outcome == REPRODUCED}

    assert sizes("seed-001") == {}
    assert sizes("seed-001-nullblk") == {
        ("ratio.fs_to_raw", "DIO_LOCKING", "blockdev_direct_IO_no_locking"): SMALLER}
    assert size_of(98.0, 60.5) == IN_SIZE  # seed 001's recorded numbers, unconfirmed
    assert sizes("seed-002") == {("f2fs.nat_flush_ms", "Before change", "After change"): IN_SIZE}
    s003 = sizes("seed-003")
    assert s003[("write.bw_kib_s", "2.6.32-rc7", "for-2.6.33")] == SMALLER
    assert s003[("read.bw_kib_s", "2.6.32-rc7", "for-2.6.33")] == LARGER
    # The rule itself, at its edges: twice and half the post's log-ratio are in size.
    assert size_of(-50.0, -75.0) == IN_SIZE          # ln 0.5 = -0.69, ln 0.25 = -1.39: 2.0x
    assert size_of(-50.0, -29.0) == SMALLER          # ln 0.71 = -0.34: 0.49x
    assert size_of(-50.0, 10.0) == ""                # the other way: a direction, not a size
    # The table's size line gives the bounds of its first sized claim, not a fixed example.
    from iowatch.claims.seeds import claims_table
    rep = judge_check_dir(FIXTURES / "seed-003", find_seed("003", studies), studies)
    assert claims_table(rep.rows)[-1].endswith("claim 1's post -99.4% (ln -5.05) is met in size "
                                                "by the lab's -92.0% to -100.0%")


def test_the_virtual_labs_excuse_holds_only_for_a_device_without_mechanics(studies, tmp_path):
    """A study's "not reproducible in the virtual lab" (f2fs-dio-write: the card's
    FTL) excuses a device that has none; the same runs on devices a model served
    (`device_model` in the bundle, as vlab-mech's boots record it) are judged
    plainly: what the lab did not show is "not reproduced"."""
    import shutil

    seed = find_seed("000", studies, REPO / "kernels" / "series")
    check = tmp_path / "seed-000"
    shutil.copytree(FIXTURES / "seed-000", check)
    for path in check.glob("**/bundle/bundle.json"):
        doc = json.loads(path.read_text())
        for dev in doc["devices"]:
            dev.pop("device_model", None)
        path.write_text(json.dumps(doc))
    plain = {r.outcome for r in judge_check_dir(check, seed, studies).rows if r.hardware or r.lab}
    assert "not-reproducible" in plain
    for path in check.glob("**/bundle/bundle.json"):
        doc = json.loads(path.read_text())
        for dev in doc["devices"]:
            dev["device_model"] = {"model": "a model", "time_scale": 1.0}
        path.write_text(json.dumps(doc))
    modelled = judge_check_dir(check, seed, studies).rows
    assert not [r for r in modelled if r.outcome == "not-reproducible"]
    assert {r.outcome for r in modelled if r.claim.metric == "write.bw_kib_s"} <= {"not-reproduced", "reproduced",
                                                                                  "opposite"}


def test_the_reproductions_made_without_a_canary_are_marked_so(studies, capsys):
    """Issue 41 item 7: the canary now runs in every boot, but seed 001's
    vssd run and seed 004 were reproduced before it did (000 and 002 were made
    again since, with it; 001's null_blk run had it; 003's matrix listed it).
    They are not made again: the import says each was made without a canary,
    and the README says it too."""
    from iowatch.commands.import_reproductions import kept_reproductions
    kept = {k.check_dir.name: k.with_canary for k in kept_reproductions(FIXTURES, studies)}
    assert kept == {"seed-000": True, "seed-001": False, "seed-001-nullblk": True, "seed-002": True,
                    "seed-003": True, "seed-004": False}
    readme = (FIXTURES / "README.md").read_text()
    for name, canary in kept.items():
        section = readme.split(f"## {name}\n", 1)[1].split("\n## ", 1)[0]
        assert ("Made without a canary" in section) == (not canary), name
