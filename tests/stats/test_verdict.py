"""compare / compare_matrix on data with known answers."""
import math
import numpy as np
import pytest
import scipy.stats

from iowatch.cells import CellLocation, PooledKey
from iowatch.stats import (CellInput, CellKey, benjamini_hochberg, cliffs_delta, compare,
                           compare_matrix, mann_whitney_p, sequential)
from iowatch.stats.verdict import PRIOR_MIN_CELLS, variance_prior
from iowatch.vocabulary import DEFAULT_CAP as CAP, FDR, DEFAULT_MIN_EFFECT as MIN_EFFECT

# A study's minimum effect, false-discovery rate and cap, which the statistics
# take as arguments (the defaults a study file gets).
STUDY = dict(min_effect_pct=MIN_EFFECT, fdr=FDR, cap=CAP)


def _tie_corrected_normal_p(x, y):
    """The two-sided p of U by the normal approximation with the tie and
    continuity corrections, by the textbook formula (Lehmann, Nonparametrics)."""
    ranks = scipy.stats.rankdata(list(x) + list(y))
    m, n = len(x), len(y)
    u = ranks[:m].sum() - m * (m + 1) / 2
    _, t = np.unique(ranks, return_counts=True)
    var = m * n / 12 * ((m + n + 1) - (t ** 3 - t).sum() / ((m + n) * (m + n - 1)))
    if var == 0:
        return 1.0
    z = (max(u, m * n - u) - m * n / 2 - 0.5) / math.sqrt(var)
    return min(1.0, 2 * scipy.stats.norm.sf(z))


@pytest.mark.parametrize("x, y", [
    ([1, 2, 2, 3], [2, 3, 4, 4, 5]),              # ties: normal approximation
    (list(range(12)), list(range(5, 20))),        # over 8 a side: normal approximation
    ([5, 5, 5], [5, 5, 5]),                       # all tied
])
def test_mann_whitney_ties_and_large_samples_by_the_normal_approximation(x, y):
    # scipy.stats.mannwhitneyu, two-sided: the same p-values the hand-written
    # version gave before it was replaced by the library call (issue 27).
    assert mann_whitney_p(x, y) == pytest.approx(_tie_corrected_normal_p(x, y), rel=1e-12)


def test_mann_whitney_is_two_sided():
    x, y = [19, 22, 16, 29, 24], [20, 11, 17, 12]
    assert mann_whitney_p(x, y) == pytest.approx(mann_whitney_p(y, x))


def test_mann_whitney_needs_two_samples_a_side():
    with pytest.raises(ValueError):
        mann_whitney_p([1.0], [2.0, 3.0])


def test_mann_whitney_textbook_values():
    # Complete separation of 5 and 5: only 2 of C(10, 5) = 252 orderings are as extreme.
    assert mann_whitney_p([1, 2, 3, 4, 5], [6, 7, 8, 9, 10]) == pytest.approx(2 / 252)
    # U = 17 of 20 for samples of 5 and 4: P(U >= 17) = 7/126, doubled.
    assert mann_whitney_p([19, 22, 16, 29, 24], [20, 11, 17, 12]) == pytest.approx(2 * 7 / 126)


def test_cliffs_delta_by_hand():
    # y = 2 beats 1, ties 2, loses to 3; y = 4 beats all three: (4 - 1) / 6.
    assert cliffs_delta([1, 2, 3], [2, 4]) == pytest.approx(0.5)
    assert cliffs_delta([1, 2], [3, 4]) == 1.0 and cliffs_delta([3, 4], [1, 2]) == -1.0
    assert compare([1, 2, 3], [2, 4], direction="higher",
                   **STUDY).cliffs_delta == pytest.approx(0.5)


