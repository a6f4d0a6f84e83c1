"""Settings of the iowatch server, all taken from the environment.

DATABASE_URL            selects the store (PostgreSQL in production and in CI);
                        without it, SQLite at $IOWATCH_DATA_DIR/iowatch.sqlite3
IOWATCH_DATA_DIR        where the embedded server keeps its files
                        (iowatch.paths.data_dir: default ~/.local/share/iowatch)
IOWATCH_SECRET_KEY      Django's secret key; else one generated once and kept
                        in the data directory (mode 0600)
IOWATCH_DEBUG           1/true/yes turns on Django's debug mode (default off)
IOWATCH_ALLOWED_HOSTS   extra host names, comma-separated, beside localhost
IOWATCH_MAX_BUNDLE_BYTES  the largest upload the ingest API accepts (default 64 MiB)
IOWATCH_STUDIES         the study files that decide verdicts (default: the studies packaged with
                        iowatch, iowatch/data/jobs/studies, found by iowatch.resources)
IOWATCH_VERDICT_ATTEMPTS  tries of a run's verdict work before it is marked failed (default 3)
IOWATCH_VERDICT_RETRY_S   wait before the first retry, doubled each time (default 30)
IOWATCH_VERDICT_STALL_S   a verdict task running this long on a worker that stopped
                        answering is given to another worker (default 600)
IOWATCH_COMPARE_INLINE_CELLS  a /compare whose sides hold more stored cells than this
                        is computed by the verdict worker, not in the request (default 2000)
IOWATCH_DB_POOLER       "transaction" when DATABASE_URL names PgBouncer in transaction
                        pooling (no server-side cursors, no startup options)
IOWATCH_HEARTBEAT_TIMEOUT_S  a host whose agent has not beaten for this long is
                        unreachable, and the job it held goes back on the queue (default 600)
IOWATCH_RETENTION_DAYS  samples of runs older than this are summarised per cell, job
                        group and metric (manage.py retain; default 90)
IOWATCH_COMPARE_ANSWER_DAYS  kept compare answers older than this are removed by the
                        same pass, and computed again when asked (default 7)
"""
from __future__ import annotations

import hashlib
import os
import secrets
import tempfile
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from iowatch.paths import data_dir
from iowatch.resources import studies_dir


def _flag(name: str, default: bool = False) -> bool:
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() in ("1", "true", "yes", "on")


# The same directory the runner side uses (upload spool, local target).
DATA_DIR = data_dir()


def _secret_key() -> str:
    if key := os.environ.get("IOWATCH_SECRET_KEY"):
        return key
    path = DATA_DIR / "secret_key"
    if not path.exists():
        # Written aside and hard-linked into place: two workers starting at once
        # agree on one key, and neither reads a half-written file.
        fd, tmp = tempfile.mkstemp(dir=DATA_DIR, prefix=".secret_key.")
        try:
            os.write(fd, secrets.token_urlsafe(50).encode())
            os.close(fd)
            os.chmod(tmp, 0o600)
            try:
                os.link(tmp, path)
            except FileExistsError:
                pass
        finally:
            os.unlink(tmp)
    return path.read_text().strip()


SECRET_KEY = _secret_key()
DEBUG = _flag("IOWATCH_DEBUG")
ALLOWED_HOSTS = ["localhost", "127.0.0.1", "[::1]"] + [
    h.strip() for h in os.environ.get("IOWATCH_ALLOWED_HOSTS", "").split(",") if h.strip()]

# The ingest API refuses larger bundles with 413; Django's own limit follows it
# so a request body up to that size can be read at all. A chunked upload (no
# Content-Length) is read by results/api.py under the same limit: Django alone
# would read it as empty.
IOWATCH_MAX_BUNDLE_BYTES = int(os.environ.get("IOWATCH_MAX_BUNDLE_BYTES", 64 * 1024 * 1024))
DATA_UPLOAD_MAX_MEMORY_SIZE = IOWATCH_MAX_BUNDLE_BYTES
# The studies' deciding metrics and minimum effects judge every stored verdict (iowatch.judging).
IOWATCH_STUDIES = str(studies_dir())

# A stored run's verdicts and change points are work on a durable queue
# (regressions/work.py), in the store's own database: django-tasks' database
# backend runs on PostgreSQL and on the embedded SQLite alike.
TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend", "QUEUES": ["verdicts"]}}
IOWATCH_VERDICT_ATTEMPTS = int(os.environ.get("IOWATCH_VERDICT_ATTEMPTS", 3))
IOWATCH_VERDICT_RETRY_S = float(os.environ.get("IOWATCH_VERDICT_RETRY_S", 30))
IOWATCH_VERDICT_STALL_S = float(os.environ.get("IOWATCH_VERDICT_STALL_S", 600))
# A larger compare is computed once, off the request (dashboard/compare_work.py).
IOWATCH_COMPARE_INLINE_CELLS = int(os.environ.get("IOWATCH_COMPARE_INLINE_CELLS", 2000))
IOWATCH_HEARTBEAT_TIMEOUT_S = float(os.environ.get("IOWATCH_HEARTBEAT_TIMEOUT_S", 600))
# Older runs keep summaries instead of sample rows (retention/retain.py).
_retention_days = os.environ.get("IOWATCH_RETENTION_DAYS", "90")
if not _retention_days.strip().isdigit():
    raise ImproperlyConfigured(f"IOWATCH_RETENTION_DAYS={_retention_days!r}: give a whole number "
                               "of days, 0 or more (default 90)")
