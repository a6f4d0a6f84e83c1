"""`iowatch check` as it boots, on boot-clustered draws (issue 24 item 1).

A real check runs a side's repetitions of a round in boots of at most
iowatch.check.REPS_PER_BOOT (first_round_boots: round 0 in at least two
boots a side), interleaved between the kernels. A boot moves all its
repetitions alike, so the verdict sees each value's boot and round, as the
check gives them to compare_sides.

The noise: each cell's lognormal pool (simulate.lognormal_cells), each boot
moving all its repetitions by one lognormal offset that holds `share` of the
cell's log variance; share 0 is no between-boot noise (the labels still by
boot). The paths split a round's repetitions as the check does now
(SHIPPED), one a boot (a new boot per repetition, as Pinpoint runs a new bot
task per run), and as the check did before: two boots in round 0 and one a
round after (TWO), or one boot a round (ONE), all judged by today's rule.
`run` also takes a simulate.Boots for the share: with an offset every cell of
a boot shares, or recorded boots drawn whole (simulate.SideBoots).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

import simulate
from iowatch.check import REPS_PER_BOOT, boot_sizes, first_round_boots
from iowatch.judging import Comparison, more_runs
from iowatch.vocabulary import DEFAULT_CAP, DEFAULT_MIN_EFFECT as MIN_EFFECT, FDR
from iowatch.stats import FIRST, CellInput, CellKey, compare_matrix

# Each path: how a round's repetitions of a side are split over boots.
SHIPPED = f"check as shipped, <={REPS_PER_BOOT} a boot"  # iowatch.check (REPS_PER_BOOT)
TWO = "check, 2 boots in round 0, 1 a round"            # the check before REPS_PER_BOOT
ONE = "check, 1 boot a round"                           # the check before issue 24
# At most n repetitions a boot, every round: what other choices of REPS_PER_BOOT buy.
PER_BOOT = {SHIPPED: REPS_PER_BOOT, **{f"check, <={n} a boot": n for n in (1, 2, 3)
                                       if n != REPS_PER_BOOT}}
PATHS = (*PER_BOOT, TWO, ONE)


def _split(path: str, reps: int, round_no: int) -> tuple[int, ...]:
    """The boots of one side's `reps` new repetitions in round `round_no` on `path`."""
    if path == ONE:
        return (reps,)
    if path == TWO:
        return first_round_boots(reps, per_boot=3) if round_no == 0 else (reps,)
    n = PER_BOOT[path]
    return first_round_boots(reps, n) if round_no == 0 else boot_sizes(reps, n)


class BootedSide:
    """One side of one cell, grown a boot at a time; its side's machine
    (simulate.SideBoots) says what each boot does to it, the same boot for every
    cell of the side that grows in it."""

    def __init__(self, pool: np.ndarray, machine: simulate.SideBoots, index: int, tag: str):
        self.pool, self.machine, self.index, self.tag = pool, machine, index, tag
        self.values: list[float] = []
        self.labels: list[str] = []
        self.rounds: list[int] = []
        self.boots = 0

    def boot(self, n: int, round_no: int, part: int = 0) -> None:
        """n repetitions in the round's `part`-th boot of this side."""
        if n <= 0:
            return
        self.values += list(self.machine.values(self.index, self.pool, n, (round_no, part)))
        self.labels += [f"{self.tag}{self.boots}"] * n
        self.rounds += [round_no] * n
        self.boots += 1

    def __len__(self) -> int:
        return len(self.values)


def _family(d: simulate.Draw, base: list[BootedSide], cand: list[BootedSide], cap: int):
    return compare_matrix([CellInput(CellKey("s", "h", "c", f"d{i}", "fs", "g", "m"), b.values,
                                     c.values, d.cells[i].direction, MIN_EFFECT,
                                     base_boots=b.labels, candidate_boots=c.labels,
                                     base_rounds=b.rounds,
                                     candidate_rounds=c.rounds)
                           for i, (b, c) in enumerate(zip(base, cand))], cap=cap, fdr=FDR)


def judge_check(path: str, d: simulate.Draw, rng, share: float | simulate.Boots,
                cap: int = DEFAULT_CAP):
    """(verdicts, runs a side, boots a side, the variant's boots) of one simulated check: round 0 in
    one or two boots a side, then iowatch.judging.more_runs' next look of each
    unsure cell, both sides, one new boot a side a round, until nothing is wanted.
    `share`: of each cell's variance between boots, or how boots are drawn."""
    boots = share if isinstance(share, simulate.Boots) else simulate.Boots(share)
    machines = simulate.SideBoots(boots, rng, d.cells), simulate.SideBoots(boots, rng, d.cells)
    base = [BootedSide(p, machines[0], i, "b") for i, p in enumerate(d.base_pool)]
    cand = [BootedSide(p, machines[1], i, "c") for i, p in enumerate(d.cand_pool)]
    for part, n in enumerate(_split(path, FIRST, 0)):  # v0 v1 v0 v1: every side's first boot, then its second
        for s in base + cand:
            s.boot(n, 0, part)
    round_no = 0
    while True:
        verdicts = _family(d, base, cand, cap)
        want = more_runs(Comparison(None, None, 0.05, verdicts, [], {}, {}))
        round_no += 1
        grew = False
        for where, runs in want.items():
            i = int(where.device[1:])
            for side, n in ((base[i], runs.base), (cand[i], runs.candidate)):
                if n > len(side):
                    add = n - len(side)
                    for part, m in enumerate(_split(path, add, round_no)):
                        side.boot(m, round_no, part)
                    grew = True
        if not grew:
            sides = base + cand
            # A boot runs every cell still wanted: a variant boots as often as its
            # most-measured cell did.
            return (verdicts, float(np.mean([len(s) for s in sides])),
                    float(np.mean([s.boots for s in sides])), max(s.boots for s in cand))


