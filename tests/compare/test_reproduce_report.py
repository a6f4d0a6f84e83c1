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
