"""bench/accuracy's boots (issue 41 item 5): a recorded boot is drawn whole, every
cell of one copy of the recorded matrix from the same boot; a boot-wide offset
moves every cell of a boot together; a side of one boot stays one boot however
it grows. simulate.SideBoots is what every path's draws go through."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench" / "accuracy"))

import simulate  # noqa: E402

BOOTS = 6


def _collection(tmp_path: Path) -> Path:
    """A collect_vlab.py-shaped A/A collection: boot b's repetitions of the ssd
    cell are near 1000 (b + 1) and of the hdd writer near 10 (b + 1), so a
    value tells the boot it came from; the canary is not a deciding cell."""
    rng = np.random.default_rng(0)
    cells = []
    for study, device, fs, group, metric, scale in (
            ("ext4-dio-randread", "vssd", "raw", "randread", "read.iops", 1000.0),
            ("odirect-vs-readers", "vhdd", "ext4", "writer", "write.bw_kib_s", 10.0),
            ("canary-tmpfs-read", "vssd", "tmpfs", "canary", "read.bw_kib_s", 5.0)):
        boots = [b for b in range(BOOTS) for _ in range(3)]
        values = [scale * (b + 1) * (1 + 0.01 * rng.standard_normal()) for b in boots]
        cells.append({"study": study, "device": device, "filesystem": fs, "group": group,
                      "metric": metric, "direction": "higher", "samples": {"aa": values},
                      "boot_of_samples": {"aa": boots}})
    path = tmp_path / "boots.json"
    path.write_text(json.dumps({"cells": cells}))
    return path


def _boot_of(value: float, scale: float) -> int:
    return round(value / scale) - 1


def test_a_recorded_boot_is_drawn_whole(tmp_path):
    cells = simulate.load_boots(_collection(tmp_path))
    assert [c.name.split("/")[0] for c in cells] == ["ext4-dio-randread", "odirect-vs-readers"]
    ssd, hdd = cells
    assert len(ssd.by_boot) == BOOTS and all(len(b) == 3 for b in ssd.by_boot)
    matrix = [ssd, hdd, ssd, hdd]  # two copies of the recorded matrix
    d = simulate.Draw(matrix, [c.aa for c in matrix], [c.aa for c in matrix], None)
    machine = simulate.SideBoots(simulate.Boots(0.0, 1), np.random.default_rng(1), d.cells)
    assert machine.clustered and machine.copy == [0, 0, 1, 1]
    pairs, copies, first = set(), set(), {}
    for key in range(40):
        seen = [{_boot_of(v, s) for v in machine.values(i, d.base_pool[i], 5, key)}
                for i, s in enumerate((1000, 10, 1000, 10))]
        assert all(len(b) == 1 for b in seen)  # a boot's repetitions, all of one boot
        assert seen[0] == seen[1] and seen[2] == seen[3]  # every cell of a copy, the same boot
        pairs.add((min(seen[0]), min(seen[2])))
        copies.add(min(seen[0]))
        first.setdefault(key, min(seen[0]))
    assert len(copies) > 1 and any(a != b for a, b in pairs)  # copies and keys draw other boots
    # The same key is the same boot, however often it is asked for.
    assert {_boot_of(v, 1000) for v in machine.values(0, d.base_pool[0], 3, 7)} == {first[7]}


def test_a_slowed_pool_scales_the_recorded_boot(tmp_path):
    ssd = simulate.exact_slowdowns(simulate.load_boots(_collection(tmp_path)))[0]
    assert isinstance(ssd, simulate.RecordedCell) and ssd.by_boot
    d = simulate.Draw([ssd], [ssd.aa], [ssd.slowed["slow20"]], 0)
    base = simulate.SideBoots(simulate.Boots(0.0, 1), np.random.default_rng(2), d.cells)
    cand = simulate.SideBoots(simulate.Boots(0.0, 1), np.random.default_rng(2), d.cells)
    b, c = base.values(0, d.base_pool[0], 4, 0), cand.values(0, d.cand_pool[0], 4, 0)
    assert np.allclose(c, 0.8 * b)


def test_a_recorded_boots_repetitions_keep_their_spread():
    """Drawn with replacement from 3 repetitions, a boot's values would have 2/3
    of their variance; widened by sqrt(3/2) they keep it."""
    cell = simulate.RecordedCell("c", "higher", np.ones(3), {}, {},
                                 by_boot=[np.exp(np.array([-0.1, 0.0, 0.1]))])
    logs = np.log(cell.draw_boot(0, 60_000, np.random.default_rng(3)))
    assert abs(logs.mean()) < 0.002
    assert abs(logs.var() - 0.01) < 0.0005  # the 3 repetitions' variance (ddof=1): 0.01


def test_a_boot_wide_offset_moves_every_cell_of_a_boot_together():
    model = simulate.lognormal_cells(0.10)[:2]
    d = simulate.Draw(model, [c.aa for c in model], [c.aa for c in model], None)

    def correlation(boots: simulate.Boots) -> float:
        machine = simulate.SideBoots(boots, np.random.default_rng(4), d.cells)
        means = [[np.log(machine.values(i, d.base_pool[i], 20, key)).mean() for i in range(2)]
                 for key in range(300)]
        return float(np.corrcoef(np.asarray(means).T)[0, 1])

    assert correlation(simulate.Boots(0.0, 1, wide=0.8)) > 0.7
    assert abs(correlation(simulate.Boots(0.8, 1))) < 0.2  # offsets of each cell's own


def test_a_side_of_one_boot_stays_one_boot_as_it_grows():
    pool = simulate.lognormal_cells(0.10)[0].aa
    side = simulate.SideDraw(pool, simulate.Boots(0.25, None), np.random.default_rng(5), "c")
    side.grow(5)
    side.grow(3, 1)
    side.grow(4, 2)
    assert len(side) == 12 and set(side.labels) == {"c0"}
    many = simulate.SideDraw(pool, simulate.Boots(0.25, 2), np.random.default_rng(5), "c")
    many.grow(6)
    assert len(set(many.labels)) == 3
