"""The time a kernel function takes, from the kernel's function graph tracer.

A post sometimes times a function inside a larger operation: seed 002's
timed the NAT flush, f2fs_flush_nat_entries(), inside the checkpoint that a
sync writes. A run can time the same function with ftrace's function graph
tracer (tracefs; the guest kernel has CONFIG_FUNCTION_GRAPH_TRACER, patched
out to nops until a tracer is set): `set_ftrace_filter` and
`set_graph_function` name it, `max_graph_depth` 1 keeps its callees out, and
each call's line gives its duration. Only the named functions are patched:
with `set_graph_function` alone every kernel function enters the tracer to be
filtered, and under TCG seed 002's sync took 537 ms instead of about 120.
ftrace is the kernel's own instrument for this; no other tool is needed in
the guest.

    with function_times(["f2fs_flush_nat_entries"]) as timed:
        subprocess.run(["sync", "-f", path])
    timed.ms["f2fs_flush_nat_entries"]      # one float a call, in ms

A kernel without the tracer, or a function it cannot trace (inlined,
static and optimised away, or notrace), raises TraceError naming what is
missing; the tracer is put back to `nop` whatever happens inside the block.
"""
from __future__ import annotations

import re
import subprocess
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

TRACEFS = Path("/sys/kernel/tracing")
TRACER = "function_graph"
KERNEL_OPTIONS = "CONFIG_FTRACE, CONFIG_FUNCTION_TRACER and CONFIG_FUNCTION_GRAPH_TRACER"
# A call at depth 1 is one line, " 1)   $ 15812.34 us |  f2fs_flush_nat_entries();",
# or, when something came between its entry and its return (it moved to another
# CPU, or slept while another task's event was written), an opening line
# " 0)      |  f2fs_flush_nat_entries() {" and the duration on the closing one,
# " 1) # 2803.946 us |  } /* f2fs_flush_nat_entries */" (the funcgraph-tail
# option names it). The duration is always in us, a marker such as + ! # * @ $
# before it for long ones.
_NAME = r"[A-Za-z_][A-Za-z0-9_.]*"
_CALL = re.compile(rf"(?P<us>\d+(?:\.\d+)?) us\s*\|\s*(?:(?P<fn>{_NAME})\(\);|\}}\s*/\*\s*(?P<tail>{_NAME})\s*\*/)")


class TraceError(Exception):
    pass


@dataclass
class Timed:
    """Filled when the block ends: each function's calls in ms, and the
    trace they were read from (kept beside the run)."""
    ms: dict[str, list[float]] = field(default_factory=dict)
    trace: str = ""


def parse(trace: str, functions: list[str]) -> dict[str, list[float]]:
    """Each function's calls (ms) in a function graph trace of depth 1."""
    out: dict[str, list[float]] = {f: [] for f in functions}
    for m in _CALL.finditer(trace):
        if (fn := m["fn"] or m["tail"]) in out:
            out[fn].append(float(m["us"]) / 1000)
    return out


def mounted(root: Path = TRACEFS) -> bool:
    """Mount tracefs at root unless it is there already; True when this call
    mounted it (the caller then unmounts it, see `unmount`)."""
    if (root / "current_tracer").is_file():
        return False
    done = subprocess.run(["mount", "-t", "tracefs", "nodev", str(root)], capture_output=True, text=True)
    if done.returncode or not (root / "current_tracer").is_file():
        raise TraceError(f"tracefs could not be mounted at {root} ({done.stderr.strip() or 'no current_tracer'}): "
                         f"the kernel needs {KERNEL_OPTIONS}")
    return True


def unmount(root: Path) -> None:
    """Take away a tracefs `mounted` put at root. A lab host that runs
    `iowatch run` keeps its mounts as it had them."""
    subprocess.run(["umount", str(root)], capture_output=True, check=False)


def _write(root: Path, name: str, text: str) -> None:
    try:
        # tracefs files take one write; opening with truncation also clears `trace`.
        (root / name).write_text(text)
    except OSError as e:
        raise TraceError(f"{root / name}: writing {text.strip()!r} failed: {e.strerror}") from e


@contextmanager
def function_times(functions: list[str], root: Path = TRACEFS) -> Iterator[Timed]:
    """Time every call of `functions` made while the block runs (any task,
    any CPU). tracefs is mounted for the block if it was not, and only then
    unmounted after it."""
    ours = mounted(root)
    try:
        with _traced(functions, root) as timed:
            yield timed
    finally:
        if ours:
            unmount(root)


@contextmanager
def _traced(functions: list[str], root: Path) -> Iterator[Timed]:
    tracers = (root / "available_tracers").read_text().split()
    if TRACER not in tracers:
        raise TraceError(f"{root}/available_tracers has {' '.join(tracers) or 'nothing'}, not {TRACER}: "
                         f"the kernel needs {KERNEL_OPTIONS}")
    _write(root, "tracing_on", "0")
    _write(root, "current_tracer", "nop")
    try:
        for name in ("set_ftrace_filter", "set_graph_function"):
            _write(root, name, "\n".join(functions) + "\n")
    except TraceError as e:
        raise TraceError(f"the kernel cannot trace {', '.join(functions)} (not in "
                         f"available_filter_functions: inlined, or notrace): {e}") from e
    timed = Timed()
    try:
        _write(root, "max_graph_depth", "1")
        _write(root, "options/funcgraph-tail", "1")
        _write(root, "trace", "")
        _write(root, "current_tracer", TRACER)
        _write(root, "tracing_on", "1")
        yield timed
        _write(root, "tracing_on", "0")
        timed.trace = (root / "trace").read_text()
        timed.ms = parse(timed.trace, functions)
    finally:
        for name, text in (("tracing_on", "0"), ("current_tracer", "nop"), ("set_graph_function", ""),
                           ("set_ftrace_filter", ""), ("max_graph_depth", "0"), ("trace", "")):
            try:
                (root / name).write_text(text)
            except OSError:
                pass
