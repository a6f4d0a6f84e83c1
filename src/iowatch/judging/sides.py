"""Which stored runs make a side: one rule (SideQuery) for every reader of a store.

A side is a kernel's runs (or one run): the dashboard's compare, `iowatch
compare` of this machine's store and the verdicts the server stores when a
run arrives must pool the same runs for the same request, or a page and a
report judge different data. The rule:

- the runs the request names: a run id, or a kernel (release, label, commit
  prefix, or kernel:ID, the pages' links), on a host and matrix when given;
- runs that measured nothing (a build or boot that failed) and a bisect's
  steps (the bisect's evidence, judged by the bisect) are no part of a side;
- the measured runs, and a study's published numbers only when nothing was
  measured;
- the newest `limit` of them (MAX_SIDE_RUNS), in the order they ran.

The last three are `SideQuery.choose`, one function every adapter calls
with its runs as it reads them (their status, trigger and whether they are
published): the store's (iowatch_web.store.sides.stored_runs, which also
writes `admits` as SQL, judged_runs, so as not to read runs it would drop),
the HTTP API's (iowatch.side_sources, from the runs list, which carries each
run's trigger), the verdict worker's (regressions/verdicts.py, `admits` on
the run that arrived) and the claim check's (dashboard/published.py). A
bundle directory is one run, taken as it is.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, ClassVar, Sequence, TypeVar

R = TypeVar("R")

# The most runs a side pools: a kernel measured for months must not make a
# compare page read every run it ever had.
MAX_SIDE_RUNS = 50
# Run statuses that give no performance result.
NOT_MEASURED = ("build-failed", "boot-failed")
# Run triggers whose runs are judged as a side (a bisect step's run is not).
JUDGED_TRIGGERS = ("nightly",)
# The stores' ids are 64-bit signed integers.
STORE_ID_MAX = 2 ** 63 - 1


class SideNotFound(LookupError):
    """A side that names nothing iowatch can read; the message says which and why."""


@dataclass(frozen=True)
class SideQuery:
    """A request for one side of a comparison, and the rule that picks its runs."""
    spec: str                       # a run id, a kernel's release, label or commit prefix, kernel:ID
    role: str = "side"              # "base" or "candidate", for the messages
    host: int | None = None         # a host's id: only its runs
    matrix: str | None = None       # only runs of this matrix
    limit: int = MAX_SIDE_RUNS

    # The exclusions, for an adapter that writes `admits` in its own language (SQL).
    NOT_MEASURED: ClassVar[tuple[str, ...]] = NOT_MEASURED
    JUDGED_TRIGGERS: ClassVar[tuple[str, ...]] = JUDGED_TRIGGERS

    @property
    def kernel_id(self) -> int | None:
        """The kernel a kernel:ID spec names (the pages' links), else None."""
        m = re.fullmatch(r"kernel:(\d{1,19})", self.spec)
        # Past the store's 64-bit ids no kernel has it: the spec is then a name
        # found nowhere, never a number the database driver cannot bind.
        return int(m[1]) if m and int(m[1]) <= STORE_ID_MAX else None

    @staticmethod
    def admits(status: str | None, trigger_kind: str | None) -> bool:
        """Whether a run may be part of a side: it measured something (no failed
        build or boot) and is no bisect's step (no trigger, or a judged one)."""
        return status not in NOT_MEASURED and (trigger_kind is None or trigger_kind in JUDGED_TRIGGERS)

    def choose(self, runs: Sequence[R], *, published: Callable[[R], bool],
               status: Callable[[R], str | None],
               trigger_kind: Callable[[R], str | None]) -> list[R]:
        """Of the runs the request names, oldest first: those `admits` takes;
        of them the measured ones (the published numbers when nothing was
        measured); the newest `limit` of those, oldest first."""
        admitted = [r for r in runs if self.admits(status(r), trigger_kind(r))]
        measured = [r for r in admitted if not published(r)]
        return (measured or admitted)[-self.limit:]

    def not_found(self, where: str) -> SideNotFound:
        return SideNotFound(f"{self.role} {self.spec!r}: {where} has no run with that id nor a "
                            "kernel with that release, commit or label")
