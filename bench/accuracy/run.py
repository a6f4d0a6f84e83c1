"""Accuracy of iowatch's verdicts, measured (issue 4; DESIGN.md §4): prints four figures.

1. False alarms: A/A comparisons. Real: one run of a small matrix on this
   machine's loop devices with R repetitions per cell (needs root), split into
   two sides of 5 many ways. Simulated: >= 1,000 A/A matrices drawn from the
   measured noise (each metric's mean and coefficient of variation).
   Printed: the share of cells called a regression or an improvement.
2. Detection: a slowdown of 10%, 20% and 50% injected by scaling measured
   samples in each metric's worse direction (bandwidth and IOPS x (1 - s),
   times and counts x (1 + s)) -- simulated, not throttled: this machine has
   only cgroup v1 blkio (no io.max), and a bandwidth cap on a loop device
   over a page-cached file is a ceiling, not a proportional slowdown. Every
   cell of the matrix is slowed together, as a slower device would be.
   Printed per size and metric: the share detected with 5 repetitions per
   side, and with the adaptive rule (iowatch.stats.sequential) with the mean
   repetitions per side it used.
3. Adaptive repetition: the false-alarm rate of the sequential rule itself.
4. Speed: compare_matrix of a 1,000-cell matrix with 10 repetitions per side.

    .venv/bin/python bench/accuracy/run.py            # as root: real runs, R = 10
    .venv/bin/python bench/accuracy/run.py --quick    # R = 6, fewer simulations
    .venv/bin/python bench/accuracy/run.py --no-real  # simulation from DESIGN.md's noise only
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))

from iowatch import bundle  # noqa: E402
from iowatch.metrics import HIGHER, METRICS  # noqa: E402
from iowatch.stats import CellInput, CellKey, compare, compare_matrix, next_step  # noqa: E402
from iowatch.stats.sequential import look_level  # noqa: E402
from iowatch.studies import load_studies  # noqa: E402

IOWATCH = str(Path(sys.executable).parent / "iowatch")
FLAGGED = ("regression", "improvement")
# Without root: the noise DESIGN.md §4 reports for this kind of machine (CV = sd / mean).
FALLBACK_NOISE = {
    ("xfs-smallfile-writeback", "loop-ssd-raid0", "xfs", "fsmark", "fsmark.files_per_s"): (30000, 0.10),
    ("xfs-smallfile-writeback", "loop-ssd-raid0", "xfs", "fsmark", "device.write_iops"): (5000, 0.02),
    ("odirect-vs-readers", "loop-hdd", "ext4", "writer", "write.bw_kib_s"): (2e6, 0.35),
    ("ext4-dio-randread", "loop-ssd", "ext4", "randread", "read.iops"): (88000, 0.08)}


def real_samples(reps: int, quick: bool) -> dict[tuple, list[float]]:
    """One run of a matrix with `reps` repetitions; the studies' declared metrics per cell."""
    studies = ["xfs-smallfile-writeback", "odirect-vs-readers"] + ([] if quick else ["ext4-dio-randread"])
    tmp = Path(tempfile.mkdtemp(prefix="iowatch-accuracy-"))
    (tmp / "jobs").mkdir()
    (tmp / "jobs" / "studies").symlink_to(ROOT / "jobs" / "studies")  # a matrix finds studies beside it
    matrix = tmp / "jobs" / "accuracy.yml"
    matrix.write_text("matrix: accuracy\nprofile: quick\nreps: %d\nstudies:\n%s" % (
        reps, "".join(f"  - study: {s}\n" for s in studies)))
    env = {**os.environ, "IOWATCH_DATA_DIR": str(tmp / "data")}
    t0 = time.monotonic()
    r = subprocess.run([IOWATCH, "run", str(matrix), "--target", "localhost", "--inventory",
                        str(ROOT / "hardware-inventory.yml"), "--out", str(tmp / "bundle"),
                        "--no-progress"], cwd=ROOT, env=env, capture_output=True, text=True)
    subprocess.run([IOWATCH, "device", "detach", "localhost", "--inventory",
                    str(ROOT / "hardware-inventory.yml")], env=env, capture_output=True)
    if r.returncode not in (0, 1):
        sys.exit(f"iowatch run failed:\n{r.stdout}\n{r.stderr}")
    print(f"real runs: {len(studies)} studies x {reps} repetitions in {time.monotonic() - t0:.0f} s "
          f"(bundle {tmp / 'bundle'})")
    declared = {s: load_studies(ROOT / "jobs/studies")[s].data["metrics"] for s in studies}
    out: dict[tuple, list[float]] = defaultdict(list)
    for cell in bundle.load(tmp / "bundle")["cells"]:
        if cell["status"] != "passed":
            continue
        wanted = {(m["group"], m["metric"]) for m in declared[cell["study"]]}
        for rep in cell["repetitions"]:
            for s in rep["samples"]:
                if s.get("job") is None and (s["group"], s["metric"]) in wanted:
                    out[(cell["study"], cell["device"], cell["filesystem"], s["group"], s["metric"])].append(s["value"])
    return {k: v for k, v in out.items() if len(v) >= reps}


