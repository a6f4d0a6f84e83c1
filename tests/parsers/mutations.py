"""Mutations of real tool outputs, for fuzzing the parsers (tests/parsers/test_fuzz.py).

Each mutation takes the text and a Picker (a source of choices: hypothesis's
draws in the tests, a seeded random.Random when hunting for new failures) and
returns a damaged copy: what a crashed tool, a full disk, a mangled mail or a
tool printing odd numbers could leave behind.
"""

from __future__ import annotations

import json
import re
from typing import Callable, Protocol, Sequence

# What a tool, a copy or a bad disk can put in place of a figure.
ODD_NUMBERS = (
    "inf", "-inf", "nan", "NaN", "Infinity", "-Infinity", "1e400", "-1e400", "1e-400",
    "1e308", "-1", "-0", "0", "0.0", "9" * 400, "9" * 5000, "-" + "9" * 30, "18446744073709551615",
    "1.7976931348623157e308", "4.9e-324", "", "-", ".", "1e", "0x10", "1_000",
)
# Characters a byte flip puts in: JSON and fio-text punctuation, controls, line breaks.
ODD_CHARS = (
    "\x00", "{", "}", "[", "]", '"', ":", ",", "\n", "=", "%", "/", "-", "(", ")", "|",
    "9", "k", "e", " ", "\t", "\r", "\x0b", "\x85", "\u2028", "\ufffd", "\\", "é", "∞",
)
# JSON values a key's value can be replaced by: every type, odd numbers, deep nesting.
ODD_VALUES: tuple = (
    None, True, False, "", "x", "1", [], {}, [1], {"a": 1}, -1, 0, 10**400, 1e308,
    float("inf"), float("-inf"), float("nan"), -1e-300, 2**64,
)
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?")


class Picker(Protocol):
    def integer(self, lo: int, hi: int) -> int: ...
    def choice(self, options: Sequence): ...


def flip(text: str, pick: Picker) -> str:
    if not text:
        return text
    i = pick.integer(0, len(text) - 1)
    return text[:i] + pick.choice(ODD_CHARS) + text[i + 1:]


def truncate(text: str, pick: Picker) -> str:
    return text[:pick.integer(0, len(text))]


def delete_line(text: str, pick: Picker) -> str:
    lines = text.splitlines(keepends=True)
    if not lines:
        return text
    del lines[pick.integer(0, len(lines) - 1)]
    return "".join(lines)


def duplicate_line(text: str, pick: Picker) -> str:
    lines = text.splitlines(keepends=True)
    if not lines:
        return text
    i = pick.integer(0, len(lines) - 1)
    return "".join(lines[:i + 1] + lines[i:])


def odd_number(text: str, pick: Picker) -> str:
    numbers = list(_NUMBER.finditer(text))
    if not numbers:
        return text
    m = numbers[pick.integer(0, len(numbers) - 1)]
    return text[:m.start()] + pick.choice(ODD_NUMBERS) + text[m.end():]


def deep_nesting(text: str, pick: Picker) -> str:
    """A figure replaced by a list nested far past any recursion limit."""
    numbers = list(_NUMBER.finditer(text))
    if not numbers:
        return text
    m = numbers[pick.integer(0, len(numbers) - 1)]
    depth = pick.choice((50, 5000, 200_000))
    return text[:m.start()] + "[" * depth + m.group() + "]" * depth + text[m.end():]


def _json_span(text: str) -> tuple[int, int, object] | None:
    start = text.find("{")
    if start < 0:
        return None
    try:
        doc, end = json.JSONDecoder().raw_decode(text, start)
    except (ValueError, RecursionError):
        return None
    return start, end, doc


def _containers(doc) -> list:
    """Every dict and list in a JSON document, outermost first."""
    out, todo = [], [doc]
    while todo:
        node = todo.pop()
        if isinstance(node, (dict, list)):
            out.append(node)
            todo += list(node.values()) if isinstance(node, dict) else node
    return out


def json_edit(text: str, pick: Picker) -> str:
    """In the JSON document inside text: a key removed or a value of another type or size."""
    span = _json_span(text)
    if span is None:
        return text
    start, end, doc = span
    nodes = [n for n in _containers(doc) if n]
    if not nodes:
        return text
    node = nodes[pick.integer(0, len(nodes) - 1)]
    key = pick.choice(list(node) if isinstance(node, dict) else range(len(node)))
    if isinstance(node, dict) and pick.integer(0, 1):
        del node[key]
    else:
        node[key] = pick.choice(ODD_VALUES)
    return text[:start] + json.dumps(doc, indent=2) + text[end:]


MUTATIONS: tuple[Callable[[str, Picker], str], ...] = (
    flip, truncate, delete_line, duplicate_line, odd_number, deep_nesting, json_edit)


def mutate(text: str, pick: Picker, times: int) -> str:
    for _ in range(times):
        text = pick.choice(MUTATIONS)(text, pick)
    return text
