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

from iowatch import bundle
from iowatch.bisect.search import NothingToBisect, choose_target, search
from iowatch.check import VariantRun
from iowatch.comparison import Side
from iowatch.judging import compare_sides
from iowatch.kernel.build import Variant
from iowatch.stats.oracle import place, steps_left

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "e2e-check"
FAST, SLOW = FIXTURES / "guest-00" / "bundle", FIXTURES / "guest-02" / "bundle"


def measurer(kinds: dict[int, str], calls: list[int]):
    """measure(index, attempt) over the fixture bundles: kinds maps an index to
    fast, slow or a failure status."""
    def measure(index: int, attempt: int) -> VariantRun:
        calls.append(index)
        v = Variant(index, f"{index:040x}", f"commit {index}", status="built")
        kind = kinds[index]
        if kind in ("fast", "slow"):
            path = FAST if kind == "fast" else SLOW
            return VariantRun(v, path, status=bundle.load(path)["status"])
        return VariantRun(v, None, status=kind, reason=f"{kind} on purpose")
    return measure


def test_the_oracle_places_a_candidate_between_the_ends():
    good, bad = [300, 310, 305], [200, 195, 205]
    assert place(good, bad, [302, 298, 306]).outcome == "good"
    assert place(good, bad, [201, 199, 210]).outcome == "bad"
    half = place(good, bad, [250, 255, 248])
    assert half.outcome == "unclear" and 0.4 < half.position < 0.6
    settled = place(good, bad, [240, 245, 238], settle=True)
    assert settled.outcome == "bad" and settled.decided_by_nearer and "nearer end" in settled.words
    with pytest.raises(ValueError, match="same median"):
        place([1, 2, 3], [3, 2, 1], [2])
    assert [steps_left(n) for n in (1, 2, 3, 4, 6, 8, 9)] == [0, 1, 2, 2, 3, 3, 4]


@pytest.mark.parametrize("first_bad", [1, 3, 6])
def test_the_search_names_the_first_slow_variant(first_bad):
    n = 6
    calls: list[int] = []
    kinds = {i: "fast" if i < first_bad else "slow" for i in range(n + 1)}
    target, steps, last_good, found, untestable = search(n, measurer(kinds, calls), say=lambda s: None)
    assert (found, last_good, untestable) == (first_bad, first_bad - 1, [])
    assert (target.key.group, target.key.metric) == ("writer", "write.bw_kib_s")
    assert calls[:2] == [0, n] and len(calls) <= 2 + steps_left(n)
    outcomes = {s.index: s.placement.outcome for s in steps}
    assert all(outcomes[i] == ("good" if i < first_bad else "bad") for i in outcomes)


def test_a_variant_that_does_not_build_is_skipped_for_its_neighbour():
    kinds = {0: "fast", 1: "fast", 2: "fast", 3: "build-failed", 4: "slow", 5: "slow", 6: "slow"}
    calls: list[int] = []
    _, steps, last_good, found, untestable = search(6, measurer(kinds, calls), say=lambda s: None)
    assert (last_good, found) == (2, 4) and untestable == [3]
    assert next(s for s in steps if s.index == 3).skipped == "build-failed"


def test_ends_that_do_not_differ_leave_nothing_to_bisect():
    kinds = {0: "fast", 6: "fast"}
    with pytest.raises(NothingToBisect, match="no regression"):
        search(6, measurer(kinds, []), say=lambda s: None)
    with pytest.raises(NothingToBisect, match="bad end .* boot-failed"):
        search(6, measurer({0: "fast", 6: "boot-failed"}, []), say=lambda s: None)


def test_the_target_can_be_narrowed_by_metric():
    from iowatch.studies import load_studies
    studies = load_studies(Path(__file__).resolve().parents[2] / "jobs" / "studies")
    cmp = compare_sides(Side("g", "", [bundle.load(FAST)]), Side("b", "", [bundle.load(SLOW)]),
                        studies=studies)
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
                     "--bundles", str(bundles)]) == 0
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
    assert step["first_bad"]["index"] == 4 and step["untestable"] == [3] and step["last_good"] == 2
    assert {s["index"]: s["outcome"] for s in step["steps"]}[3] == "skipped"
    assert "the first bad commit is one of variants [3, 4]" in step["report"]


def test_the_next_step_names_a_variants_file_it_cannot_read(tmp_path, capsys):
    from iowatch.cli import main
    (tmp_path / "v.json").write_text("{not json")
    assert main(["bisect", "--variants", str(tmp_path / "v.json"), "--bundles", str(tmp_path)]) == 2
    assert "v.json: not the JSON of `iowatch kernel build --json`" in capsys.readouterr().err
