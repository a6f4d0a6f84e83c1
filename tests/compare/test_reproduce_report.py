"""`iowatch compare`'s text report on the e2e check's real bundles
(tests/fixtures/e2e-check, made in the virtual lab): the confounders leave out
the boot parameters the virtual lab sets per run (virtme.exec, the guest's
mount of the run's directory), and "reproduce" prints what a person types
from a clean clone (iowatch.reproduce), not the guest-internal commands."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from iowatch import bundle

ROOT = Path(__file__).resolve().parents[2]
CHECK = Path("tests") / "fixtures" / "e2e-check"  # relative: the report names the sides as given
IOWATCH = str(Path(sys.executable).parent / "iowatch")


def test_the_text_report_of_the_e2e_check_names_no_harness_parameter_nor_guest_path():
    base, candidate = (CHECK / f"guest-0{n}" / "bundle" for n in (1, 2))
    # The two guests' command lines do differ, in the harness's own parameters.
    lines = [bundle.load(ROOT / d)["kernel"]["cmdline"] for d in (base, candidate)]
    assert lines[0] != lines[1] and all("virtme.exec=" in line for line in lines)
    # One boot a side: the record of the host's noise between boots makes the
    # regression confirmable (tests/fixtures/e2e-boots/aabb, issue 41 item 1).
    out = subprocess.run([IOWATCH, "compare", str(base), str(candidate), "--history",
                          str(ROOT / "tests" / "fixtures" / "e2e-boots" / "aabb")],
                         capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert out.returncode == 1, out.stderr  # patch 2 regresses
    text = out.stdout
    confounders = text.split("confounders (")[1].split("reproduce:")[0]
    assert confounders.strip().endswith("none recorded"), confounders
    reproduce = text.split("reproduce:")[1]
    assert ("iowatch check --series kernels/series/e2e-slow-ext4-dio --base "
            "c12fff06dffbe5058f9675864f0297d66f5f06cd --matrix e2e --reps 5") in reproduce
    assert "iowatch run e2e --reps 5 --target HOST" in reproduce
    for leak in ("virtme", "/tmp/", "/work/", "--out", "--inventory", "--patch-subject"):
        assert leak not in text, leak


def test_a_lava_board_class_is_reproduced_with_one_lava_job_a_kernel_and_its_agents_nightly():
    from iowatch import reproduce
    good, bad = reproduce.End("6.12.117", "a" * 40), reproduce.End("6.12.117+", "b" * 40)
    where = dict(reproduce.commands(good, bad, matrix="e2e", host="lava-qemu", host_kind="lava",
                                    branch="iowatch-lab/next", reps=5))
    (place,) = [p for p in where if "LAVA board class lava-qemu" in p]
    assert where[place] == [f"iowatch lava submit lava-qemu e2e --reps 5 --commit {c * 40} --follow" for c in "ab"]
    assert where["the nightly that found it (the board class's agent)"] == [
        "iowatch agent --host lava-qemu --nightly iowatch-lab/next --source TREE --matrix e2e --reps 5"]
    # no `iowatch run --target` of a board class: its boards are LAVA's to boot
    assert not any("--target lava-qemu" in c for cmds in where.values() for c in cmds)
    # a bare-metal host keeps its own
    where = dict(reproduce.commands(good, bad, matrix="e2e", host="lab-a", host_kind="bare-metal"))
    assert where["on the lab host lab-a, booted into the good (base) kernel, then the bad (candidate) one"] == [
        "iowatch run e2e --target lab-a"]
