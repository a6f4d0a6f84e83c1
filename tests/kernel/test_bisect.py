"""The bisect on real guest measurements: variants that measure like the e2e
check's base are good, those that measure like its slow patch are bad, and the
search names the first bad one, skips what does not build, and says why when
the ends do not differ.

The measurements are the real guest bundles of tests/fixtures/e2e-check (base:
guest-00, slow ext4 direct writes: guest-02); which variant gets which bundle
is what each test sets up, so the search logic runs without booting a kernel
(scripts/e2e-bisect.sh boots them)."""
from __future__ import annotations

from pathlib import Path

import pytest

from boot_record import AABB, hold_off, vlab_record
from iowatch import bundle
from iowatch.bisect.search import NothingToBisect, choose_target, search
from iowatch.check import VariantRun
from iowatch.side_data import Side
from iowatch.judging import compare_sides
from iowatch.kernel.build import Variant
from iowatch.stats.oracle import Observation, culprit, steps_left

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "e2e-check"
FAST, SLOW = FIXTURES / "guest-00" / "bundle", FIXTURES / "guest-02" / "bundle"
# The bundles are one boot each, and the bisect compares them one boot a side:
# the vlab's record of its noise between boots is the history a lab host keeps.
RECORD = vlab_record()


def measurer(kinds: dict[int, str], calls: list[int]):
    """measure(index, attempt) over the fixture bundles: kinds maps an index to
    fast, slow or a failure status."""
    def measure(index: int, attempt: int, want=None) -> VariantRun:
        calls.append(index)
        v = Variant(index, f"{index:040x}", f"commit {index}", status="built")
        kind = kinds[index]
        if kind in ("fast", "slow"):
            path = FAST if kind == "fast" else SLOW
            return VariantRun(v, path, status=bundle.load(path)["status"])
        return VariantRun(v, None, status=kind, reason=f"{kind} on purpose")
    return measure


def test_the_culprit_model_weighs_each_judged_step_by_its_error():
    # Consistent, confident steps: the commit between the last good and first bad is named.
    sure = culprit(6, [Observation(3, True, 1e-6), Observation(1, False, 1e-6),
                       Observation(2, False, 1e-6)])
    assert sure.first_bad == 3 and sure.candidates == [3] and sure.probability > 0.99
    # The same steps at the policy's 5% each: not enough to name one commit alone.
    loose = culprit(6, [Observation(3, True, 0.05), Observation(1, False, 0.05),
                        Observation(2, False, 0.05)])
    assert loose.first_bad is None and 3 in loose.candidates and loose.probability >= 0.95
    assert loose.probabilities[3] == max(loose.probabilities.values())
    # An unjudged commit between good 2 and bad 4 shares the mass with 4: a range.
    split = culprit(6, [Observation(4, True, 1e-6), Observation(2, False, 1e-6)])
    assert split.first_bad is None and split.candidates == [3, 4]
    assert split.probabilities[3] == pytest.approx(0.5, abs=0.01)
    assert "one of variants [3, 4]" in split.words
    assert [steps_left(n) for n in (1, 2, 3, 4, 6, 8, 9)] == [0, 1, 2, 2, 3, 3, 4]


@pytest.mark.parametrize("first_bad", [1, 3, 6])
def test_the_search_names_the_first_slow_variant(first_bad):
    n = 6
    calls: list[int] = []
    kinds = {i: "fast" if i < first_bad else "slow" for i in range(n + 1)}
    target, steps, last_good, found, untestable = search(n, measurer(kinds, calls), history=RECORD, say=lambda s: None)
    assert (found, last_good, untestable) == (first_bad, first_bad - 1, [])
    assert (target.key.group, target.key.metric) == ("writer", "write.bw_kib_s")
    assert calls[:2] == [0, n] and len(calls) <= 2 + steps_left(n)
    outcomes = {s.index: s.verdict.outcome for s in steps}
    assert all(outcomes[i] == ("good" if i < first_bad else "bad") for i in outcomes)