def test_benjamini_hochberg_by_hand_and_statsmodels_values():
    assert benjamini_hochberg([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.02, 0.04, 0.04, 0.02])
    # statsmodels.stats.multitest.multipletests(p, method="fdr_bh")[1] for this classic set:
    p = [0.001, 0.008, 0.039, 0.041, 0.042, 0.06, 0.074, 0.205]
    assert benjamini_hochberg(p) == pytest.approx(
        [0.008, 0.032, 0.0672, 0.0672, 0.0672, 0.08, 0.0845714286, 0.205])
    assert benjamini_hochberg([]) == []


def test_the_ci_covers_the_true_shift_on_a_large_sample():
    rng = np.random.default_rng(42)
    base = rng.normal(1000, 50, 400)
    cand = rng.normal(1100, 50, 400)  # +10%
    v = compare(base, cand, direction="higher", **STUDY)
    assert v.ci_low < 10 < v.ci_high
    assert v.ci_high - v.ci_low < 3
    assert v.outcome == "improvement" and v.p_value < 1e-10


def test_the_test_is_a_t_test_on_log_values():
    base, cand = [100, 104, 97, 101, 99], [90, 93, 88, 92, 91]
    v = compare(base, cand, direction="higher", **STUDY)
    ref = scipy.stats.ttest_ind(np.log(cand), np.log(base), alternative="less")
    assert v.p_worse == pytest.approx(ref.pvalue)
    assert v.change_pct == pytest.approx((np.exp(np.log(cand).mean() - np.log(base).mean()) - 1) * 100)
    # Unequal counts: Welch's test.
    w = compare(base, cand[:3], direction="higher", **STUDY)
    ref = scipy.stats.ttest_ind(np.log(cand[:3]), np.log(base), equal_var=False, alternative="less")
    assert w.p_worse == pytest.approx(ref.pvalue)


def test_regression_needs_significance_and_size():
    v = compare([100, 101, 99, 100, 102, 98], [80, 81, 79, 80, 82, 78], direction="higher",
                metric="write.bw_kib_s", **STUDY)
    assert v.outcome == "regression" and v.change_pct == pytest.approx(-20, abs=0.1)
    assert v.words.startswith("write bandwidth fell 20.0%, from 100 to 80 KiB/s (geometric means): a regression")
    # Lower is better: the same fall is an improvement.
    assert compare([100, 101, 99, 100, 102, 98], [80, 81, 79, 80, 82, 78],
                   direction="lower", **STUDY).outcome == "improvement"
    # Significant but below the minimum effect, and a 5% fall is ruled out: no change,
    # with what was ruled out in the words.
    small = compare([100, 100.1, 99.9, 100, 100.2, 99.8], [99, 99.1, 98.9, 99, 99.2, 98.8],
                    direction="higher", **STUDY)
    assert small.p_value < 0.01 and small.outcome == "no-change"
    assert small.hidden_pct < 5 and "rules out a fall of more than 1." in small.words


def test_three_runs_a_side_can_confirm_a_clear_slowdown():
    # Issue 11: a 28% cut with every candidate below every base at 3 a side was
    # "inconclusive" under Mann-Whitney (its p cannot go below 0.1 there).
    v = compare([1000, 1040, 980], [730, 700, 745], direction="higher", **STUDY)
    assert v.outcome == "regression" and v.level == pytest.approx(0.035 / 4)  # the first look's


def test_a_big_drop_with_few_runs_is_suspected_not_lost():
    # 2 runs a side, -50% but noisy: not confirmed, yet over 3x the minimum effect.
    v = compare([300, 150], [100, 110], direction="higher", metric="write.bw_kib_s", **STUDY)
    assert v.outcome == "suspected" and "suspected regression" in v.words
    # At this noise 20 runs a side would not confirm it: said, with no estimate past the cap.
    assert v.needs_runs is None and "not decidable within the cap (20) at this noise" in v.words
    # Without a big drop and without evidence: unsure, and at this noise the cap cannot decide it.
    u = compare([100, 120, 90], [95, 118, 85], direction="higher", **STUDY)
    assert u.outcome == "inconclusive" and "unsure: not decidable within the cap (20)" in u.words


