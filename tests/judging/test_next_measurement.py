"""judging.next_measurement: one answer to "what comes next" for every path
(issue 43 item 2). The same comparison is fed to the three paths that add
repetitions, each through its own loop or the function its loop calls, and
each must ask for the same cells and repetitions, the ratio's raw partner and
the canary included:

- `iowatch check` (check.add_repetitions: each variant's boots of a round);
- `iowatch run --against` (commands.run.against_targets: the candidate
  bundle's repetitions; the base bundle cannot grow);
- the bisect (bisect.search: both ends measured again while they do not differ).

The comparisons are of real bundles: seed 001's reproduction (base against
patch 1 at 3 repetitions a side: the ext4/raw ratio inconclusive while the raw
cell's own IOPS are decided) and the stand-in lab host's good end against a
copy whose writer and readers are scattered (unsure), its canary held."""
from __future__ import annotations

import copy
import shutil
from pathlib import Path

import pytest

from iowatch import bundle, resources
from iowatch.bisect.search import search
from iowatch.check import CheckResult, VariantRun, add_repetitions
from iowatch.commands.run import against_targets
from iowatch.judging import compare_sides
from iowatch.judging.next_measurement import (ALONE, ENDS_ONLY, WITH_ENDS, next_measurement,
                                              rounds_allowed)
from iowatch.judging.bisect import StepVerdict
from iowatch.kernel.build import Variant
from iowatch.side_data import Side
from iowatch.studies import load_studies

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
SEED_001 = FIXTURES / "reproductions" / "seed-001"
LAB_VM = FIXTURES / "lab-vm-bisect"


class Enough(Exception):
    """Raised by a recording measurement once the first round is known."""


def _scattered(src: Path, dst: Path) -> Path:
    """A copy of a bundle whose writer and readers bandwidths are scattered over
    a factor of five (geometric mean about 1): unsure against the original."""
    shutil.copytree(src, dst)
    doc = copy.deepcopy(bundle.load(dst))
    factors = [0.3, 1.5, 0.5, 1.4, 1.0]
    for cell in doc["cells"]:
        if cell["study"] == "canary-tmpfs-read":
            continue
        for i, rep in enumerate(cell["repetitions"]):
            for s in rep["samples"]:
                if s["metric"] in ("write.bw_kib_s", "read.bw_kib_s") and s.get("job") is None:
                    s["value"] *= factors[i % len(factors)]
    doc["run_id"] = doc["run_id"][:-4] + "beef"
    bundle.write_manifest(dst, doc)
    return dst


def _seed_001(tmp_path: Path) -> tuple[Path, Path]:
    return SEED_001 / "guest-00" / "bundle", SEED_001 / "guest-01" / "bundle"


def _lab_vm(tmp_path: Path) -> tuple[Path, Path]:
    return LAB_VM / "good", _scattered(LAB_VM / "good", tmp_path / "scattered")


# Each row: the two bundles (base, candidate) and the repetitions to add to
# each side of each wanted cell.
ROWS = [
    pytest.param(_seed_001, {"ext4-dio-randread/vssd/ext4": 2, "ext4-dio-randread/vssd/raw": 2},
                 id="seed-001: the ratio unsure, its raw partner along"),
    pytest.param(_lab_vm, {"odirect-vs-readers/hdd/ext4": 5, "canary-tmpfs-read/hdd/tmpfs": 5},
                 id="lab-vm: writer and readers unsure, the canary along"),
]


def _check_wants(base: Path, candidate: Path) -> dict[int, tuple[tuple[str, ...], int]]:
    """What the check's first round measures of each variant: its cells and repetitions."""
    result = CheckResult(series=None, plan=None)
    for i, path in enumerate((base, candidate)):
        result.runs.append(VariantRun(Variant(i, f"{i:040x}", f"commit {i}", status="built"),
                                      path, status="passed"))
    asked: dict[int, tuple[tuple[str, ...], int]] = {}

    def measure_more(vr, cells, reps, round_no):
        if round_no > 1:
            raise Enough
        asked[vr.variant.index] = (tuple(cells), reps)
        return VariantRun(vr.variant, None, status="boot-failed")

    with pytest.raises(Enough):
        add_repetitions(result, measure_more, say=lambda s: None, per_boot=100)
    return asked