@dataclass
class CheckTally(simulate.PathTally):
    boots: float = 0.0  # summed over checks: boots a side, averaged over the check's cells
    variant_boots: float = 0.0  # summed over checks: the candidate's boots (its busiest cell's)
    clean_boots: float = 0.0  # the same over the clean checks alone (issue 41 item 3's goal)
    # Slowed checks in which an unchanged cell was confirmed beside the slowed one
    # (issue 41 item 6: what a true discovery's loosening of BH costs the rest).
    beside: dict = field(default_factory=dict)  # condition -> checks with a false confirmation


def run(real, trials: int, seed: int, share: float | simulate.Boots, *, paths=PATHS,
        conditions=tuple(simulate.EXACT), size: int = simulate.MATRIX_CELLS,
        cap: int = DEFAULT_CAP) -> dict[str, CheckTally]:
    """{path: CheckTally} over `trials` clean checks and `trials` a slowed condition;
    `share` as judge_check takes it."""
    rng = np.random.default_rng(seed)
    out = {path: CheckTally() for path in paths}
    for condition in ("aa", *conditions):
        for _ in range(trials):
            d = simulate.draw_matrix(real, rng, None if condition == "aa" else condition, size)
            for path in paths:
                verdicts, runs, boots, variant = judge_check(path, d, rng, share, cap)
                t = out[path]
                t.checks += 1
                t.runs += runs
                t.boots += boots
                t.variant_boots += variant
                flagged = [v.outcome == "regression" for v in verdicts]
                if condition == "aa":
                    state = Comparison(None, None, 0.05, verdicts, [], {}, {}).state
                    t.clean += 1
                    t.clean_boots += variant
                    t.false_alarm += any(flagged)
                    t.states[state if state in t.states else "unsure"] += 1
                else:
                    n, found = t.slowed.get(condition, (0, 0))
                    t.slowed[condition] = (n + 1, found + flagged[d.slowed])
                    others = any(f for i, f in enumerate(flagged) if i != d.slowed)
                    t.beside[condition] = t.beside.get(condition, 0) + others
    return out


def table(out: dict[str, CheckTally], title: str) -> None:
    pct = lambda x: "-" if x is None else f"{100 * x:.0f}%"  # noqa: E731
    print(f"\n{title}")
    print(f"  {'path':<28} {'no chg':>6} {'unsure':>6} {'slower':>6} {'susp.':>6} {'regr.':>6} {'FA/chk':>6} "
          f"{'-10%':>6} {'-20%':>6} {'-50%':>6} {'runs':>5} {'boots':>5} {'b/var':>5}")
    for path, t in out.items():
        states = " ".join(f"{pct(t.share(s)):>6}" for s in ("no-change", "unsure", "slower",
                                                              "suspected", "regression"))
        found = " ".join(f"{pct(t.detected(c)):>6}" for c in simulate.EXACT)
        print(f"  {path:<28} {states} {pct(t.fa):>6} {found} {t.runs / max(t.checks, 1):>5.1f} "
              f"{t.boots / max(t.checks, 1):>5.1f} {t.variant_boots / max(t.checks, 1):>5.1f}")


if __name__ == "__main__":
    import argparse
    p = argparse.ArgumentParser(description="the check as it boots, alone (run.py --paths prints it too)")
    p.add_argument("--trials", type=int, default=100)
    p.add_argument("--seed", type=int, default=2026)
    p.add_argument("--shares", type=float, nargs="*", default=[0.10, 0.25])
    p.add_argument("--caps", type=int, nargs="*", default=[],
                   help="also the shipped path with these repetition caps (a study's max_runs)")
    args = p.parse_args()
    model = simulate.exact_slowdowns(simulate.lognormal_cells(0.10))
    for share in args.shares:
        table(run(model, args.trials, args.seed, share),
              f"the check as it boots, {simulate.MATRIX_CELLS} cells of the lognormal CV 10% model, "
              f"{args.trials} checks a condition; {share:.0%} between boots")
        for cap in args.caps:
            table(run(model, args.trials, args.seed, share, paths=(SHIPPED,), cap=cap),
                  f"... the shipped path with a cap of {cap} a side; {share:.0%} between boots")