def test_a_variant_that_does_not_build_is_skipped_for_its_neighbour():
    kinds = {0: "fast", 1: "fast", 2: "fast", 3: "build-failed", 4: "slow", 5: "slow", 6: "slow"}
    calls: list[int] = []
    _, steps, last_good, found, untestable = search(6, measurer(kinds, calls), history=RECORD, say=lambda s: None)
    assert (last_good, found) == (2, 4) and untestable == [3]
    assert next(s for s in steps if s.index == 3).skipped == "build-failed"


def test_ends_that_do_not_differ_leave_nothing_to_bisect():
    kinds = {0: "fast", 6: "fast"}
    with pytest.raises(NothingToBisect, match="no regression"):
        search(6, measurer(kinds, []), history=RECORD, say=lambda s: None)
    with pytest.raises(NothingToBisect, match="bad end .* boot-failed"):
        search(6, measurer({0: "fast", 6: "boot-failed"}, []), history=RECORD, say=lambda s: None)


def test_the_target_can_be_narrowed_by_metric():
    from iowatch.studies import load_studies
    studies = load_studies(Path(__file__).resolve().parents[2] / "jobs" / "studies")
    cmp = compare_sides(Side("g", "", [bundle.load(FAST)]), Side("b", "", [bundle.load(SLOW)]),
                        studies=studies, history=RECORD)
    assert choose_target(cmp).key.metric == "write.bw_kib_s"
    with pytest.raises(NothingToBisect, match="matching metric read.bw_kib_s"):
        choose_target(cmp, metric="read.bw_kib_s")  # the readers got faster, not slower


def test_bisect_arguments_are_checked_before_anything_is_built(capsys):
    from iowatch.cli import main
    assert main(["bisect", "--good", "v1"]) == 2
    assert "give --good and --bad together" in capsys.readouterr().err
    assert main(["bisect"]) == 2
    assert "--good REF --bad REF, or --base REF --series S" in capsys.readouterr().err
    assert main(["bisect", "--good", "a", "--bad", "b", "--hosts", "localhost"]) == 2
    assert "host localhost is local" in capsys.readouterr().err


def test_a_pipeline_is_told_what_to_measure_next_until_the_commit_is_named(tmp_path, capsys):
    import json
    from iowatch.cli import main
    variants = [{"index": i, "commit": f"{i:040x}", "subject": f"commit {i}", "status": "built",
                 "artifacts": f"/artifacts/{i:02d}"} for i in range(7)]
    variants[5]["status"] = "build-failed"
    (tmp_path / "variants.json").write_text(json.dumps(variants))
    bundles = tmp_path / "bundles"
    bundles.mkdir()
    slow_from = 4

    def ask() -> dict:
        assert main(["bisect", "--variants", str(tmp_path / "variants.json"),
                     "--bundles", str(bundles), "--history", str(AABB)]) == 0
        return json.loads(capsys.readouterr().out)

    measured = []
    for _ in range(8):
        step = ask()
        if step["state"] != "measure":
            break
        measured.append(step["index"])
        assert step["artifacts"] == f"/artifacts/{step['index']:02d}"
        out = Path(step["out"])
        assert out.parent == bundles and not out.exists()
        if step["index"] == 3:
            out.with_suffix(".failed").write_text("boot-failed: Kernel panic - not syncing")
        else:
            out.symlink_to(SLOW if step["index"] >= slow_from else FAST)
    assert step["state"] == "done", step
    assert measured[:2] == [0, 6] and 5 not in measured  # variant 5 did not build: never asked for
    # 3 did not boot, 2 was good and 4 bad: the first bad one is 3 or 4, as git bisect says.
    assert step["first_bad"] is None and step["candidates"] == [3, 4]
    assert step["untestable"] == [3] and step["last_good"] == 2
    assert {s["index"]: s["outcome"] for s in step["steps"]}[3] == "skipped"
    assert "the first bad commit is one of variants [3, 4]" in step["report"]


def test_the_next_step_names_a_variants_file_it_cannot_read(tmp_path, capsys):
    from iowatch.cli import main
    (tmp_path / "v.json").write_text("{not json")
    assert main(["bisect", "--variants", str(tmp_path / "v.json"), "--bundles", str(tmp_path)]) == 2
    assert "v.json: not the JSON of `iowatch kernel build --json`" in capsys.readouterr().err


