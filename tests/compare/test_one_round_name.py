"""A check's round travels under one name (issue 43 item 5): check_round, as
a check's bundle records it ({"check": its id, "round": k}) and as
iowatch.side_data.in_round marks a manifest for the rounds of one caller's
sides (the check's variants, a bisect's steps). It travelled as "round" too,
set on a manifest by iowatch.check and the bisect; run_round still reads that
old key, and no module of the runner or the web app writes it."""
from __future__ import annotations

import ast
from pathlib import Path

from iowatch.side_data import CheckRound, in_round, run_round

ROOT = Path(__file__).resolve().parents[2]


def round_keys_written(tree: ast.AST) -> list[int]:
    """Lines that put a "round" key on a manifest: {**run, "round": k} or run["round"] = k."""
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict) and None in node.keys and any(
                isinstance(k, ast.Constant) and k.value == "round" for k in node.keys):
            lines.append(node.lineno)
        elif isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Subscript) and isinstance(t.slice, ast.Constant)
                and t.slice.value == "round" for t in node.targets):
            lines.append(node.lineno)
    return lines


def test_no_module_marks_a_round_under_a_second_name():
    found = {str(path.relative_to(ROOT)): lines
             for top in (ROOT / "src" / "iowatch", ROOT / "webapp" / "iowatch_web")
             for path in sorted(top.rglob("*.py")) if "migrations" not in path.parts
             for lines in [round_keys_written(ast.parse(path.read_text()))] if lines}
    assert found == {}


def test_the_walk_would_see_a_round_under_a_second_name():
    tree = ast.parse('runs = [{**bundle.load(p), "round": k} for p in paths]\n'
                     'run["round"] = 3\n'
                     'doc["check_round"] = {"check": check_id, "round": 3}\n')
    assert sorted(round_keys_written(tree)) == [1, 2]


def test_a_round_reads_the_same_under_the_one_name_and_the_old_key():
    assert run_round(in_round({"run_id": "a"}, 3)) == 3 == run_round({"round": 3})
    assert run_round(in_round({"run_id": "a"}, None)) is None
    stored = {"check_round": {"check": "ab" * 16, "round": 2}}
    assert run_round(stored) == CheckRound("ab" * 16, 2)
    # A caller's mark stands for the run's round over the one its bundle recorded.
    assert run_round(in_round(stored, 5)) == 5