def test_at_the_cap_an_undecided_cell_ends_no_change_within_what_it_could_not_rule_out():
    # Issue 24: "unsure" at the cap could only be rerun for ever; the cell says
    # the slowdown it rules out instead, its minimum detectable effect.
    rng = np.random.default_rng(5)
    base, cand = rng.normal(100, 12, 20), rng.normal(97, 12, 20)
    v = compare(base, cand, direction="higher", **STUDY)
    assert v.outcome == "no-change" and v.budget_spent and v.needs_runs is None
    # The cap came before the equivalence bound reached the minimum effect...
    assert v.bound_pct == math.ceil(v.hidden_pct) > v.min_effect_pct
    # ...and X is the reach of the CI the words show (issue 41), which holds zero.
    assert v.ci_low < 0 < v.ci_high
    assert v.within_pct == math.ceil(max(-v.ci_low, v.ci_high)) > v.min_effect_pct
    assert f"no change within {v.within_pct:g}%" in v.words
    assert "budget of 20 runs a side is spent" in v.words
    # Before the cap the same kind of cell is unsure; more runs than the cap
    # leaves would be needed, so it says the cap cannot decide it.
    u = compare(base[:15], cand[:15], direction="higher", **STUDY)
    assert u.outcome in ("inconclusive", "suspected") and u.bound_pct is not None
    assert u.needs_runs is None and "not decidable within the cap (20)" in u.words
    assert u.mde_pct > v.mde_pct  # fewer runs, a larger effect needed to detect


def test_at_the_cap_a_cell_clearly_beyond_the_minimum_effect_stays_suspected():
    # A -13% cell at CV 12%: not confirmed in a family of 40 at the last look's level,
    # but its screen holds the family's false-discovery rate, so it is not "no change".
    from iowatch.stats import CellInput, CellKey, compare_matrix
    rng = np.random.default_rng(3)
    cells = [CellInput(CellKey("s", "h", "c", f"d{i}", "fs", "g", "m"), rng.normal(100, 12, 20),
                       rng.normal(100, 12, 20), "higher", MIN_EFFECT) for i in range(39)]
    z = [(x - x.mean()) / x.std(ddof=1) for x in (rng.normal(size=20), rng.normal(size=20))]
    drop = 3.6 * 0.12 * math.sqrt(2 / 20)  # t = 3.6 on the log scale: about -13%
    cells.append(CellInput(CellKey("s", "h", "c", "slow", "fs", "g", "m"), 100 * np.exp(0.12 * z[0]),
                           100 * np.exp(0.12 * z[1] - drop), "higher", MIN_EFFECT))
    slow = compare_matrix(cells, fdr=FDR, cap=CAP)[-1]
    assert slow.outcome == "suspected" and slow.budget_spent and slow.within_pct is None


def test_a_decided_cell_states_its_minimum_detectable_effect():
    v = compare([100, 101, 99, 100, 100.5], [100, 100.2, 99.5, 100.4, 99.9], direction="higher",
                **STUDY)
    assert v.outcome == "no-change" and v.mde_pct is not None and 0 < v.mde_pct <= 5
    assert v.within_pct is None and "no change that matters" in v.words


def test_info_metrics_never_give_a_verdict():
    v = compare([1, 2, 3, 4, 5], [60, 70, 80, 90, 100], direction="info", metric="write.io_kib",
                **STUDY)
    assert v.outcome == "no-change" and "information only" in v.words


def test_needs_runs_grows_as_noise_grows():
    needs = []
    for sd in (3, 3.5, 4):
        v = compare([100 - sd, 100, 100 + sd], [95 - sd, 95, 95 + sd], direction="higher", **STUDY)
        assert v.outcome == "inconclusive"
        needs.append(v.needs_runs)
    assert None not in needs and needs[0] < needs[1] < needs[2]
    assert 3 + needs[2] <= 20  # within the cap
    assert f"rerun, needs about {needs[2]} more runs a side" in v.words


