"""The check's verdict on real guest bundles: patch 2 of the e2e series is named,
patch 1 is not, and the writer's collapse is a regression while readers improve.

The bundles in tests/fixtures/e2e-check/ are what `scripts/e2e-check.sh` wrote:
three TCG guests (base, base+p1, base+p1+p2) running jobs/e2e.yml on the
virtual lab's hdd (see that directory's README)."""
from __future__ import annotations

from pathlib import Path

from iowatch import bundle
from iowatch.check import CheckResult, VariantRun, _compare, report, summary
from iowatch.kernel.build import Plan, Variant
from iowatch.kernel.series import load_series

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "e2e-check"


def result_from_fixtures() -> CheckResult:
    series = load_series(str(REPO / "kernels/series/e2e-slow-ext4-dio"))
    docs = [bundle.load(FIXTURES / f"guest-{i:02d}" / "bundle") for i in range(3)]
    plan = Plan(REPO, REPO, REPO, series, docs[0]["kernel"]["git_commit"], [])
    result = CheckResult(series, plan)
    for i, doc in enumerate(docs):
        k = doc["kernel"]
        assert k["series"]["name"] == "e2e-slow-ext4-dio" and k["patch"]["index"] == i
        v = Variant(i, k["git_commit"], k["patch"].get("subject"), status="built",
                    release=k["release"])
        result.runs.append(VariantRun(v, FIXTURES / f"guest-{i:02d}" / "bundle", status=doc["status"]))
    _compare(result)
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
