"""The sample record every parser produces, and what a parse returns.

A sample is one number from one repetition of one cell: a metric from
iowatch.metrics with its value, and the job group and job it belongs to. A
group-level sample (fio's "Run status group" line, fs_mark's whole run) has
job None; a per-job sample names the job.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from iowatch.metrics import lookup


@dataclass(frozen=True)
class Sample:
    metric: str
    value: float
    unit: str
    direction: str
    group: str
    job: str | None = None

    @classmethod
    def of(cls, metric: str, value: float, group: str, job: str | None = None) -> "Sample":
        """A sample whose unit and direction come from the metric table."""
        m = lookup(metric)
        value = float(value)
        if not math.isfinite(value):
            raise ValueError(f"{metric}: value {value!r} is not a finite number")
        return cls(metric=metric, value=value, unit=m.unit, direction=m.direction,
                   group=str(group), job=job)

    def to_dict(self) -> dict:
        return {"metric": self.metric, "value": self.value, "unit": self.unit,
                "direction": self.direction, "group": self.group, "job": self.job}


@dataclass(frozen=True)
class JobFailure:
    """A job the tool reported as failed: recorded, never turned into samples."""
    group: str
    job: str
    error: int
    message: str = ""

    def to_dict(self) -> dict:
        return {"group": self.group, "job": self.job, "error": self.error, "message": self.message}


@dataclass
class ParseResult:
    tool: str                      # "fio" or "fs_mark"
    tool_version: str | None
    samples: list[Sample] = field(default_factory=list)
    failures: list[JobFailure] = field(default_factory=list)


class ParseError(ValueError):
    """Input a parser cannot read: names the file, the line and what was expected.

    The only exception a parser raises for anything in its input. Its message is
    one line: what was found is shown quoted and cut to _FOUND_SHOWN characters.
    """

    def __init__(self, path: str, line: int | None, expected: str, found: str | None = None):
        self.path, self.line, self.expected, self.found = path, line, expected, found
        where = f"{path}:{line}" if line is not None else path
        msg = f"{where}: expected {expected}"
        if found is not None:
            shown = found if len(found) <= _FOUND_SHOWN else found[:_FOUND_SHOWN - 3] + "..."
            msg += f", found {shown!r}"
        super().__init__(msg)


_FOUND_SHOWN = 80

# fio's and fs_mark's figures are 64-bit counters, sizes and times, or percentages:
# one at or past 2^64, or below zero, was not printed by the tool.
FIGURE_LIMIT = 2.0 ** 64


def plausible(value: float) -> bool:
    """Whether a figure read from a tool's output can be one: finite, 0 <= value < 2^64."""
    return 0 <= value < FIGURE_LIMIT


# Job, group and device names are short words; the store keeps no NUL and no
# lone surrogate (which has no UTF-8 form) in text.
NAME_LIMIT = 256
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def storable_name(name: str) -> bool:
    """Whether a name read from a tool's output can label samples in a bundle."""
    return len(name) <= NAME_LIMIT and not _UNSTORABLE.search(name)
