# A kernel's config hash and a series' base stored as "" become
# NULL, as ingest now stores them, so a later bundle that writes null for the
# same kernel finds the row instead of breaking the unique key (issue 28).
# The keys coalesce NULL to "", so no two rows can collide by this.

from django.db import migrations

EMPTY_MEANS_NULL = {"kernel": ("config_hash",), "patchseries": ("base",)}


def empty_to_null(apps, schema_editor):
    for model_name, fields in EMPTY_MEANS_NULL.items():
        model = apps.get_model("results", model_name)
        for name in fields:
            model.objects.filter(**{name: ""}).update(**{name: None})


class Migration(migrations.Migration):

    dependencies = [
        ('results', '0005_run_trigger'),
    ]

    operations = [
        migrations.RunPython(empty_to_null, migrations.RunPython.noop),
    ]
