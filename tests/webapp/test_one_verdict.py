"""One verdict everywhere (issue 11): every path that judges two sides says the
same thing on the same data, because all of them go through iowatch.judging.

The data is tests/fixtures/e2e-check: three real TCG-guest bundles of a
two-patch series (patch 1 changes only a comment; patch 2 makes ext4 direct
writes wait, so the writer's bandwidth falls about a third while the readers
rise). The paths: `iowatch compare` (a child process), the `iowatch check`
report, the verdicts the server stores when the bundles arrive (read through
the API and the series page), and the dashboard's compare endpoint.
"""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from bundle_maker import calibration_bundles, planted_bundle, recorded_boots
from iowatch import bundle
from iowatch.check import CheckResult, VariantRun, compare_with_parents, report
from iowatch.side_data import Side
from iowatch.side_sources import bundles_history
from iowatch.judging import compare_sides
from iowatch.kernel.build import Plan, Variant
from iowatch.kernel.series_input import load_series
from iowatch.studies import load_studies
from iowatch_web.regressions.models import StoredVerdict, StoredComparison, Regression
from iowatch_web.results.models import Kernel, PatchSeries

pytestmark = pytest.mark.django_db(transaction=True)

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "e2e-check"
BUNDLES = [FIXTURES / f"guest-{i:02d}" / "bundle" for i in range(3)]
# The bundles are one boot each: every path reads the same record of the
# host's noise between boots, one kernel of it booted six times (issue 41 item 1).
AABB = REPO / "tests" / "fixtures" / "e2e-boots" / "aabb"
IOWATCH = str(Path(sys.executable).parent / "iowatch")
NUMBERS = ("outcome", "change_pct", "ci_low", "ci_high", "p_value", "p_adjusted", "p_worse_family",
           "mde_pct")


def _cells(verdicts) -> dict:
    """{(group, metric): the numbers that must agree} of judged cells."""
    return {(v.key.group, v.key.metric): {f: getattr(v, f) for f in NUMBERS}
            | {"base_n": v.base.n, "candidate_n": v.candidate.n, "base_mean": v.base.mean}
            for v in verdicts}


def _stated_mdes(text: str) -> dict:
    """{group: the minimum detectable effect a text report states for it}: the
    compare report's "group metric: OUTCOME" block and the check report's
    "[group] ...; minimum detectable effect X%" rows and "group metric [n vs n
    runs, minimum detectable effect X%]" list."""
    out, group = {}, None
    for line in text.splitlines():
        head = re.match(r"    (\w+) [\w.]+: [A-Z]", line)
        if head:
            group = head.group(1)
        said = re.match(r"      minimum detectable effect at \d+ vs \d+ runs: ([\d.]+)%", line)
        if said:
            out[group] = float(said.group(1))
        for g, x in re.findall(r"\[(\w+)\] [^\n]*?minimum detectable effect ([\d.]+)%", line):
            out[g] = float(x)
        for g, x in re.findall(r"(\w+) [\w.]+ \[\d+ vs \d+ runs, minimum detectable effect "
                               r"([\d.]+)%\]", line):
            out[g] = float(x)
    return out


