"""Performance bisect: which commit between a good and a bad kernel made a cell
slower.

- search: the binary search over the commits (measure, place, skip, narrow);
- job: a bisect job of the server's queue, worked by an agent (claim, steps,
  result).

The oracle that says which end a measured commit resembles is statistics and
lives in iowatch.stats.oracle; the command line is iowatch.commands.bisect.
"""
