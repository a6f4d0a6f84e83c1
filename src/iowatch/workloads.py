"""Run one repetition of a study's workload and turn its output into samples.

Three kinds, as the studies declare them: a fio job (rendered from the study's
options into a job file), an fs_mark command line, and the scripted f2fs
checkpoint workload. Each run is timed (wall clock, CPU of the tool's process
tree) and leaves its raw output as artifacts; the parsers turn it into samples.
"""
from __future__ import annotations

import contextlib
import json
import os
import resource
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from iowatch import ftrace
from iowatch.parsers import parse_text
from iowatch.samples import ParseError, Sample


@dataclass
class Context:
    """Where a repetition runs: the mounted filesystem (or None for raw), the device."""
    device: str
    mountpoint: Path | None
    workdir: Path            # scratch directory for the tool's own files, outside the device

    @property
    def target(self) -> str:
        # On a filesystem the study's one file; on the raw device the device itself.
        return str(self.mountpoint / "iowatch.data") if self.mountpoint else self.device


@dataclass
class Result:
    samples: list[Sample] = field(default_factory=list)
    failures: list[dict] = field(default_factory=list)
    artifacts: dict[str, bytes] = field(default_factory=dict)
    error: str | None = None
    wall_s: float = 0.0
    tool_s: float = 0.0        # time spent inside the benchmark tool itself


def _substitute(value, ctx: Context):
    if not isinstance(value, str):
        return value
    return value.format(mountpoint=ctx.mountpoint or "", device=ctx.device, target=ctx.target)


def render_fio(workload: dict, ctx: Context) -> str:
    """The study's fio section as a job file. On the raw device, `directory` is
    dropped and `filename` points at the device."""
    fio = workload["fio"]

    def section(name: str, options: dict) -> list[str]:
        lines = [f"[{name}]"]
        for key, value in options.items():
            if ctx.mountpoint is None and key == "directory":
                continue
            value = _substitute(value, ctx)
            if isinstance(value, bool):
                value = int(value)
            lines.append(f"{key}={value}")
        return lines

    glob = dict(fio["global"])
    if ctx.mountpoint is None:
        glob["filename"] = ctx.device
    lines = section("global", glob)
    for job in fio["jobs"]:
        lines += [""] + section(job["name"], job.get("options", {}))
    return "\n".join(lines) + "\n"


def fs_mark_argv(workload: dict, ctx: Context) -> list[str]:
    fm = workload["fs_mark"]
    argv = ["fs_mark"]
    for flag, value in fm["options"].items():
        argv += [f"-{flag}", str(value)]
    # Relative to the mount point's parent, where fs_mark runs: it overflows its
    # buffers on directory paths of 40 bytes or more.
    for i in range(fm.get("dirs", 1)):
        argv += ["-d", f"{ctx.mountpoint.name}/{i}"]
    return argv


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    """SIGTERM and SIGINT wait while the block runs and are raised again when it
    ends (in the main thread; elsewhere Python delivers no signals anyway)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    held = (signal.SIGTERM, signal.SIGINT)
    old = {s: signal.signal(s, lambda signum, frame: caught.append(signum)) for s in held}
    try:
        yield
    finally:
        for s, handler in old.items():
            signal.signal(s, signal.SIG_DFL if handler is None else handler)
        for s in caught:
            signal.raise_signal(s)


def run_tool(argv: list[str], input: str | None = None, **kw) -> subprocess.CompletedProcess:
    """subprocess.run in a process group of its own, killed whole when the run is
    interrupted (SIGTERM, Ctrl-C): fio's jobs are processes of their own, and
    killing only fio left them writing on a filesystem that could then not be
    unmounted, nor its loop device detached. A signal that lands while Popen
    starts the tool (forked, not yet returned) waits until there is a process
    to kill: raised inside Popen, it left fio running with nobody to stop it."""
    stdin = subprocess.PIPE if input is not None else subprocess.DEVNULL
    proc = None
    try:
        with _signals_held():
            proc = subprocess.Popen(argv, stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    text=True, start_new_session=True, **kw)
        stdout, stderr = proc.communicate(input)
    except BaseException:
        if proc is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        raise
    finally:
        for pipe in (proc.stdin, proc.stdout, proc.stderr) if proc is not None else ():
            if pipe is not None:
                pipe.close()
    return subprocess.CompletedProcess(argv, proc.returncode, stdout, stderr)


def _timed(argv: list[str], cwd: Path, stdout_path: Path | None = None) -> tuple[int, str, str, float, float, float]:
    """Run a tool; returns (exit code, stdout, stderr, wall s, user s, sys s) of its process tree."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    out = run_tool(argv, cwd=cwd)
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (out.returncode, out.stdout, out.stderr, wall,
            after.ru_utime - before.ru_utime, after.ru_stime - before.ru_stime)


