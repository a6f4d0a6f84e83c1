"""A run's cell and sample counts, stored at ingest (issue 28); the runs
stored before are counted here once."""
from django.db import migrations, models
from django.db.models import Count, OuterRef, Subquery
from django.db.models.functions import Coalesce


def count_stored_runs(apps, schema_editor):
    Run, Cell, Sample = (apps.get_model("results", name) for name in ("Run", "Cell", "Sample"))

    def counted(rows, run: str):
        return Coalesce(Subquery(rows.filter(**{run: OuterRef("pk")}).order_by().values(run)
                                 .annotate(n=Count("pk")).values("n")), 0)

    Run.objects.update(cell_count=counted(Cell.objects, "run"),
                       sample_count=counted(Sample.objects, "cell__run"))


class Migration(migrations.Migration):

    dependencies = [
        ('results', '0007_study_is_its_slug'),
    ]

    operations = [
        migrations.AddField(
            model_name='run',
            name='cell_count',
            field=models.PositiveIntegerField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name='run',
            name='sample_count',
            field=models.PositiveBigIntegerField(blank=True, null=True),
        ),
        migrations.RunPython(count_stored_runs, migrations.RunPython.noop),
    ]
