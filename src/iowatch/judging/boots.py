"""Which recorded boots stand in for a comparison's missing ones (issue 41 item 1).

A comparison whose sides are one boot each cannot estimate the variance
between boots from its sides (iowatch.stats.boots). The history that can is
the same host's runs of other kernels booted more than once: a check's
rounds, a confirmation, a kernel measured on several nights. Every adapter
fetches it the same way (`History`: a list of sides, one kernel each, from
the host the comparison ran on); this module decides what it says of each
cell, and nothing else does.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Callable, Iterable, Sequence

from iowatch.cells import PooledKey
from iowatch.side_data import PooledSide, Side, pool
from iowatch.stats.boots import BootVariance, between_boot_variance

# The most kernels and runs a kernel an adapter reads for a history: the newest
# first. Eight kernels of up to six boots give up to 40 degrees of freedom,
# past which the estimate barely narrows, and the read stays bounded.
HISTORY_KERNELS = 8
HISTORY_RUNS = 6

# What an adapter gives: the sides, or a function that reads them only when a
# comparison needs them (most have two boots a side or more and never do).
History = Sequence[Side] | Callable[[], Sequence[Side]]


def one_boot(side: PooledSide, key: PooledKey) -> bool:
    """The side's values of this cell all came from one boot."""
    return len(set(side.boots.get(key, ()))) == 1


def boot_variances(history: Sequence[Side], keys: Iterable[PooledKey], host: str
                   ) -> dict[PooledKey, BootVariance]:
    """The recorded variance between boots of each cell of `keys`, from the
    history's kernels measured on `host` in two boots or more; a cell the
    history cannot estimate is left out."""
    wanted = set(keys)
    if not wanted:
        return {}
    kernels: dict[PooledKey, list[list[list[float]]]] = defaultdict(list)
    for side in history:
        pooled = pool(side)
        if pooled.hosts != host:
            continue  # another host's boots say nothing of this one's
        for key in wanted & set(pooled.values):
            by_boot: dict[str, list[float]] = defaultdict(list)
            for value, boot in zip(pooled.values[key], pooled.boots[key]):
                by_boot[boot].append(value)
            if len(by_boot) >= 2:
                kernels[key].append(list(by_boot.values()))
    out = {}
    for key, groups in kernels.items():
        recorded = between_boot_variance(groups)
        if recorded is not None:
            out[key] = recorded
    return out


def read_history(history: History | None) -> Sequence[Side]:
    """The history's sides, read now if the adapter gave a function."""
    if history is None:
        return []
    return history() if callable(history) else history