def _cpu_samples(group: str, wall: float, user: float, sys_: float) -> list[Sample]:
    return [Sample.of("wall_s", wall, group), Sample.of("cpu.user_s", user, group),
            Sample.of("cpu.sys_s", sys_, group)]


def _regroup(samples: list[Sample], groups: dict[str, str]) -> list[Sample]:
    """Tool group ids (fio's groupid, 'fsmark') become the study's group names."""
    return [Sample(s.metric, s.value, s.unit, s.direction, groups.get(s.group, s.group), s.job)
            for s in samples]


def fio_argv(job_path: str, json_path: str, readonly: bool) -> list[str]:
    argv = ["fio", "--output-format=json", f"--output={json_path}", job_path]
    if readonly:
        argv.insert(1, "--readonly")  # fio itself refuses any write (a command-line-only option)
    return argv


def run_fio(workload: dict, ctx: Context) -> Result:
    job = render_fio(workload, ctx)
    job_path = ctx.workdir / "job.fio"
    job_path.write_text(job)
    json_path = ctx.workdir / "fio.json"
    argv = fio_argv(str(job_path), str(json_path), bool(workload["fio"].get("readonly")))
    rc, stdout, stderr, wall, user, sys_ = _timed(argv, ctx.workdir)
    res = Result(wall_s=wall, tool_s=wall)
    res.artifacts["job.fio"] = job.encode()
    raw = json_path.read_bytes() if json_path.exists() else b""
    res.artifacts["fio.json"] = raw
    if stderr.strip():
        res.artifacts["fio.stderr"] = stderr.encode()
    try:
        parsed = parse_text(raw.decode("utf-8", "replace"), "fio-json", path=str(json_path))
    except ParseError as e:
        # Both: the parser's reason, and what fio said on stderr when it said anything.
        said = stderr.strip()[-400:]
        res.error = f"fio exited {rc}: output unreadable: {e}" + (f"; stderr: {said}" if said else "")
        return res
    res.samples = _regroup(parsed.samples, workload["groups"])
    res.failures = [f.to_dict() for f in parsed.failures]
    if rc or parsed.failures:
        msgs = "; ".join(f"job {f.job}: error {f.error} {f.message}".strip() for f in parsed.failures)
        res.error = f"fio exited {rc}: {msgs or stderr.strip()[-400:]}"
    # Groups' wall and CPU of the whole fio run, for overhead and sys-time studies.
    res.samples += _cpu_samples("run", wall, user, sys_)
    return res


def run_fs_mark(workload: dict, ctx: Context) -> Result:
    argv = fs_mark_argv(workload, ctx)
    # Its thread logs (fs_log.txt.*) land in the cwd: beside the mount, not on it.
    rc, stdout, stderr, wall, user, sys_ = _timed(argv, ctx.mountpoint.parent)
    res = Result(wall_s=wall, tool_s=wall)
    res.artifacts["fs_mark.txt"] = (stdout + ("\n" + stderr if stderr else "")).encode()
    res.artifacts["command"] = (" ".join(argv) + "\n").encode()
    if rc:
        res.error = f"fs_mark exited {rc}: {(stderr or stdout).strip()[-400:]}"
        return res
    try:
        parsed = parse_text(stdout, "fsmark", path="fs_mark.txt")
    except ParseError as e:
        res.error = f"fs_mark output unreadable: {e}"
        return res
    res.samples = _regroup(parsed.samples, workload["groups"])
    res.samples += _cpu_samples(workload["groups"].get("fsmark", "fsmark"), wall, user, sys_)
    return res