def test_an_estimate_past_the_cap_is_never_given_the_cap_is_said_instead():
    # Issue 44 item 9: "+2354 needed" where the cap is 20.
    v = compare([88, 100, 112], [85, 97, 109], direction="higher", **STUDY)
    assert v.outcome == "inconclusive" and v.needs_runs is None
    half = (v.ci_high - v.ci_low) / 2
    assert f"not decidable within the cap (20) at this noise: CI \u00b1{half:.1f}%" in v.words
    assert "needs about" not in v.words


def test_one_sample_on_a_side_is_judged_by_size_only():
    v = compare([2968], [19], direction="higher", metric="write.bw_kib_s", **STUDY)
    assert v.size_only and v.p_value is None and v.outcome == "regression"
    assert v.words.startswith("write bandwidth fell 99.4%, from 2,968 to 19 KiB/s: a regression")
    assert compare([100], [103], direction="higher", **STUDY).outcome == "no-change"


def test_a_family_adjusts_and_agrees_with_compare_per_cell():
    rng = np.random.default_rng(0)
    cells = [CellInput(CellKey("s", "h", "ssd", "d", "xfs", "g", f"m{i}"),
                       rng.normal(100, 5, 6), rng.normal(100 if i % 2 else 70, 5,
                                                         6), "higher", MIN_EFFECT)
             for i in range(20)]
    out = compare_matrix(cells, fdr=FDR, cap=CAP)
    for cell, v in zip(cells, out):
        # Confirmation rests on the cell's own t, whatever the family.
        single = compare(cell.base, cell.candidate, direction="higher", **STUDY)
        assert v.p_worse == pytest.approx(single.p_worse)
        if v.ci_family is None:  # its own 95% CI
            assert v.ci_low == pytest.approx(single.ci_low)
        else:  # "no change within X%" reads its interval at the family level (issue 41): wider
            assert v.ci_family == 20 and v.ci_level > 0.95
            assert v.ci_low < single.ci_low and v.ci_high > single.ci_high
        assert v.key == cell.key
    assert [v.outcome == "regression" for v in out] == [i % 2 == 0 for i in range(20)]
    slow = [v for v in out if v.outcome == "regression"]
    assert benjamini_hochberg([v.p_worse for v in out])[0] == pytest.approx(out[0].p_adjusted)
    assert all(v.p_adjusted >= v.p_worse for v in slow)


def test_suspicion_reads_the_moderated_t_written_out():
    rng = np.random.default_rng(0)
    cells = [CellInput(CellKey("s", "h", "ssd", "d", "xfs", "g", f"m{i}"),
                       rng.lognormal(0, 0.1, 5), rng.lognormal(0, 0.1, 5), "higher", MIN_EFFECT)
             for i in range(30)]
    out = compare_matrix(cells, fdr=FDR, cap=CAP)
    logs = [(np.log(c.base), np.log(c.candidate)) for c in cells]
    pooled = [(b.var(ddof=1) + c.var(ddof=1)) / 2 for b, c in logs]
    prior = variance_prior(pooled, [8] * 30)
    assert prior is not None and prior.df > 8
    for v, (b, c), s2 in zip(out, logs, pooled):
        # Smyth's moderated t: the cell's variance shrunk toward the family's,
        # the prior's degrees of freedom added to the test's.
        moderated = (prior.df * prior.var + 8 * s2) / (prior.df + 8)
        t = (c.mean() - b.mean()) / np.sqrt(moderated * 2 / 5)
        assert v.p_worse_family == pytest.approx(scipy.stats.t.cdf(t, prior.df + 8), rel=1e-9)
        assert v.p_worse == pytest.approx(scipy.stats.ttest_ind(c, b, alternative="less").pvalue)


