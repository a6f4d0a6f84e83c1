"""Matrices drawn from real samples, judged by iowatch and by the anchors' rules.

The samples are tests/fixtures/accuracy/real-samples.json (bench/accuracy/
collect.py: repeated real runs of one kernel on this machine's loop devices,
and the same cells slowed by blkio throttling). A simulated check is a
matrix of MATRIX_CELLS deciding cells, each one of the real cells, whose two
sides are drawn with replacement from that cell's unthrottled repetitions;
in a "slowed" check one throttled cell takes its candidate side from the
repetitions measured under a throttle instead. Drawing with replacement lets
20 + 20 repetitions a side come from 30 real ones; the duplicates it makes
shrink the spread a little, which makes false alarms slightly likelier, not
rarer.

Rules on the same draws (the anchors in docs/verdicts.md):
- iowatch: iowatch.stats.compare_matrix over the family of the matrix, at a
  fixed 5 a side, and adaptive (iowatch.judging.more_runs, up to 20 a side);
- LKP: the sample ranges separate and the change is at least 1%;
- Perfherder: Welch t >= 3 with a 2% floor; and its compare view's
  Mann-Whitney p <= 0.05;
- mmtests: the change exceeds the sum of both sides' 95% CI half-widths;
- fsperf: the candidate's mean outside the base's mean +- 1.96 sd.
The anchors judge each cell alone, at 5 a side: they have no family and no
adaptive repetitions.

Boots (issue 24, issue 41 item 5): a side's repetitions come in boots, and
SideBoots says what a boot does to every cell of the check: an offset of the
cell's own and one that every cell of the boot shares (Boots), or a whole
recorded boot of the virtual lab (load_boots: real-boots-vlab.json, every
cell's repetitions of one real boot, with whatever the boot moved them by).
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
from scipy import stats as sps

from iowatch.judging import Comparison, more_runs
from iowatch.metrics import HIGHER
from iowatch.vocabulary import DEFAULT_CAP, DEFAULT_MIN_EFFECT as MIN_EFFECT, FDR
from iowatch.stats import FIRST, CellInput, CellKey, compare_matrix, mann_whitney_p

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "tests" / "fixtures" / "accuracy" / "real-samples.json"
BOOTS = SAMPLES.with_name("real-boots-vlab.json")  # recorded A/A boots, whole (load_boots)
MATRIX_CELLS = 40
CONDITIONS = ("slow10", "slow20", "slow50")


@dataclass
class RealCell:
    name: str
    direction: str
    aa: np.ndarray
    slowed: dict[str, np.ndarray]  # condition -> samples, for throttled cells
    achieved: dict[str, float]


@dataclass
class RecordedCell(RealCell):
    """A real cell of recorded boots (tests/fixtures/accuracy/real-boots-vlab.json):
    its A/A repetitions by the boot they came from, every cell of the collection
    with the same boots in the same order, so that one boot index draws a whole
    recorded boot (every cell's repetitions of it)."""
    by_boot: list = field(default_factory=list)  # [np.ndarray of the boot's repetitions]

    def draw_boot(self, boot: int, n: int, rng) -> np.ndarray:
        """n repetitions of recorded boot `boot`, drawn with replacement from its
        own, their log deviations from the boot's log mean widened by sqrt(k/(k-1))
        for k repetitions a boot: drawn as they are, 20 values from 3 would have
        (k-1)/k of the spread a boot's repetitions have."""
        logs = np.log(self.by_boot[boot])
        k = len(logs)
        dev = (logs - logs.mean()) * (math.sqrt(k / (k - 1)) if k > 1 else 0.0)
        return np.exp(logs.mean() + rng.choice(dev, size=n, replace=True))


def lognormal_cells(cv: float, n: int = 30, seed: int = 7) -> list[RealCell]:
    """A model of the issue's noise: cells of lognormal samples at this CV, slowed
    by exactly 10, 20 and 50%, with as many samples as the real collection.
    Each slowed pool is an independent draw rescaled so that its geometric mean
    is exactly (1 - s) times the unslowed pool's: left as drawn, 30 values at
    CV 10% put a "-20%" pool anywhere from -16.5% to -21.8% (seed 7)."""
    rng = np.random.default_rng(seed)
    sigma = math.sqrt(math.log(1 + cv ** 2))
    draw = lambda: 1000 * rng.lognormal(-sigma ** 2 / 2, sigma, n)  # noqa: E731
    geo = lambda x: float(np.exp(np.log(x).mean()))  # noqa: E731
    cells = []
    for i in range(8):
        aa = draw()
        slowed = {c: (lambda x: x * (1 - int(c[4:]) / 100) * geo(aa) / geo(x))(draw())
                  for c in CONDITIONS}
        cells.append(RealCell(f"lognormal CV {cv:.0%} #{i}", HIGHER, aa, slowed,
                              {c: -float(c[4:]) for c in CONDITIONS}))
    return cells


def load(path: Path = SAMPLES) -> list[RealCell]:
    """The real cells of the studies' deciding metrics (a check judges only
    those); a throttle counts as a slowdown of a cell only where it made the
    cell worse (a throttle of the raw device raises ext4's fs/raw ratio)."""
    from iowatch.judging import deciding
    from iowatch.studies import load_studies

    studies = load_studies(ROOT / "jobs" / "studies")
    doc = json.loads(path.read_text())
    cells = []
    for c in doc["cells"]:
        if (c["group"], c["metric"]) not in deciding(studies.get(c["study"])):
            continue
        aa = np.asarray(c["samples"]["aa"], dtype=float)
        if len(aa) < 5 or not (aa > 0).all():
            continue
        achieved = c.get("achieved_change_pct") or {}
        sign = -1 if c["direction"] == HIGHER else 1
        slowed = {k: np.asarray(v, dtype=float) for k, v in c["samples"].items()
                  if k != "aa" and c.get("throttled") and len(v) >= 5
                  and sign * achieved.get(k, 0.0) > 0}
        cells.append(RealCell(f"{c['study']}/{c['filesystem']}/{c['group']} {c['metric']}",
                              c["direction"], aa, slowed, achieved))
    return cells


def load_boots(path: Path | None = None) -> list[RecordedCell]:
    """The deciding cells of a collection of recorded A/A boots (collect_vlab.py
    --conditions aa; default BOOTS), each with its repetitions by boot."""
    from iowatch.judging import deciding
    from iowatch.studies import load_studies

    studies = load_studies(ROOT / "jobs" / "studies")
    doc = json.loads((path or BOOTS).read_text())
    boots = sorted({b for c in doc["cells"] for b in c["boot_of_samples"]["aa"]})
    cells = []
    for c in doc["cells"]:
        if (c["group"], c["metric"]) not in deciding(studies.get(c["study"])):
            continue
        aa = np.asarray(c["samples"]["aa"], dtype=float)
        where = c["boot_of_samples"]["aa"]
        by_boot = [aa[[j for j, b in enumerate(where) if b == boot]] for boot in boots]
        if not (aa > 0).all() or any(len(v) == 0 for v in by_boot):
            continue  # a cell without every boot cannot be drawn as part of one
        cells.append(RecordedCell(f"{c['study']}/{c['device']}/{c['filesystem']}/{c['group']} "
                                  f"{c['metric']}", c["direction"], aa, {}, {}, by_boot=by_boot))
    return cells


def _worse(direction: str, b: np.ndarray, c: np.ndarray) -> bool:
    return c.mean() < b.mean() if direction == HIGHER else c.mean() > b.mean()


# --- the anchors' rules, one cell at a time -------------------------------------

def lkp(b, c, direction):
    separate = c.max() < b.min() or c.min() > b.max()
    return separate and abs(c.mean() / b.mean() - 1) >= 0.01 and _worse(direction, b, c)


def perfherder_t(b, c, direction):
    se = math.sqrt(b.var(ddof=1) / len(b) + c.var(ddof=1) / len(c))  # Welch
    if se == 0:  # both sides constant (a cell at CV 0.1% draws repeats): any change is infinite t
        return c.mean() != b.mean() and abs(c.mean() / b.mean() - 1) >= 0.02 and _worse(direction, b, c)
    t = (c.mean() - b.mean()) / se
    return abs(t) >= 3 and abs(c.mean() / b.mean() - 1) >= 0.02 and _worse(direction, b, c)


def perfherder_mw(b, c, direction):
    return mann_whitney_p(b, c) <= 0.05 and _worse(direction, b, c)


def mmtests(b, c, direction):
    half = lambda x: sps.t.ppf(0.975, len(x) - 1) * x.std(ddof=1) / math.sqrt(len(x))  # noqa: E731
    return abs(c.mean() - b.mean()) > half(b) + half(c) and _worse(direction, b, c)


def fsperf(b, c, direction):
    return abs(c.mean() - b.mean()) > 1.96 * b.std(ddof=1) and _worse(direction, b, c)


ANCHORS = {"LKP (ranges separate, >= 1%)": lkp, "Perfherder (t >= 3, 2% floor)": perfherder_t,
           "Perfherder compare (Mann-Whitney p <= 0.05)": perfherder_mw,
           "mmtests (beyond summed 95% CI half-widths)": mmtests,
           "fsperf (outside mean +- 1.96 sd)": fsperf}


# --- drawing and judging matrices --------------------------------------------------

@dataclass
class Draw:
    """One simulated check: per matrix cell, its real cell and its two pools."""
    cells: list[RealCell]
    base_pool: list[np.ndarray]
    cand_pool: list[np.ndarray]
    slowed: int | None  # the index of the slowed cell, if any


def draw_matrix(real: list[RealCell], rng, condition: str | None, size: int = MATRIX_CELLS) -> Draw:
    """`size` cells drawn from the real ones (each real cell about equally often);
    with a condition, one throttled cell takes its candidate from that condition."""
    picks = [real[j % len(real)] for j in rng.permutation(max(size, len(real)))[:size]]
    slowed = None
    if condition:
        throttled = [c for c in real if condition in c.slowed]
        slowed = int(rng.integers(size))
        picks[slowed] = throttled[int(rng.integers(len(throttled)))]
    base = [p.aa for p in picks]
    cand = [p.slowed[condition] if i == slowed else p.aa for i, p in enumerate(picks)]
    return Draw(picks, base, cand, slowed)


def _sample(pool: np.ndarray, n: int, rng) -> np.ndarray:
    return rng.choice(pool, size=n, replace=True)


def _family(d: Draw, base: list, cand: list, cap: int = DEFAULT_CAP):
    inputs = [CellInput(CellKey("s", "h", "c", f"d{i}", "fs", "g", "m"), base[i], cand[i],
                        d.cells[i].direction, MIN_EFFECT) for i in range(len(d.cells))]
    return compare_matrix(inputs, cap=cap, fdr=FDR)


def iowatch_fixed(d: Draw, rng, n: int = FIRST):
    base = [_sample(p, n, rng) for p in d.base_pool]
    cand = [_sample(p, n, rng) for p in d.cand_pool]
    return _family(d, base, cand), base, cand


def iowatch_adaptive(d: Draw, rng, cap: int = DEFAULT_CAP):
    """The loop of iowatch check: both sides of each unsure cell grow to the next look."""
    base = [list(_sample(p, FIRST, rng)) for p in d.base_pool]
    cand = [list(_sample(p, FIRST, rng)) for p in d.cand_pool]
    while True:
        verdicts = _family(d, base, cand, cap)
        cmp = Comparison(None, None, 0.05, verdicts, [], {}, {})
        want = more_runs(cmp)
        if not want:
            return verdicts, [len(b) for b in base]
        for where, runs in want.items():
            i = int(where.device[1:])
            base[i] += list(_sample(d.base_pool[i], runs.base - len(base[i]), rng))
            cand[i] += list(_sample(d.cand_pool[i], runs.candidate - len(cand[i]), rng))


@dataclass
class Tally:
    checks: int = 0
    check_false_alarm: int = 0  # a clean cell flagged somewhere in the check
    clean_cells: int = 0
    clean_flagged: int = 0
    slowed: int = 0
    detected: int = 0
    runs: float = 0.0

    def row(self) -> dict:
        return {"false alarm per check": self.check_false_alarm / max(self.checks, 1),
                "clean cells flagged": self.clean_flagged / max(self.clean_cells, 1),
                "detected": self.detected / self.slowed if self.slowed else None,
                "runs a side": self.runs / max(self.checks, 1)}


def _count(t: Tally, flagged: list[bool], slowed: int | None, runs: float) -> None:
    t.checks += 1
    t.runs += runs
    clean = [f for i, f in enumerate(flagged) if i != slowed]
    t.clean_cells += len(clean)
    t.clean_flagged += sum(clean)
    t.check_false_alarm += any(clean)
    if slowed is not None:
        t.slowed += 1
        t.detected += flagged[slowed]


# Bins of the slowdown a slowed cell really got (|mean slowed / mean aa - 1|, in %):
# a throttle's nominal size is not what it cut, so detection is also counted by these.
SIZE_BINS = ((5, 15, "5-15%"), (15, 25, "15-25%"), (25, 40, "25-40%"), (40, 101, "40% or more"))


def size_bin(achieved_pct: float) -> str | None:
    return next((name for lo, hi, name in SIZE_BINS if lo <= abs(achieved_pct) < hi), None)


def run(real: list[RealCell], trials: int, seed: int, *, size: int = MATRIX_CELLS,
        adaptive: bool = True, anchors: bool = True,
        cap: int = DEFAULT_CAP) -> dict[str, dict[str, Tally]]:
    """{rule: {condition ("aa" or slowNN): Tally}} over `trials` checks each; with
    "_by_cell" ({(cell, achieved %): Tally} of iowatch adaptive) and "_by_size"
    ({rule: {size bin: Tally}}, the slowed checks by the slowdown really achieved)."""
    rng = np.random.default_rng(seed)
    out: dict[str, dict[str, Tally]] = {}
    by_cell: dict[tuple[str, float], Tally] = {}
    by_size: dict[str, dict[str, Tally]] = {}
    for condition in ("aa", *CONDITIONS):
        if condition != "aa" and not any(condition in c.slowed for c in real):
            continue
        for _ in range(trials):
            d = draw_matrix(real, rng, None if condition == "aa" else condition, size)
            achieved = d.cells[d.slowed].achieved.get(condition) if d.slowed is not None else None
            where = size_bin(achieved) if achieved is not None else None

            def count(rule: str, flagged: list[bool], runs: float) -> None:
                _count(out.setdefault(rule, {}).setdefault(condition, Tally()), flagged, d.slowed, runs)
                if where:
                    _count(by_size.setdefault(rule, {}).setdefault(where, Tally()), flagged, d.slowed, runs)

            verdicts, base, cand = iowatch_fixed(d, rng)
            count("iowatch, 5 a side: confirmed", [v.outcome == "regression" for v in verdicts], FIRST)
            count("iowatch, 5 a side: suspected or confirmed",
                  [v.outcome in ("regression", "suspected") for v in verdicts], FIRST)
            if anchors:
                for name, rule in ANCHORS.items():
                    count(name + ", 5 a side",
                          [rule(b, c, cell.direction) for b, c, cell in zip(base, cand, d.cells)], FIRST)
            if adaptive:
                verdicts, runs = iowatch_adaptive(d, rng, cap)
                flagged = [v.outcome == "regression" for v in verdicts]
                count(f"iowatch adaptive (5 to {cap} a side): confirmed", flagged, float(np.mean(runs)))
                if d.slowed is not None:  # by the slowed cell and the slowdown it really got
                    key = (d.cells[d.slowed].name, float("nan") if achieved is None else achieved)
                    _count(by_cell.setdefault(key, Tally()), flagged, d.slowed, runs[d.slowed])
    if by_cell:
        out["_by_cell"] = {k: by_cell[k] for k in sorted(by_cell)}
    if by_size:
        out["_by_size"] = by_size
    return out


# --- every path of the product, on independent and boot-clustered draws (issue 24) -----

PATHS = ("check adaptive", "5 a side", "run --against")
# A check whose rounds are passed to the verdict as blocks (iowatch.stats.blocks);
# "check adaptive" pools them, as every path did before issue 24 item 2.
BLOCKED = "check adaptive, blocked"
DRIFT_PATHS = ("check adaptive", BLOCKED)
ANCHOR_RUNS = (5, 10, 20)
STATES = ("no-change", "unsure", "slower", "suspected", "regression", "improvement")
EXACT = {"slow10": 0.10, "slow20": 0.20, "slow50": 0.50}
AGAINST_BASE = 5  # the fixed base bundle of `iowatch run --against`


def exact_slowdowns(real: list[RealCell]) -> list[RealCell]:
    """The cells with exact 10, 20 and 50% slowdowns that keep their noise: the
    slowed pool is the unslowed one scaled, so its spread is the cell's own (a
    throttle can also silence the slowed side, issue 24)."""
    out = []
    for c in real:
        scale = {k: (1 - s) if c.direction == HIGHER else 1 / (1 - s) for k, s in EXACT.items()}
        out.append(replace(c, slowed={k: c.aa * f for k, f in scale.items()},
                           achieved={k: -100 * s for k, s in EXACT.items()}))
    return out


@dataclass(frozen=True)
class Boots:
    """How repetitions are drawn: `share` of each cell's log variance lies between
    boots in an offset of the cell's own, `wide` in one offset that every cell of
    a boot shares (the platform's: what the canary sees), `per_boot` repetitions
    come from one boot (None: a side is one boot however it grows, as `run
    --against` and `compare RUN RUN` are); share and wide 0 with synthetic cells
    is independent draws (each repetition its own boot). Recorded cells
    (RecordedCell) bring their boots' own between-boot noise, and share and
    wide add to it."""
    share: float = 0.0
    per_boot: int | None = 2
    # The machine's speed from round `drift_from` of a check on (0 the first):
    # higher-is-better values times `drift`, lower-is-better ones over it, both sides alike.
    drift: float = 1.0
    drift_from: int = 2
    wide: float = 0.0

    @property
    def name(self) -> str:
        drift = (f"; from round {self.drift_from} the machine {self.drift:g} times as fast"
                 if self.drift != 1.0 else "")
        per = "one boot a side" if self.per_boot is None else f"{self.per_boot} a boot"
        if not self.share and not self.wide:
            return ("independent" if self.per_boot is not None else per) + drift
        wide = f" ({self.wide:.0%} of it shared by every cell of a boot)" if self.wide else ""
        return f"boot-clustered {self.share + self.wide:.0%} between boots{wide}, {per}" + drift


class SideBoots:
    """What each boot of one side does to every cell of a draw. A boot is named
    by a key its callers give (a round and a part of it, a measurement): the
    same key is the same boot, for every cell. Synthetic cells: each boot moves
    a cell's repetitions by a lognormal offset of the cell's own (Boots.share)
    and by one every cell of the boot shares (Boots.wide), each in proportion to
    the cell's log sd. Recorded cells (RecordedCell): each boot is a recorded
    boot drawn whole, the same recorded boot for every cell of one copy of the
    recorded matrix (a 40-cell check of 4 recorded cells holds 10 copies, each
    its own recorded boot: the copies of a cell in one boot would otherwise be
    draws from the same 3 repetitions), with Boots' offsets on top."""

    def __init__(self, boots: Boots, rng, cells: list[RealCell] | None = None):
        self.boots, self.rng, self.cells = boots, rng, cells or []
        self.recorded = any(isinstance(c, RecordedCell) for c in self.cells)
        seen: dict[int, int] = {}
        self.copy = []  # matrix cell -> which copy of its recorded cell it is
        for c in self.cells:
            self.copy.append(seen.get(id(c), 0))
            seen[id(c)] = self.copy[-1] + 1
        self._offset: dict = {}  # (boot key, cell) -> the cell's own offset
        self._wide: dict = {}    # boot key -> the shared offset's standard normal
        self._boot: dict = {}    # (boot key, copy) -> recorded boot index
        self._sd: dict = {}      # id(pool) -> (pool, sd of its logs): a pool is drawn from again and again

    @property
    def clustered(self) -> bool:
        """Repetitions share their boots' noise (else each is its own boot)."""
        return bool(self.boots.share or self.boots.wide or self.recorded)

    def values(self, i: int, pool: np.ndarray, n: int, key) -> np.ndarray:
        """n repetitions of matrix cell i (drawn from `pool`) in boot `key`."""
        if id(pool) not in self._sd:  # the pool is kept beside its sd, so its id stays its own
            self._sd[id(pool)] = (pool, float(np.log(pool).std(ddof=1)) if (pool > 0).all() else 0.0)
        sd = self._sd[id(pool)][1]
        rest = 1 - self.boots.share - self.boots.wide
        offset = 1.0
        if sd and self.boots.share:
            if (key, i) not in self._offset:
                self._offset[key, i] = math.exp(self.rng.normal(0, sd * math.sqrt(self.boots.share / rest)))
            offset = self._offset[key, i]
        if sd and self.boots.wide:
            if key not in self._wide:
                self._wide[key] = float(self.rng.normal())
            offset *= math.exp(self._wide[key] * sd * math.sqrt(self.boots.wide / rest))
        cell = self.cells[i] if i < len(self.cells) else None
        if isinstance(cell, RecordedCell):
            where = (key, self.copy[i])
            if where not in self._boot:
                self._boot[where] = int(self.rng.integers(len(cell.by_boot)))
            # An exact slowdown's pool is the cell's A/A one scaled.
            return cell.draw_boot(self._boot[where], n, self.rng) * (pool.mean() / cell.aa.mean()) * offset
        return _sample(pool, n, self.rng) * offset


class SideDraw:
    """One side of one cell, grown a batch at a time; each batch starts new boots
    (a round of a check boots the kernel again), shared with the other cells of
    the side's machine (SideBoots) grown in the same round; with Boots.per_boot
    None the side stays one boot."""

    def __init__(self, pool: np.ndarray, boots: Boots, rng, tag: str, direction: str = "higher",
                 machine: SideBoots | None = None, index: int = 0):
        self.pool, self.boots, self.rng, self.tag = pool, boots, rng, tag
        self.direction = direction
        self.machine, self.index = machine or SideBoots(boots, rng), index
        self.rounds: list[int] = []  # the round of a check each value came from
        self.values: list[float] = []
        self.labels: list[str] = []
        self._boot = 0
        self._grown: dict[int, int] = {}  # round -> times grown in it

    def grow(self, n: int, round_no: int = 0) -> None:
        one_boot = self.boots.per_boot is None
        per = n if one_boot else self.boots.per_boot if self.machine.clustered else 1
        speed = self.boots.drift if round_no >= self.boots.drift_from else 1.0
        speed = 1 / speed if self.direction == "lower" else speed
        call = self._grown.get(round_no, 0)
        self._grown[round_no] = call + 1
        part = 0
        while n > 0:
            m = min(per, n)
            key = "one" if one_boot else (round_no, call, part)
            self.values += list(self.machine.values(self.index, self.pool, m, key) * speed)
            self.rounds += [round_no] * m
            self.labels += [f"{self.tag}{0 if one_boot else self._boot}"] * m
            self._boot += 0 if one_boot else 1
            part += 1
            n -= m

    def __len__(self) -> int:
        return len(self.values)


def _boot_family(d: Draw, base: list[SideDraw], cand: list[SideDraw], cap: int = DEFAULT_CAP,
                 blocked: bool = False, recorded: list | None = None):
    inputs = [CellInput(CellKey("s", "h", "c", f"d{i}", "fs", "g", "m"), b.values, c.values,
                        d.cells[i].direction, MIN_EFFECT, base_boots=b.labels,
                        candidate_boots=c.labels,
                        base_rounds=b.rounds if blocked else None,
                        candidate_rounds=c.rounds if blocked else None,
                        boot_variance=recorded[i] if recorded else None)
              for i, (b, c) in enumerate(zip(base, cand))]
    return compare_matrix(inputs, cap=cap, fdr=FDR)


# One boot a side (issue 41 item 1): `iowatch run --against` run locally (its base
# AGAINST_BASE repetitions in one boot, the candidate grown in its own one boot to
# the next look of every unsure cell) and `iowatch compare RUN RUN` (FIRST a side,
# one look); RECORD: with the host's recorded variance between boots of each cell
# (HISTORY_KERNELS kernels of HISTORY_BOOTS boots of HISTORY_RUNS repetitions,
# drawn as the sides are), as iowatch.judging.boots reads it.
AGAINST_ONE_BOOT = "run --against, one boot a side"
COMPARE_ONE_BOOT = "compare, one boot a side"
RECORD = ", with a record"
HISTORY_BOOTS, HISTORY_RUNS = 3, 3


def recorded_variances(d: Draw, rng, boots: Boots) -> list:
    """Each cell's recorded variance between boots (iowatch.stats.boots), from a
    history of other kernels booted on the same machine: the base's pools, the
    draws' noise (new boots, the same kind of offsets, recorded boots whole)."""
    from iowatch.judging.boots import HISTORY_KERNELS
    from iowatch.stats.boots import between_boot_variance

    machine = SideBoots(replace(boots, drift=1.0), rng, d.cells)
    return [between_boot_variance([[list(machine.values(i, pool, HISTORY_RUNS, ("history", k, b)))
                                     for b in range(HISTORY_BOOTS)] for k in range(HISTORY_KERNELS)])
            for i, pool in enumerate(d.base_pool)]


def judge_path(path: str, d: Draw, rng, boots: Boots, cap: int = DEFAULT_CAP):
    """(verdicts, runs a side per cell) of one simulated check along one path:
    `check adaptive` grows both sides of each unsure cell to the next look
    (iowatch.judging.more_runs, new boots each round), `5 a side` stops at the
    first look, `run --against` grows only the candidate against a fixed base
    of AGAINST_BASE repetitions; `check adaptive, blocked` is the check with
    its rounds given to the verdict as blocks; AGAINST_ONE_BOOT and
    COMPARE_ONE_BOOT, each side one boot, and with RECORD the host's record."""
    one_boot = path.startswith((AGAINST_ONE_BOOT, COMPARE_ONE_BOOT))
    recorded = recorded_variances(d, rng, boots) if path.endswith(RECORD) else None
    boots = replace(boots, per_boot=None) if one_boot else boots
    machines = SideBoots(boots, rng, d.cells), SideBoots(boots, rng, d.cells)
    base = [SideDraw(p, boots, rng, "b", cell.direction, machines[0], i)
            for i, (p, cell) in enumerate(zip(d.base_pool, d.cells))]
    cand = [SideDraw(p, boots, rng, "c", cell.direction, machines[1], i)
            for i, (p, cell) in enumerate(zip(d.cand_pool, d.cells))]
    for s in base + cand:
        s.grow(AGAINST_BASE if path.startswith("run --against") else FIRST)
    round_no = 0
    while True:
        verdicts = _boot_family(d, base, cand, cap, blocked=path == BLOCKED, recorded=recorded)
        if path == "5 a side" or path.startswith(COMPARE_ONE_BOOT):
            return verdicts, [len(c) for c in cand]
        want = more_runs(Comparison(None, None, 0.05, verdicts, [], {}, {}))
        grew = False
        round_no += 1
        for where, runs in want.items():
            i = int(where.device[1:])
            if path in DRIFT_PATHS and runs.base > len(base[i]):
                base[i].grow(runs.base - len(base[i]), round_no)
                grew = True
            if runs.candidate > len(cand[i]):
                cand[i].grow(runs.candidate - len(cand[i]), round_no)
                grew = True
        if not grew:
            return verdicts, [len(c) for c in cand]


@dataclass
class PathTally:
    """One path on one kind of draw: clean checks by their state, and detection."""
    clean: int = 0
    states: dict = None  # state -> clean checks that ended so
    false_alarm: int = 0
    slowed: dict = None  # condition -> [checks, confirmed]
    runs: float = 0.0
    checks: int = 0

    def __post_init__(self):
        self.states = {s: 0 for s in STATES}
        self.slowed = {}

    def share(self, state: str) -> float:
        return self.states[state] / max(self.clean, 1)

    @property
    def fa(self) -> float:
        return self.false_alarm / max(self.clean, 1)

    def detected(self, condition: str) -> float | None:
        n, found = self.slowed.get(condition, (0, 0))
        return found / n if n else None


def run_paths(real: list[RealCell], trials: int, seed: int, boots: Boots, *,
              size: int = MATRIX_CELLS, paths=PATHS, anchors: bool = True,
              conditions=tuple(EXACT), anchor_runs=ANCHOR_RUNS) -> dict[str, PathTally]:
    """{path or anchor rule: PathTally} over `trials` clean checks and `trials`
    checks per slowed condition, every path judging the same draws; the anchors
    judge the first 5, 10 and 20 of the same repetitions (each rule at its own
    false-alarm cost: no family, no looks)."""
    rng = np.random.default_rng(seed)
    out: dict[str, PathTally] = {}
    for condition in ("aa", *conditions):
        for _ in range(trials):
            d = draw_matrix(real, rng, None if condition == "aa" else condition, size)
            results = {}
            for path in paths:
                verdicts, runs = judge_path(path, d, rng, boots)
                flagged = [v.outcome == "regression" for v in verdicts]
                state = Comparison(None, None, 0.05, verdicts, [], {}, {}).state
                results[path] = (flagged, state, float(np.mean(runs)))
            if anchors:
                machines = SideBoots(boots, rng, d.cells), SideBoots(boots, rng, d.cells)
                base = [SideDraw(p, boots, rng, "b", machine=machines[0], index=i)
                        for i, p in enumerate(d.base_pool)]
                cand = [SideDraw(p, boots, rng, "c", machine=machines[1], index=i)
                        for i, p in enumerate(d.cand_pool)]
                for s in base + cand:
                    s.grow(max(anchor_runs))
                for n in anchor_runs:
                    for name, rule in ANCHORS.items():
                        flagged = [bool(rule(np.asarray(b.values[:n]), np.asarray(c.values[:n]),
                                             cell.direction))
                                   for b, c, cell in zip(base, cand, d.cells)]
                        results[f"{name}, {n} a side"] = (flagged, None, float(n))
            for rule, (flagged, state, runs) in results.items():
                t = out.setdefault(rule, PathTally())
                t.checks += 1
                t.runs += runs
                clean = [f for i, f in enumerate(flagged) if i != d.slowed]
                if condition == "aa":
                    t.clean += 1
                    t.false_alarm += any(clean)
                    if state is not None:
                        t.states[state if state in t.states else "unsure"] += 1
                else:
                    n, found = t.slowed.get(condition, (0, 0))
                    t.slowed[condition] = (n + 1, found + flagged[d.slowed])
    return out
