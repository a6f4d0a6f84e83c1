"""The platform canary's cells (issue 24 item 2; issue 41 item 7): one a host on
tmpfs, and in every boot of every path: load_matrix puts the canary of the
studies directory in a matrix that lists none (studies.with_canaries), and
runner.boot_cells keeps it whichever cells (--cells) a boot was asked for.

Each path is held at the unit level: the matrix and the cells it hands the
runner (a guest's `iowatch run`, a lab host's, the runner itself) plan a
canary cell."""
from pathlib import Path

import pytest

from iowatch import inventory, resources
from iowatch.runner import boot_cells, plan
from iowatch.studies import load_matrix, load_studies

ROOT = Path(__file__).resolve().parents[2]
INVENTORY = ROOT / "hardware-inventory.yml"
CANARY = "canary-tmpfs-read"


def canaries(matrix, host: str, only: list[str] | None = None) -> list[str]:
    """The canary cells a boot of `host` runs for the matrix and the cells asked for."""
    cells = boot_cells(load_matrix(matrix), inventory.load(INVENTORY).host(host),
                       set(only) if only is not None else None)
    return [c.id for c in cells if c.study.canary]


def _run_argv(argv: list[str]) -> tuple[str, list[str] | None]:
    """The matrix and the --cells of an `iowatch run` command line."""
    matrix = argv[argv.index("run") + 1]
    cells = argv[argv.index("--cells") + 1].split(",") if "--cells" in argv else None
    return matrix, cells


def test_the_canary_is_one_cell_a_host_on_tmpfs_in_the_checks_matrices():
    inv = inventory.load(INVENTORY)
    for name in ("check-quick", "e2e"):
        matrix = load_matrix(ROOT / "jobs" / f"{name}.yml")
        for host, device in (("vlab", "vssd"), ("localhost", "loop-sdcard")):
            canary = [c.id for c in plan(matrix, inv.host(host)) if c.study.canary]
            # The host's first device of the study's classes is only its address.
            assert canary == [f"canary-tmpfs-read/{device}/tmpfs"], (name, host)


def test_run_measures_the_canary_with_a_matrix_or_a_study_that_does_not_list_it():
    """`iowatch run jobs/studies/X.yml` and `iowatch run smoke` (neither lists
    the canary), whole or with --cells."""
    studies = load_studies(resources.studies_dir())
    for slug, study in studies.items():
        if not study.canary:
            assert canaries(study.path, "localhost") == [f"{CANARY}/loop-sdcard/tmpfs"], slug
    assert CANARY not in (ROOT / "jobs" / "smoke.yml").read_text()
    assert canaries("smoke", "localhost") == [f"{CANARY}/loop-sdcard/tmpfs"]
    assert canaries("xfs-smallfile-writeback", "localhost",
                    ["xfs-smallfile-writeback/loop-ssd-raid0/xfs"]) == [f"{CANARY}/loop-sdcard/tmpfs"]


def test_a_checks_later_rounds_measure_the_canary_beside_the_unsure_cells(tmp_path):
    """The guest's `iowatch run` of a check's later round (run_variant's
    command): only the unsure cells are asked for, the canary comes too."""
    from iowatch.vlab import guest_run_command
    host = inventory.load(INVENTORY).host("vlab")
    study = resources.studies_dir() / "ext4-dio-randread.yml"
    argv = guest_run_command(str(study), host, INVENTORY, tmp_path / "bundle", profile="quick",
                             reps=2, kernel_commit=None, label=None,
                             cells=["ext4-dio-randread/vssd/ext4", "ext4-dio-randread/vssd/raw"])
    matrix, cells = _run_argv(argv)
    assert canaries(matrix, "vlab", cells) == [f"{CANARY}/vssd/tmpfs"]


@pytest.mark.parametrize("number", ["000", "001", "002", "003", "004"])
def test_reproduce_measures_the_canary_for_every_seed(number):
    """`iowatch reproduce SEED` checks the seed's series with its reproduce.yml's
    matrix, else the seed's study file, on its host (else vlab-mech): seeds
    000, 001, 002 and 004 listed no canary."""
    from iowatch.claims.seeds import find_seed
    seed = find_seed(number, load_studies(resources.studies_dir()))
    matrix = seed.matrix or str(seed.study.path)
    assert len(canaries(matrix, seed.host or "vlab-mech")) == 1, (number, matrix)


def test_a_bisects_measurements_measure_the_canary(tmp_path, monkeypatch):
    """guest_measure (the virtual lab's bisect) runs the matrix, or the cells
    judging wants of an end or a step: its guests' commands plan the canary."""
    from iowatch.bisect import search
    from iowatch.check import VariantRun
    from iowatch.kernel.build import Plan, Variant
    asked = []

    def run_variant(plan_, v, host, inventory_, matrix, out, **kw):
        asked.append((matrix, kw.get("cells")))
        return VariantRun(v, None, status="boot-failed")

    monkeypatch.setattr(search, "run_variant", run_variant)
    v = Variant(0, "0" * 40, None, status="built")
    host = inventory.load(INVENTORY).host("vlab")
    study = str(resources.studies_dir() / "ext4-dio-randread.yml")
    measure = search.guest_measure(Plan(ROOT, ROOT, ROOT, None, "0" * 40, [v]), host, INVENTORY,
                                   study, tmp_path, reps=2, per_boot=2)
    measure(0, 0, None)
    measure(0, 1, {"ext4-dio-randread/vssd/ext4": 3, "ext4-dio-randread/vssd/raw": 3})
    wanted = ["ext4-dio-randread/vssd/ext4", "ext4-dio-randread/vssd/raw"]
    assert [cells for _, cells in asked] == [None, None, wanted, wanted]  # boots of 1+1, then 2+1
    for matrix, cells in asked:
        assert canaries(matrix, "vlab", cells) == [f"{CANARY}/vssd/tmpfs"]


def test_a_nightly_measures_the_canary():
    """`iowatch nightly --matrix M` runs the whole matrix (a Runner on a lab
    host, a guest's `iowatch run` in the virtual lab): with smoke, which does
    not list it, too."""
    assert canaries("smoke", "localhost") == [f"{CANARY}/loop-sdcard/tmpfs"]
    assert canaries("smoke", "vlab") == [f"{CANARY}/vssd/tmpfs"]


def test_the_agents_jobs_measure_the_canary_beside_the_cells_they_name():
    """A confirmation runs the regressed cells, a bisect job the followed cell
    (with its ratio partner) on the lab host; the host's `iowatch run` plans
    the canary beside them, whatever matrix the job names."""
    from iowatch.agent.bisect import cells_of
    from iowatch.agent.confirm import cell_ids
    devices = {"ssd": ["loop-ssd"], "hdd": ["loop-hdd"]}
    confirm = cell_ids([{"study": "odirect-vs-readers", "device_class": "hdd",
                         "filesystem": "ext4"}], devices)
    followed = cells_of({"study": "ext4-dio-randread", "device_class": "ssd",
                         "filesystem": "ext4", "metric": "ratio.fs_to_raw"}, devices)
    assert followed == ["ext4-dio-randread/loop-ssd/ext4", "ext4-dio-randread/loop-ssd/raw"]
    for matrix in ("smoke", "odirect-vs-readers", "ext4-dio-randread"):
        for cells in (confirm, followed):
            assert canaries(matrix, "localhost", cells) == [f"{CANARY}/loop-sdcard/tmpfs"]
