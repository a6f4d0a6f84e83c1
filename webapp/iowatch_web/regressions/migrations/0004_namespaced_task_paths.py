"""The web apps moved under one namespace (iowatch_web): queued verdict work
names its task by module path, so rows queued before the move are renamed
here, or a worker could not import them and their runs would wait for the
sweep."""
from django.db import migrations
from django.db.models import F, Value
from django.db.models.functions import Concat, Substr

OLD = "regressions.work."
NEW = "iowatch_web.regressions.work."


def forward(apps, schema_editor):
    Task = apps.get_model("django_tasks_database", "DBTaskResult")
    Task.objects.filter(task_path__startswith=OLD).update(
        task_path=Concat(Value(NEW), Substr(F("task_path"), len(OLD) + 1)))


def backward(apps, schema_editor):
    Task = apps.get_model("django_tasks_database", "DBTaskResult")
    Task.objects.filter(task_path__startswith=NEW).update(
        task_path=Concat(Value(OLD), Substr(F("task_path"), len(NEW) + 1)))


class Migration(migrations.Migration):
    dependencies = [
        ("regressions", "0003_dashboard_indexes"),
        ("django_tasks_database", "0021_conditional_partial_index_ordering"),
    ]
    operations = [migrations.RunPython(forward, backward)]