IOWATCH_RETENTION_DAYS = int(_retention_days)
# A kept compare answer (regressions.CompareAnswer) is a cache: asked again
# after this many days, it is computed again (retention/retain.py prunes it).
_answer_days = os.environ.get("IOWATCH_COMPARE_ANSWER_DAYS", "7")
if not _answer_days.strip().isdigit():
    raise ImproperlyConfigured(f"IOWATCH_COMPARE_ANSWER_DAYS={_answer_days!r}: give a whole number "
                               "of days, 0 or more (default 7)")
IOWATCH_COMPARE_ANSWER_DAYS = int(_answer_days)

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "ninja",  # its Swagger UI files, served from here rather than a CDN
    "django_tasks",
    "django_tasks_db",
    "iowatch_web.results",
    "iowatch_web.regressions",
    "iowatch_web.dashboard",
    "iowatch_web.retention",
    "iowatch_web.hosts",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # Pages and JSON go out gzipped (Django's GZip pads against BREACH); static
    # files are served pre-compressed by whitenoise after collectstatic.
    "django.middleware.gzip.GZipMiddleware",
    "iowatch_web.site.middleware.ContentSecurityPolicyMiddleware",
    # Every error under /api/ is JSON {"error", "where"}, whoever answered it.
    "iowatch_web.site.middleware.ApiErrorShapeMiddleware",
    # A database that is down answers 503 (JSON with Retry-After under /api/), not a
    # 500; a client gone mid-body and a NUL in the query answer 400.
    "iowatch_web.site.middleware.StoreGuardMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "iowatch_web.site.urls"
WSGI_APPLICATION = "iowatch_web.site.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

if os.environ.get("DATABASE_URL"):
    DATABASES = {"default": dj_database_url.config(conn_max_age=60, conn_health_checks=True)}
    # A statement that runs longer is cancelled by PostgreSQL (a 503 with
    # Retry-After, site/middleware.py): no request holds a worker and its
    # connection without end. `iowatch serve` sets it for the web workers only
    # (default 60 s); migrations and the verdict worker run unbounded. 0: none.
    STATEMENT_TIMEOUT_S = float(os.environ.get("IOWATCH_STATEMENT_TIMEOUT_S") or 0)
    # Behind PgBouncer in transaction pooling (docs/lab.md): a server connection
    # serves many clients, so no cursor may outlive its transaction, and the
    # startup `options` PgBouncer refuses are not sent: the web role's
    # statement timeout is then set on the role (ALTER ROLE ... SET statement_timeout).
    DB_POOLER = os.environ.get("IOWATCH_DB_POOLER", "")
    if DB_POOLER not in ("", "transaction"):
        raise ImproperlyConfigured(f"IOWATCH_DB_POOLER={DB_POOLER!r}: give 'transaction' (PgBouncer "
                                   "in transaction pooling) or nothing")
    if DB_POOLER:
        DATABASES["default"]["DISABLE_SERVER_SIDE_CURSORS"] = True
    if STATEMENT_TIMEOUT_S > 0 and not DB_POOLER:
        DATABASES["default"].setdefault("OPTIONS", {})["options"] = (
            f"-c statement_timeout={int(STATEMENT_TIMEOUT_S * 1000)}")
else:
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": DATA_DIR / "iowatch.sqlite3",
            "OPTIONS": {
                # WAL lets readers run beside the one writer; IMMEDIATE takes the
                # write lock when a transaction starts, so concurrent uploads wait
                # for it (up to the timeout) instead of failing "database is locked".
                "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
                "transaction_mode": "IMMEDIATE",
                "timeout": 60,
            },
            # A file, not memory: the live-server tests post from several threads,
            # each with its own connection.
            "TEST": {"NAME": str(DATA_DIR / "test-iowatch.sqlite3")},
        }
    }

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

# Anonymous users read; logging in (Django's auth views) lets a user triage.
LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/"
LOGOUT_REDIRECT_URL = "/"

# The dashboard's answers, keyed on the store's last change (dashboard/freshness.py),
# in files every server worker shares: one worker's answer serves the others.
# The files outlive the processes that wrote them, so every key starts with the
# code's own hash: another release of the server or the judging answers anew.
_CODE = hashlib.sha256()
for _source in sorted([*Path(__file__).resolve().parents[1].rglob("*.py"),
                       *Path(__import__("iowatch").__file__).parent.rglob("*.py")]):
    _CODE.update(_source.read_bytes())
CACHES = {"default": {"BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
                      "LOCATION": str(DATA_DIR / "cache"), "KEY_PREFIX": _CODE.hexdigest()[:16],
                      "OPTIONS": {"MAX_ENTRIES": 2000}}}

STATIC_URL = "static/"
STATIC_ROOT = DATA_DIR / "static"
STATIC_ROOT.mkdir(exist_ok=True)
# The embedded server runs without a collectstatic step.
WHITENOISE_USE_FINDERS = True
# After collectstatic, hashed names cached for a year (site/static_files.py).
STORAGES = {"default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
            "staticfiles": {"BACKEND": "iowatch_web.site.static_files.HashedStaticFiles"}}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"stderr": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["stderr"], "level": os.environ.get("IOWATCH_LOG_LEVEL", "INFO")},
}
