"""No request holds the store without end (issue 42 item 2, its smallest
part): the web workers' PostgreSQL statements have a timeout, and a statement
cancelled by it is a JSON 503 with Retry-After that says so; a run's values
come a page at a time by default."""
from __future__ import annotations

import os
import subprocess

import pytest
from django.db import OperationalError, connection, transaction
from django.test import RequestFactory

from bundle_maker import make_bundle
from iowatch_web.site.bounds import VALUES_PAGE
from iowatch_web.site.middleware import store_unavailable
from live_server import IOWATCH

on_postgresql = pytest.mark.skipif(not os.environ.get("DATABASE_URL"), reason="PostgreSQL only")


@on_postgresql
def test_the_timeout_setting_reaches_postgresql():
    env = {**os.environ, "IOWATCH_STATEMENT_TIMEOUT_S": "2.5"}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    shown = subprocess.run([IOWATCH, "manage", "shell", "-c",
                            "from django.db import connection\n"
                            "c = connection.cursor(); c.execute('SHOW statement_timeout');"
                            "print(c.fetchone()[0])"],
                           env=env, capture_output=True, text=True, timeout=120)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.split()[-1] == "2500ms"


@on_postgresql
@pytest.mark.django_db
def test_a_statement_past_the_timeout_is_a_json_503_that_says_so():
    request = RequestFactory().get("/api/v1/runs")
    with pytest.raises(OperationalError) as cancelled, transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL statement_timeout = 50")
            cursor.execute("SELECT pg_sleep(2)")
    response = store_unavailable(request, cancelled.value)
    assert response.status_code == 503 and response["Retry-After"]
    assert b"statement timeout" in response.content


@pytest.mark.django_db
def test_a_runs_values_come_a_page_at_a_time_by_default(post, client):
    doc = make_bundle(cells=3, samples=2, repetitions=2)
    assert post(doc)[0] == 201
    page = client.get(f"/api/v1/runs/{doc['run_id']}/values").json()
    assert page["limit"] == VALUES_PAGE == 10_000 and page["count"] == len(page["items"])


@on_postgresql
def test_behind_a_transaction_pooler_no_cursor_outlives_its_transaction_and_no_options_are_sent():
    env = {**os.environ, "IOWATCH_STATEMENT_TIMEOUT_S": "2.5", "IOWATCH_DB_POOLER": "transaction"}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    shown = subprocess.run([IOWATCH, "manage", "shell", "-c",
                            "from django.conf import settings\n"
                            "db = settings.DATABASES['default']\n"
                            "print(db.get('DISABLE_SERVER_SIDE_CURSORS'), "
                            "'options' in db.get('OPTIONS', {}))"],
                           env=env, capture_output=True, text=True, timeout=120)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.split()[-2:] == ["True", "False"]
    refused = subprocess.run([IOWATCH, "manage", "check"], capture_output=True, text=True,
                             env={**env, "IOWATCH_DB_POOLER": "session"}, timeout=120)
    assert refused.returncode != 0 and "IOWATCH_DB_POOLER='session'" in refused.stderr
