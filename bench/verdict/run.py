"""How long the verdict takes: compare_matrix on the matrices a check and an
upload judge. Prints the time a matrix and a cell, median of repeats.

- check: a 40-cell check at its third look, rounds as blocks, one repetition a
  boot (the shipped loop): 3 rounds of 5 repetitions a side, each its own boot;
- boots: the same with 2 repetitions a boot (`check --reps-per-boot 2`);
- upload: a 1,000-cell bundle pair of 5 repetitions a side, no rounds or boots.

Run: .venv/bin/python bench/verdict/run.py [--repeats N]
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from iowatch.stats import CellInput, CellKey, compare_matrix
from iowatch.vocabulary import DEFAULT_CAP, DEFAULT_MIN_EFFECT, FDR


def _cells(n_cells: int, rounds: int, reps: int, per_boot: int | None, seed: int) -> list[CellInput]:
    rng = np.random.default_rng(seed)
    cells = []
    for i in range(n_cells):
        n = rounds * reps
        base, cand = rng.lognormal(0, 0.1, n), rng.lognormal(0, 0.1, n)
        labels = {}
        if rounds > 1:
            r = [k // reps for k in range(n)]
            labels.update(base_rounds=r, candidate_rounds=r)
        if per_boot:
            labels.update(base_boots=[f"b{k // per_boot}" for k in range(n)],
                          candidate_boots=[f"c{k // per_boot}" for k in range(n)])
        cells.append(CellInput(CellKey("s", "h", "c", f"d{i}", "fs", "g", "m"), list(base),
                               list(cand), "higher", DEFAULT_MIN_EFFECT, **labels))
    return cells


CASES = {
    "check: 40 cells, 3 rounds of 5 a side, 1 a boot": (40, 3, 5, 1),
    "boots: 40 cells, 3 rounds of 6 a side, 2 a boot": (40, 3, 6, 2),
    "upload: 1,000 cells, 5 a side": (1000, 1, 5, None),
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=20)
    args = ap.parse_args()
    print(f"{'matrix':<50} {'ms a matrix':>12} {'us a cell':>10}")
    for name, (n_cells, rounds, reps, per_boot) in CASES.items():
        cells = _cells(n_cells, rounds, reps, per_boot, seed=1)
        times = []
        for _ in range(args.repeats if n_cells < 1000 else max(3, args.repeats // 5)):
            t = time.perf_counter()
            compare_matrix(cells, cap=DEFAULT_CAP, fdr=FDR)
            times.append(time.perf_counter() - t)
        med = statistics.median(times)
        print(f"{name:<50} {med * 1e3:>12.1f} {med / n_cells * 1e6:>10.0f}")


if __name__ == "__main__":
    main()
