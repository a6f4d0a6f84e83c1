"""The bounds of the API's paged reads, once: the numbers the server checks
(site/api.py page_problem, whose 400 names a value out of range) and the
parameter types that say them in the OpenAPI description, so a client that
keeps to the description is never refused (issue 28)."""
from __future__ import annotations

from typing import Annotated

from ninja import Field

MAX_PAGE = 1000
MAX_SAMPLES_UNFILTERED = 10_000
MAX_SAMPLES_FILTERED = 100_000
# Past the end of any table here: a deeper offset would only make the database
# count rows to skip (and past 2**63 it cannot even say OFFSET).
MAX_OFFSET = 1_000_000_000


def _between(low: int, high: int):
    return Field(json_schema_extra={"minimum": low, "maximum": high})


PageLimit = Annotated[int, _between(1, MAX_PAGE)]
SampleLimit = Annotated[int, _between(1, MAX_SAMPLES_UNFILTERED)]
ValueLimit = Annotated[int, _between(1, MAX_SAMPLES_FILTERED)]
Offset = Annotated[int, _between(0, MAX_OFFSET)]


def one_of(values) -> Field:
    """A string parameter the server takes only from `values` (its 400 lists them)."""
    return Field(json_schema_extra={"enum": list(values)})