def test_a_small_family_lends_nothing_and_agrees_with_compare_per_cell():
    rng = np.random.default_rng(1)
    cells = [CellInput(CellKey("s", "h", "ssd", "d", "xfs", "g", f"m{i}"),
                       rng.normal(100, 5, 5), rng.normal(90, 5, 5), "higher", MIN_EFFECT)
             for i in range(PRIOR_MIN_CELLS - 1)]
    for cell, v in zip(cells, compare_matrix(cells, fdr=FDR, cap=CAP)):
        assert v.p_worse_family == v.p_worse == pytest.approx(
            scipy.stats.ttest_ind(np.log(cell.candidate), np.log(cell.base), alternative="less").pvalue)


def test_the_prior_recovers_the_family_noise_it_was_drawn_from():
    # Cell variances drawn from a scaled inverse chi-square prior (d0 = 12, s0² = 0.01),
    # each measured on 8 degrees of freedom: the moments give both back.
    rng = np.random.default_rng(5)
    sigma2 = 12 * 0.01 / rng.chisquare(12, 4000)
    s2 = sigma2 * rng.chisquare(8, 4000) / 8
    prior = variance_prior(s2, [8] * 4000)
    assert prior.df == pytest.approx(12, rel=0.15) and prior.var == pytest.approx(0.01, rel=0.05)
    # One noise for all: the family lends each cell several times what it measured
    # itself, and never more than the family's own 320 degrees of freedom.
    alike = 0.01 * rng.chisquare(8, 40) / 8
    assert 3 * 8 < variance_prior(alike, [8] * 40).df <= 320
    assert variance_prior(np.full(40, 0.01), [8] * 40).df == 320
    # Noise that truly differs (CV 3% beside CV 40%): little to lend.
    apart = np.r_[0.0009 * rng.chisquare(8, 20) / 8, 0.15 * rng.chisquare(8, 20) / 8]
    assert variance_prior(apart, [8] * 40).df < 3
    assert variance_prior(alike[:PRIOR_MIN_CELLS - 1], [8] * (PRIOR_MIN_CELLS - 1)) is None


def test_a_drop_the_cell_alone_cannot_show_is_suspected_in_a_family_of_its_kind():
    # A -20% cell at CV 10%, 5 runs a side, in a 40-cell check: alone its t gives p = 2.8%,
    # above the 2% screen; with the variance of its 39 neighbours (same noise) p = 0.5%.
    rng = np.random.default_rng(2)
    cells = [CellInput(CellKey("s", "h", "ssd", "d", "xfs", "g", f"m{i}"), rng.lognormal(0, 0.1, 5),
                       rng.lognormal(np.log(0.8) if i == 0 else 0, 0.1,
                                     5), "higher", MIN_EFFECT) for i in range(40)]
    v = compare_matrix(cells, fdr=FDR, cap=CAP)[0]
    alone = compare(cells[0].base, cells[0].candidate, direction="higher", **STUDY)
    assert alone.outcome == "inconclusive" and alone.p_worse > 0.02
    assert v.outcome == "suspected" and v.p_worse_family < 0.02 < v.p_worse == pytest.approx(alone.p_worse)
    assert "suspected regression" in v.words


