"""Progress of the commands that run long: kernel build, check, bisect, nightly, run.

One display per command, in one of three modes:

- live (stderr is a terminal): rich progress bars, one per phase under way (a
  variant's build with the objects compiled out of the last build's count, its
  boot, the matrix and the current cell's repetitions); a phase that ends
  leaves one line saying how long it took.
- lines (stderr is not a terminal: Jenkins, a pipe; or --no-progress): one
  timestamped line per phase start and end and per repetition, flushed at once,
  so a log shows where the time went and where it stopped. The timestamps are
  UTC, ISO 8601.
- quiet (--quiet): no progress; the commands still print their results.

A command opens its display with `with progress.from_args(args, "check") as
display:`; the library code under it (iowatch.kernel.build, iowatch.check,
iowatch.runner) reports to `current()`, the display open in this context, or
to a silent one when none is. A context variable instead of a `display`
argument through every call: check, bisect and nightly reach the build and
the guest through several layers that other commands call too.

The runner's lines are also the virtual-lab guest's: the guest runs `iowatch
run --no-progress`, its lines come back on the console, and `guest()` turns
them into the host's boot and matrix phases (GUEST_LINE is the one format).
"""
from __future__ import annotations

import contextvars
import re
import sys
import time
from typing import IO, Any

LIVE, LINES, QUIET = "live", "lines", "quiet"
# In lines mode, a phase with many small steps (a kernel build's objects) gets
# a line this often, not one a step.
HEARTBEAT_S = 60.0

_current: contextvars.ContextVar[Progress | None] = contextvars.ContextVar("iowatch_progress",
                                                                           default=None)


def add_options(parser) -> None:
    """--no-progress and --quiet, the same for every long command."""
    g = parser.add_mutually_exclusive_group()
    g.add_argument("--no-progress", action="store_true",
                   help="timestamped lines instead of progress bars, on a terminal too "
                        "(what a pipe or Jenkins gets anyway)")
    g.add_argument("--quiet", action="store_true",
                   help="no progress at all; results and errors are still printed")


def mode_for(no_progress: bool = False, quiet: bool = False, stream: IO | None = None) -> str:
    stream = stream if stream is not None else sys.stderr
    if quiet:
        return QUIET
    if no_progress or not (hasattr(stream, "isatty") and stream.isatty()):
        return LINES
    return LIVE


def from_args(args, command: str, stream: IO | None = None) -> Progress:
    """The display a command's --no-progress/--quiet and its stderr ask for."""
    stream = stream if stream is not None else sys.stderr
    return Progress(command, mode_for(getattr(args, "no_progress", False),
                                      getattr(args, "quiet", False), stream), stream=stream)


def current() -> Progress:
    """The display the running command opened; a silent one outside a command."""
    return _current.get() or Progress("iowatch", QUIET)


def stamp(now: float | None = None) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now))


def _seconds(s: float) -> str:
    s = round(s)
    return f"{s} s" if s < 120 else f"{s // 60} min {s % 60:02d} s"


class Phase:
    """A stretch of work with a start, an end and, when known, a number of steps."""

    def __init__(self, display: Progress, name: str, total: int | None, detail: str, each: bool):
        self.display, self.name, self.total, self.each = display, name, total, each
        self.completed = 0
        self.started = time.monotonic()
        self._said = self.started
        self.ended = False
        self._task = None
        display._line(f"{name}: start" + (f" ({detail})" if detail else ""))
        if display._bars is not None:
            self._task = display._bars.add_task(name, total=total)

    def advance(self, n: int = 1, what: str | None = None) -> None:
        self.completed += n
        d = self.display
        if self._task is not None:
            d._bars.update(self._task, advance=n,
                           **({"description": f"{self.name}: {what}"} if what else {}))
        if d.mode != LINES:
            return
        if self.each and what:
            d._line(f"{self.name}: {what}")
        elif not self.each and time.monotonic() - self._said >= HEARTBEAT_S:
            took = time.monotonic() - self.started
            left = (f", about {_seconds(took / self.completed * (self.total - self.completed))} left"
                    if self.total and self.completed else "")
            d._line(f"{self.name}: {self._count()}, {_seconds(took)} so far{left}")
        else:
            return
        self._said = time.monotonic()

    def describe(self, what: str) -> None:
        """What the phase is doing now: the bar's label; in lines mode, a line."""
        if self._task is not None:
            self.display._bars.update(self._task, description=f"{self.name}: {what}")
        elif self.each:
            self.display._line(f"{self.name}: {what}")

    def set_total(self, total: int | None) -> None:
        self.total = total
        if self._task is not None:
            self.display._bars.update(self._task, total=total)

    def _count(self) -> str:
        return f"{self.completed}/{self.total}" if self.total else str(self.completed)

    def end(self, state: str = "done", note: str = "") -> None:
        if self.ended:
            return
        self.ended = True
        took = _seconds(time.monotonic() - self.started)
        text = f"{self.name}: {state} in {took}" + (f" ({note})" if note else "")
        if self._task is not None:
            self.display._bars.remove_task(self._task)
            self.display._bars.console.print(text, highlight=False)
        else:
            self.display._line(text)
        self.display._phases.discard(self)

    def __enter__(self) -> Phase:
        return self

    def __exit__(self, kind, exc, tb) -> None:
        if kind is None:
            self.end()
        else:
            self.end("stopped" if issubclass(kind, KeyboardInterrupt) else "failed",
                     f"{kind.__name__}: {exc}"[:200] if str(exc) else kind.__name__)


