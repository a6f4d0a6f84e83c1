"""{% load figures %}: iowatch.figures as template filters, so a page writes a
number as the reports and the mail do ({{ c.change_pct|change }},
{{ c.ci_low|ci:c.ci_high }}, {{ c.p_adjusted|p_value }}, {{ s.median|with_unit:s.unit }})."""
from django import template

from iowatch import figures

register = template.Library()


@register.filter
def change(pct):
    return figures.change(pct)


@register.filter
def ci(low, high):
    return figures.ci(low, high)


@register.filter
def p_value(p):
    return figures.p_value(p)


@register.filter
def with_unit(v, unit):
    return figures.with_unit(v, unit or "")


@register.filter
def value(v):
    return figures.value(v)
