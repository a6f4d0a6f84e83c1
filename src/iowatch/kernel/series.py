"""A patch series: a quilt directory (a `series` file and patches), an mbox
(read with `b4 am -m`), a Message-ID (fetched from lore with b4: see
iowatch.kernel.lore), or a git range A..B of the source tree.

A series from mail keeps each patch's Message-ID and author, the cover
letter's Message-ID and subject, and the list it went to (To/Cc): record()
is what a bundle's kernel.series carries, so a report can reply in the thread.
"""
from __future__ import annotations

import email
import hashlib
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
    message_id: str | None = None   # without the angle brackets
    author: str | None = None       # "Name <address>"

    @property
    def short(self) -> str:
        return f"[{self.index}] {self.subject}"

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.text.encode()).hexdigest()


@dataclass(frozen=True)
class Series:
    name: str
    source: str         # what the user gave
    patches: tuple[Patch, ...]
    message_id: str | None = None   # the cover letter's (else the first patch's), no brackets
    subject: str | None = None      # the cover letter's subject
    to: tuple[str, ...] = ()        # the list and people the series went to
    cc: tuple[str, ...] = ()
    archive: str | None = None      # a public-inbox URL the patches were fetched from
    cover: str | None = None        # the cover letter's text (its claims are the whole series')

    def record(self, base: str | None = None) -> dict:
        """The bundle's kernel.series: enough to reply in the series' thread
        (In-Reply-To: message_id; References: it and the patch's own) and to
        name each patch by its hash, as KCIDB's patchset_hash wants."""
        rec = {"name": self.name, "base": base, "message_id": self.message_id,
               "patch_count": len(self.patches), "subject": self.subject,
               "to": list(self.to), "cc": list(self.cc), "archive": self.archive,
               "patches": [{k: v for k, v in (("index", p.index), ("subject", p.subject),
                                              ("author", p.author), ("message_id", p.message_id),
                                              ("sha256", p.sha256)) if v is not None}
                           for p in self.patches]}
        return {k: v for k, v in rec.items() if v not in (None, [])}


def patchset_hash(patches) -> str:
    """KCIDB's patchset hash: sha256 over the newline-terminated sha256 of each
    patch in order (`sha256sum *.patch | cut -c-64 | sha256sum`); "" for none."""
    hashes = [p["sha256"] if isinstance(p, dict) else p.sha256 for p in patches]
    return hashlib.sha256("".join(h + "\n" for h in hashes).encode()).hexdigest() if hashes else ""


def bare_message_id(value: str | None) -> str | None:
    """A Message-ID without its angle brackets and blanks."""
    if not value:
        return None
    value = " ".join(str(value).split()).strip()
    return value.removeprefix("<").removesuffix(">").strip() or None


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
    # `git format-patch --cover-letter` writes 0000-cover-letter.patch beside them.
    covers = sorted(d.glob("0000-*.patch")) + sorted(d.glob("cover-letter*"))
    cover = covers[0].read_text(errors="replace") if covers and covers[0].name not in names else None
    return Series(d.name, str(d), tuple(patches), subject=_subject(cover, "") or None if cover else None,
                  cover=cover)


def read_mbox(path: Path) -> list:
    return list(mailbox.mbox(str(path), factory=lambda f: email.message_from_binary_file(
        f, policy=email.policy.compat32)))


def _header(msg, name: str) -> str | None:
    value = msg.get(name)
    return " ".join(str(value).split()) if value else None


def from_mbox(path: Path, cover: Path | None = None) -> Series:
    """The patches of an mbox in their order: as `b4 am` writes it (the cover
    letter then a message in a file of its own), or as `git format-patch` does."""
    patches, cover_msg = [], None
    extra = [email.message_from_bytes(cover.read_bytes(), policy=email.policy.compat32)] if cover else []
    for msg in read_mbox(path) + extra:
        subject = " ".join(str(msg.get("Subject", "")).split())
        m = re.search(r"\[[^\]]*PATCH[^\]]*?(\d+)/(\d+)\]", subject)
        if m and m.group(1) == "0":
            cover_msg = msg
            continue  # the cover letter carries no diff
        payload = msg.get_payload(decode=False)
        if not isinstance(payload, str) or "\n+++ " not in payload and "\ndiff --git" not in payload:
            continue
        patches.append((int(m.group(1)) if m else len(patches) + 1, msg))
    if not patches:
        raise SeriesError(f"{path}: no patches in this mbox")
    patches.sort(key=lambda p: p[0])
    out = tuple(Patch(i, f"{path.name}#{i}", _subject(msg.as_string(), f"patch {i}"), msg.as_string(),
                      bare_message_id(msg.get("Message-Id")), _header(msg, "From"))
                for i, (_, msg) in enumerate(patches, 1))
    first = cover_msg or patches[0][1]
    return Series(path.stem, str(path), out, bare_message_id(first.get("Message-Id")),
                  _subject(cover_msg.as_string(), "") or None if cover_msg else None,
                  cover=cover_msg.as_string() if cover_msg else None)


def from_git_range(tree: Path, spec: str) -> Series:
    commits = git(tree, "rev-list", "--reverse", "--no-merges", spec).stdout.split()
    if not commits:
        raise SeriesError(f"git range {spec!r} holds no commits in {tree}")
    patches = []
    for i, c in enumerate(commits, 1):
        text = git(tree, "format-patch", "-1", "--stdout", c).stdout
        patches.append(Patch(i, c[:12], _subject(text, c[:12]), text))
    return Series(spec.replace("/", "_"), spec, tuple(patches))
