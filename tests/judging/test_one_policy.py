"""No verdict path bypasses iowatch.judging (issues 27 and 43).

The policy owns the decision, and the vocabulary below it
(iowatch.vocabulary) its words. Outside iowatch.judging and the statistics
it calls (iowatch.stats), no module of the runner or the web app imports the
family test (compare_matrix), the change-point selection (candidates) or the
bisect's culprit model (the oracle). Outside the vocabulary's outcomes no
module maps the outcomes in a literal table: a dict keyed by two outcome
words or more, or a sequence of two or more of them (the walk sees literal
tables; a lone word compared in a page, such as `state == "regression"`,
passes). Outside judging and the vocabulary no module names an outcome's or
a claim's word (the statistics too: they read the vocabulary's), or defines
a rule judging holds (the claim judge, the steps that open a regression, the
worst-cell order, the side rule's exclusions). No page decides a stored
comparison again from its rows (its state, failed cells and columns are the
verdict worker's, stored); and outside judging and the statistics nobody
works out the repetitions or rounds wanted next (looks, more_runs). The walk
reads the source, so a new module is covered the day it is written.
"""
from __future__ import annotations

import ast
from pathlib import Path

from iowatch.judging import claims
from iowatch.vocabulary.outcomes import Outcome

ROOT = Path(__file__).resolve().parents[2]
SOURCES = [ROOT / "src" / "iowatch", ROOT / "webapp" / "iowatch_web"]
POLICY = ("iowatch.judging", "iowatch.stats")
# Where the words are written: the policy and its vocabulary (not the statistics).
WORDED = ("iowatch.judging", "iowatch.vocabulary")
# What decides: the family test (one cell's compare too), the change-point
# selection (candidates; confirm_family, its name before) and the bisect's oracle.
GUARDED = {"compare", "compare_matrix", "candidates", "change_points", "confirm_family",
           "oracle", "culprit"}
WORDS = {o.word for o in Outcome} | {o.state for o in Outcome if o.state}


def modules():
    for top in SOURCES:
        for path in sorted(top.rglob("*.py")):
            if "migrations" in path.parts:
                continue
            dotted = ".".join(path.relative_to(top.parent).with_suffix("").parts)
            yield dotted.removesuffix(".__init__"), path, ast.parse(path.read_text(), str(path))


def inside(module: str, packages) -> bool:
    return any(module == p or module.startswith(p + ".") for p in packages)


def guarded_imports(tree: ast.AST) -> list[str]:
    """The deciding names a module takes from iowatch.stats, however it imports them."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("iowatch.stats"):
            found += sorted({a.name for a in node.names} & GUARDED)
            found += ["oracle"] if node.module == "iowatch.stats.oracle" else []
        elif isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name.startswith("iowatch.stats.oracle")]
        elif isinstance(node, ast.Attribute) and node.attr in GUARDED and \
                isinstance(node.value, ast.Name) and node.value.id == "stats":
            found.append(node.attr)
    return found


def word(node: ast.AST) -> str | None:
    return node.value if isinstance(node, ast.Constant) and node.value in WORDS else None


def outcome_tables(tree: ast.AST) -> list[int]:
    """Lines of dicts keyed by two outcome words or more, and of sequences of
    two or more: a mapping, a group or a ranking of the outcomes."""
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict) and sum(1 for k in node.keys if k is not None and word(k)) >= 2:
            lines.append(node.lineno)
        elif isinstance(node, (ast.Tuple, ast.List, ast.Set)) and \
                sum(1 for e in node.elts if word(e)) >= 2:
            lines.append(node.lineno)
    return lines


def test_the_walk_sees_the_policy_and_the_pages():
    names = {m for m, _, _ in modules()}
    assert {"iowatch.judging.policy", "iowatch.vocabulary.outcomes", "iowatch.stats.verdict",
            "iowatch_web.dashboard.attention", "iowatch_web.regressions.verdicts"} <= names


def test_no_module_outside_the_policy_imports_its_statistics():
    bypass = {m: found for m, _, tree in modules() if not inside(m, POLICY)
              for found in [guarded_imports(tree)] if found}
    assert bypass == {}


def test_no_module_outside_the_vocabulary_maps_an_outcome_word():
    tables = {m: lines for m, _, tree in modules() if not inside(m, ("iowatch.vocabulary",))
              for lines in [outcome_tables(tree)] if lines}
    assert tables == {}


def test_the_walk_would_see_a_bypass():
    tree = ast.parse('from iowatch.stats import compare_matrix\n'
                     'from iowatch.stats import oracle\n'
                     'LABELS = {"regression": "REGRESSION", "no-change": "fine"}\n'
                     'ORDER = ("regression", "suspected", "inconclusive", "no-change")\n'
                     'from iowatch.stats.oracle import culprit\n'
                     'found = stats.candidates(histories)\n'
                     'rerun = state in ("suspected", "unsure")\n'
                     'alone = state == "regression"\n')
    assert guarded_imports(tree) == ["compare_matrix", "oracle", "culprit", "oracle", "candidates"]
    assert outcome_tables(tree) == [3, 4, 7]


# A comparison's decision from its cells: what judging decides once and the
# verdict worker stores (StoredComparison.state, .failed_cells, .regressed,
# .column_states). A page that calls these on stored rows, or joins a
# comparison's runs to their cells to find the failed ones (the overview's
# SQL did, and counted a cell skipped on both sides as failed), decides again.
DECISION_RULES = {"state_of", "column_states", "decision_of", "failed_cells", "cell_passed"}
# Where the rules may be imported: the policy, and side_data where cell_passed is.
DECIDERS = ("iowatch.judging", "iowatch.side_data")
# The ORM lookups from a comparison's runs to their cells (or from cells back).
STORED_SIDE_LOOKUPS = ("of_comparisons__", "run__base_of_comparisons",
                       "run__candidate_of_comparisons", "base_runs__cells", "candidate_runs__cells")
VERDICT_WORKER = "iowatch_web.regressions.verdicts"


def decided_again(tree: ast.AST) -> list[str]:
    """The decision rules a module imports or calls, and the lookups it writes
    from a comparison's runs to their cells."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(DECIDERS):
            found += sorted({a.name for a in node.names} & DECISION_RULES)
        elif isinstance(node, ast.Attribute) and node.attr in DECISION_RULES and \
                isinstance(node.value, ast.Name) and node.value.id in ("judging", "policy"):
            found.append(node.attr)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and \
                any(lookup in node.value for lookup in STORED_SIDE_LOOKUPS):
            found.append(node.value)
    return found