def _copy(src: Path, dest: Path) -> Path:
    """A recorded bundle as a measurement of its own (a run id, so a boot, of its own)."""
    import shutil
    import uuid
    shutil.copytree(src, dest)
    doc = bundle.load(dest)
    doc["run_id"] = str(uuid.uuid4())
    bundle.write_manifest(dest, doc)
    return dest


def _mixed(dest: Path, keep: int = 2) -> Path:
    """guest-00's bundle with its repetitions after `keep` replaced by guest-02's
    (manifest entries and raw files): a boot whose writer ran at the base's
    300 KiB/s for 2 repetitions and at the slow patch's 200 for 3."""
    import shutil
    _copy(FAST, dest)
    doc, slow = bundle.load(dest), bundle.load(SLOW)
    for cell, slow_cell in zip(doc["cells"], slow["cells"]):
        assert cell["id"] == slow_cell["id"]
        cell["repetitions"] = cell["repetitions"][:keep] + slow_cell["repetitions"][keep:]
        for rep in slow_cell["repetitions"][keep:]:
            for artifact in rep["artifacts"]:
                shutil.copy(SLOW / artifact["path"], dest / artifact["path"])
    bundle.write_manifest(dest, doc)
    return dest


@pytest.mark.parametrize("again", ["mixed", "slow"])
def test_an_ambiguous_middle_step_is_measured_again_and_the_result_says_how_sure_it_is(tmp_path, again):
    """A bisect over the recorded guest bundles of tests/fixtures/e2e-check
    (variants 0-2 measure as guest-00, the base; 4-6 as guest-02, the slow ext4
    direct writes) with an ambiguous middle step: variant 3's first measurement
    is guest-00's bundle with its last 3 repetitions taken from guest-02's
    (_mixed: the writer at 302, 302, 200, 200, 201 KiB/s), which is neither
    end. The search must measure it again, judging it against both ends with
    compare_sides each time, and never settle it by the nearer end:
    - again "mixed" (a commit whose every boot is half fast, half slow): the
      second measurement confirms it worse than good and better than bad, so
      it is the first bad commit, "part of the change", named with its
      probability from the culprit model;
    - again "slow" (guest-02's bundle, each a boot of its own): variant 3 is a
      slow commit with one odd first boot. Against the good end (one boot) its
      two boots are confirmed slower (-27.5%, CI [-38, -15]) now that a side of
      one boot borrows the host's record (stop 51: the boot means of 1 against
      2 boots alone have one degree of freedom, and before it the search
      measured variant 3 to the cap, 4 times, and ended on the range [3, 4]);
      against the bad end it is unsure. It is bad, and the first bad commit."""
    from iowatch.bisect.search import culprit_of
    calls: list[tuple[int, int]] = []

    def measure(index: int, attempt: int, want=None) -> VariantRun:
        calls.append((index, attempt))
        v = Variant(index, f"{index:040x}", f"commit {index}", status="built")
        where = tmp_path / f"variant-{index:02d}-{attempt}"
        if index in (0, 6):
            path = (FAST if index == 0 else SLOW) if attempt == 0 else \
                _copy(FAST if index == 0 else SLOW, where)
        elif index == 3:
            path = _mixed(where) if attempt == 0 or again == "mixed" else _copy(SLOW, where)
        else:
            path = _copy(FAST if index < 3 else SLOW, where)
        return VariantRun(v, path, status=bundle.load(path)["status"])

    said: list[str] = []
    target, steps, last_good, first_bad, untestable = search(6, measure, history=RECORD, say=said.append)
    step3 = next(s for s in steps if s.index == 3)
    assert (3, 1) in calls, calls  # measured again
    assert any("variant 3 unsure" in line and "measuring it again" in line for line in said), said
    found = culprit_of(steps, 6)
    assert found.probability >= 0.95
    if again == "mixed":
        assert step3.verdict.outcome == "bad" and step3.verdict.between
        assert step3.verdict.vs_good.outcome == step3.verdict.vs_bad.outcome == "regression"
        assert found.first_bad == 3 and found.candidates == [3]
        assert "first bad commit: variant 3 (probability" in found.words
    else:
        assert step3.verdict.outcome == "bad" and len(step3.runs) == 2
        assert step3.verdict.vs_good.outcome == "regression" and step3.verdict.vs_good.ci_high < -10
        assert step3.verdict.vs_bad.outcome not in ("regression", "improvement")
        assert [c for c in calls if c[0] == 3] == [(3, 0), (3, 1)]
        assert found.first_bad == 3 and found.candidates == [3]
        assert (last_good, first_bad, untestable) == (2, 3, [])
    # What `iowatch bisect` exits with: one commit named is 0.
    from types import SimpleNamespace
    from iowatch.bisect.search import BisectResult
    from iowatch.commands.bisect import exit_code
    result = BisectResult(series=None, plan=SimpleNamespace(variants=[None] * 7), target=target,
                          steps=steps, first_bad=first_bad, last_good=last_good)
    assert exit_code(result) == 0


