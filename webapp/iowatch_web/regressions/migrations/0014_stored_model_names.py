"""The stored verdict models named for what they are (issue 27): the library's
Comparison, CellVerdict and ChangePoint are dataclasses (iowatch.judging,
iowatch.stats); the rows that keep them are StoredComparison, StoredVerdict
and StoredChangePoint. RenameModel keeps every row: it renames the tables
(and the comparison's many-to-many tables and columns); the explicit index
and constraint names stay as they were."""

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('regressions', '0013_regression_views'),
    ]

    operations = [
        migrations.RenameModel(old_name='Comparison', new_name='StoredComparison'),
        migrations.RenameModel(old_name='CellVerdict', new_name='StoredVerdict'),
        migrations.RenameModel(old_name='ChangePoint', new_name='StoredChangePoint'),
    ]
