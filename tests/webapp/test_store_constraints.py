"""The store's rules live in the database, not only in Python; migrations are complete."""
from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from django.db import IntegrityError, connection, transaction

from iowatch.metrics import METRICS
from iowatch_web.results.models import (Cell, Device, Host, Kernel, Metric, Run, Sample, Study,
                                        sync_metrics)

pytestmark = pytest.mark.django_db

MANAGE = Path(__file__).resolve().parents[2] / "webapp" / "manage.py"


@pytest.fixture
def cell(db):
    host = Host.objects.create(name="h")
    run = Run.objects.create(run_id=uuid.uuid4(), host=host, kernel=Kernel.objects.create(release="6.12"),
                             status="passed", bundle_sha256="0" * 64)
    return Cell.objects.create(run=run, key="c", study=Study.objects.create(slug="s"), status="passed")


def _refused(make):
    with pytest.raises(IntegrityError), transaction.atomic():
        make()
        # Foreign keys are checked at commit (Django makes them deferrable): check now.
        connection.check_constraints()


def test_enumerations_are_checked_by_the_database(cell):
    host = cell.run.host
    _refused(lambda: Device.objects.create(host=host, name="fd0", device_class="floppy"))
    _refused(lambda: Host.objects.create(name="h2", kind="mainframe"))
    _refused(lambda: Cell.objects.create(run=cell.run, key="c2", study=cell.study, status="meh"))
    _refused(lambda: Metric.objects.create(name="x.y", unit="s", direction="up"))
    _refused(lambda: Device.objects.create(host=host, name="sd1", device_class="ssd", size_bytes=-1))


def test_unique_keys_are_checked_by_the_database(cell):
    _refused(lambda: Cell.objects.create(run=cell.run, key="c", study=cell.study, status="passed"))
    _refused(lambda: Run.objects.create(run_id=cell.run.run_id, host=cell.run.host,
                                        kernel=cell.run.kernel, status="passed", bundle_sha256=""))
    # A kernel with no commit, config or series is one kernel, not one per NULL.
    _refused(lambda: Kernel.objects.create(release="6.12"))


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
def test_a_sample_value_must_be_finite(cell, value):
    _refused(lambda: Sample.objects.create(cell=cell, repetition=1, metric_id="wall_s",
                                           value=value, group="0"))


def test_samples_need_a_known_metric_and_a_repetition_from_one(cell):
    _refused(lambda: Sample.objects.create(cell=cell, repetition=1, metric_id="no.such",
                                           value=1, group="0"))
    _refused(lambda: Sample.objects.create(cell=cell, repetition=0, metric_id="wall_s",
                                           value=1, group="0"))


def test_the_metric_table_follows_the_code(db):
    assert set(Metric.objects.values_list("name", flat=True)) == set(METRICS)
    Metric.objects.filter(name="wall_s").update(unit="fortnights")
    Metric.objects.filter(name="cpu.sys_s").delete()
    assert sync_metrics() == 2
    assert Metric.objects.get(name="wall_s").unit == "s" and Metric.objects.filter(name="cpu.sys_s").exists()


def test_migrations_are_complete():
    result = subprocess.run([sys.executable, str(MANAGE), "makemigrations", "--check", "--dry-run"],
                            capture_output=True, text=True, env=dict(os.environ), timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