def test_a_measurement_in_several_boots_pools_them(tmp_path):
    """guest_measure gives a measurement as the boots it took (one VariantRun a
    boot, iowatch.check.first_round_boots); the search pools every boot that
    measured into the commit's side and skips a boot that failed."""
    calls: list[int] = []
    single = measurer({i: "fast" if i < 4 else "slow" for i in range(7)}, calls)
    copies = iter(range(1000))

    def measure(index: int, attempt: int, want=None) -> list[VariantRun]:
        one = single(index, attempt)
        other = _copy(one.bundle, tmp_path / f"m{next(copies)}")
        failed = VariantRun(one.variant, None, status="boot-failed", reason="on purpose")
        return [one, VariantRun(one.variant, other, status=one.status), failed]

    target, steps, last_good, found, _ = search(6, measure, history=RECORD, say=lambda s: None)
    assert (last_good, found) == (3, 4)
    runs = {s.index: s.runs for s in steps}
    assert all(len(r) == 2 and all(x.bundle for x in r) for r in runs.values())
    assert target.base.n == target.candidate.n == 2 * 5  # both boots pooled at each end


LAB_VM = Path(__file__).resolve().parents[1] / "fixtures" / "lab-vm-bisect"


@pytest.fixture
def unheld():
    """The stand-in lab host's ends are one boot each and that host keeps no
    record, so as shipped their change is held "suspected: one boot a side".
    The tests below are of the canary's drift rule on top of a confirmed change."""
    with hold_off():
        yield


def test_ends_measured_while_the_platform_drifted_are_measured_again_then_refused_saying_so(unheld):
    """The stand-in lab host's real ends (tests/fixtures/lab-vm-bisect): the
    writer fell by 94%, but the canary moved by -21% between the two boots. The
    search measures both ends again rather than giving up on the first look,
    and when the drift stays it says the platform drifted."""
    calls = []

    def measure(index: int, attempt: int, want=None) -> VariantRun:
        calls.append((index, attempt))
        v = Variant(index, f"{index:040x}")
        v.status = "built"
        return VariantRun(v, LAB_VM / ("good" if index == 0 else "bad"), status="passed")

    with pytest.raises(NothingToBisect, match="the platform drifted .*canary-tmpfs-read"):
        search(1, measure, history=RECORD, say=lambda s: None)
    assert (0, 1) in calls and (1, 1) in calls  # both ends measured again


def _canary_scaled(src: Path, dst: Path, factor: float, like: Path | None = None) -> Path:
    """A copy of a lab-vm end whose canary samples are multiplied by factor
    (or replaced by those of `like`, then multiplied)."""
    import copy
    import shutil
    shutil.copytree(src, dst)
    doc = copy.deepcopy(bundle.load(dst))
    donor = bundle.load(like) if like else doc
    (canary,) = [c for c in donor["cells"] if c["study"] == "canary-tmpfs-read"]
    reps = copy.deepcopy(canary["repetitions"])
    for rep in reps:
        for s in rep["samples"]:
            s["value"] *= factor
    for cell in doc["cells"]:
        if cell["study"] == "canary-tmpfs-read":
            cell["repetitions"] = reps
    bundle.write_manifest(dst, doc)
    return dst