class _Matrix:
    """The runner's calls (on_start, on_rep, on_done, on_skip), as a matrix phase
    and a phase per cell; `prefix` names whose matrix it is (a variant's guest)."""

    def __init__(self, display: Progress, prefix: str = ""):
        self.display, self.prefix = display, prefix
        self.matrix: Phase | None = None
        self.cell: Phase | None = None
        self.cell_id: str | None = None
        self.reps, self.rep_started = 0, 0.0

    def on_start(self, total: int) -> None:
        self._end_cell()
        if self.matrix is not None:
            self.matrix.end()
        self.matrix = self.display.phase(f"{self.prefix}matrix", total=total,
                                         detail=f"{total} repetitions", each=False)

    def on_rep(self, cell: Any, rep: int, reps: int) -> None:
        cid = getattr(cell, "id", cell)
        if cid != self.cell_id:
            self._end_cell()
            self.cell_id = cid
            self.cell = self.display.phase(f"{self.prefix}cell {cid}", total=reps - rep + 1,
                                           detail=f"repetitions {rep}..{reps}")
        self.reps, self.rep_started = reps, time.monotonic()
        self.cell.describe(f"repetition {rep}/{reps}")

    def on_done(self, cell: Any, rep: int, state: str) -> None:
        if self.cell is not None:
            took = _seconds(time.monotonic() - self.rep_started)
            self.cell.advance(1, f"repetition {rep}/{self.reps} {state} in {took}")
            if self.cell.completed >= (self.cell.total or 0):
                self._end_cell()
        if self.matrix is not None:
            self.matrix.advance(1)
            if self.matrix.completed >= (self.matrix.total or 0):
                self.matrix.end()
                self.matrix = None

    def on_skip(self, cell: Any) -> None:
        self.display.note(f"{self.prefix}skip {getattr(cell, 'id', cell)}: {getattr(cell, 'skip', '')}")

    def _end_cell(self) -> None:
        if self.cell is not None:
            self.cell.end()
        self.cell, self.cell_id = None, None

    def close(self, state: str) -> None:
        for p in (self.cell, self.matrix):
            if p is not None:
                p.end(state)
        self.cell = self.matrix = None


# The runner's lines as the guest prints them (lines mode of `iowatch run`),
# read back from its console: "<stamp> run: matrix: start (12 repetitions)",
# "<stamp> run: cell <id>: repetition 2/5" as it starts, "... repetition 2/5
# passed in 31 s" as it ends, "<stamp> run: skip <id>: <why>".
GUEST_LINE = re.compile(
    r"\brun: (?:matrix: start \((?P<total>\d+) repetitions\)"
    r"|cell (?P<cell>\S+): repetition (?P<rep>\d+)/(?P<of>\d+)(?: (?P<state>passed|failed) in )?"
    r"|skip (?P<skipped>\S+): (?P<why>.*))")


