"""Retention (webapp/iowatch_web/retention): a history of nightlies, then
`manage.py retain`; the history endpoint, the change points, a compare and a
run's page give the same numbers as before, the held runs stay raw, a dry run
changes nothing and a second pass is a no-op."""
from __future__ import annotations

import json
from datetime import timedelta
from io import StringIO

import pytest
from django.apps import apps
from django.core.cache import cache
from django.core.management import CommandError, call_command
from django.utils import timezone

from bundle_maker import planted_bundle
from iowatch_web.dashboard import compare_page
from iowatch_web.dashboard.run_numbers import cell_numbers
from iowatch_web.regressions.models import StoredChangePoint, Regression
from iowatch_web.regressions.verdicts import change_point_alerts
from iowatch_web.regressions.work import drain
from iowatch_web.results.ingest import store_bundle
from iowatch_web.results.models import Artifact, Run, Sample
from iowatch_web.retention.models import RunRetention, SampleSummary
from iowatch_web.store.values import sample_values

pytestmark = pytest.mark.django_db

NOISE = [-10, 4, 10, -4, 0]
# Twelve old nightlies (a step down at night 8), then two within the window.
OLD_NIGHTS = [1000] * 8 + [700] * 4
NEW_NIGHTS = [700, 700]
KEY = {"study": "f2fs-dio-write", "host": "lab-1", "device": "sd0", "filesystem": "f2fs",
       "group": "seqw", "metric": "write.bw_kib_s"}


def kernel(commit: int) -> dict:
    return {"release": "6.12.0-iowatch", "git_commit": f"{commit:012x}", "config_hash": "c0ffee"}


def nightly(night: int, bw: float, days_ago: float, **kwargs) -> dict:
    started = timezone.now() - timedelta(days=days_ago)
    doc = planted_bundle({"write.bw_kib_s": [bw + e + night % 3 for e in NOISE],
                          "write.iops": [bw / 4 + e for e in NOISE]},
                         kernel=kernel(night), started_at=started.isoformat(), matrix="nightly",
                         cells=2, **kwargs)
    for cell in doc["cells"]:
        for rep in cell["repetitions"]:
            # Per-job samples beside the group's: retention drops these.
            rep["samples"] += [{"metric": "write.bw_kib_s", "value": s["value"] / 2,
                                "group": "seqw", "job": f"job{j}"}
                               for s in rep["samples"][:1] for j in (1, 2)]
    return doc


@pytest.fixture
def history():
    runs = []
    for night, bw in enumerate(OLD_NIGHTS + NEW_NIGHTS):
        days_ago = 120 - night if night < len(OLD_NIGHTS) else len(OLD_NIGHTS) + 1 - night
        runs.append(store_bundle(nightly(night, bw, days_ago)).run)
        drain()
    published = planted_bundle({"write.bw_kib_s": [5125.0]}, kernel=kernel(99), published=True,
                               started_at=(timezone.now() - timedelta(days=400)).isoformat())
    runs.append(store_bundle(published).run)
    return runs


def counts() -> dict[str, int]:
    return {m.__name__: m.objects.count()
            for app in ("results", "retention", "regressions") for m in apps.get_app_config(app).get_models()}


def retain(*args) -> str:
    out = StringIO()
    call_command("retain", *args, stdout=out)
    return out.getvalue()


def numbers(runs) -> dict:
    """What the readers give: the history endpoint, a compare of two old
    kernels, the run page's numbers, the change points found anew."""
    cache.clear()
    from django.test import Client
    history = json.loads(Client().get("/dashboard/api/history", KEY).content)
    history["points"].sort(key=lambda p: (p["x"], p["y"]))
    compared = compare_page.compare(f"kernel:{runs[2].kernel_id}", f"kernel:{runs[10].kernel_id}")
    run = runs[3]
    page = cell_numbers(run, list(run.cells.select_related("study", "device")))
    StoredChangePoint.objects.all().delete()
    change_point_alerts(runs[len(OLD_NIGHTS) + len(NEW_NIGHTS) - 1])
    points = sorted(StoredChangePoint.objects.values_list("kernel_id", "cell_key", "group", "metric_id",
                                                    "before_mean", "after_mean", "p_value"))
    # What `iowatch compare --server` rebuilds the run from (comparison.manifest_from_api).
    api_values = Client().get(f"/api/v1/runs/{run.run_id}/values").json()["items"]
    values = sorted((v["cell"], v["repetition"], v["group"], v["metric"], v["value"])
                    for v in api_values if v["job"] is None)
    return {"history": history, "compare": compared, "run page": dict(page),
            "change points": points, "run values API": values}


