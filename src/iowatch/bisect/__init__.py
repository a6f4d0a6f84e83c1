"""Performance bisect: which commit between a good and a bad kernel made a cell
slower.

- search: the binary search over the commits (measure, judge against both ends,
  measure again while unsure, skip, narrow);
- job: a bisect job of the server's queue, worked by an agent (claim, steps,
  result).

Each step is judged by the policy (iowatch.judging.judge_step); how the judged
steps add up to the probability of each commit being the culprit is
statistics (iowatch.stats.oracle), read through iowatch.judging.culprit; the command line is
iowatch.commands.bisect.
"""
