"""The suite's xdist groups hold: the local target's tests run one after another
on one worker (tests/conftest.py). Stop 56's CI ran them on both workers at once
without a word, because pytest 9.2 had stopped pytest-xdist's loadgroup from
grouping at all, and LKP's harness tests took each other's /dev/lkp-* and
/fs/lkp-* paths."""
import re
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).parent


def _workers_by_test(tmp_path: Path, args: list[str]) -> dict[str, str]:
    r = subprocess.run([sys.executable, "-m", "pytest", "-n", "2", "--dist", "loadgroup", "-v",
                        "-p", "no:cacheprovider", *args], cwd=tmp_path, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    found = dict((m[2], m[1]) for m in re.finditer(r"^\[(gw\d+)\] .*PASSED (\S+)", r.stdout, re.M))
    assert found, r.stdout
    return found


def test_tests_of_one_xdist_group_run_on_one_worker(tmp_path):
    for name in ("a", "b"):
        (tmp_path / f"test_{name}.py").write_text(
            "import time, pytest\n"
            "@pytest.mark.xdist_group('local')\n"
            "@pytest.mark.parametrize('i', range(4))\n"
            "def test_x(i):\n    time.sleep(0.1)\n")
    workers = _workers_by_test(tmp_path, ["test_a.py", "test_b.py"])
    assert len(workers) == 8 and all(test.endswith("@local") for test in workers), workers
    assert len(set(workers.values())) == 1, f"one group ran on several workers: {workers}"


def test_the_suites_conftest_puts_a_local_target_file_in_its_group(tmp_path):
    """The conftest's own grouping, on a copy of it beside two files the
    suite would treat as the local target's (lab/) and as a group of their own."""
    (tmp_path / "conftest.py").write_text((TESTS / "conftest.py").read_text())
    for folder in ("lab", "other"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / f"test_{folder}.py").write_text(
            "import pytest\n@pytest.mark.parametrize('i', range(4))\ndef test_x(i):\n    pass\n")
    workers = _workers_by_test(tmp_path, ["lab", "other"])
    lab = {test: worker for test, worker in workers.items() if test.startswith("lab/")}
    assert len(lab) == 4 and all(test.endswith("@local-target") for test in lab), workers
    assert len(set(lab.values())) == 1, f"the local target's tests ran on several workers: {lab}"