def test_retention_keeps_every_number_the_readers_give(history, client):
    step = history[8]
    assert Regression.objects.filter(comparison__reason="change-point").count() == 1
    before = numbers(history)
    assert before["change points"] and before["change points"][0][0] == step.kernel_id
    assert len(before["history"]["points"]) == 14 * 5  # one cell of the key, 5 repetitions a night
    samples_before = Sample.objects.count()

    said = retain()
    # Nights 0-11 are older than 90 days; 7 and 8 are the regression's sides (8 its
    # change point's run) and the published run stays raw: 10 runs summarised.
    assert "summarised 10 run(s)" in said, said
    assert "kept raw: 3 old run(s)" in said, said
    summarised = Run.objects.filter(retention__summarised_at__isnull=False)
    assert set(summarised) == {r for i, r in enumerate(history[:12]) if i not in (7, 8)}
    assert not Sample.objects.filter(cell__run__in=summarised).exists()
    # 10 runs × 2 cells × (5 group values × 2 metrics + 10 job values) rows went.
    assert samples_before - Sample.objects.count() == 10 * 2 * 20
    assert SampleSummary.objects.count() == 10 * 2 * 2
    assert all(r.bytes_freed > 0 for r in RunRetention.objects.all())
    # The raw tool outputs stay: a re-parse can rebuild the samples.
    assert Artifact.objects.filter(cell__run__in=summarised).count() == 10 * 2 * 5
    for held in (history[7], history[8], history[-1]):
        assert Sample.objects.filter(cell__run=held).exists()

    after = numbers(history)
    assert after["history"] == before["history"]
    assert after["change points"] == before["change points"]
    assert after["compare"] == before["compare"]
    assert after["run page"] == before["run page"]
    assert len(before["run values API"]) == 2 * 5 * 2  # 2 cells, 5 repetitions, 2 metrics
    assert after["run values API"] == before["run values API"]

    # A retained run's page still shows its numbers: each cell's median, range and n.
    page = client.get(f"/runs/{history[3].run_id}/").content.decode()
    rows = [r for rows in after["run page"].values() for r in rows]
    assert len(rows) == 4
    for r in rows:
        assert (f'<td class="num median">{r["shown"]["median"]} {r["unit"]}</td>'
                f'<td class="num">{r["shown"]["low"]} – {r["shown"]["high"]}</td>') in page


def test_a_summary_keeps_each_repetitions_values_in_order(history):
    retain()
    run = history[0]
    raw = sorted((v.cell_id, v.repetition, v.value) for v in sample_values(run.cells.all())
                 if v.metric == "write.bw_kib_s")
    assert [v for _, _, v in raw[:5]] == [1000 + e for e in NOISE]
    summary = SampleSummary.objects.get(cell=run.cells.order_by("key")[0], metric="write.bw_kib_s")
    assert (summary.n, summary.median, summary.min, summary.max) == (5, 1000, 990, 1010)
    assert summary.mean == pytest.approx(1000)
    assert summary.repetitions == [[r, [1000 + e]] for r, e in enumerate(NOISE, 1)]
    assert not any(v.job for v in sample_values(run.cells.all(), jobs=True))


def test_a_dry_run_changes_nothing_and_a_second_pass_is_a_no_op(history):
    stored = counts()
    said = retain("--dry-run")
    assert "would summarise 10 run(s): 400 sample rows to remove" in said, said
    assert counts() == stored
    retain()
    once = counts()
    again = retain()
    assert "summarised 0 run(s): 0 sample rows removed" in again, again
    assert counts() == once


