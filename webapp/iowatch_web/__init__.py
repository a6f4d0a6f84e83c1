"""The iowatch server: a Django project under one namespace.

- iowatch_web.site: settings, URLs, WSGI and middleware;
- iowatch_web.results: the store and the ingest API;
- iowatch_web.regressions: stored verdicts, change points, triage, the verdict queue;
- iowatch_web.dashboard: the pages people read and their chart data.

The apps keep their short labels (results, regressions, dashboard), so their
tables and migrations are the same as before the move. docs/architecture.md
shows where each sits on the data's path.
"""