class GuestRelay:
    """A virtual-lab guest's console, line by line (vlab.boot_and_run's on_line),
    as the host's phases: boot until the guest runs its command, then the
    guest's matrix and cells from the runner's lines it prints."""

    def __init__(self, display: Progress, label: str, booted_marker: str,
                 panic_markers: tuple[str, ...]):
        self.display, self.label = display, label
        self.booted_marker, self.panic_markers = booted_marker, panic_markers
        self.boot: Phase | None = display.phase(f"{label}: boot", each=False)
        self.matrix = _Matrix(display, f"{label}: ")

    def line(self, text: str) -> None:
        if self.boot is not None:
            if self.booted_marker in text:
                self.boot.end("booted")
                self.boot = None
            elif any(m in text for m in self.panic_markers):
                self.boot.end("panicked", text.strip()[-160:])
                self.boot = None
            return
        m = GUEST_LINE.search(text)
        if not m:
            return
        if m["total"]:
            self.matrix.on_start(int(m["total"]))
        elif m["state"]:
            self.matrix.on_done(m["cell"], int(m["rep"]), m["state"])
        elif m["rep"]:
            self.matrix.on_rep(m["cell"], int(m["rep"]), int(m["of"]))
        else:
            self.display.note(f"{self.label}: skip {m['skipped']}: {m['why'].strip()}")

    def close(self, state: str = "stopped") -> None:
        if self.boot is not None:
            self.boot.end(state)
            self.boot = None
        self.matrix.close(state)

    def __enter__(self) -> GuestRelay:
        return self

    def __exit__(self, kind, exc, tb) -> None:
        self.close("stopped" if kind else "guest exited")


class Progress:
    """The display of one command (see the module docstring); `with` it while
    the command runs. Also what iowatch.runner.Runner reports to."""

    def __init__(self, command: str = "iowatch", mode: str = LINES, stream: IO | None = None,
                 console=None):
        if mode not in (LIVE, LINES, QUIET):
            raise ValueError(f"progress mode {mode!r}: one of live, lines, quiet")
        self.command, self.mode = command, mode
        self.stream = stream if stream is not None else sys.stderr
        self._console = console
        self._bars = None
        self._token = None
        self._phases: set[Phase] = set()
        self._matrix = _Matrix(self)

    # -- the command's side

    def __enter__(self) -> Progress:
        if self.mode == LIVE:
            from rich.console import Console
            from rich.progress import (BarColumn, MofNCompleteColumn, Progress as Bars,
                                       TextColumn, TimeElapsedColumn, TimeRemainingColumn)
            console = self._console or Console(file=self.stream)
            # stdout stays where it goes (a pipe, a file): only a terminal's is drawn above the bars.
            self._bars = Bars(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                              TimeElapsedColumn(), TextColumn("left"), TimeRemainingColumn(),
                              console=console, redirect_stdout=sys.stdout.isatty(),
                              redirect_stderr=False)
            self._bars.start()
        self._token = _current.set(self)
        return self

    def __exit__(self, kind, exc, tb) -> None:
        state = "stopped" if kind is not None else "done"
        self._matrix.close(state)
        for p in list(self._phases):
            p.end(state)
        if self._bars is not None:
            self._bars.stop()
            self._bars = None
        if self._token is not None:
            _current.reset(self._token)
            self._token = None

    def phase(self, name: str, *, total: int | None = None, detail: str = "",
              each: bool = True) -> Phase:
        """Start a phase now; end it with .end() or by leaving `with`. `each`:
        in lines mode a line per step (repetitions), else a line a minute (objects)."""
        p = Phase(self, name, total, detail, each)
        self._phases.add(p)
        return p

    def note(self, text: str) -> None:
        """A progress line (a skipped cell, a retry): in lines mode timestamped,
        above the bars on a terminal, nothing when quiet."""
        if self._bars is not None:
            self._bars.console.print(text, highlight=False)
        else:
            self._line(text)

    def say(self, text: str) -> None:
        """A line of the command's own output (stdout), in every mode; in lines
        mode with the time, as the progress lines have it."""
        if self.mode == LINES:
            text = "\n".join(f"{stamp()} {line}" for line in text.splitlines() or [""])
        print(text, flush=True)

    def guest(self, label: str) -> GuestRelay:
        """The phases of a virtual-lab guest, fed its console a line at a time."""
        from iowatch.vlab import BOOT_MARKER, PANIC_MARKERS
        return GuestRelay(self, label, BOOT_MARKER, PANIC_MARKERS)

    def _line(self, text: str) -> None:
        if self.mode == LINES:
            self.stream.write(f"{stamp()} {self.command}: {text}\n")
            self.stream.flush()

    # -- the runner's side (iowatch.runner.Runner calls these)

    def on_start(self, total: int) -> None:
        self._matrix.on_start(total)

    def on_rep(self, cell, rep: int, reps: int) -> None:
        self._matrix.on_rep(cell, rep, reps)

    def on_done(self, cell, rep: int, state: str) -> None:
        self._matrix.on_done(cell, rep, state)

    def on_skip(self, cell) -> None:
        self._matrix.on_skip(cell)