def _bisect_wants(base: Path, candidate: Path) -> dict[int, dict[str, int]]:
    """What the bisect measures of each end when they are measured again."""
    asked: dict[int, dict[str, int]] = {}

    def measure(index: int, attempt: int, want=None) -> VariantRun:
        if attempt > 0:
            asked[index] = dict(want)
            if len(asked) == 2:
                raise Enough
        v = Variant(index, f"{index:040x}", f"commit {index}", status="built")
        return VariantRun(v, base if index == 0 else candidate, status="passed")

    with pytest.raises(Enough):
        search(1, measure, say=lambda s: None)
    return asked


@pytest.mark.parametrize("sides, adds", ROWS)
def test_check_run_against_and_the_bisect_want_the_same(sides, adds, tmp_path):
    base, candidate = sides(tmp_path)
    studies = load_studies(resources.studies_dir())
    cmp = compare_sides(Side("base", "base", [bundle.load(base)]),
                        Side("candidate", "candidate", [bundle.load(candidate)]), studies=studies)
    cells, reps = tuple(sorted(adds)), max(adds.values())
    # The check: both variants of the patch, the same cells, a boot of the adds each.
    assert _check_wants(base, candidate) == {0: (cells, reps), 1: (cells, reps)}
    # run --against: the candidate's cells to the same counts (what it has plus the adds).
    have = {c["id"]: len(c["repetitions"]) for c in bundle.load(candidate)["cells"]}
    assert against_targets(cmp, studies, bundle.load(candidate)) == {
        cell: have[cell] + n for cell, n in adds.items()}
    # The bisect: both ends measured again, the same cells and repetitions.
    assert _bisect_wants(base, candidate) == {0: adds, 1: adds}


def test_the_rounds_allowed_are_one_per_look_after_the_first_of_the_largest_cap(tmp_path):
    studies = load_studies(resources.studies_dir())
    good, scattered = _lab_vm(tmp_path)
    five = compare_sides(Side("g", "g", [bundle.load(good)]), Side("s", "s", [bundle.load(scattered)]),
                         studies=studies)
    assert five.caps == [20] and rounds_allowed([five]) == 3  # 10, 15 and 20
    # Seed 001: a cap of 60 (12 looks) and 3 repetitions a side, below the first look.
    base, patched = _seed_001(tmp_path)
    three = compare_sides(Side("b", "b", [bundle.load(base)]), Side("p", "p", [bundle.load(patched)]),
                          studies=studies)
    assert three.caps == [60] and rounds_allowed([three]) == 11 + 1
    assert rounds_allowed([five, three]) == 12 and next_measurement(five, studies).rounds == 3


def _step(outcome="unsure", wants_runs=0, wants_good=0, wants_bad=0, platform=""):
    return StepVerdict(outcome, None, None, 1.0, 0.5, 0.05, wants_runs,
                       wants_good=wants_good, wants_bad=wants_bad, platform=platform)


@pytest.mark.parametrize("step, joint, plan, reps", [
    (_step("bad"), False, None, {}),
    (_step(wants_runs=10), False, ALONE, {"step": 10}),
    (_step(wants_runs=10, platform="the platform drifted"), False, WITH_ENDS,
     {"good": 10, "step": 10, "bad": 10}),
    (_step(wants_runs=10), True, WITH_ENDS, {"good": 10, "step": 10, "bad": 10}),
    (_step(wants_bad=15), True, None, {}),  # at its cap in its rounds: an end alone is not in them
    (_step(wants_bad=15), False, ENDS_ONLY, {"bad": 15}),
    (_step(wants_good=10, wants_bad=15), False, ENDS_ONLY, {"good": 10, "bad": 15}),
    (_step(), False, None, {}),
], ids=["decided", "alone", "drifted", "in rounds", "capped in rounds", "bad end", "both ends",
        "nothing"])
def test_a_bisect_steps_plan(step, joint, plan, reps):
    nxt = next_measurement(step, {}, joint=joint)
    assert (nxt.plan, nxt.reps, bool(nxt)) == (plan, reps, plan is not None)