def _inputs(cells: list[tuple], base: list, cand: list) -> list[CellInput]:
    return [CellInput(CellKey(k[0], "local", "", k[1], k[2], k[3], k[4]), b, c, METRICS[k[4]].direction)
            for k, b, c in zip(cells, base, cand)]


def flagged_share(verdicts) -> float:
    return sum(v.outcome in FLAGGED for v in verdicts) / len(verdicts)


def real_aa(samples: dict, splits: int, rng) -> tuple[float, int]:
    keys = sorted(samples)
    flagged = total = 0
    for _ in range(splits):
        base, cand = [], []
        for k in keys:
            v = rng.permutation(samples[k])
            half = len(v) // 2
            base.append(v[:min(5, half)])
            cand.append(v[half:half + min(5, half)])
        out = compare_matrix(_inputs(keys, base, cand), seed=int(rng.integers(1 << 30)))
        flagged += sum(v.outcome in FLAGGED for v in out)
        total += len(out)
    return flagged / total, total


def _draw(rng, mean: float, cv: float, n: int, size: int) -> np.ndarray:
    # Lognormal keeps performance numbers positive with the measured mean and CV.
    sigma = np.sqrt(np.log(1 + cv ** 2))
    return mean * rng.lognormal(-sigma ** 2 / 2, sigma, size=(size, n))


def noise_table(samples: dict) -> dict[tuple, tuple[float, float]]:
    return {k: (float(np.mean(v)), float(np.std(v, ddof=1) / np.mean(v))) for k, v in samples.items()
            if np.mean(v) > 0}


def simulated_aa(noise: dict, matrices: int, n: int, rng) -> tuple[float, int]:
    keys = sorted(noise)
    flagged = total = 0
    for _ in range(matrices):
        base = [_draw(rng, *noise[k], n, 1)[0] for k in keys]
        cand = [_draw(rng, *noise[k], n, 1)[0] for k in keys]
        out = compare_matrix(_inputs(keys, base, cand), n_boot=500, seed=int(rng.integers(1 << 30)))
        flagged += sum(v.outcome in FLAGGED for v in out)
        total += len(out)
    return flagged / total, total


def _worse(metric: str, size: float) -> float:
    return 1 - size if METRICS[metric].direction == HIGHER else 1 + size


def detection(noise: dict, size: float, trials: int, rng) -> dict[tuple, float]:
    keys = sorted(noise)
    hits = defaultdict(int)
    for _ in range(trials):
        base = [_draw(rng, *noise[k], 5, 1)[0] for k in keys]
        cand = [_draw(rng, *noise[k], 5, 1)[0] * _worse(k[4], size) for k in keys]
        for k, v in zip(keys, compare_matrix(_inputs(keys, base, cand), n_boot=500,
                                             seed=int(rng.integers(1 << 30)))):
            hits[k] += v.outcome == "regression"
    return {k: hits[k] / trials for k in keys}


