"""{% published_values run %}: a published run's numbers as the post gave them
(dashboard/_published_values.html), for the run page to include by one line."""
from django import template

from iowatch_web.dashboard.published import published_values as values_of

register = template.Library()


@register.inclusion_tag("dashboard/_published_values.html")
def published_values(run):
    return {"run": run, **(values_of(run) if run.published else {"rows": [], "studies": []})}
