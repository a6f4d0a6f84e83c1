"""The modules' layers, and no import circle (issue 43 item 4).

The verdict path is built bottom up: plain data (cells, metrics, figures),
the vocabulary (iowatch.vocabulary: the outcomes' words and the defaults),
the statistics (iowatch.stats), the data the policy reads (a Side and its
pooling, the studies), the policy (iowatch.judging), the rest of the runner,
and the web app. A module imports its own layer and those below, never one
above: the statistics nothing of judging, the vocabulary nothing of either.
In the web app the site (the API object, its bounds, the settings) is below
the apps: each app adds its router to it, and it imports no app.

And no module imports another that imports it back, directly or round a
longer circle, at the top or inside a function: before, iowatch.stats and
iowatch.judging imported each other and both package faces loaded lazily to
survive it, results/api -> ingest -> apps -> api and
regressions/verdicts -> nightly -> confirm -> verdicts ran in circles.
The walk reads the source, so a new module is covered the day it is written.
"""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCES = [ROOT / "src" / "iowatch", ROOT / "webapp" / "iowatch_web"]
# Bottom first; a module is in the layer of the longest prefix that names it.
LAYERS = [
    ("plain data", ("iowatch.cells", "iowatch.metrics", "iowatch.figures")),
    ("vocabulary", ("iowatch.vocabulary",)),
    ("statistics", ("iowatch.stats",)),
    ("the data the policy reads", ("iowatch.side_data", "iowatch.studies", "iowatch.resources",
                                   "iowatch.yamlfile")),
    ("policy", ("iowatch.judging",)),
    ("runner", ("iowatch",)),
    ("web site", ("iowatch_web.site",)),
    ("web apps", ("iowatch_web",)),
]


def modules() -> dict[str, Path]:
    found = {}
    for top in SOURCES:
        for path in sorted(top.rglob("*.py")):
            if "migrations" not in path.parts:
                dotted = ".".join(path.relative_to(top.parent).with_suffix("").parts)
                found[dotted.removesuffix(".__init__")] = path
    return found


def _named(name: str, known) -> str | None:
    """The module of ours `name` is, or the package it is a name of."""
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


def imports(tree: ast.AST, module: str, is_package: bool, known) -> set[str]:
    """Our modules a module imports anywhere in it (`from P import m` of a
    submodule m is m itself; of a name, P)."""
    package = module if is_package else module.rpartition(".")[0]
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out |= {_named(a.name, known) for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([node.module] if node.module else []))
            out |= {f"{base}.{a.name}" if f"{base}.{a.name}" in known else _named(base, known)
                    for a in node.names}
    return out - {None, module}


def graph(found: dict[str, Path]) -> dict[str, set[str]]:
    return {m: imports(ast.parse(p.read_text(), str(p)), m, p.name == "__init__.py", found)
            for m, p in found.items()}


def layer(module: str) -> int:
    matches = [(len(prefix), i) for i, (_, prefixes) in enumerate(LAYERS) for prefix in prefixes
               if module == prefix or module.startswith(prefix + ".")]
    return max(matches)[1]


def upward(edges: dict[str, set[str]]) -> list[str]:
    """Each import of a module in a layer above the importer's."""
    return sorted(f"{m} ({LAYERS[layer(m)][0]}) imports {n} ({LAYERS[layer(n)][0]})"
                  for m, targets in edges.items() for n in targets if layer(n) > layer(m))


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of two modules or more (Tarjan's algorithm)."""
    index, low, stack, on, found = {}, {}, [], set(), []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return sorted(found)


def test_the_walk_sees_every_layer():
    found = modules()
    assert {"iowatch.vocabulary.outcomes", "iowatch.stats.verdict", "iowatch.judging.policy",
            "iowatch.side_data", "iowatch.check", "iowatch_web.site.api",
            "iowatch_web.results.api"} <= set(found)
    assert {LAYERS[layer(m)][0] for m in found} == {name for name, _ in LAYERS}


def test_no_module_imports_one_above_it():
    assert upward(graph(modules())) == []


def test_no_import_runs_in_a_circle():
    assert circles(graph(modules())) == []


def test_the_walk_would_see_an_import_up_and_a_circle():
    known = {"iowatch.stats", "iowatch.stats.verdict", "iowatch.judging",
             "iowatch.judging.policy", "iowatch.vocabulary.outcomes", "iowatch_web.site.api",
             "iowatch_web.results.models", "iowatch_web.results.api", "iowatch_web.results.ingest",
             "iowatch_web.results.apps"}
    planted = {
        "iowatch.stats.verdict": "from iowatch.judging.policy import Comparison\n",
        "iowatch.vocabulary.outcomes": "def f():\n    from iowatch.stats import verdict\n",
        "iowatch_web.site.api": "from iowatch_web.results.models import Agent\n",
        "iowatch_web.results.api": "from iowatch_web.results import ingest\n",
        "iowatch_web.results.ingest": "from iowatch_web.results.apps import sync_metrics\n",
        "iowatch_web.results.apps": "def ready():\n    from iowatch_web.results.api import router\n",
        "iowatch.judging.policy": "from iowatch.stats import compare_matrix\n",
    }
    edges = {m: imports(ast.parse(text), m, False, known) for m, text in planted.items()}
    assert upward(edges) == [
        "iowatch.stats.verdict (statistics) imports iowatch.judging.policy (policy)",
        "iowatch.vocabulary.outcomes (vocabulary) imports iowatch.stats.verdict (statistics)",
        "iowatch_web.site.api (web site) imports iowatch_web.results.models (web apps)"]
    assert circles(edges) == [["iowatch_web.results.api", "iowatch_web.results.apps",
                               "iowatch_web.results.ingest"]]
    edges["iowatch.judging.policy"] |= {"iowatch.stats.verdict"}
    assert ["iowatch.judging.policy", "iowatch.stats.verdict"] in circles(edges)