def adaptive(mean: float, cv: float, metric: str, size: float, trials: int, rng,
             max_runs: int = 20) -> tuple[float, float]:
    """Share called a regression and mean runs per side under next_step (one cell at a time)."""
    hits, used = 0, 0
    factor = _worse(metric, size)
    for _ in range(trials):
        base = list(_draw(rng, mean, cv, 5, 1)[0])
        cand = list(_draw(rng, mean, cv, 5, 1)[0] * factor)
        while True:
            step = next_step(base, cand, direction=METRICS[metric].direction, max_runs=max_runs)
            if step == "decide":
                break
            add = int(step.split()[1])
            base += list(_draw(rng, mean, cv, add, 1)[0])
            cand += list(_draw(rng, mean, cv, add, 1)[0] * factor)
        level = look_level(len(base), alpha=0.05, first=5, step=5, max_runs=max_runs)
        hits += compare(base, cand, direction=METRICS[metric].direction, alpha=level,
                        n_boot=500).outcome == "regression"
        used += len(base)
    return hits / trials, used / trials


def speed(rng) -> float:
    cells = [CellInput(CellKey("s", "h", "ssd", "d", "xfs", "g", f"m{i}"), rng.normal(100, 5, 10),
                       rng.normal(100, 5, 10), "higher") for i in range(1000)]
    compare_matrix(cells[:10])  # warm caches and imports
    t0 = time.perf_counter()
    compare_matrix(cells)
    return time.perf_counter() - t0


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true", help="R = 6 real repetitions, fewer simulations")
    p.add_argument("--no-real", action="store_true", help="skip the real runs (no root needed)")
    args = p.parse_args()
    rng = np.random.default_rng(2024)
    reps, matrices, trials = (6, 1000, 100) if args.quick else (10, 2000, 300)

    print("== 1. false alarms (A/A): share of cells called a regression or an improvement; goal <= 1%")
    if args.no_real or os.geteuid() != 0:
        print("real A/A: skipped (needs root); noise from DESIGN.md §4")
        noise = dict(FALLBACK_NOISE)
    else:
        samples = real_samples(reps, args.quick)
        # Cells that could not run here keep DESIGN.md's noise, so the matrix keeps its size.
        noise = {**FALLBACK_NOISE, **noise_table(samples)}
        share, n = real_aa(samples, 200, rng)
        print(f"real A/A: {share:.2%} of {n} cell comparisons flagged "
              f"(200 random 5-vs-5 splits of {reps} real repetitions)" if reps >= 10 else
              f"real A/A: {share:.2%} of {n} cell comparisons flagged "
              f"(200 random {reps // 2}-vs-{reps // 2} splits of {reps} real repetitions)")
    print("measured noise per cell (mean, CV):")
    for k, (m, cv) in sorted(noise.items()):
        print(f"  {k[0]}/{k[3]} {k[4]:<24} mean {m:12,.1f} {METRICS[k[4]].unit:<8} CV {cv:6.1%}")
    share, n = simulated_aa(noise, matrices, 5, rng)
    print(f"simulated A/A: {share:.3%} of {n} cells flagged ({matrices} matrices of {len(noise)} cells, "
          "5 runs per side, lognormal at the measured CV)")

    print("\n== 2. detection of an injected slowdown (simulated by scaling; goal >= 95% at 20% and "
          "50%, >= 80% at 10%)")
    for size in (0.10, 0.20, 0.50):
        rates = detection(noise, size, trials, rng)
        print(f"slowdown {size:.0%}:")
        for k in sorted(noise):
            mean, cv = noise[k]
            hit, used = adaptive(mean, cv, k[4], size, max(trials // 3, 50), rng)
            print(f"  {k[0]}/{k[3]} {k[4]:<24} CV {cv:6.1%}: 5 runs/side {rates[k]:6.1%}; "
                  f"adaptive {hit:6.1%} using {used:4.1f} runs/side")

    print("\n== 3. the adaptive rule's own false alarms (Pocock-type alpha spending, looks at 5/10/15/20)")
    worst = 0.0
    for k in sorted(noise):
        hit, used = adaptive(*noise[k], k[4], 0.0, max(trials // 3, 50), rng)
        worst = max(worst, hit)
        print(f"  {k[0]}/{k[3]} {k[4]:<24}: flagged {hit:6.1%}, {used:4.1f} runs/side")
    print(f"  worst cell: {worst:.1%} (a single cell at alpha 0.05; in a matrix BH divides it further)")

    print("\n== 4. speed")
    print(f"compare_matrix, 1,000 cells x 10 runs per side, 2,000 bootstrap resamples: "
          f"{speed(rng):.3f} s (goal < 1 s)")


if __name__ == "__main__":
    main()
