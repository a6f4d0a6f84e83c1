"""Migration results 0008 (issue 28): a run's cell and sample counts, stored at
ingest from then on, are counted once for the runs stored before it."""
from __future__ import annotations

import pytest

from migrating import back_to_the_newest, migrate as _migrate  # noqa: F401 (a fixture)


@pytest.mark.django_db(transaction=True)
def test_the_runs_stored_before_are_counted_once(back_to_the_newest):
    old = _migrate([("results", "0007_study_is_its_slug")])
    Host, Kernel, Run, Cell, Sample, Study, Metric = (old.get_model("results", m) for m in (
        "Host", "Kernel", "Run", "Cell", "Sample", "Study", "Metric"))
    host, kernel = Host.objects.create(name="lab-1"), Kernel.objects.create(release="6.12")
    study = Study.objects.create(slug="f2fs-dio-write")
    metric = Metric.objects.get_or_create(name="write.bw_kib_s",
                                          defaults={"unit": "KiB/s", "direction": "higher"})[0]
    runs = [Run.objects.create(run_id=f"00000000-0000-4000-8000-00000000000{i}", host=host,
                               kernel=kernel, status="passed", bundle_sha256="0" * 64)
            for i in range(2)]
    cells = [Cell.objects.create(run=runs[0], key=f"c{i}", study=study, status="passed")
             for i in range(3)]
    for i, cell in enumerate(cells):
        Sample.objects.bulk_create([Sample(cell=cell, repetition=1, metric=metric, value=1.0,
                                           group="seqw") for _ in range(i + 1)])

    new = _migrate([("results", "0008_run_counts")])
    counts = dict((r, (c, s)) for r, c, s in new.get_model("results", "Run").objects
                  .values_list("pk", "cell_count", "sample_count"))
    assert counts == {runs[0].pk: (3, 6), runs[1].pk: (0, 0)}