def test_keep_raw_and_the_window_are_honoured(history):
    said = retain("--keep", str(history[0].run_id))
    assert f"run {history[0].run_id} stays raw" in said and "summarised 9 run(s)" in said, said
    assert Sample.objects.filter(cell__run=history[0]).exists()
    # A wider window reaches no further runs; a narrower one reaches the two new ones.
    assert "summarised 0 run(s)" in retain("--days", "200")
    assert "summarised 2 run(s)" in retain("--days", "0")


def test_a_negative_window_is_refused():
    with pytest.raises(CommandError, match="--days -1: give 0 or more days"):
        retain("--days", "-1")


def test_keep_names_an_unknown_or_summarised_run(history):
    with pytest.raises(CommandError, match="--keep nope: no stored run has this id"):
        retain("--keep", "nope")
    retain()
    with pytest.raises(CommandError, match=f"--keep {history[0].run_id}: summarised on"):
        retain("--keep", str(history[0].run_id))
    with pytest.raises(CommandError, match="does not go with --dry-run"):
        retain("--keep", str(history[-2].run_id), "--dry-run")


def test_the_daily_pass_runs_once_a_day(history):
    from iowatch_web.retention.models import RetentionPass
    from iowatch_web.retention.retain import daily_pass

    first = daily_pass()
    assert first is not None and first.runs == 10
    assert daily_pass() is None  # the same day: nothing started
    recorded = RetentionPass.objects.get()
    assert (recorded.runs, recorded.samples_removed, recorded.days) == (10, 400, 90)
    assert recorded.finished_at is not None


def test_a_bisect_steps_runs_stay_raw(history):
    from iowatch_web.regressions.models import BisectJob

    regression = Regression.objects.order_by("id").first()
    # The change point's regression may have opened its own bisect: this one stands for it.
    BisectJob.objects.filter(regression=regression).delete()
    BisectJob.objects.create(
        regression=regression, origin="nightly", cell_key="f2fs-dio-write/sd0/f2fs",
        study="f2fs-dio-write", group="seqw", metric_id="write.bw_kib_s",
        good_kernel="6.12.0-iowatch", bad_kernel="6.12.0-iowatch",
        steps=[{"commit": "0" * 12, "run_ids": [str(history[2].run_id), "not-a-run-id"]}])
    assert "summarised 9 run(s)" in retain()
    assert Sample.objects.filter(cell__run=history[2]).exists()


def test_a_run_marked_raw_after_the_pass_chose_it_stays_raw(history):
    from iowatch_web.retention.retain import summarise_run

    RunRetention.objects.create(run=history[0], keep_raw=True)
    assert summarise_run(history[0].pk) is None
    assert Sample.objects.filter(cell__run=history[0]).exists()


def test_compare_answers_kept_over_the_window_are_removed_and_computed_again(client, settings):
    """A kept compare answer is a cache (issue 42): the pass removes those kept
    longer than IOWATCH_COMPARE_ANSWER_DAYS, leaves a newer one and one whose
    computation is under way, and a dry run only counts them."""
    from iowatch_web.regressions.models import CompareAnswer
    from iowatch_web.retention.retain import retain
    settings.IOWATCH_COMPARE_ANSWER_DAYS = 7
    now = timezone.now()

    def answer(key: str, days_ago: float, state: str = "done", started_days_ago=None):
        row = CompareAnswer.objects.create(key=key, base_spec="a", candidate_spec="b", state=state,
                                           answer=b"x" * 100 if state == "done" else None)
        at = now - timedelta(days=days_ago)
        started = now - timedelta(days=started_days_ago) if started_days_ago is not None else None
        CompareAnswer.objects.filter(pk=row.pk).update(
            asked_at=at, computed_at=at if state == "done" else None, started_at=started)

    answer("old", 30)
    answer("new", 1)
    answer("stuck", 20, state="running", started_days_ago=20)
    answer("under-way", 20, state="running", started_days_ago=0.01)
    dry = retain(dry_run=True, now=now)
    assert (dry.answers, dry.answer_bytes) == (2, 100) and CompareAnswer.objects.count() == 4
    assert "compare answers: would remove 2 kept over 7 days (100 bytes)" in "\n".join(dry.lines())
    done = retain(now=now)
    assert done.answers == 2
    assert set(CompareAnswer.objects.values_list("key", flat=True)) == {"new", "under-way"}
    assert retain(now=now).answers == 0
