"""A Regression holds the other comparisons of its change (issue 28: one
regression per patch, regressions/grouping.py): the field, and the stored
pairs folded, a patch's untriaged series-base regression into its parent's.

At merge: depends on the newest regressions migration before it (0011 on main)."""

from django.db import migrations, models


def fold(apps, schema_editor):
    """Each untriaged series-base regression whose patch's parent comparison
    has a regression becomes a view of that one (a triaged one stays)."""
    Regression = apps.get_model("regressions", "Regression")
    for alone in (Regression.objects.filter(comparison__reason="series-base", state="new",
                                            events__isnull=True)
                  .select_related("comparison")):
        c = alone.comparison
        parent = Regression.objects.filter(
            comparison__reason="parent", comparison__host_id=c.host_id,
            comparison__matrix=c.matrix, comparison__candidate_kernel_id=c.candidate_kernel_id).first()
        if parent is not None:
            parent.views.add(c)
            alone.delete()


class Migration(migrations.Migration):

    dependencies = [
        ('regressions', '0012_change_point_min_effect'),
    ]

    operations = [
        migrations.AddField(
            model_name='regression',
            name='views',
            field=models.ManyToManyField(blank=True, help_text='other comparisons of the same change', related_name='shown_in', to='regressions.comparison'),
        ),
        migrations.RunPython(fold, migrations.RunPython.noop),
    ]
