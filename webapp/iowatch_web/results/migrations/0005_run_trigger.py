# What started a run: a nightly's trigger (issue 14).

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('results', '0004_series_mail'),
    ]

    operations = [
        migrations.AddField(
            model_name='run',
            name='trigger',
            field=models.JSONField(blank=True, default=dict),
        ),
    ]