def test_a_step_measured_while_the_platform_drifted_decides_nothing_and_asks_for_boots(tmp_path, unheld):
    """The ends of the stand-in lab (the bad end's canary made the good end's,
    so they agree); a middle step that measures like the bad end is bad, but
    the same step whose canary fell 30% is unsure, says the platform drifted,
    and asks for the next look of the step in new boots."""
    from iowatch.judging import judge_step
    from iowatch.studies import load_studies
    from iowatch import resources

    studies = load_studies(resources.studies_dir())
    good = Side("good", "good", [bundle.load(LAB_VM / "good")])
    bad_path = _canary_scaled(LAB_VM / "bad", tmp_path / "bad", 1.0, like=LAB_VM / "good")
    bad = Side("bad", "bad", [bundle.load(bad_path)])
    ends = compare_sides(good, bad, studies=studies, history=RECORD)
    assert not ends.platform
    target = next(v for v in ends.regressions if v.key.group == "writer")

    same = judge_step(good, bad, Side("step", "step", [bundle.load(bad_path)]), target,
                      studies=studies)
    assert same.outcome == "bad" and not same.platform

    moved = _canary_scaled(bad_path, tmp_path / "moved", 0.7)
    step = judge_step(good, bad, Side("step", "step", [bundle.load(moved)]), target,
                      studies=studies)
    assert step.outcome == "unsure"
    assert "the platform drifted (canary canary-tmpfs-read" in step.words
    assert step.wants_runs == 10  # the next look after 5, below the study's cap


def test_a_step_measured_while_the_platform_drifted_is_measured_again_with_both_ends(tmp_path, unheld):
    """Rounds as blocks in the bisect (issue 24 item 2): the step's first boot saw
    the platform move (its canary 30% below both ends', the ends of the stand-in
    lab agreeing), so more boots of the step alone would be compared across the
    move again. The search measures good, the step and bad together, in that
    order, and judges the step on that round only: there it measures like bad,
    and it is named the first bad commit."""
    bad_path = _canary_scaled(LAB_VM / "bad", tmp_path / "bad", 1.0, like=LAB_VM / "good")
    moved = _canary_scaled(bad_path, tmp_path / "moved", 0.7)
    calls: list[tuple[int, int]] = []

    def measure(index: int, attempt: int, want=None) -> VariantRun:
        calls.append((index, attempt))
        v = Variant(index, f"{index:040x}", f"commit {index}", status="built")
        path = LAB_VM / "good" if index == 0 else moved if (index, attempt) == (1, 0) else bad_path
        return VariantRun(v, path, status="passed")

    said: list[str] = []
    target, steps, last_good, first_bad, untestable = search(2, measure, history=RECORD, say=said.append)
    assert calls[:3] == [(0, 0), (2, 0), (1, 0)]  # the ends together, then the step alone
    assert calls[3:6] == [(0, 1), (1, 1), (2, 1)], calls  # then a round of all three
    assert any("platform drifted" in line and "measuring good, it and bad together (round 1)"
               in line for line in said), said
    step = next(s for s in steps if s.index == 1)
    assert step.verdict.outcome == "bad" and not step.verdict.platform
    assert len(step.runs) == 2  # both of its boots kept as the step's evidence
    assert (last_good, first_bad, untestable) == (0, 1, [])


def test_a_round_of_the_step_and_both_ends_is_judged_within_its_rounds():
    """side_of gives each run its round, so compare_sides can judge the step
    within the rounds it shares with an end (iowatch.stats.blocks); runs outside
    a round pool."""
    from iowatch.bisect.search import side_of
    v = Variant(0, "0" * 40, "commit 0", status="built")
    a, b = VariantRun(v, LAB_VM / "good", status="passed"), VariantRun(v, LAB_VM / "good",
                                                                        status="passed")
    side = side_of([a, b], {id(b): 3})
    from iowatch.side_data import run_round
    # One name for a round: check_round, as a check's bundle records it (issue 43 item 5).
    assert [run_round(r) for r in side.runs] == [None, 3]
    assert "round" not in side.runs[1] and side.runs[1]["check_round"] == {"check": "", "round": 3}
    from iowatch.side_data import pool
    rounds = pool(side).rounds
    assert rounds and all(labels.count(3) == labels.count(None) for labels in rounds.values())
