"""A patch series: a quilt directory (a `series` file and patches), an mbox as
`b4 am` writes it, or a git range A..B of the source tree."""
from __future__ import annotations

import email
import email.policy
import mailbox
import re
from dataclasses import dataclass
from pathlib import Path

from iowatch.kernel.source import SourceError, git


@dataclass(frozen=True)
class Patch:
    index: int          # 1-based position in the series
    name: str           # file name, or the commit for a git range
    subject: str
    text: str           # a mail-formatted patch `git am` takes

    @property
    def short(self) -> str:
        return f"[{self.index}] {self.subject}"


@dataclass(frozen=True)
class Series:
    name: str
    source: str         # what the user gave
    patches: tuple[Patch, ...]
    message_id: str | None = None


class SeriesError(ValueError):
    pass


def _subject(text: str, fallback: str) -> str:
    m = re.search(r"^Subject:\s*(.+(?:\n[ \t].+)*)", text, re.M)
    if not m:
        return fallback
    subject = " ".join(m.group(1).split())
    return re.sub(r"^\[[^\]]*PATCH[^\]]*\]\s*", "", subject)


def _as_mail(text: str, name: str) -> str:
    """A plain diff (quilt style) gets a mail header so `git am` can take it."""
    if re.search(r"^From[: ]", text, re.M) and re.search(r"^Subject:", text, re.M):
        return text
    subject = text.strip().splitlines()[0] if text.strip() and not text.startswith(("diff ", "---", "Index:")) else name
    return f"From: iowatch <iowatch@localhost>\nSubject: [PATCH] {subject}\n\n{text}"


def from_directory(d: Path) -> Series:
    listing = d / "series"
    if not listing.is_file():
        raise SeriesError(f"{d}: a series directory needs a `series` file listing the patches in order")
    names = [line.split("#")[0].strip() for line in listing.read_text().splitlines()]
    names = [n.split()[0] for n in names if n]
    if not names:
        raise SeriesError(f"{listing}: lists no patches")
    patches = []
    for i, n in enumerate(names, 1):
        f = d / n
        if not f.is_file():
            raise SeriesError(f"{listing}: line for {n!r}: no such file in {d}")
        text = f.read_text(errors="replace")
        patches.append(Patch(i, n, _subject(text, n), _as_mail(text, n)))
    return Series(d.name, str(d), tuple(patches))


def from_mbox(path: Path) -> Series:
    patches, cover_id = [], None
    for msg in mailbox.mbox(str(path), factory=lambda f: email.message_from_binary_file(f, policy=email.policy.compat32)):
        subject = " ".join(str(msg.get("Subject", "")).split())
        m = re.search(r"\[[^\]]*PATCH[^\]]*?(\d+)/(\d+)\]", subject)
        if m and m.group(1) == "0":
            cover_id = msg.get("Message-Id")
            continue  # the cover letter carries no diff
        payload = msg.get_payload(decode=False)
        if not isinstance(payload, str) or "\n+++ " not in payload and "\ndiff --git" not in payload:
            continue
        patches.append((int(m.group(1)) if m else len(patches) + 1, msg))
    if not patches:
        raise SeriesError(f"{path}: no patches in this mbox")
    patches.sort(key=lambda p: p[0])
    out = tuple(Patch(i, f"{path.name}#{i}", _subject(msg.as_string(), f"patch {i}"), msg.as_string())
                for i, (_, msg) in enumerate(patches, 1))
    return Series(path.stem, str(path), out, cover_id)


def from_git_range(tree: Path, spec: str) -> Series:
    commits = git(tree, "rev-list", "--reverse", "--no-merges", spec).stdout.split()
    if not commits:
        raise SeriesError(f"git range {spec!r} holds no commits in {tree}")
    patches = []
    for i, c in enumerate(commits, 1):
        text = git(tree, "format-patch", "-1", "--stdout", c).stdout
        patches.append(Patch(i, c[:12], _subject(text, c[:12]), text))
    return Series(spec.replace("/", "_"), spec, tuple(patches))


def load_series(spec: str, tree: Path | None = None) -> Series:
    """A directory, an mbox file, or (given a tree) a git range such as v6.12..topic."""
    p = Path(spec)
    if p.is_dir():
        return from_directory(p)
    if p.is_file():
        return from_mbox(p)
    if ".." in spec and tree is not None:
        try:
            return from_git_range(tree, spec)
        except SourceError as e:
            raise SeriesError(str(e)) from None
    raise SeriesError(f"{spec!r} is neither a series directory, an mbox file, nor a git range "
                      "(A..B) of the source tree")
