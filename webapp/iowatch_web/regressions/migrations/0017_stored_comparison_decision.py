# Issue 43: a stored comparison keeps what iowatch.judging decided (its state,
# whether it stands behind a regression, its failed cells and each column's
# state), so that no page works it out again from the cells. The rows stored
# before are filled by the policy itself: judging's failed-cell rule on the
# comparison's stored runs (pooled as a side is: a skipped cell is none), and
# decision_of on its stored deciding cells and canary finding.
# (Helper h43's migration: renumber it at merge if another 0017 lands first.)

from django.db import migrations, models

from iowatch.judging.policy import decision_of, failed_cells
from iowatch.side_data import Side, pool


def _side(runs, Cell, Repetition) -> Side:
    """The runs as manifests with what the failed-cell rule reads: the devices'
    classes, the cells' status and their repetitions' status (no samples)."""
    manifests = []
    for run in runs:
        reps = {}
        for cell_id, status in Repetition.objects.filter(cell__run=run).values_list("cell_id", "status"):
            reps.setdefault(cell_id, []).append({"status": status, "samples": []})
        cells = [{"study": slug, "device": device, "filesystem": filesystem, "status": status,
                  "repetitions": reps.get(pk, [])}
                 for pk, slug, device, filesystem, status in Cell.objects.filter(run=run).values_list(
                     "pk", "study__slug", "device__name", "filesystem", "status")]
        devices = [{"name": name, "class": device_class}
                   for name, device_class in run.devices.values_list("name", "device_class")]
        manifests.append({"run_id": str(run.run_id), "devices": devices, "cells": cells})
    return Side("stored", "the store", manifests)


def fill(apps, schema_editor):
    StoredComparison = apps.get_model("regressions", "StoredComparison")
    Cell, Repetition = apps.get_model("results", "Cell"), apps.get_model("results", "Repetition")
    for comparison in StoredComparison.objects.all().iterator():
        failed = failed_cells(pool(_side(comparison.base_runs.all(), Cell, Repetition)),
                              pool(_side(comparison.candidate_runs.all(), Cell, Repetition)))
        cells = [((slug, device_class), outcome) for slug, device_class, outcome
                 in comparison.cells.values_list("study__slug", "device_class", "outcome")]
        decision = decision_of(cells, failed, comparison.platform_drifted)
        for field in ("state", "regressed", "failed_cells", "column_states"):
            setattr(comparison, field, decision[field])
        comparison.save(update_fields=["state", "regressed", "failed_cells", "column_states"])


class Migration(migrations.Migration):

    dependencies = [
        ('regressions', '0016_cancelled_jobs'),
        ('results', '0010_agent_hosts'),
    ]

    operations = [
        migrations.AddField(
            model_name='storedcomparison',
            name='column_states',
            field=models.JSONField(blank=True, default=list, help_text='the state of each study and device class: {study, device_class, state}'),
        ),
        migrations.AddField(
            model_name='storedcomparison',
            name='failed_cells',
            field=models.JSONField(blank=True, default=list, help_text="the cells measured on both sides without a passed repetition on a side (iowatch.judging.FailedCell's fields)"),
        ),
        migrations.AddField(
            model_name='storedcomparison',
            name='regressed',
            field=models.BooleanField(default=False, help_text="a deciding cell's regression the comparison stands behind (Comparison.regressions)"),
        ),
        migrations.AddField(
            model_name='storedcomparison',
            name='state',
            field=models.CharField(choices=[('regression', 'regression'), ('failed', 'failed'), ('suspected', 'suspected'), ('unsure', 'unsure'), ('improvement', 'improvement'), ('no-change', 'no-change')], default='unsure', help_text="the comparison's state (iowatch.judging.PATCH_STATES)", max_length=12),
        ),
        migrations.RunPython(fill, migrations.RunPython.noop),
        migrations.AddConstraint(
            model_name='storedcomparison',
            constraint=models.CheckConstraint(condition=models.Q(('state__in', ['regression', 'failed', 'suspected', 'unsure', 'improvement', 'no-change'])), name='comparison_state_known'),
        ),
    ]
