"""The HTTP API's seams (issue 27): the API object, its agent token, its
errors and its paging are site/api.py's; each app adds its router from its
AppConfig.ready. No app's API module imports another app's API module (at the
top or inside a function), and site/api.py imports none: no circle runs through
two API modules and none reaches back into another lazily. (Other circles can
still pass through an API module: results/api imports ingest, which imports
the app's config, which imports the API to add its router.)"""
from __future__ import annotations

import ast
from pathlib import Path

import iowatch_web

WEB = Path(iowatch_web.__file__).parent


def _api_modules() -> dict[str, Path]:
    """Every API module of the web app by dotted name: APP/api.py and APP/*_api.py."""
    found = {}
    for path in sorted(WEB.glob("*/*.py")):
        if path.stem == "api" or path.stem.endswith("_api"):
            found[f"iowatch_web.{path.parent.name}.{path.stem}"] = path
    return found


def _imports(path: Path) -> set[str]:
    """The modules a file imports anywhere in it, each `from X import Y` as
    X and X.Y (Y may be a module)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{a.name}" for a in node.names)
    return names


def _app(module: str) -> str:
    return module.split(".")[1]


def test_the_api_modules_are_found():
    modules = _api_modules()
    assert {"iowatch_web.site.api", "iowatch_web.results.api", "iowatch_web.regressions.api",
            "iowatch_web.regressions.bisect_api", "iowatch_web.hosts.api"} <= set(modules)


def test_no_apps_api_imports_another_apps_api():
    modules = _api_modules()
    crossing = sorted(
        f"{module} imports {imported}"
        for module, path in modules.items() if _app(module) != "site"
        for imported in _imports(path) & set(modules)
        if _app(imported) not in (_app(module), "site"))
    assert crossing == []


def test_the_site_api_imports_no_apps_api():
    modules = _api_modules()
    reached = sorted(m for m in _imports(modules["iowatch_web.site.api"]) & set(modules)
                     if _app(m) != "site")
    assert reached == []


def test_every_router_is_on_the_one_api():
    """The apps mounted their routers on the object site/urls.py serves: every
    app's operations are in its description."""
    from iowatch_web.site.api import api
    paths = api.get_openapi_schema()["paths"]
    for prefix in ("/api/v1/bundles", "/api/v1/runs", "/api/v1/regressions", "/api/v1/bisects",
                   "/api/v1/confirmations", "/api/v1/hosts"):
        assert any(p.startswith(prefix) for p in paths), prefix


def test_the_results_app_reads_nothing_of_retention_or_the_store_above_it():
    """results keeps runs, cells and samples; retention summarises them and the
    store package (store/values.py, store/sides.py) reads both. The results app
    imports neither, anywhere in it (before, results/sides.py read values
    through retention and results/api.py served retention's values page)."""
    reaching = sorted(f"{path.relative_to(WEB)} imports {name}"
                      for path in sorted((WEB / "results").rglob("*.py"))
                      for name in _imports(path)
                      if name.startswith(("iowatch_web.retention", "iowatch_web.store")))
    assert reaching == []
