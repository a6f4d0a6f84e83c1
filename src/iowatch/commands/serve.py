"""iowatch serve: run the web app (dashboard and ingest API) and its verdict worker.

Migrates the database first (the embedded SQLite one is made on first use)
and collects static files, both in one Django process (manage.py
prepare_serve), then runs gunicorn, the health server and the verdict
worker (manage.py verdict_worker: the verdicts of stored runs, and large
compares, are made there, not in a request) as children, restarting the
worker if it dies. A deployment with its own worker service
(docker-compose.yml) passes --no-worker.

The health server is a second gunicorn on --health-port answering only
/api/v1/health (iowatch_web.site.health_wsgi): the web port's workers can
all be busy with page reads, and a monitor asking the health port is still
answered at once.
"""
from __future__ import annotations

import signal
import subprocess
import sys
import time

from iowatch.local_store import django_command, django_env, explain_missing_server

# A worker that dies is started again after this wait, doubled each time it
# dies within a minute of starting, up to the cap.
RESTART_WAIT_S = 1.0
RESTART_WAIT_MAX_S = 30.0
GUNICORN_CONFIG = "python:iowatch_web.site.gunicorn_conf"
# PostgreSQL cancels a web request's statement after this (IOWATCH_STATEMENT_TIMEOUT_S
# overrides it; 0: none). Not for migrations and the verdict worker, whose work is long.
WEB_STATEMENT_TIMEOUT_S = "60"
# The health server's statements (SELECT 1, the verdict backlog) are small:
# one held behind a lock is cut short, and health says the store is not answering.
HEALTH_STATEMENT_TIMEOUT_S = "5"


def register(sub):
    p = sub.add_parser("serve", help="run the web app, the ingest API and the verdict worker",
                       description="Run the iowatch web app and its verdict worker. Without "
                                   "DATABASE_URL it uses the embedded SQLite store in "
                                   "IOWATCH_DATA_DIR.")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    p.add_argument("--workers", type=int, default=2, help="gunicorn worker processes (default 2)")
    p.add_argument("--health-port", type=int, default=None, metavar="PORT",
                   help="the health server's port: /api/v1/health in a process of its own, "
                        "which no page read can hold (default: --port + 1; 0: none)")
    p.add_argument("--verdict-workers", type=int, default=1, metavar="N",
                   help="verdict worker processes (default 1)")
    p.add_argument("--no-worker", action="store_true",
                   help="start no verdict worker (another service runs manage.py verdict_worker)")
    p.add_argument("--no-migrate", action="store_true", help="do not migrate the database first")
    p.set_defaults(func=run)


def run(args) -> int:
    if (rc := explain_missing_server("serve")) is not None:
        return rc
    env = django_env()
    # migrate and collectstatic in one process (manage.py prepare_serve)
    rc = subprocess.call(django_command("prepare_serve", *(["--no-migrate"] if args.no_migrate else [])),
                         env=env)
    if rc:
        print(f"iowatch serve: preparing the store and the static files failed (exit {rc})",
              file=sys.stderr)
        return rc
    where = f"http://{args.host if args.host not in ('0.0.0.0', '::') else '127.0.0.1'}:{args.port}/"
    workers = 0 if args.no_worker else args.verdict_workers
    print(f"iowatch serve: listening on {args.host}:{args.port}: open {where} "
          f"(API: {where}api/v1/, OpenAPI: {where}api/v1/openapi.json); "
          f"{workers} verdict worker(s)", flush=True)
    servers = [_gunicorn("iowatch_web.site.wsgi:application", f"{args.host}:{args.port}",
                         ("--workers", str(args.workers), "--access-logfile", "-"),
                         {"IOWATCH_STATEMENT_TIMEOUT_S": WEB_STATEMENT_TIMEOUT_S, **env})]
    health_port = args.port + 1 if args.health_port is None else args.health_port
    if health_port:
        print(f"iowatch serve: health on {args.host}:{health_port}/api/v1/health", flush=True)
        servers.append(_gunicorn("iowatch_web.site.health_wsgi:application",
                                 f"{args.host}:{health_port}", ("--workers", "1", "--threads", "4"),
                                 {**env, "IOWATCH_STATEMENT_TIMEOUT_S": HEALTH_STATEMENT_TIMEOUT_S}))
    worker_cmd = django_command("verdict_worker", "--no-startup-delay")
    verdict = [_Supervised(worker_cmd, env) for _ in range(workers)]

    stopping = []
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda signum, frame: stopping.append(signum))
    try:
        while not stopping:
            for server in servers:
                if (rc := server.poll()) is not None:
                    print(f"iowatch serve: gunicorn ({server.args[3]}) exited with {rc}",
                          file=sys.stderr)
                    return rc or 1
            for w in verdict:
                w.check()
            time.sleep(0.5)
        return 0
    finally:
        for p in [*servers, *(w.proc for w in verdict)]:
            if p.poll() is None:
                p.terminate()
        for p in [*servers, *(w.proc for w in verdict)]:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()


def _gunicorn(app: str, bind: str, options: tuple[str, ...], env: dict) -> subprocess.Popen:
    """A gunicorn serving `app` on `bind`, with the request limits and the JSON
    answers to the errors it answers itself (414, 431) of GUNICORN_CONFIG."""
    return subprocess.Popen([sys.executable, "-m", "gunicorn", app, "--config", GUNICORN_CONFIG,
                             "--bind", bind, "--timeout", "300", *options], env=env)


class _Supervised:
    """A verdict worker process, started again when it dies."""

    def __init__(self, cmd: list[str], env: dict):
        self.cmd, self.env, self.wait = cmd, env, RESTART_WAIT_S
        self.restart_at = 0.0
        self._start()

    def _start(self) -> None:
        self.started = time.monotonic()
        self.proc = subprocess.Popen(self.cmd, env=self.env)

    def check(self) -> None:
        if self.proc.poll() is None:
            return
        now = time.monotonic()
        if not self.restart_at:
            quick = now - self.started < 60
            self.wait = min(self.wait * 2, RESTART_WAIT_MAX_S) if quick else RESTART_WAIT_S
            self.restart_at = now + self.wait
            print(f"iowatch serve: the verdict worker exited with {self.proc.returncode}; "
                  f"starting another in {self.wait:.0f} s", file=sys.stderr, flush=True)
        elif now >= self.restart_at:
            self.restart_at = 0.0
            self._start()
