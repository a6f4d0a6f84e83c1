"""import-published: the seeds' numbers become published runs, once, in the table's units."""
from __future__ import annotations

from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from iowatch.commands.import_published import published_bundles
from iowatch.studies import load_studies
from iowatch_web.results.models import Run, Sample

JOBS = Path(__file__).resolve().parents[2] / "jobs"


@pytest.mark.django_db
def test_published_results_are_stored_once_as_published_runs(tmp_path):
    studies = load_studies(JOBS / "studies")
    dirs = [str(d) for s in studies.values() for d in published_bundles(s, tmp_path)]
    expected = sum(len(s.published) for s in studies.values())
    assert len(dirs) == expected == 13

    call_command("ingest_bundle", *dirs, stdout=StringIO())
    again = StringIO()
    call_command("ingest_bundle", *published_bundles(studies["odirect-vs-readers"], tmp_path),
                 stdout=again)
    assert again.getvalue().count("already stored") == 3
    assert Run.objects.count() == Run.objects.filter(published=True).count() == 13

    writer = Sample.objects.get(cell__run__label="for-2.6.33", cell__study__slug="odirect-vs-readers",
                                metric_id="write.bw_kib_s", group="writer")
    assert writer.value == 19
    readers = Sample.objects.get(cell__run__label="2.6.32-rc7", metric_id="read.bw_kib_s",
                                 group="readers")
    assert readers.value == 101 * 1024  # "aggrb=101MB/s": fio's MB is MiB
    labels = set(Run.objects.filter(cells__study__slug="xfs-smallfile-writeback")
                 .values_list("label", flat=True))
    assert labels == {"unpatched", "patched"}