def _same(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    for key in a:
        for field, value in a[key].items():
            if isinstance(value, float):
                assert b[key][field] == pytest.approx(value, rel=1e-9), (key, field)
            else:
                assert b[key][field] == value, (key, field)


def _library(base: int, candidate: int):
    side = lambda i: Side(str(BUNDLES[i]), str(BUNDLES[i]), [bundle.load(BUNDLES[i])])  # noqa: E731
    return compare_sides(side(base), side(candidate), studies=load_studies(REPO / "jobs/studies"),
                         history=bundles_history([str(AABB)]))


@pytest.fixture
def arrived(post):
    """The three bundles uploaded through the ingest API, their verdicts made by
    the queue, after the host's recorded boots (as calibration runs)."""
    for doc in recorded_boots():
        status, body = post(doc)
        assert status == 201, body
    for path in BUNDLES:
        status, body = post(json.loads(bundle.to_wire(path)))
        assert status == 201, body
    series = PatchSeries.objects.get(name="e2e-slow-ext4-dio")
    return series, [Kernel.objects.get(series=series, patch_index=i) for i in range(3)]


def test_every_path_names_patch_2_with_the_same_cells_and_numbers(arrived, client):
    series, kernels = arrived
    expected = {1: _cells(_library(0, 1).verdicts), 2: _cells(_library(1, 2).verdicts)}
    # The deciding cells only: the writer's and the readers' bandwidth (not IOPS, not CPU).
    assert set(expected[2]) == {("writer", "write.bw_kib_s"), ("readers", "read.bw_kib_s")}
    assert expected[2]["writer", "write.bw_kib_s"]["outcome"] == "regression"
    assert "regression" not in {c["outcome"] for c in expected[1].values()}

    # iowatch compare, as a maintainer runs it.
    stated = {}
    for patch in (1, 2):
        r = subprocess.run([IOWATCH, "compare", str(BUNDLES[patch - 1]), str(BUNDLES[patch]),
                            "--format", "json", "--history", str(AABB)],
                           capture_output=True, text=True, cwd=REPO)
        assert r.returncode == (1 if patch == 2 else 0), r.stderr
        got = {(c["group"], c["metric"]): {"outcome": c["outcome"], "change_pct": c["change_pct"],
                                           "ci_low": c["ci"]["low"], "ci_high": c["ci"]["high"],
                                           "p_value": c["p_value"], "p_adjusted": c["p_adjusted"],
                                           "p_worse_family": c["p_worse_family"],
                                           "mde_pct": c["mde_pct"],
                                           "base_n": c["base"]["n"], "candidate_n": c["candidate"]["n"],
                                           "base_mean": c["base"]["mean"]}
               for c in json.loads(r.stdout)["cells"]}
        _same(expected[patch], got)
        text = subprocess.run([IOWATCH, "compare", str(BUNDLES[patch - 1]), str(BUNDLES[patch]),
                               "--history", str(AABB)], capture_output=True, text=True,
                              cwd=REPO).stdout
        stated[patch] = _stated_mdes(text)
        # The minimum detectable effect is the noise's, not the change's: every
        # deciding cell states one above 0, the improved readers too.
        assert stated[patch] == {g: c["mde_pct"] for (g, _), c in expected[patch].items()}
        assert all(x > 0 for x in stated[patch].values())

    # The iowatch check report of the same three bundles.
    check = _check_result()
    for patch in (1, 2):
        _same(expected[patch], _cells(check.runs[patch].vs_parent.verdicts))
    text = report(check)
    # The check report states the same minimum detectable effects as compare's report.
    one, two = text.split("patch 1/2")[1].split("patch 2/2")
    assert (_stated_mdes(one), _stated_mdes(two.split("regressing patches")[0])) == \
        (stated[1], stated[2])
    assert "regressing patches: patch 2 (ext4: yield" in text
    assert "patch 1/2: xfs: say that statfs results must not be cached\n    REGRESSION" not in text

    # The verdicts the server stored when the bundles arrived.
    for patch in (1, 2):
        comparison = StoredComparison.objects.get(reason="parent", candidate_kernel=kernels[patch])
        stored = {(v.group, v.metric_id): {f: getattr(v, f) for f in NUMBERS}
                  | {"base_n": v.base_n, "candidate_n": v.candidate_n, "base_mean": v.base_mean}
                  for v in comparison.cells.all()}
        _same(expected[patch], stored)
    # Patch 2 against its parent (with the series base inside); nothing for patch 1.
    assert {r.comparison.candidate_kernel for r in Regression.objects.all()} == {kernels[2]}
    regression = Regression.objects.get(comparison__reason="parent")
    detail = client.get(f"/api/v1/regressions/{regression.pk}").json()
    assert [(c["group"], c["metric"]) for c in detail["cells"]] == [("writer", "write.bw_kib_s")]
    cell = detail["cells"][0]
    assert cell["change_pct"] == pytest.approx(expected[2]["writer", "write.bw_kib_s"]["change_pct"])
    # One change, one regression (issue 28): the series-base comparison is a view inside it.
    assert client.get("/api/v1/regressions").json()["count"] == 1
    assert [v["reason"] for v in detail["views"]] == ["series-base"]

    # The series page: a regression chip on patch 2's row only.
    page = client.get(f"/series/{series.pk}/").content.decode()
    rows = re.findall(r"<tr.*?</tr>", page, re.S)
    chips = {i: re.findall(r'class="chip ([a-z-]+)"', row) for i, row in enumerate(rows)
             if f"candidate=kernel:{kernels[1].pk}" in row or f"candidate=kernel:{kernels[2].pk}" in row}
    by_patch = {1 if f"candidate=kernel:{kernels[1].pk}" in rows[i] else 2: c for i, c in chips.items()}
    assert by_patch[2] == ["regression"] and "regression" not in by_patch[1]

    # The dashboard's compare of the two kernels.
    for patch in (1, 2):
        got = client.get("/dashboard/api/compare", {"base": f"kernel:{kernels[patch - 1].pk}",
                                                    "candidate": f"kernel:{kernels[patch].pk}"}).json()
        judged = {(c["group"], c["metric"]): {"outcome": c["outcome"], "change_pct": c["change_pct"],
                                              "ci_low": c["ci_low"], "ci_high": c["ci_high"],
                                              "p_value": c["p_value"], "p_adjusted": c["p_adjusted"],
                                              "p_worse_family": c["p_worse_family"],
                                              "mde_pct": c["mde_pct"],
                                              "base_n": c["base"]["n"], "candidate_n": c["candidate"]["n"],
                                              "base_mean": c["base"]["mean"]}
                  for c in got["cells"]}
        _same(expected[patch], judged)
        assert _stated_mdes(got["report"]) == stated[patch]
        # The rest is shown as diagnostics, never judged: the device IOPS that rose 30%
        # on patch 1 among them.
        assert all(c["outcome"] == "diagnostic" for c in got["diagnostics"])
        assert "device.write_iops" in {c["metric"] for c in got["diagnostics"]}


def _check_result() -> CheckResult:
    series = load_series(str(REPO / "kernels/series/e2e-slow-ext4-dio"))
    docs = [bundle.load(b) for b in BUNDLES]
    result = CheckResult(series, Plan(REPO, REPO, REPO, series, docs[0]["kernel"]["git_commit"], []))
    for i, doc in enumerate(docs):
        k = doc["kernel"]
        v = Variant(i, k["git_commit"], k["patch"].get("subject"), status="built", release=k["release"])
        result.runs.append(VariantRun(v, BUNDLES[i], status=doc["status"]))
    compare_with_parents(result, history=bundles_history([str(AABB)]))
    return result


def _server_studies(settings, tmp_path, **changes) -> Path:
    """A copy of the studies whose f2fs-dio-write (planted_bundle's study) has
    these settings changed, made the server's (IOWATCH_STUDIES)."""
    studies = tmp_path / "studies"
    shutil.copytree(REPO / "jobs" / "studies", studies)
    path = studies / "f2fs-dio-write.yml"
    path.write_text(yaml.safe_dump(yaml.safe_load(path.read_text()) | changes, sort_keys=False))
    settings.IOWATCH_STUDIES = str(studies)
    return studies


def test_the_study_files_minimum_effect_judges_on_the_server_too(post, settings, tmp_path):
    """A study with a 30% minimum effect: a -20% change is no regression, on the
    server as in the library; with the default 5% the same data is one."""
    studies = _server_studies(settings, tmp_path, min_effect_pct=30)
    noise = [-4, 2, 4, -2, 0]
    docs = [planted_bundle({"write.bw_kib_s": [level + e for e in noise]}, started_at=f"2024-05-01T0{i}:00:00Z",
                           kernel={"release": "6.12.0", "git_commit": f"{i + 1:012x}"})
            for i, level in enumerate((1000, 800))]
    calibration = calibration_bundles(docs[0])  # the host's record of its noise between boots
    for doc in calibration + docs:
        status, body = post(doc)
        assert status == 201, body
    (stored,) = StoredVerdict.objects.all()
    assert stored.min_effect_pct == 30 and stored.change_pct == pytest.approx(-20, abs=0.5)
    assert stored.outcome != "regression" and not Regression.objects.exists()
    manifests = [json.loads(json.dumps(d)) for d in docs]
    sides = [Side(str(i), "wire", [m]) for i, m in enumerate(manifests)]
    history = [Side("calibration", "wire", calibration)]
    strict = compare_sides(*sides, studies=load_studies(studies), history=history).verdicts[0]
    assert (strict.outcome, strict.min_effect_pct) == (stored.outcome, 30)
    # The repository's study (5%): the same drop is a regression.
    assert compare_sides(*sides, studies=load_studies(REPO / "jobs/studies"),
                         history=history).verdicts[0].outcome == "regression"


def test_the_study_files_cap_judges_on_the_server_too(post, settings, tmp_path):
    """max_runs: 40 in the study file: an unsure cell at 20 runs a side has
    budget left and asks for more, on the server as in the library; with the
    default cap (20) the same data has spent its budget. The candidate trends
    12% slower, so a confirmation is still in reach by 40 (a cell trending
    nowhere at this noise would stop before its cap: futility, issue 41)."""
    studies = _server_studies(settings, tmp_path, max_runs=40)
    spread = [1000, 1400, 700, 1200, 900] * 4  # 20 a side, CV about 26%
    docs = [planted_bundle({"write.bw_kib_s": [v * factor for v in spread]},
                           started_at=f"2024-05-01T0{i}:00:00Z",
                           kernel={"release": "6.12.0", "git_commit": f"{i + 1:012x}"})
            for i, factor in enumerate((1.0, 0.88))]
    for doc in docs:
        status, body = post(doc)
        assert status == 201, body
    (stored,) = StoredVerdict.objects.all()
    assert (stored.base_n, stored.candidate_n, stored.outcome) == (20, 20, "inconclusive")
    # Budget left, but at this noise not enough to decide (issue 44: no estimate past the cap).
    assert not stored.budget_spent and stored.needs_runs is None and stored.cap == 40
    assert "not decidable within the cap (40)" in stored.words
    sides = [Side(str(i), "wire", [json.loads(json.dumps(d))]) for i, d in enumerate(docs)]
    wide = compare_sides(*sides, studies=load_studies(studies)).verdicts[0]
    assert (wide.cap, wide.budget_spent, wide.needs_runs, wide.level) == (
        40, stored.budget_spent, stored.needs_runs, stored.level)
    # The repository's study (20): the same cell is at its cap.
    shipped = compare_sides(*sides, studies=load_studies(REPO / "jobs/studies")).verdicts[0]
    assert shipped.cap == 20 and shipped.budget_spent and shipped.level > wide.level
