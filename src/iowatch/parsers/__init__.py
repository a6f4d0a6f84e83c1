"""The tool-output parsers: fio JSON, fio text and fs_mark, behind one entry point.

parse_file/parse_text pick the parser by looking at the text (or take the one
named), and return a ParseResult of iowatch.samples records. The raw outputs
travel in the result bundle, so the web app can re-read history with a better
parser through the same functions.
"""

from __future__ import annotations

import re

from iowatch.parsers import fio_json, fio_text, fsmark
from iowatch.samples import ParseError, ParseResult

FORMATS = ("fio-json", "fio-text", "fsmark")
_PARSERS = {"fio-json": fio_json.parse, "fio-text": fio_text.parse, "fsmark": fsmark.parse}

_FSMARK = re.compile(r"^(\s*FSUse%\s+Count|#\s+\S*fs_mark\s)", re.M)
_FIO_TEXT = re.compile(
    r"^(Run status group \d+|\s*(READ|WRITE|TRIM): +(io|bw)=|.+: \(groupid=\d+, jobs=\d+\)|fio-\d)",
    re.M)


def detect_format(text: str, path: str = "<stdin>") -> str:
    """Which of FORMATS the text is; ParseError when it is none of them."""
    if _FSMARK.search(text):
        return "fsmark"
    # JSON wins over text: --output-format=normal,json prints both, and the
    # JSON has the exact numbers. A lone "{" in quoted C code is not fio JSON.
    start = fio_json.find_json_start(text)
    looks_like_text = _FIO_TEXT.search(text) is not None
    if start is not None and ('"jobs"' in text[start:] or not looks_like_text):
        return "fio-json"
    if looks_like_text:
        return "fio-text"
    lineno, found = fio_text.first_line(text)
    raise ParseError(path, lineno, "fio JSON, fio text or fs_mark output", found)


def parse_text(text: str, fmt: str = "auto", path: str = "<stdin>") -> ParseResult:
    if fmt == "auto":
        fmt = detect_format(text, path)
    if fmt not in _PARSERS:
        raise ValueError(f"unknown format {fmt!r}: one of auto, {', '.join(FORMATS)}")
    return _PARSERS[fmt](text, path)


def parse_file(path: str, fmt: str = "auto") -> ParseResult:
    """Parse one tool output file. OSError (e.g. a missing file) passes through."""
    with open(path, encoding="utf-8", errors="replace") as f:
        return parse_text(f.read(), fmt, str(path))
