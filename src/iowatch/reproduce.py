"""The commands a person types to reproduce a comparison, from a clean clone.

A bundle's own `command` is the guest-internal `iowatch run` the virtual lab
started, with the output paths of the machine that ran it: nobody can type
that. What reproduces a change is one level up: the check of the series
(patch k against its parent) or the bisect of the two commits on a laptop's
virtual lab, and `iowatch run` of the matrix on the lab host booted into each
kernel. `iowatch compare`'s text report (iowatch.report) and the mailing-list
report (iowatch.mailreport) both print these.
"""
from __future__ import annotations

import shlex
from dataclasses import dataclass

from iowatch.kernel.source import reproducible_base

# Where the commands start: a clean clone of this repository, set up as the
# README's quick start does.
CLEAN_CLONE = "a clean clone of iowatch, after ./scripts/setup.sh"


@dataclass(frozen=True)
class End:
    """One side of the change: its kernel and where it sits."""
    release: str | None
    commit: str | None
    series: str | None = None  # the series' name
    series_base: str | None = None
    series_message_id: str | None = None  # the cover letter's (b4 fetches the thread by it)
    patch_index: int | None = None

    @property
    def name(self) -> str:
        commit = f" {self.commit[:12]}" if self.commit else ""
        patch = f" (patch {self.patch_index} of {self.series})" if self.patch_index else ""
        return f"{self.release or 'unknown kernel'}{commit}{patch}"


def _q(word: str) -> str:
    return shlex.quote(word)


def series_argument(end: End) -> str:
    """What --series takes: the thread's Message-ID when the series came by
    mail (b4 fetches it), else the series directory of that name in kernels/series."""
    if end.series_message_id:
        return _q(end.series_message_id.strip("<>"))
    return _q(f"kernels/series/{end.series}")


def commands(good: End, bad: End, *, matrix: str | None, host: str | None,
             host_kind: str | None = None, tree: str | None = None,
             branch: str | None = None, reps: int | None = None) -> list[tuple[str, list[str]]]:
    """[(where, [command, ...])]: on a laptop with the virtual lab, on a
    machine's own loop devices, on the lab host, and the nightly that found it.
    `reps`: repetitions per cell (each command takes --reps)."""
    # The repetitions the sides had: the verdict's power depends on them.
    matrix_arg = (_q(matrix) if matrix else "MATRIX") + (f" --reps {reps}" if reps else "")
    # A tree that is a path names the machine that ran it, not one a reader has.
    tree = tree if tree and ("://" in tree or tree.startswith("git@")) else None
    source = f" --source {_q(tree)}" if tree else ""
    both = "booted into the good (base) kernel, then the bad (candidate) one"
    out: list[tuple[str, list[str]]] = []
    if bad.series and bad.patch_index:
        # An earlier debian-base is named by the reproducible commit of its files.
        base = reproducible_base(bad.series_base or good.commit) or "BASE"
        out.append((f"on a laptop with the virtual lab ({CLEAN_CLONE})",
                    [f"iowatch check --series {series_argument(bad)} --base {_q(base)}"
                     f"{source} --matrix {matrix_arg}"]))
    elif good.commit and bad.commit:
        out.append((f"on a laptop with the virtual lab ({CLEAN_CLONE})",
                    [f"iowatch bisect --good {_q(reproducible_base(good.commit))} --bad {_q(bad.commit)}"
                     f"{source} --matrix {matrix_arg}"]))
    out.append((f"on a machine's own loop devices, {both}",
                [f"iowatch run {matrix_arg} --target localhost"]))
    if host and host_kind == "lava":
        # A board class of a LAVA lab: LAVA boots each kernel on one of its boards.
        out.append((f"on the LAVA board class {host}, one LAVA job a kernel, the good then the bad "
                     "(with IOWATCH_SERVER and IOWATCH_TOKEN set, the board uploads its run)",
                    [f"iowatch lava submit {_q(host)} {matrix_arg} --commit {_q(end.commit or side.upper())} --follow"
                     for end, side in ((good, "good"), (bad, "bad"))]))
    elif host and host_kind not in ("qemu", "local", "published"):
        out.append((f"on the lab host {host}, {both}", [f"iowatch run {matrix_arg} --target {_q(host)}"]))
    else:
        # Measured in the virtual lab: a lab host is one the inventory names.
        out.append((f"on a lab host (HOST of hardware-inventory.yml), {both}",
                    [f"iowatch run {matrix_arg} --target HOST"]))
    if branch and host_kind == "lava":
        out.append(("the nightly that found it (the board class's agent)", [
            f"iowatch agent --host {_q(host or 'HOST')} --nightly {_q(branch)} --source "
            f"{_q(tree) if tree else 'TREE'} --matrix {matrix_arg}"]))
    elif branch:
        out.append(("the nightly that found it", [
            f"iowatch nightly --branch {_q(branch)} --source {_q(tree) if tree else 'TREE'} "
            f"--target {_q(host or 'HOST')} --matrix {matrix_arg}"]))
    return out


def lines(good: End, bad: End, indent: str = "  ", **where) -> list[str]:
    out = []
    for place, cmds in commands(good, bad, **where):
        out.append(f"{indent}{place}:")
        out += [f"{indent}  {c}" for c in cmds]
    return out


def end_of_manifest(doc: dict) -> End:
    """An End from a bundle manifest (iowatch.side_data.Side.runs)."""
    kernel = doc.get("kernel") or {}
    series = kernel.get("series") or {}
    patch = kernel.get("patch") or {}
    return End(kernel.get("release"), kernel.get("git_commit"), series.get("name"),
               series.get("base"), series.get("message_id"), patch.get("index"))