def test_a_noisy_cell_among_quiet_ones_borrows_little_and_stays_unsure(monkeypatch):
    # Eight quiet cells and one at CV 40% that looks 13% worse: the spread tells
    # the prior the cells differ, so the noisy cell is not made sure by its neighbours.
    rng = np.random.default_rng(8)
    quiet = [CellInput(CellKey("s", "h", "ssd", "d", "xfs", "g", f"m{i}"),
                       rng.lognormal(0, 0.03, 5), rng.lognormal(0, 0.03, 5), "higher", MIN_EFFECT)
             for i in range(8)]
    noisy = CellInput(CellKey("s", "h", "ssd", "d", "xfs", "g", "noisy"),
                      [1.3, 0.8, 1.1, 0.7, 1.2], [0.9, 1.1, 0.6, 0.8, 1.0], "higher", MIN_EFFECT)
    out = compare_matrix([*quiet, noisy], fdr=FDR, cap=CAP)
    alone = compare(noisy.base, noisy.candidate, direction="higher", **STUDY)
    assert out[-1].p_worse == pytest.approx(alone.p_worse, rel=0.5)
    # In the family of nine little is in reach by the cap at this noise (a
    # confirmed slowdown 6%): the family's futility (on as shipped) stops it at
    # the first look, "too noisy". Alone, a family of one is held to the
    # per-cell chance (sequential.family_bound) and its 24% measures on.
    v = out[-1]
    assert v.outcome == "no-change" and v.futile and "too noisy to decide" in v.words
    assert alone.outcome == "inconclusive" and not alone.futile
    # Without it the cell stays unsure, in the family as alone.
    monkeypatch.setattr(sequential, "FAMILY_FUTILE", 0.0)
    out = compare_matrix([*quiet, noisy], fdr=FDR, cap=CAP)
    alone = compare(noisy.base, noisy.candidate, direction="higher", **STUDY)
    assert out[-1].outcome == alone.outcome == "inconclusive"


def test_a_lone_slowdown_in_a_40_cell_family_is_still_found():
    # With Mann-Whitney at 5 a side, Benjamini-Hochberg over 40 cells could flag nothing.
    rng = np.random.default_rng(3)
    cells = [CellInput(CellKey("s", "h", "ssd", "d", "xfs", "g", f"m{i}"), rng.normal(100, 3, 5),
                       rng.normal(70 if i == 7 else 100, 3,
                                  5), "higher", MIN_EFFECT) for i in range(40)]
    out = compare_matrix(cells, fdr=FDR, cap=CAP)
    assert [v.key.metric for v in out if v.outcome == "regression"] == ["m7"]


def test_zero_on_both_sides_is_no_change_and_a_bad_direction_is_refused():
    assert compare([0, 0, 0], [0, 0, 0], direction="lower", **STUDY).outcome == "no-change"
    assert compare([0, 0, 0], [3, 4, 5], direction="lower", **STUDY).outcome == "inconclusive"
    with pytest.raises(ValueError, match="direction"):
        compare([1, 2], [3, 4], direction="up", **STUDY)


def test_a_cell_key_names_its_pooled_values_its_location_and_its_bundle_cell():
    pooled = PooledKey("odirect-vs-readers", "hdd", "vhdd", "ext4", "writer", "write.bw_kib_s")
    key = CellKey.on_host(pooled, host="vlab")
    assert key == CellKey("odirect-vs-readers", "vlab", "hdd", "vhdd", "ext4", "writer", "write.bw_kib_s")
    assert key.pooled == pooled
    assert key.location == pooled.location == CellLocation("odirect-vs-readers", "hdd", "vhdd", "ext4")
    assert PooledKey.at(key.location, "writer", "write.bw_kib_s") == pooled
    assert key.cell_id == "odirect-vs-readers/vhdd/ext4"  # as tests/fixtures/e2e-check's bundles name it


