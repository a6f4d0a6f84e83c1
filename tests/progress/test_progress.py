"""Progress of the long commands (iowatch.progress): the lines a log gets from a
real `iowatch run` on the local target's loop devices, as they happen; the
same lines read back from a guest's console as the host's phases; the bars on
a terminal (rich, recorded); a kernel build's object count from real make
output and from a real make of a small kbuild-shaped tree."""
from __future__ import annotations

import gzip
import io
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

from iowatch import progress
from loop_devices import data_dir, detach_over, loops_over  # noqa: F401 (data_dir: a fixture)
from iowatch.kernel.build import BUILD_COUNTS, Plan, Variant, build_variant, is_object_step
from iowatch.kernel.series import Series
from iowatch.vlab import BOOT_MARKER

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).parent / "fixtures"
IOWATCH = str(Path(sys.executable).parent / "iowatch")
STAMP = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ"
STUDY = ROOT / "jobs/studies/ext4-dio-randread.yml"   # two cells (ext4, raw) on loop-ssd
# ... and the platform's canary, which every run measures beside them (issue 41 item 7):
# three cells, two repetitions each.
CELLS = ("ext4-dio-randread/loop-ssd/ext4", "ext4-dio-randread/loop-ssd/raw")

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="iowatch run needs root (losetup, mkfs, mount)")
needs_fio = pytest.mark.skipif(not shutil.which("fio"), reason="fio is not installed (scripts/setup.sh)")


@pytest.fixture(scope="module")
def run_lines(tmp_path_factory) -> list[str]:
    """stderr of a real `iowatch run` of two cells and the canary, two repetitions
    each, into a pipe."""
    if os.geteuid() != 0 or not shutil.which("fio"):
        pytest.skip("needs root and fio (a real run on loop devices)")
    tmp = tmp_path_factory.mktemp("run")
    env = {**os.environ, "IOWATCH_DATA_DIR": str(tmp / "data")}
    try:
        done = subprocess.run([IOWATCH, "run", str(STUDY), "--profile", "quick", "--target", "localhost",
                               "--inventory", str(ROOT / "hardware-inventory.yml"), "--reps", "2",
                               "--out", str(tmp / "bundle")], env=env, capture_output=True, text=True,
                              timeout=600)
    finally:
        detach_over(tmp / "data")
    assert done.returncode == 0, done.stderr
    return done.stderr.splitlines()


@pytest.mark.slow
def test_a_piped_run_prints_a_timestamped_line_per_phase_cell_and_repetition(run_lines):
    body = []
    for line in run_lines:
        m = re.fullmatch(rf"({STAMP}) run: (.*)", line)
        assert m, f"not a timestamped progress line: {line!r}"
        body.append(m.group(2))
    assert body[0] == "matrix: start (6 repetitions)"
    assert re.fullmatch(r"matrix: done in \d+ s", body[-1]), body[-1]
    for cell in CELLS:
        mine = [b for b in body if b.startswith(f"cell {cell}: ")]
        assert mine[0] == f"cell {cell}: start (repetitions 1..2)"
        assert mine[1:5:2] == [f"cell {cell}: repetition 1/2", f"cell {cell}: repetition 2/2"]
        for text, rep in ((mine[2], 1), (mine[4], 2)):
            assert re.fullmatch(rf"cell {re.escape(cell)}: repetition {rep}/2 passed in \d+ s", text), text
        assert re.fullmatch(rf"cell {re.escape(cell)}: done in \d+ s", mine[5]), mine[5]
        assert len(mine) == 6
    # A cell ends before the next starts: the log reads in the order things happened.
    starts = [i for i, b in enumerate(body) if b.endswith("start (repetitions 1..2)")]
    ends = [i for i, b in enumerate(body) if b.startswith("cell ") and ": done in " in b]
    assert starts[0] < ends[0] < starts[1] < ends[1]


