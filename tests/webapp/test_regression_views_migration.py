"""Migration regressions 0013 (issue 28, one regression per change): a patch's
stored pair of regressions, against its parent and against the series base,
becomes one, the series-base comparison a view inside the parent's; a triaged
series-base regression stays (a person's decision is kept)."""
from __future__ import annotations

import pytest

from migrating import back_to_the_newest, migrate as _migrate  # noqa: F401 (a fixture)

BEFORE = [("regressions", "0010_confirm_jobs")]
AFTER = [("regressions", "0013_regression_views")]


@pytest.mark.django_db(transaction=True)
def test_a_patchs_two_stored_regressions_become_one(back_to_the_newest):
    old = _migrate(BEFORE)
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

    new = _migrate(AFTER)
    Regression = new.get_model("regressions", "Regression")
    assert set(Regression.objects.values_list("comparison__reason", "comparison__candidate_kernel__git_commit")) == {
        ("parent", "a2"), ("parent", "b2"), ("series-base", "b2")}
    a = Regression.objects.get(pk=opened["a", "parent"].pk)
    assert list(a.views.values_list("reason", flat=True)) == ["series-base"]
    assert Regression.objects.get(pk=kept.pk).state == "acknowledged"