def touch_argv(script: dict) -> list[str]:
    """The seed's `xargs -P 16 -n 1 touch`, in batches of 64 names per touch:
    the same parallel creates without 650,000 process starts."""
    return ["xargs", "-P", str(script["workers"]), "-n", "64", "touch"]


@contextlib.contextmanager
def _timing(functions: dict[str, str], group: str, res: Result, log: dict):
    """The kernel functions the study times during the final sync
    (workload.script.time_functions: metric -> function), one sample each of
    their calls' total, from ftrace's function graph tracer. A kernel that
    cannot trace them leaves the metrics out and says why in script.json (the
    claim is then judged on what contains them: the study's judged_on)."""
    names, timed = sorted(set(functions.values())), None
    with contextlib.ExitStack() as stack:
        if names:
            try:
                timed = stack.enter_context(ftrace.function_times(names, ftrace.TRACEFS))
            except ftrace.TraceError as e:
                log["time_functions"] = {"error": str(e)}
        yield
    if timed is None:
        return
    log["time_functions"] = {fn: {"calls": len(timed.ms[fn]), "ms": sum(timed.ms[fn])} for fn in names}
    res.artifacts["function-graph.txt"] = timed.trace.encode()
    for metric, fn in functions.items():
        if timed.ms[fn]:
            res.samples.append(Sample.of(metric, sum(timed.ms[fn]), group))


def run_script(workload: dict, ctx: Context, drop_caches) -> Result:
    """The f2fs checkpoint workload (seed 002): create, sync, sparse delete,
    drop caches, then time the sync that writes the checkpoint."""
    sc = workload["script"]
    group = next(iter(workload["groups"].values()))
    d = ctx.mountpoint / "files"
    d.mkdir()
    log: dict = {"steps": []}
    res = Result()
    t_start = time.monotonic()

    def step(name: str, argv: list[str] | None = None, fn=None, **kw) -> float:
        t0 = time.monotonic()
        if argv:
            out = run_tool(argv, **kw)
            if out.returncode:
                raise RuntimeError(f"{name}: {' '.join(argv[:3])}... exited {out.returncode}: "
                                   f"{out.stderr.strip()[-300:]}")
        else:
            fn()
        ms = (time.monotonic() - t0) * 1000
        log["steps"].append({"step": name, "ms": ms})
        return ms

    names = "\n".join(str(i) for i in range(1, sc["create_files"] + 1)) + "\n"
    try:
        t = step("create", touch_argv(sc), input=names, cwd=d)
        res.samples.append(Sample.of("step.time_ms", t, group, "create"))
        res.samples.append(Sample.of("step.time_ms", step("sync", ["sync", "-f", str(d)]), group, "sync"))

        def delete():
            for i in range(sc["delete_every"], sc["create_files"] + 1, sc["delete_every"]):
                os.unlink(d / str(i))
        res.samples.append(Sample.of("step.time_ms", step("delete", fn=delete), group, "delete"))
        step("drop_caches", fn=drop_caches)
        with _timing(sc.get("time_functions", {}), group, res, log):
            final = step("final_sync", ["sync", "-f", str(d)])
        res.samples.append(Sample.of("sync.time_ms", final, group))
    except (RuntimeError, OSError) as e:
        res.error = str(e)
    res.wall_s = res.tool_s = time.monotonic() - t_start
    res.artifacts["script.json"] = (json.dumps(log, indent=1) + "\n").encode()
    return res
