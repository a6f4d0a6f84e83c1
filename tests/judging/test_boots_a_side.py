"""Each side's boots, counted and said (issue 41 item 1): a verdict knows how
many boots each side had, and the reports say "N boots a side"."""
from __future__ import annotations

import json
from pathlib import Path

from iowatch import bundle, resources
from iowatch.vocabulary import (DEFAULT_CAP as CAP, DEFAULT_MIN_EFFECT as MIN_EFFECT, FDR,
                                boots_words)
from iowatch.judging import compare_sides
from iowatch.report import render_json, render_markdown, render_text
from iowatch.side_data import Side, pool, run_boot
from iowatch.stats import CellInput, CellKey, compare_matrix
from iowatch.studies import load_studies

ROOT = Path(__file__).resolve().parents[2]
CHECK = ROOT / "tests" / "fixtures" / "e2e-check"


def _cell(base_boots, candidate_boots):
    return CellInput(CellKey("s", "h", "c", "d", "fs", "g", "m"), [100, 101, 99, 102, 98],
                     [90, 91, 89, 92, 88], "higher", MIN_EFFECT, base_boots=base_boots,
                     candidate_boots=candidate_boots)


def test_a_verdict_counts_the_boots_of_each_side():
    one, = compare_matrix([_cell(["a"] * 5, ["b"] * 5)], fdr=FDR, cap=CAP)
    assert one.boot_counts == (1, 1)
    mixed, = compare_matrix([_cell(["a", "a", "b", "b", "c"], None)], fdr=FDR, cap=CAP)
    assert mixed.boot_counts == (3, 5)  # no labels: each value a boot of its own


def test_the_words_say_n_boots_a_side_and_warn_of_one():
    assert boots_words((3, 3)) == "3 boots a side"
    assert boots_words((2, 5)).startswith("2 vs 5 boots a side")
    one = boots_words((1, 1))
    assert one.startswith("1 boot a side;") and "boot each kernel again" in one
    assert boots_words(None) is None


def test_runs_that_share_a_boot_id_are_one_boot():
    runs = [{"run_id": "r1", "environment": {"boot_id": "B"}},
            {"run_id": "r2", "environment": {"boot_id": "B"}},
            {"run_id": "r3", "environment": {}}, {"run_id": "r4"}]
    assert [run_boot(r, i) for i, r in enumerate(runs)] == ["B", "B", "r3", "r4"]


def test_two_bundles_of_one_boot_pool_as_one_boot():
    doc = bundle.load(CHECK / "guest-01" / "bundle")
    twice = [{**doc, "run_id": f"{doc['run_id']}-{k}",
              "environment": {**doc["environment"], "boot_id": "one-boot"}} for k in (1, 2)]
    boots = pool(Side("twice", "bundles", twice)).boots
    assert boots and all(set(labels) == {"one-boot"} for labels in boots.values())


def test_the_reports_of_two_bundles_say_one_boot_a_side():
    sides = [Side(str(d), str(d), [bundle.load(d)])
             for d in (CHECK / f"guest-0{n}" / "bundle" for n in (1, 2))]
    cmp = compare_sides(*sides, studies=load_studies(resources.studies_dir()))
    assert cmp.boots_a_side == (1, 1)
    assert "\nboots: 1 boot a side;" in render_text(cmp)
    assert "- boots: 1 boot a side;" in render_markdown(cmp)
    doc = json.loads(render_json(cmp))
    assert doc["boots_a_side"] == [1, 1] and all(c["boot_counts"] == [1, 1] for c in doc["cells"])
