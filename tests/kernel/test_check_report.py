"""The check's verdict on real guest bundles: patch 2 of the e2e series is named,
patch 1 is not, and the writer's collapse is a regression while readers improve.

The bundles in tests/fixtures/e2e-check/ are what `scripts/e2e-check.sh` wrote:
three TCG guests (base, base+p1, base+p1+p2) running jobs/e2e.yml on the
virtual lab's hdd (see that directory's README), one boot a variant: they are
judged with the vlab's record of its noise between boots (tests/boot_record.py)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from boot_record import vlab_record
from iowatch import bundle
from iowatch.check import CheckResult, VariantRun, compare_with_parents, report, summary
from iowatch.kernel.build import Plan, Variant
from iowatch.kernel.series_input import load_series

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "e2e-check"


def result_from_fixtures() -> CheckResult:
    series = load_series(str(REPO / "kernels/series/e2e-slow-ext4-dio"))
    docs = [bundle.load(FIXTURES / f"guest-{i:02d}" / "bundle") for i in range(3)]
    plan = Plan(REPO, REPO, REPO, series, docs[0]["kernel"]["git_commit"], [])
    result = CheckResult(series, plan, history=vlab_record())  # one boot a variant: the vlab's record
    for i, doc in enumerate(docs):
        k = doc["kernel"]
        assert k["series"]["name"] == "e2e-slow-ext4-dio" and k["patch"]["index"] == i
        v = Variant(i, k["git_commit"], k["patch"].get("subject"), status="built",
                    release=k["release"])
        result.runs.append(VariantRun(v, FIXTURES / f"guest-{i:02d}" / "bundle", status=doc["status"]))
    compare_with_parents(result)
    return result


def test_the_slow_patch_is_named_and_the_harmless_one_is_not():
    result = result_from_fixtures()
    assert summary(result)["regressing_patches"] == [2]
    p1, p2 = result.runs[1].vs_parent, result.runs[2].vs_parent
    assert not p1.regressions
    (writer,) = p2.regressions
    assert (writer.key.group, writer.key.metric) == ("writer", "write.bw_kib_s")
    assert writer.change_pct < -20
    readers = [v for v in p2.verdicts if v.key.group == "readers"]
    assert readers and readers[0].outcome != "regression"
    text = report(result)
    assert "patch 2/2: ext4: yield to buffered readers before each direct write\n    REGRESSION" in text
    assert "patch 1/2: xfs: say that statfs results must not be cached\n    no change" in text
    assert "regressing patches: patch 2 (ext4: yield" in text


def _scattered(src: Path, dst: Path, factors: list[float]) -> Path:
    """A copy of a bundle whose deciding samples of repetition i are scaled by factors[i]."""
    import copy
    import shutil
    shutil.copytree(src, dst)
    doc = copy.deepcopy(bundle.load(dst))
    for cell in doc["cells"]:
        for i, rep in enumerate(cell["repetitions"]):
            for s in rep["samples"]:
                if s["metric"] in ("write.bw_kib_s", "read.bw_kib_s") and s.get("job") is None:
                    s["value"] *= factors[i % len(factors)]
    bundle.write_manifest(dst, doc)
    return dst


# The replays below answer each boot with a recorded bundle of 5 repetitions
# (one boot a round, as the fixtures were made): per_boot=5 replays them so.

# Patch 1's bundle scattered over a factor of two: both of its comparisons are
# unsure and a decision is still in reach for each by the cap. Scattered over a
# factor of five, patch 2's writer (-16%, 95% CI [-65, +105]) stops at the first
# look: no decision in reach at that noise (futility, issue 41 item 3).
SCATTER = [0.6, 1.2, 0.7, 1.15, 0.9]


def test_a_decided_check_measures_nothing_again():
    from iowatch.check import add_repetitions
    result = result_from_fixtures()
    asked = []
    assert add_repetitions(result, lambda *a: asked.append(a), say=lambda s: None) == 0
    assert asked == []


def test_unsure_patches_are_measured_again_on_both_sides_only_for_their_cells(tmp_path):
    """Patch 1's bundle scattered (SCATTER): both of its comparisons
    are unsure. Each round measures variants 0, 1 and 2 again (replayed here from
    the real bundles) for the one unsure cell, as many repetitions as the next
    look needs, until decided or at 20 a side."""
    from iowatch.check import add_repetitions
    result = result_from_fixtures()
    result.runs[1].bundle = _scattered(result.runs[1].bundle, tmp_path / "scattered",
                                       SCATTER)
    asked = []

    def measure_more(vr, cells, reps, round_no):
        asked.append((round_no, vr.variant.index, tuple(cells), reps))
        return VariantRun(vr.variant, FIXTURES / f"guest-{vr.variant.index:02d}" / "bundle",
                          status="passed")

    rounds = add_repetitions(result, measure_more, say=lambda s: None, per_boot=5)
    assert rounds >= 1
    first = sorted(a for a in asked if a[0] == 1)
    assert first == [(1, i, ("odirect-vs-readers/vhdd/ext4",), 5) for i in (0, 1, 2)]
    # Each round's bundles pool into the variant's side.
    p2 = result.runs[2].vs_parent
    assert {(v.base.n, v.candidate.n) for v in p2.verdicts} == {(5 * (1 + len(result.runs[1].extra)),
                                                                 5 * (1 + len(result.runs[2].extra)))}
    assert max(v.candidate.n for v in p2.verdicts) <= 20
    # Patch 2's writer, measured again from the real bundles, is confirmed slower.
    assert summary(result)["regressing_patches"] == [2]
    assert "[writer] write bandwidth fell" in report(result)


def test_the_studys_cap_sets_how_far_the_check_measures_again(tmp_path, monkeypatch):
    """max_runs in the study file is the cap of every path: with 40, a cell kept
    unsure (variant 1 replays the same scattered bundle each round) is measured
    again past 20, look by look, to 40 a side, and the report names the looks;
    the same bundles judged with the shipped file (20) stop at 20."""
    import shutil
    from iowatch.check import add_repetitions
    studies = tmp_path / "studies"
    shutil.copytree(REPO / "jobs/studies", studies)
    path = studies / "odirect-vs-readers.yml"
    path.write_text(path.read_text().replace("\nmin_effect_pct:", "\nmax_runs: 40\nmin_effect_pct:", 1))
    monkeypatch.setenv("IOWATCH_STUDIES", str(studies))
    result = result_from_fixtures()
    scattered = _scattered(result.runs[1].bundle, tmp_path / "scattered", [0.3, 1.5, 0.5, 1.4, 1.0])
    result.runs[1].bundle = scattered
    compare_with_parents(result)
    asked = []

    def measure_more(vr, cells, reps, round_no):
        asked.append((round_no, vr.variant.index, reps))
        again = scattered if vr.variant.index == 1 else FIXTURES / f"guest-{vr.variant.index:02d}" / "bundle"
        return VariantRun(vr.variant, again, status="passed")

    rounds = add_repetitions(result, measure_more, say=lambda s: None, per_boot=5)
    p1 = result.runs[1].vs_parent
    assert p1.caps == [40] and {v.cap for v in p1.verdicts} == {40}
    assert 3 < rounds <= 7  # past the 3 rounds of a cap of 20, at most one round per look
    assert max(v.candidate.n for v in p1.verdicts) == 5 * (1 + rounds) > 20
    assert max(n for _, _, n in asked) == 5
    # At the cap every unsure cell says its budget is spent; none asks for more.
    assert all(v.budget_spent for v in p1.unsure) and max(v.candidate.n for v in p1.verdicts) <= 40
    assert "5, 10, 15, 20, 25, 30, 35 and 40 runs a side" in report_text(p1)

    monkeypatch.delenv("IOWATCH_STUDIES")
    capped = result_from_fixtures()
    capped.runs[1].bundle = scattered
    assert add_repetitions(capped, measure_more, say=lambda s: None, per_boot=5) <= 3
    assert max(v.candidate.n for v in capped.runs[1].vs_parent.verdicts) <= 20


def report_text(cmp) -> str:
    from iowatch.report import render_text
    return render_text(cmp)


def test_a_cell_is_failed_only_when_no_repetition_passed(tmp_path):
    """One failed repetition of five leaves four results: the cell is judged on
    them; with every repetition failed, it is listed as failed, never judged."""
    import copy
    import shutil

    from iowatch.side_data import Side
    from iowatch.judging import compare_sides
    from iowatch.studies import load_studies

    def with_failed(src: Path, dst: Path, failed: set[int]) -> Side:
        shutil.copytree(src, dst)
        doc = copy.deepcopy(bundle.load(dst))
        for cell in doc["cells"]:
            for rep in cell["repetitions"]:
                if rep["index"] in failed:
                    rep.update(status="failed", samples=[], error="fio exited 1")
                    cell["status"] = "failed"
        bundle.write_manifest(dst, doc)
        return Side(str(dst), str(dst), [bundle.load(dst)])

    studies = load_studies(REPO / "jobs/studies")
    base = Side("b", "b", [bundle.load(FIXTURES / "guest-01" / "bundle")])
    one = compare_sides(base, with_failed(FIXTURES / "guest-02" / "bundle", tmp_path / "one", {3}),
                        studies=studies, history=vlab_record())
    assert one.failed == [] and one.state == "regression"
    assert {v.candidate.n for v in one.verdicts} == {4}
    every = compare_sides(base, with_failed(FIXTURES / "guest-02" / "bundle", tmp_path / "all",
                                            {1, 2, 3, 4, 5}), studies=studies)
    assert [f.side for f in every.failed] == ["candidate"] and every.state == "failed"
    assert every.verdicts == []


def test_the_report_ends_with_where_the_wall_time_went(tmp_path):
    """Configure, each variant's build, boot and matrix, each adaptive round with
    the boots and matrices in it, and the total: the phases a check records."""
    from iowatch.check import add_repetitions, phase_lines
    result = result_from_fixtures()
    result.runs[1].bundle = _scattered(result.runs[1].bundle, tmp_path / "scattered",
                                       SCATTER)
    result.phases.update({"configure": 21.6, "build 0": 1900.2, "boot 0": 23.0, "matrix 0": 151.0,
                          "build 1": 31.0, "boot 1": 22.0, "matrix 1": 149.0})

    def measure_more(vr, cells, reps, round_no):
        i = vr.variant.index
        result.phases[f"boot {i} round {round_no}"] = 20.0 + i
        result.phases[f"matrix {i} round {round_no}"] = 100.0 + i
        return VariantRun(vr.variant, FIXTURES / f"guest-{i:02d}" / "bundle", status="passed")

    rounds = add_repetitions(result, measure_more, say=lambda s: None, per_boot=5)
    assert rounds >= 1 and "round 1" in result.phases
    result.phases["total"] = 3000.0
    lines = phase_lines(result.phases)
    assert lines[:4] == ["wall time:", "  configure 22 s",
                         "  variant 0: build 1900 s, boot 23 s, matrix 151 s",
                         "  variant 1: build 31 s, boot 22 s, matrix 149 s"]
    assert lines[4].startswith(f"  round 1 {result.phases['round 1']:.0f} s (variant 0: boot 20 s, "
                               "matrix 100 s; variant 1: boot 21 s, matrix 101 s; variant 2: boot 22 s")
    assert lines[-1] == "  total 3000 s (50.0 min)"
    assert "\n".join(lines) in report(result)


def test_a_round_is_split_into_short_boots_interleaved_between_the_variants(tmp_path):
    """Issue 24 item 1: a round's repetitions of a side run in boots of at most
    REPS_PER_BOOT, v0 v1 v2 v0 v1 v2 ..., so a side's later looks rest on more
    boots than rounds; each boot is one measure_more call and one bundle."""
    from iowatch.check import add_repetitions, boot_sizes
    result = result_from_fixtures()
    result.runs[1].bundle = _scattered(result.runs[1].bundle, tmp_path / "scattered",
                                       SCATTER)
    asked = []

    def measure_more(vr, cells, reps, round_no):
        asked.append((round_no, vr.variant.index, reps))
        return VariantRun(vr.variant, FIXTURES / f"guest-{vr.variant.index:02d}" / "bundle",
                          status="passed")

    add_repetitions(result, measure_more, say=lambda s: None, per_boot=2)
    sizes = boot_sizes(5, 2)
    assert sizes == (2, 2, 1)
    assert [a for a in asked if a[0] == 1] == [(1, i, n) for n in sizes for i in (0, 1, 2)]
    assert len(result.runs[1].extra) == len(result.runs[1].rounds) >= len(sizes)


def test_boot_sizes():
    from iowatch.check import boot_sizes, first_round_boots
    assert boot_sizes(5, 2) == (2, 2, 1) and boot_sizes(4, 2) == (2, 2)
    assert boot_sizes(5, 1) == (1,) * 5 and boot_sizes(10, 3) == (3, 3, 2, 2)
    assert boot_sizes(0, 2) == () and sum(boot_sizes(17, 4)) == 17
    # Round 0 is never one boot a side when it has two repetitions or more.
    assert first_round_boots(5, 5) == (3, 2) and first_round_boots(5, 2) == (2, 2, 1)
    assert first_round_boots(1, 2) == (1,) and first_round_boots(2, 5) == (1, 1)


def test_a_ratio_cell_measured_again_takes_its_raw_partner_along():
    """Seed 001's ratio stayed at 5 values a side while its ext4 cell grew to
    25: a round must re-run the raw cell beside the ext4 one (and the ext4
    beside the raw), or it adds no ratio (judging.next_measurement says so for
    every path; tests/judging/test_next_measurement.py feeds them one comparison)."""
    from iowatch import resources
    from iowatch.judging import with_partners
    from iowatch.studies import load_studies
    studies = load_studies(resources.studies_dir())
    assert with_partners(["ext4-dio-randread/vssd/ext4"], studies) == [
        "ext4-dio-randread/vssd/ext4", "ext4-dio-randread/vssd/raw"]
    assert with_partners(["ext4-dio-randread/vssd/raw", "odirect-vs-readers/vhdd/ext4"],
                         studies) == ["ext4-dio-randread/vssd/ext4", "ext4-dio-randread/vssd/raw",
                                      "odirect-vs-readers/vhdd/ext4"]


def _built_variant(tmp_path: Path) -> tuple[Plan, Variant]:
    """A plan of one variant of the e2e series whose kernel counts as built
    (its bzImage is never booted: the tests put boot_and_run's place)."""
    series = load_series(str(REPO / "kernels" / "series" / "e2e-slow-ext4-dio"))
    artifacts = tmp_path / "artifacts"
    artifacts.mkdir()
    (artifacts / "bzImage").write_bytes(b"not booted")
    v = Variant(0, "0" * 40, None, status="built", artifacts=str(artifacts), release="6.12.117+")
    return Plan(REPO, REPO, REPO, series, "0" * 40, [v]), v


def test_a_bundle_the_check_cannot_read_fails_its_variant_not_the_check(tmp_path, monkeypatch):
    """A guest that ran other code than the host (a metric the host's table does
    not know, as happened when the runner changed mid-check) leaves a bundle
    that does not validate: the variant is failed with the bundle and field
    named, and run_variant returns instead of raising through the check."""
    import json as _json
    import shutil

    from iowatch import check, inventory
    from iowatch.commands.guest_options import qemu_host
    from iowatch.vlab import BootResult

    plan, v = _built_variant(tmp_path)

    def fake_boot(image, host, cmd, shared, console, **kw):
        out = shared / "bundle"
        shutil.copytree(FIXTURES / "guest-00" / "bundle", out)
        doc = _json.loads((out / "bundle.json").read_text())
        doc["cells"][0]["repetitions"][0]["samples"][0]["metric"] = "device.no_such_metric"
        (out / "bundle.json").write_text(_json.dumps(doc))
        console.write_text("booted\n")
        return BootResult("passed", "tcg", 1.0, 2.0, 0, console=console)

    monkeypatch.setattr(check, "boot_and_run", fake_boot)
    inv = inventory.default_path()
    said = []
    vr = check.run_variant(plan, v, qemu_host(inv, "vlab", "-"), inv, "jobs/e2e.yml", tmp_path / "out",
                           say=said.append)
    assert vr.status == "failed" and vr.bundle is None
    assert "device.no_such_metric" in vr.reason and "bundle" in vr.reason
    assert any("cannot be read" in s for s in said)


def test_a_checks_bundle_records_the_check_and_its_round_before_it_is_stored(tmp_path, monkeypatch):
    """Rounds are blocks on the server too (tests/webapp/test_check_rounds.py):
    the bundle a check stores says which check and which round measured it;
    one measured outside a check (the bisect's) says nothing of the kind."""
    import shutil

    from iowatch import check, inventory
    from iowatch.commands.guest_options import qemu_host
    from iowatch.vlab import BootResult

    plan, v = _built_variant(tmp_path)

    def boot(image, host, cmd, shared, console, **kw):
        shutil.copytree(FIXTURES / "guest-00" / "bundle", shared / "bundle")
        console.write_text("booted\n")
        return BootResult("passed", "tcg", 1.0, 2.0, 0, console=console)

    monkeypatch.setattr(check, "boot_and_run", boot)
    inv = inventory.default_path()
    stored = []
    host = qemu_host(inv, "vlab", "-")
    check.run_variant(plan, v, host, inv, "jobs/e2e.yml", tmp_path / "a", say=lambda s: None,
                      store=lambda p: stored.append(bundle.load(p)), round_no=3, check_id="ab" * 16)
    check.run_variant(plan, v, host, inv, "jobs/e2e.yml", tmp_path / "b", say=lambda s: None,
                      store=lambda p: stored.append(bundle.load(p)))
    assert stored[0]["check_round"] == {"check": "ab" * 16, "round": 3}
    assert "check_round" not in stored[1]


def test_the_summary_is_written_after_every_comparison(tmp_path, monkeypatch):
    """A check that dies in a later round (seed 004's did, at the end of round
    3) must leave a check.json of what it measured: add_repetitions tells the
    check after every comparison, and write_summary replaces the file whole."""
    from iowatch.check import add_repetitions, write_summary
    from iowatch.stats import sequential
    # The scatter puts every decision out of reach: the family's futility, on as
    # shipped, would end the check after round 1. Held off, it asks for round 2.
    monkeypatch.setattr(sequential, "FAMILY_FUTILE", 0.0)
    result = result_from_fixtures()
    result.runs[1].bundle = _scattered(result.runs[1].bundle, tmp_path / "scattered",
                                       [0.3, 1.5, 0.5, 1.4, 1.0])
    out = tmp_path / "out"
    seen = []

    def on_compare():
        path = write_summary(result, out)
        seen.append(len(json.loads(path.read_text())["variants"][1]["extra_bundles"]))

    def measure_more(vr, cells, reps, round_no):
        if round_no == 2:
            raise RuntimeError("the check process dies here")
        return VariantRun(vr.variant, FIXTURES / f"guest-{vr.variant.index:02d}" / "bundle",
                          status="passed")

    with pytest.raises(RuntimeError):
        add_repetitions(result, measure_more, say=lambda s: None, per_boot=5, on_compare=on_compare)
    assert seen == [0, 1]  # after round 0's comparison and after round 1's
    kept = json.loads((out / "check.json").read_text())
    assert kept["variants"][1]["extra_rounds"] == [1] and not (out / "check.json.tmp").exists()


COVER = """\
From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001
From: Ann Dev <ann@example.org>
Subject: [PATCH 0/2] ext4: yield to buffered readers before each direct write

A direct writer beside two buffered readers on a disk, fio with this job:

[global]
runtime=10

[seqwrite]
rw=write
size=4G
direct=1

[seqread]
new_group=1
rw=read
size=2G
numjobs=2

before:
  WRITE: io=3030KB, aggrb=303KB/s, minb=303KB/s, maxb=303KB/s, mint=10001msec, maxt=10001msec
after:
  WRITE: io=2000KB, aggrb=200KB/s, minb=200KB/s, maxb=200KB/s, mint=10001msec, maxt=10001msec

Ann Dev (2):
  xfs: say that statfs results must not be cached
  ext4: yield to buffered readers before each direct write
"""


def test_a_cover_letters_claims_are_judged_on_the_whole_series(tmp_path):
    """A series directory with `git format-patch --cover-letter`'s cover letter,
    which claims the writer's bandwidth for the whole series: the claim is
    judged on the last patch against the base (the check's real bundles:
    writer -33%), not on a patch against its parent."""
    import shutil

    from iowatch import resources
    from iowatch.claims import series as series_claims
    from iowatch.check import compare_with_base
    from iowatch.judging.claims import REPRODUCED
    from iowatch.studies import load_studies

    d = tmp_path / "series"
    shutil.copytree(REPO / "kernels/series/e2e-slow-ext4-dio", d)
    (d / "0000-cover-letter.patch").write_text(COVER)
    series = load_series(str(d))
    assert series.cover == COVER and len(series.patches) == 2  # the cover is no patch
    studies = load_studies(resources.studies_dir())
    claimed = [pc for pc in series_claims.from_series(series, studies, ["odirect-vs-readers"])
               if pc.whole_series]
    (pc,) = claimed
    assert (pc.patch, pc.study) == (2, "odirect-vs-readers")
    result = result_from_fixtures()
    whole = compare_with_base(result)
    assert whole is not None and whole.base.spec != result.runs[1].variant.label
    series_claims.judge(claimed, {r.variant.index: r.vs_parent for r in result.runs}, studies, whole)
    rows = {r.claim.metric: r for r in pc.rows}
    assert rows["write.bw_kib_s"].outcome == REPRODUCED, rows["write.bw_kib_s"].why
    lines = series_claims.report_lines(claimed)
    assert lines[1].startswith("claims of the cover letter (ext4: yield to buffered readers")
    assert "judged on the whole series (patch 2 against the base)" in lines[1]