def test_no_page_decides_a_stored_comparison_again():
    again = {m: found for m, _, tree in modules()
             if not inside(m, DECIDERS) and m != VERDICT_WORKER
             for found in [decided_again(tree)] if found}
    assert again == {}


def test_the_walk_would_see_a_decision_made_again():
    tree = ast.parse("from iowatch.judging import state_of as judging_state_of\n"
                     "from iowatch.judging.policy import failed_cells, Comparison\n"
                     "state = judging.state_of(outcomes)\n"
                     "rows = Cell.objects.filter(**{f'{runs}__in': ids})\n"
                     "for side, runs in (('base', 'run__base_of_comparisons'),):\n    pass\n")
    assert decided_again(tree) == ["state_of", "failed_cells", "state_of",
                                   "run__base_of_comparisons"]


# A loop that measures until the policy is sure judges and measures in its
# body: those loops are iowatch.judging.adaptive's one `adapt`, never a path's
# own `while` or `for` (the check's rounds, run --against's looks, the
# bisect's ends and steps were three such loops).
JUDGES = {"more_runs", "compare_sides", "judge_step", "compare_with_parents", "_judge", "judge"}
MEASURES = ("measure", "boots", "add_repetitions")


def _calls(node: ast.AST):
    """The names called in a node, not inside the functions it defines."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        if isinstance(child, ast.Call) and isinstance(child.func, (ast.Name, ast.Attribute)):
            yield child.func.id if isinstance(child.func, ast.Name) else child.func.attr
        yield from _calls(child)


def judging_loops(tree: ast.AST) -> list[int]:
    """Lines of loops whose own body both judges and measures."""
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.While, ast.For)):
            names = set(_calls(node))
            if names & JUDGES and any(m in name for name in names for m in MEASURES):
                lines.append(node.lineno)
    return lines


def test_one_adaptive_loop_for_check_run_against_and_bisect():
    loops = {m: lines for m, _, tree in modules() if not inside(m, ("iowatch.judging",))
             for lines in [judging_loops(tree)] if lines}
    assert loops == {}
    users = {m for m, _, tree in modules() for node in ast.walk(tree)
             if isinstance(node, ast.ImportFrom) and node.module == "iowatch.judging.adaptive"}
    assert users >= {"iowatch.check", "iowatch.commands.run", "iowatch.bisect.search"}


def test_the_walk_would_see_an_adaptive_loop_of_its_own():
    tree = ast.parse("while True:\n    cmp = judge()\n    if not more_runs(cmp):\n        break\n"
                     "    measure_more(cmp)\n"
                     "for key in keys:\n    done[key] = compare_sides(a, b)\n"
                     "while x:\n    def measure():\n        judge()\n    adapt(measure)\n")
    assert judging_loops(tree) == [1]


def test_the_web_app_never_runs_the_cli():
    """The store hands `iowatch compare` its sides as data (store_side); no web
    module imports iowatch.commands (the old `manage.py compare` did)."""
    found = {m for m, _, tree in modules() if m.startswith("iowatch_web")
             for node in ast.walk(tree)
             if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("iowatch.commands")
             or isinstance(node, ast.ImportFrom) and node.module == "iowatch"
             and any(a.name == "commands" for a in node.names)}
    assert found == set()


# What comes next is judging's (issue 43 item 2): the repetitions a look wants
# (more_runs) and the look schedule that bounds the rounds (looks) are called
# in iowatch.judging and iowatch.stats only; a path asks next_measurement. The
# check and the bisect each computed `looks(max(caps)) - 1` before, and run
# --against read more_runs without the ratio's raw partner.
WANTS_RULES = {"looks", "more_runs"}


def wants_calls(tree: ast.AST) -> list[str]:
    """The wanted-repetitions rules a module calls, however it reaches them."""
    return [name for node in ast.walk(tree) if isinstance(node, ast.Call)
            for name in [node.func.id if isinstance(node.func, ast.Name) else
                         node.func.attr if isinstance(node.func, ast.Attribute) else None]
            if name in WANTS_RULES]


def test_no_path_works_out_the_next_measurement_itself():
    found = {m: calls for m, _, tree in modules() if not inside(m, POLICY)
             for calls in [wants_calls(tree)] if calls}
    assert found == {}


def test_the_walk_would_see_a_path_of_its_own_wanting_repetitions():
    tree = ast.parse("rounds = looks(max(caps, default=DEFAULT_CAP)) - 1\n"
                     "for where, want in judging.more_runs(cmp).items():\n    pass\n"
                     "more = next_measurement(cmp, studies)\n")
    assert wants_calls(tree) == ["looks", "more_runs"]


# The words are judging's and its vocabulary's (issue 43 items 3 and 4): an
# outcome's or a claim's word (reproduced, not reproduced, opposite, not
# reproducible here, not comparable, and the sizes) is given a name only in
# iowatch.judging and iowatch.vocabulary. The statistics name their outcomes
# by the vocabulary's words (stats/verdict.py wrote its own before), and
# seeds.py named the claim words itself (REPRODUCED = "reproduced").
CLAIM_WORDS = set(claims.OUTCOMES) | set(claims.SIZES)


def _words_only(value: ast.AST, words: set[str]) -> bool:
    """A constant word, or a literal whose constant parts are all words (one at least)."""
    parts = ([*value.keys, *value.values] if isinstance(value, ast.Dict) else
             value.elts if isinstance(value, (ast.Tuple, ast.List, ast.Set)) else [value])
    constants = [p for p in parts if isinstance(p, ast.Constant)]
    return bool(constants) and all(p.value in words for p in constants)


def word_definitions(tree: ast.AST) -> list[int]:
    """Lines of a module's constants (UPPER-case names at its top) that are
    outcome or claim words, or tables of them only."""
    words = WORDS | CLAIM_WORDS
    lines = []
    for node in getattr(tree, "body", []):
        if not isinstance(node, (ast.Assign, ast.AnnAssign)) or node.value is None:
            continue
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        names = [n for t in targets for n in (t.elts if isinstance(t, ast.Tuple) else [t])]
        if all(isinstance(n, ast.Name) and n.id.isupper() for n in names) and \
                _words_only(node.value, words):
            lines.append(node.lineno)
    return lines


def test_no_module_outside_judging_names_an_outcome_or_claim_word():
    found = {m: lines for m, _, tree in modules() if not inside(m, WORDED)
             for lines in [word_definitions(tree)] if lines}
    assert found == {}


def test_the_walk_would_see_a_word_named_outside_judging():
    tree = ast.parse('REPRODUCED, OPPOSITE = "reproduced", "opposite"\n'
                     'OUTCOMES = {"reproduced": "reproduced", "opposite": "opposite"}\n'
                     'CONFIRMED = ("regression", "improvement")\n'
                     'IN_SIZE: str = "in-size"\n'
                     'RUN_STATUSES = ("passed", "failed")\n'
                     'where = "regression"\n'
                     'def f():\n    LOCAL = "opposite"\n')
    assert word_definitions(tree) == [1, 2, 3, 4]


# The verdicts issue 43 item 3 moved into judging, by the names they had
# outside it: a module that defines one again decides beside judging (the
# claim judge in seeds.py, the steps that open a regression and the bisect-step
# rule in regressions/verdicts.py, the mail's worse_pct the nightly ordered by).
JUDGING_RULES = {"judge_claim", "claim_outcome", "size_of", "opening_steps", "SAME_STEP_KERNELS",
                 "worse_pct", "severity", "worst_order", "is_bisect_step", "admits"}


def rules_defined(tree: ast.AST) -> list[str]:
    """The judging rules a module defines (a function, or a constant at its top)."""
    found = [node.name for node in ast.walk(tree)
             if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in JUDGING_RULES]
    found += [t.id for node in getattr(tree, "body", []) if isinstance(node, ast.Assign)
              for t in node.targets if isinstance(t, ast.Name) and t.id in JUDGING_RULES]
    return found


def test_no_module_outside_judging_defines_its_rules_again():
    found = {m: names for m, _, tree in modules() if not inside(m, ("iowatch.judging",))
             for names in [rules_defined(tree)] if names}
    assert found == {}


def test_the_walk_would_see_a_rule_defined_again():
    tree = ast.parse("SAME_STEP_KERNELS = 1\n"
                     "def worse_pct(change, metric):\n    return change\n"
                     "class Side:\n    def admits(self, run):\n        return True\n"
                     "severity_of = None\n")
    assert sorted(rules_defined(tree)) == ["SAME_STEP_KERNELS", "admits", "worse_pct"]