@pytest.mark.slow
@needs_root
@needs_fio
def test_the_lines_come_as_it_runs_and_a_stopped_run_says_where(tmp_path, data_dir):
    """Flushed at once: the first repetition's line is read while iowatch still
    runs; SIGTERM then leaves the cell and the matrix marked stopped."""
    proc = subprocess.Popen([IOWATCH, "run", str(STUDY), "--profile", "quick", "--target", "localhost",
                             "--inventory", str(ROOT / "hardware-inventory.yml"), "--reps", "3",
                             "--out", str(tmp_path / "bundle")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seen = []
    try:
        for line in proc.stderr:
            seen.append(line.rstrip("\n"))
            if "repetition 1/3 passed in" in line:
                assert proc.poll() is None, "the line came only after iowatch exited"
                proc.send_signal(signal.SIGTERM)
                break
        _, rest = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    seen += rest.splitlines()
    assert proc.returncode == 130, seen
    assert any(re.fullmatch(rf"{STAMP} run: cell {re.escape(CELLS[0])}: stopped in \d+ s", x) for x in seen), seen
    assert any(re.fullmatch(rf"{STAMP} run: matrix: stopped in \d+ s", x) for x in seen), seen
    assert not loops_over(data_dir)


@pytest.mark.slow
def test_a_guests_console_becomes_the_hosts_boot_and_matrix_phases(run_lines):
    """The check relays what the guest's `iowatch run --no-progress` prints: here
    the real run's lines inside a console with kernel messages around them."""
    out = io.StringIO()
    console = ["[    0.000000] Linux version 6.12.0 (gcc) #1 SMP", "[    1.2] virtme-ng-init: mounting",
               f"{BOOT_MARKER}\r"] + [f"{x}\r" for x in run_lines] + ["[   99.0] reboot: Power down"]
    with progress.Progress("check", progress.LINES, stream=out) as display:
        with display.guest("variant 1") as relay:
            for line in console:
                relay.line(line)
    body = [re.fullmatch(rf"{STAMP} check: (.*)", x).group(1) for x in out.getvalue().splitlines()]
    assert body[0] == "variant 1: boot: start"
    assert re.fullmatch(r"variant 1: boot: booted in \d+ s", body[1]), body[1]
    assert body[2] == "variant 1: matrix: start (6 repetitions)"
    for cell in CELLS:
        assert f"variant 1: cell {cell}: start (repetitions 1..2)" in body
        assert sum(bool(re.fullmatch(rf"variant 1: cell {re.escape(cell)}: repetition \d/2 passed in \d+ s", b))
                   for b in body) == 2
    assert re.fullmatch(r"variant 1: matrix: done in \d+ s", body[-1]), body[-1]


def test_a_guest_that_panics_ends_its_boot_phase_so():
    out = io.StringIO()
    with progress.Progress("check", progress.LINES, stream=out) as display:
        with display.guest("variant 2") as relay:
            relay.line("[    2.5] Kernel panic - not syncing: VFS: Unable to mount root fs")
    assert re.search(r"check: variant 2: boot: panicked in \d+ s \(.*Kernel panic - not syncing",
                     out.getvalue()), out.getvalue()


def test_on_a_terminal_the_phases_are_bars():
    """rich with a forced terminal, recorded: bars drawn while it runs, one line per finished phase."""
    buf = io.StringIO()
    term = Console(file=buf, force_terminal=True, width=120, record=True, color_system="standard")
    with progress.Progress("run", progress.LIVE, console=term) as display:
        display.on_start(4)
        for cell in CELLS:
            for rep in (1, 2):
                display.on_rep(cell, rep, 2)
                display.on_done(cell, rep, "passed")
        with display.phase("build variant 1", total=3, each=False) as build:
            for obj in ("fs/a.o", "fs/b.o", "vmlinux"):
                build.advance(1, obj)
    drawn = buf.getvalue()
    assert "\x1b[" in drawn and "━" in drawn, "no bar drawn"
    text = term.export_text()
    for cell in CELLS:
        assert re.search(rf"cell {re.escape(cell)}: done in \d+ s", text), text
    assert re.search(r"matrix: done in \d+ s", text) and re.search(r"build variant 1: done in \d+ s", text)
    assert not re.search(STAMP, text), "timestamps are for logs, not for the terminal"


def test_the_modes_the_options_and_the_stream_ask_for():
    class Tty(io.StringIO):
        def isatty(self):
            return True
    assert progress.mode_for(stream=Tty()) == progress.LIVE
    assert progress.mode_for(stream=io.StringIO()) == progress.LINES
    assert progress.mode_for(no_progress=True, stream=Tty()) == progress.LINES
    assert progress.mode_for(quiet=True, stream=io.StringIO()) == progress.QUIET
    out = io.StringIO()
    with progress.Progress("run", progress.QUIET, stream=out) as display:
        display.on_start(1)
        display.on_rep("a/b/c", 1, 1)
        display.on_done("a/b/c", 1, "passed")
    assert out.getvalue() == ""
    with pytest.raises(ValueError, match="progress mode 'loud'"):
        progress.Progress("run", "loud")


def test_a_phase_of_many_steps_gets_a_line_a_minute_with_the_time_left(monkeypatch):
    monkeypatch.setattr(progress, "HEARTBEAT_S", 0.0)  # every step is a minute later
    out = io.StringIO()
    with progress.Progress("kernel build", progress.LINES, stream=out) as display:
        with display.phase("build variant 0", total=4, each=False) as build:
            for obj in ("fs/a.o", "fs/b.o"):
                build.advance(1, obj)
    body = [re.fullmatch(rf"{STAMP} kernel build: (.*)", x).group(1) for x in out.getvalue().splitlines()]
    assert re.fullmatch(r"build variant 0: 1/4, \d+ s so far, about \d+ s left", body[1]), body
    assert re.fullmatch(r"build variant 0: 2/4, \d+ s so far, about \d+ s left", body[2]), body
    assert not any("fs/a.o" in b for b in body), "no line per object"


# -- the kernel build's object count


def test_the_object_steps_of_real_make_output():
    """tests/progress/fixtures/README.md says how make-bzImage.log.gz was made."""
    lines = gzip.open(FIXTURES / "make-bzImage.log.gz", "rt").read().splitlines()
    counted = [x for x in lines if is_object_step(x)]
    # Read another way: the step word kbuild puts in the first column.
    words = {"CC", "AS", "LD", "AR", "HOSTCC", "HOSTCXX", "HOSTLD"}
    expected = [x for x in lines if x.startswith("  ") and x.split()[:1] and x.split()[0] in words]
    assert counted == expected and len(counted) > 500
    others = {x.split()[0] for x in lines if x.startswith("  ") and x.split() and x not in counted}
    assert {"GEN", "WRAP"} <= others, others  # generated headers are not objects
    assert not any(is_object_step(x) for x in lines if x.startswith(("make", "$ ", "#")))


KBUILD_MAKEFILE = """\
# A tree shaped like the kernel's top for `make -C SRC O=BUILD olddefconfig bzImage`,
# printing kbuild's quiet steps for what it really compiles.
OBJS := fs/a.o fs/b.o fs/c.o
olddefconfig:
\t@echo "  GEN     Makefile"
bzImage: $(addprefix $(O)/,$(OBJS))
\t@echo "  LD      vmlinux"
\t@$(CC) -r -o $(O)/vmlinux $^ -nostdlib
\t@mkdir -p $(O)/arch/x86/boot && cp $(O)/vmlinux $(O)/arch/x86/boot/bzImage
$(O)/%.o: %.c
\t@mkdir -p $(dir $@)
\t@echo "  CC      $*.o"
\t@$(CC) -c -o $@ $<
kernelrelease:
\t@echo 6.12.0-test
"""


def test_a_build_counts_its_objects_and_the_next_one_starts_from_that_count(tmp_path, monkeypatch):
    monkeypatch.setenv("IOWATCH_DATA_DIR", str(tmp_path / "data"))
    tree = tmp_path / "linux"
    (tree / "fs").mkdir(parents=True)
    (tree / "Makefile").write_text(KBUILD_MAKEFILE)
    for name in "abc":
        (tree / "fs" / f"{name}.c").write_text(f"int {name}(void) {{ return 1; }}\n")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "init", "-q"], cwd=tree, check=True)
    subprocess.run(git + ["add", "-A"], cwd=tree, check=True)
    subprocess.run(git + ["commit", "-qm", "base"], cwd=tree, check=True)
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=tree, capture_output=True,
                            text=True, check=True).stdout.strip()
    build = tmp_path / "build"
    build.mkdir()
    (build / ".config").write_text("CONFIG_TEST=y\n")
    plan = Plan(tree, tree, build, Series("t", "base", ()), commit, [Variant(0, commit)])

    def built() -> list[str]:
        out = io.StringIO()
        with progress.Progress("kernel build", progress.LINES, stream=out):
            v = build_variant(plan, Variant(0, commit), jobs=1)
        assert v.status == "built", v.error
        return [re.fullmatch(rf"{STAMP} kernel build: (.*)", x).group(1) for x in out.getvalue().splitlines()]

    first = built()
    assert first[0] == "build variant 0: start (full; no earlier build of this tree and config to estimate from)"
    assert re.fullmatch(r"build variant 0: built in \d+ s \(4 objects\)", first[-1]), first
    for p in (build / "vmlinux", *(build / "fs").glob("*.o")):
        p.unlink()
    second = built()
    assert re.fullmatch(r"build variant 0: start \(full; last time 4 objects in \d+ s\)", second[0]), second
    assert (tmp_path / "data" / "kernel" / BUILD_COUNTS).is_file()
    third = built()  # vmlinux is there now: an incremental build, counted apart
    assert third[0].startswith("build variant 0: start (incremental; no earlier build")
    assert re.fullmatch(r"build variant 0: built in \d+ s \(1 object\)", third[-1]), third  # LD
