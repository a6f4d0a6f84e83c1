# Issue 44 item 9: an unsure cell says "not decidable within the cap (N)" when
# its estimate of runs exceeds the cap, so the cap is stored with the verdict.

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('regressions', '0020_stored_state_slower'),
    ]

    operations = [
        migrations.AddField(
            model_name='storedverdict',
            name='cap',
            field=models.PositiveIntegerField(blank=True, help_text='the most runs a side the cell\'s study allows (null: stored before it)', null=True),
        ),
        migrations.AlterField(
            model_name='storedverdict',
            name='needs_runs',
            field=models.PositiveIntegerField(blank=True, help_text='about how many more runs per side, only when within the cap', null=True),
        ),
    ]
