"""The retention app: a year of nightlies stays fast.

Samples of runs older than a window are summarised per run, cell, job group
and metric (retention.models.SampleSummary) and their rows removed; the raw
artifacts stay, so a re-parse can rebuild them. Every reader of group-level
values goes through store.values.sample_values, which merges raw samples
and summaries, so judging, change points and the history read the same
numbers before and after."""
