"""The bounds of the API's paged reads, once: the numbers the server checks
(site/api.py page_problem, whose 400 names a value out of range) and the
parameter types that say them in the OpenAPI description, so a client that
keeps to the description is never refused (issue 28)."""
from __future__ import annotations

import re
from typing import Annotated

from django.http import JsonResponse
from ninja import Field
from pydantic import BeforeValidator

MAX_PAGE = 1000
MAX_SAMPLES_UNFILTERED = 10_000
MAX_SAMPLES_FILTERED = 100_000
# A run's values come a page at a time unless a limit asks for more: all of a
# 100,000-cell run's values in one answer (12 MB) held a worker for seconds (issue 42).
VALUES_PAGE = 10_000
# Past the end of any table here: a deeper offset would only make the database
# count rows to skip (and past 2**63 it cannot even say OFFSET).
MAX_OFFSET = 1_000_000_000
# The store's integers are 64-bit: a number past them is a 400.
STORE_MIN, STORE_MAX = -(2 ** 63), 2 ** 63 - 1
# A string the server takes in a query or an agent's body: no NUL character
# (the store keeps none; site/middleware.py and bisect_api.storable refuse one).
NO_NUL = "^[^\\x00]*$"
# The inventory's host names (a DNS label, dotted), as runs, claims, beats and
# agents' grants carry them: no space, no control character. Checked whole
# (re.fullmatch: a "$" alone lets a trailing newline through).
HOST_NAME = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$"
# The same, or empty: a step's or a result's host, which older agents leave out.
HOST_NAME_OR_EMPTY = r"^([A-Za-z0-9][A-Za-z0-9._-]{0,199})?$"
HOST_NAME_RULE = "letters, digits, '.', '_' and '-', starting with a letter or digit, at most 200"


def is_host_name(name: str) -> bool:
    return re.fullmatch(HOST_NAME, name) is not None


def _between(low: int, high: int):
    return Field(json_schema_extra={"minimum": low, "maximum": high})


def _a_json_integer(value):
    """JSON Schema's integer: a number without a fraction (5.0 is one), never a
    boolean or a text, which pydantic's lax int would take (true as 1, "5" as 5)."""
    if isinstance(value, (bool, str, bytes)):
        raise ValueError("Input should be an integer (a JSON number, not a boolean or a text)")
    return value


# An integer of an agent's body, as JSON Schema means it (and the description says).
JsonInt = Annotated[int, BeforeValidator(_a_json_integer)]

# An id in a path or a query: past the store's 64-bit integers it is a 400
# naming the parameter (PostgreSQL would just find nothing: a 200 or a 404).
StoreId = Annotated[int, Field(ge=STORE_MIN, le=STORE_MAX)]
PageLimit = Annotated[int, _between(1, MAX_PAGE)]
SampleLimit = Annotated[int, _between(1, MAX_SAMPLES_UNFILTERED)]
ValueLimit = Annotated[int, _between(1, MAX_SAMPLES_FILTERED)]
Offset = Annotated[int, _between(0, MAX_OFFSET)]


def one_of(values) -> Field:
    """A string parameter the server takes only from `values` (its 400 lists them)."""
    return Field(json_schema_extra={"enum": list(values)})


def not_one_of(name: str, value: str | None, values) -> JsonResponse | None:
    """The API's 400 for a query parameter outside `values` (None when it is
    absent or one of them): it names the parameter and what it takes."""
    if value is None or value in values:
        return None
    return JsonResponse({"error": f"{name} {value!r} is not one of {', '.join(values)}",
                         "where": f"query field {name}"}, status=400)
