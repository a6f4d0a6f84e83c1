"""Spending the false-discovery rate later over the looks (issue 41 item 4:
-20% found >= 95% at 40% between boots at cap 20). The deciding cells spend
q linearly in their information (sequential.alpha_spent, `linear`): a
quarter of it at each of the looks at 5, 10, 15 and 20 a side, three
quarters where a -20% cell's power is still low. The power family of
Jennison and Turnbull, q·t^rho, spends later as rho grows (rho 1: linear, as
shipped; rho 3: close to O'Brien and Fleming's), leaving more for the cap.
The shipped check's loop with rho set for the deciding cells (the canaries
keep Pocock's shape), on history_prior.exact_cv_model(). Figures in brackets
are 95% Wilson intervals; bench/accuracy/CHECK-STOP.md keeps what it printed.

    .venv/bin/python bench/accuracy/spending_shape.py --trials 1000 --rho 1 2 3 \
        --cells 3 11 40 --shares 0.4 0.25
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(Path(__file__).parent))

from history_prior import exact_cv_model, measure  # noqa: E402
from iowatch.stats import sequential  # noqa: E402

SHIPPED = sequential.alpha_spent


def set_rho(rho: float) -> None:
    """The linear shape spends q·t^rho (1: as shipped); other shapes as shipped."""
    def spent(t: float, q: float, shape: str = sequential.LINEAR) -> float:
        if shape != sequential.LINEAR:
            return SHIPPED(t, q, shape)
        return q * min(max(t, 0.0), 1.0) ** rho
    sequential.alpha_spent = SHIPPED if rho == 1 else spent


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--trials", type=int, default=1000)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--rho", type=float, nargs="*", default=[1, 2, 3])
    p.add_argument("--cells", type=int, nargs="*", default=[3, 11, 40])
    p.add_argument("--shares", type=float, nargs="*", default=[0.40, 0.25])
    p.add_argument("--conditions", nargs="*", default=["slow20", "slow10"])
    args = p.parse_args()
    model = exact_cv_model()
    for rho in args.rho:
        set_rho(rho)
        for cells in args.cells:
            for share in args.shares:
                measure(model, f"spending q t^{rho:g}", args, cells, share)
    set_rho(1)


if __name__ == "__main__":
    main()
