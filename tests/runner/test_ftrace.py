"""Timing a kernel function with ftrace's function graph tracer
(iowatch.ftrace), on this host's real tracefs; the kept seed 002 run's
traces are read in tests/kernel/test_reproduction_fixtures.py."""
from __future__ import annotations

import json
import os
import subprocess

import pytest

from iowatch import ftrace, workloads


@pytest.fixture
def tracefs(tmp_path):
    """This host's tracefs, mounted at a directory of the test's own and
    unmounted after it, whatever happens."""
    root = tmp_path / "tracing"
    root.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting tracefs needs root")
    try:
        ftrace.mounted(root)
    except ftrace.TraceError as e:
        pytest.skip(f"no tracefs on this host: {e}")
    try:
        yield root
    finally:
        subprocess.run(["umount", str(root)], check=False)


def test_the_hosts_tracefs_times_a_function_or_names_what_the_kernel_lacks(tracefs):
    """A kernel with the graph tracer times sync's one call of ksys_sync; one
    without it (this machine's) gets an error naming the kernel options, and
    the tracer is left as it was."""
    before = (tracefs / "current_tracer").read_text().strip()
    if ftrace.TRACER in (tracefs / "available_tracers").read_text().split():
        with ftrace.function_times(["ksys_sync"], tracefs) as timed:
            subprocess.run(["sync"], check=True)
        assert len(timed.ms["ksys_sync"]) == 1 and timed.ms["ksys_sync"][0] > 0
    else:
        with pytest.raises(ftrace.TraceError, match="CONFIG_FUNCTION_GRAPH_TRACER"):
            with ftrace.function_times(["ksys_sync"], tracefs):
                pytest.fail("the block ran without a tracer")
    assert (tracefs / "current_tracer").read_text().strip() == before


def test_a_tracefs_the_block_mounted_is_gone_after_it_and_one_it_found_stays(tmp_path):
    """`iowatch run` on a lab host leaves the host's mounts as it found them:
    a tracefs the block had to mount is unmounted when it ends (whether the
    kernel could trace or not), one already there is left mounted."""
    if os.geteuid() != 0:
        pytest.skip("mounting tracefs needs root")
    root = tmp_path / "tracing"
    root.mkdir()
    try:
        for already in (False, True):
            if already:
                ftrace.mounted(root)
            try:
                with ftrace.function_times(["ksys_sync"], root):
                    assert os.path.ismount(root)
            except ftrace.TraceError as e:
                if "could not be mounted" in str(e):
                    pytest.skip(f"no tracefs on this host: {e}")
            assert os.path.ismount(root) is already
    finally:
        subprocess.run(["umount", str(root)], capture_output=True, check=False)


def test_durations_of_every_width_and_marker():
    trace = ("# tracer: function_graph\n"
             " 0)   1.234 us    |  a_fn();\n"
             " 1) ! 158123.4 us |  a_fn();\n"
             " 1) $ 1581234 us  |  a_fn();\n"
             " 0)               |  a_fn() {\n"
             " 0)   2.000 us    |  other();\n"
             # a call that moved to another CPU: its duration on the closing line
             " 1) # 2803.946 us |  } /* a_fn */\n")
    assert ftrace.parse(trace, ["a_fn"]) == {"a_fn": [0.001234, 158.1234, 1581.234, 2.803946]}


def test_a_kernel_that_cannot_time_the_function_keeps_the_sync_and_says_why(tmp_path, monkeypatch):
    """The checkpoint script on this host (no function graph tracer, or no
    tracefs at all): the timed sync is still a sample, the flush is left out
    rather than made up, and script.json says why."""
    monkeypatch.setattr(ftrace, "TRACEFS", tmp_path / "tracing")
    (tmp_path / "tracing").mkdir()
    (tmp_path / "mnt").mkdir()
    workload = {"script": {"create_files": 50, "workers": 2, "delete_every": 7,
                           "time_functions": {"f2fs.nat_flush_ms": "f2fs_flush_nat_entries"}},
                "groups": {"0": "checkpoint"}}
    ctx = workloads.Context("/dev/null", tmp_path / "mnt", tmp_path)
    try:
        res = workloads.run_script(workload, ctx, drop_caches=lambda: None)
    finally:
        subprocess.run(["umount", str(tmp_path / "tracing")], capture_output=True, check=False)
    assert res.error is None
    assert {s.metric for s in res.samples} == {"step.time_ms", "sync.time_ms"}
    log = json.loads(res.artifacts["script.json"])
    assert "function_graph" in log["time_functions"]["error"] or "tracefs" in log["time_functions"]["error"]
    assert "function-graph.txt" not in res.artifacts
