# Issue 24: a cell undecided at the cap ends "no change within X%"; X is stored.

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('regressions', '0007_verdict_p_worse_family'),
    ]

    operations = [
        migrations.AddField(
            model_name='cellverdict',
            name='mde_pct',
            field=models.FloatField(blank=True, help_text="minimum detectable effect at these runs: the slowdown, in %, rounded up, not ruled out at 80% confidence; 'no change within X%' above the minimum effect", null=True),
        ),
    ]
