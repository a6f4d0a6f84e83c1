"""The regressions app's data migrations, each walked from the schema before it:
- 0013 (issue 28, one regression per change): a patch's stored pair of
  regressions, against its parent and against the series base, becomes one,
  the series-base comparison a view inside the parent's; a triaged
  series-base regression stays (a person's decision is kept).
- 0014 (issue 27, the server's models named apart from the library's
  dataclasses): the stored comparisons, their verdicts, change points, runs
  and regression views are all there under the new names."""
from __future__ import annotations

import uuid

import pytest
from migrating import back_to_the_newest, migrate  # noqa: F401 (back_to_the_newest: a fixture)

BEFORE = [("regressions", "0010_confirm_jobs")]
AFTER = [("regressions", "0013_regression_views")]
# 0013 and results 0007 (which depends on regressions 0012) applied, 0014 not.
BEFORE_RENAME = [("regressions", "0013_regression_views"), ("results", "0007_study_is_its_slug")]
RENAMED = [("regressions", "0014_stored_model_names")]


@pytest.mark.django_db(transaction=True)
def test_a_patchs_two_stored_regressions_become_one(back_to_the_newest):
    old = migrate(BEFORE)
    Host, Kernel = old.get_model("results", "Host"), old.get_model("results", "Kernel")
    Comparison, Regression = (old.get_model("regressions", m) for m in ("Comparison", "Regression"))
    TriageEvent = old.get_model("regressions", "TriageEvent")
    host = Host.objects.create(name="lab-1")
    kernels = {}
    for series, patches in (("a", 3), ("b", 3)):
        for i in range(patches):
            kernels[series, i] = Kernel.objects.create(release="6.12", git_commit=f"{series}{i}",
                                                       patch_index=i)
    opened = {}
    for series in ("a", "b"):
        for reason, base in (("parent", 1), ("series-base", 0)):
            c = Comparison.objects.create(reason=reason, host=host, matrix="m",
                                          base_kernel=kernels[series, base],
                                          candidate_kernel=kernels[series, 2])
            opened[series, reason] = Regression.objects.create(comparison=c, kind="check")
    # Series b's series-base regression was triaged: it stays where it was decided.
    kept = opened["b", "series-base"]
    kept.state = "acknowledged"
    kept.save()
    TriageEvent.objects.create(regression=kept, from_state="new", to_state="acknowledged")

    new = migrate(AFTER)
    Regression = new.get_model("regressions", "Regression")
    assert set(Regression.objects.values_list("comparison__reason", "comparison__candidate_kernel__git_commit")) == {
        ("parent", "a2"), ("parent", "b2"), ("series-base", "b2")}
    a = Regression.objects.get(pk=opened["a", "parent"].pk)
    assert list(a.views.values_list("reason", flat=True)) == ["series-base"]
    assert Regression.objects.get(pk=kept.pk).state == "acknowledged"


@pytest.mark.django_db(transaction=True)
def test_the_renamed_models_keep_every_row(back_to_the_newest):
    old = migrate(BEFORE_RENAME)
    get = lambda app, name: old.get_model(app, name)  # noqa: E731
    host = get("results", "Host").objects.create(name="lab-1")
    study = get("results", "Study").objects.create(slug="randrw")
    metric, _ = get("results", "Metric").objects.get_or_create(
        name="read.iops", defaults={"unit": "IOPS", "direction": "higher"})
    base, candidate = (get("results", "Kernel").objects.create(release="6.12", git_commit=c)
                       for c in ("a", "b"))
    runs = [get("results", "Run").objects.create(run_id=uuid.uuid4(), host=host, kernel=k,
                                                 status="passed", bundle_sha256="0" * 64)
            for k in (base, candidate)]
    Comparison = get("regressions", "Comparison")
    c = Comparison.objects.create(reason="previous-run", host=host, base_kernel=base,
                                  candidate_kernel=candidate)
    c.base_runs.set([runs[0]])
    c.candidate_runs.set([runs[1]])
    get("regressions", "CellVerdict").objects.create(
        comparison=c, cell_key="randrw/lab-1/nvme0/ext4", study=study, host=host, group="0",
        metric=metric, direction="higher", min_effect_pct=5, base_n=3, base_mean=1, base_median=1,
        candidate_n=3, candidate_mean=0.9, candidate_median=0.9, outcome="regression")
    get("regressions", "ChangePoint").objects.create(
        comparison=c, cell_key="randrw/lab-1/nvme0/ext4", study=study, host=host, group="0",
        metric=metric, kernel=candidate, run=runs[1], before_mean=1, after_mean=0.9)
    regression = get("regressions", "Regression").objects.create(comparison=c, kind="ab")
    regression.views.add(c)

    new = migrate(RENAMED)
    StoredComparison = new.get_model("regressions", "StoredComparison")
    (stored,) = StoredComparison.objects.all()
    assert stored.pk == c.pk
    assert list(stored.candidate_runs.values_list("pk", flat=True)) == [runs[1].pk]
    assert list(stored.cells.values_list("outcome", flat=True)) == ["regression"]
    assert list(stored.change_points.values_list("kernel__git_commit", flat=True)) == ["b"]
    assert list(stored.shown_in.values_list("pk", flat=True)) == [regression.pk]
