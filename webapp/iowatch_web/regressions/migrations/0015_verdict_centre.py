# Issue 28: the two numbers a verdict's words compare (geometric means, or
# means), stored so the mail shows one number a side; older verdicts keep none.

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('regressions', '0014_stored_model_names'),
    ]

    operations = [
        migrations.AddField(
            model_name='storedverdict',
            name='base_centre',
            field=models.FloatField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name='storedverdict',
            name='candidate_centre',
            field=models.FloatField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name='storedverdict',
            name='centre_statistic',
            field=models.CharField(blank=True, db_default='', default='', help_text='"geometric mean" or "mean"', max_length=20),
        ),
    ]