def test_with_several_boots_a_side_the_test_is_on_boot_means():
    """Issue 24: repetitions of one boot are not independent samples of the kernel.
    With two boots or more a side the cell is tested on boot means (Welch's df when
    the boot counts differ), the within-boot spread reported beside it; with one
    boot a side it is the test on repetitions, as before."""
    from iowatch.stats import CellInput, CellKey, compare_matrix
    rng = np.random.default_rng(1)
    key = CellKey("s", "h", "c", "d", "fs", "g", "m")
    # 4 boots of 5 a side, the boots' offsets (10%) twice the repetitions' noise (5%).
    side = lambda: 100 * np.exp(np.repeat(rng.normal(0, 0.1, 4), 5) + rng.normal(0, 0.05, 20))  # noqa: E731
    base, cand = side(), side() * 0.9
    labels = [[f"{s}{i // 5}" for i in range(20)] for s in "bc"]
    plain, = compare_matrix([CellInput(key, base, cand, "higher", MIN_EFFECT)], fdr=FDR, cap=CAP)
    booted, = compare_matrix([CellInput(key, base, cand, "higher", MIN_EFFECT, base_boots=labels[0],
                                        candidate_boots=labels[1])], fdr=FDR, cap=CAP)
    assert plain.boots is None and booted.boots == (4, 4)
    assert booted.change_pct == pytest.approx(plain.change_pct)  # equal boots: the same centre
    # Four boot means a side carry less than twenty repetitions claimed.
    assert booted.p_worse > 10 * plain.p_worse and booted.ci_high - booted.ci_low > plain.ci_high - plain.ci_low
    assert booted.between_boot_share > 0.5 and 3 < booted.within_boot_sd_pct < 7
    # One boot a side: exactly the test on repetitions.
    one, = compare_matrix([CellInput(key, base, cand, "higher", MIN_EFFECT, base_boots=["x"] * 20,
                                     candidate_boots=["y"] * 20)], fdr=FDR, cap=CAP)
    assert (one.p_worse, one.ci_low, one.boots) == (plain.p_worse, plain.ci_low, None)
    # Unequal boot counts: Welch's df on the boot means.
    welch, = compare_matrix([CellInput(key, base, cand[:15], "higher", MIN_EFFECT,
                                       base_boots=labels[0],
                                       candidate_boots=labels[1][:15])], fdr=FDR, cap=CAP)
    b = np.log(base).reshape(4, 5).mean(axis=1)
    c = np.log(cand[:15]).reshape(3, 5).mean(axis=1)
    expected = scipy.stats.ttest_ind(c, b, equal_var=False, alternative="less").pvalue
    assert welch.boots == (4, 3) and welch.p_worse == pytest.approx(expected, rel=1e-9)


def test_a_side_pooled_from_several_runs_is_tested_on_its_runs_as_boots():
    from iowatch.side_data import pool
    from iowatch.side_data import Side
    run = lambda rid, values: {"run_id": rid, "devices": [{"name": "d", "class": "ssd"}], "cells": [  # noqa: E731
        {"study": "s", "device": "d", "filesystem": "xfs", "repetitions": [
            {"samples": [{"job": None, "group": "g", "metric": "m", "value": v}]} for v in values]}]}
    pooled = pool(Side("k", "x", [run("r1", [1, 2]), run("r2", [3, 4, 5])]))
    (key,) = pooled.values
    assert pooled.values[key] == [1, 2, 3, 4, 5] and pooled.boots[key] == ["r1"] * 2 + ["r2"] * 3


def test_an_improved_cell_has_the_same_minimum_detectable_effect_as_an_unchanged_one():
    # Issue 24 follow-up: the "minimum detectable effect" printed was the equivalence
    # bound, so an improved cell said 0%. The same noise and runs must detect the
    # same slowdown, whatever the change observed.
    rng = np.random.default_rng(11)
    base = 100 * np.exp(rng.normal(0, 0.1, 10))
    noise = 100 * np.exp(rng.normal(0, 0.1, 10))
    same = compare(base, noise, direction="higher", **STUDY)
    better = compare(base, noise * 1.3, direction="higher", **STUDY)
    assert better.outcome == "improvement" and better.bound_pct == 0
    assert better.mde_pct == same.mde_pct > 5


