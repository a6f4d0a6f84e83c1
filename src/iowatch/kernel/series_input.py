"""Where a series comes from, in one call for every command: a directory of
patches, an mbox or a Message-ID (b4's side, iowatch.kernel.lore), or a git
range of the source tree. It sits above both iowatch.kernel.series (what a
series is) and iowatch.kernel.lore (fetching one), so neither imports the
other back."""
from __future__ import annotations

from pathlib import Path

from iowatch.kernel import lore
from iowatch.kernel.series import Series, SeriesError, from_directory, from_git_range
from iowatch.kernel.source import SourceError


def load_series(spec: str, tree: Path | None = None) -> Series:
    """A directory, an mbox file (through `b4 am -m`), a Message-ID (fetched from
    lore with b4), or (given a tree) a git range such as v6.12..topic."""
    p = Path(spec)
    if p.is_dir():
        return from_directory(p)
    if p.is_file():
        return lore.series_from_mbox(p)
    if lore.message_id(spec):
        return lore.series_from_message_id(spec)
    if ".." in spec and tree is not None:
        try:
            return from_git_range(tree, spec)
        except SourceError as e:
            raise SeriesError(str(e)) from None
    raise SeriesError(f"{spec!r} is neither a series directory, an mbox file, a Message-ID, "
                      "nor a git range (A..B) of the source tree")