@pytest.mark.parametrize("direction, cells", [("higher", 1), ("lower", 1), ("higher", 40)])
def test_the_minimum_detectable_effect_is_z_times_the_standard_error(direction, cells):
    """MDE_log = (z(1 - level/m) + z(0.8)) * SE of the log difference (docs/verdicts.md)."""
    rng = np.random.default_rng(2)
    inputs = [CellInput(CellKey("s", "h", "c", f"d{i}", "fs", "g", "m"),
                        100 * np.exp(rng.normal(0, 0.08, 10)), 100 * np.exp(rng.normal(0, 0.08, 10)),
                        direction, MIN_EFFECT) for i in range(cells)]
    v = compare_matrix(inputs, fdr=FDR, cap=CAP)[0]
    xb, xc = np.log(inputs[0].base), np.log(inputs[0].candidate)
    se = math.sqrt((xb.var(ddof=1) + xc.var(ddof=1)) / 10)
    d = (scipy.stats.norm.isf(v.level / cells) + scipy.stats.norm.ppf(0.8)) * se
    want = (1 - math.exp(-d)) * 100 if direction == "higher" else math.expm1(d) * 100
    assert v.mde_pct == pytest.approx(math.ceil(want * 10) / 10)


def test_a_slowdown_at_the_minimum_detectable_effect_is_confirmed_about_80_percent_of_the_time():
    # A lone cell at 20 a side, CV 10%: slowed by its own MDE (taken at the noise's
    # true sd), it should be confirmed near the stated power (Student's t at 38 df
    # loses a little against the normal quantiles).
    rng = np.random.default_rng(7)
    sd, n = 0.1, 20
    level = compare(np.exp(rng.normal(0, sd, n)), np.exp(rng.normal(0, sd, n)),
                    direction="higher", **STUDY).level
    from iowatch.stats.detectable import minimum_detectable_effect
    mde = minimum_detectable_effect(sd * math.sqrt(2 / n), level, direction="higher")
    confirmed = sum(compare(np.exp(rng.normal(0, sd, n)),
                            np.exp(rng.normal(math.log1p(-mde / 100), sd, n)),
                            direction="higher", **STUDY).outcome == "regression"
                    for _ in range(600))
    assert 0.70 <= confirmed / 600 <= 0.88


def test_no_change_that_moved_the_better_way_says_the_gain_is_unconfirmed():
    """At the cap, "no change" rules out a slowdown only: a cell 17% faster
    whose CI still reaches zero must not read "no change that matters" (seed
    004's wall time in the post's orientation did)."""
    rng = np.random.default_rng(4)
    base = 100 * np.exp(rng.normal(0, 0.35, 15))
    cand = 83 * np.exp(rng.normal(0, 0.35, 15))
    v = compare(list(base), list(cand), direction="lower", metric="wall_s", cap=15,
                min_effect_pct=MIN_EFFECT, fdr=FDR)
    assert v.outcome == "no-change", v.words
    assert "no change that matters" not in v.words
    # Issue 41: its CI holds zero and reaches far: "no change within X%", too noisy to decide.
    assert v.ci_low < 0 < v.ci_high and f"no change within {v.within_pct:g}%" in v.words
    assert "the study cannot decide this cell at this noise" in v.words


def test_a_better_side_ci_not_confirmed_rules_out_a_slowdown_in_its_words():
    """The e2e check's readers beside the slowed writer (2026-12-01): read
    bandwidth rose 54.4%, family-adjusted CI [+2.0%, +133.5%], not confirmed.
    Its words said "a change of up to 134% either way is not ruled out", though
    the interval rules a slowdown out; a CI that holds zero still says so."""
    from iowatch.vocabulary.wording import sentence

    def words(ci):
        return sentence("read.bw_kib_s", "higher", 11.0, 16.9, 54.4, "no-change", size_only=False,
                        min_effect_pct=5.0, needs_runs=None, runs=(5, 5), ci=ci,
                        ci_words="98.25% CI, family-adjusted over 2 cells")

    better = words((2.0, 133.5))
    assert "faster by less than 134%, not confirmed" in better
    assert "no slowdown" in better and "either way" not in better
    straddles = words((-6.0, 9.3))
    assert "no change within 10%" in straddles and "either way is not ruled out" in straddles
