"""The claims subject: what a post or a patch mail says a change does to
performance, and how iowatch tests it. The claim verdict itself (reproduced,
not reproduced, opposite, not reproducible here, not comparable) is the
policy's (iowatch.judging.claims); this package finds the claims and the
runs to judge them on.

- `mail`: the claims of a mail as kernel developers paste them (fio and
  fs_mark output, before/after tables), and the study their workload matches
  (`iowatch claims`).
- `mail_study`: a study made from a mail's own workload when no study has it.
- `series`: the claims a series' own mails make, judged by `iowatch check`
  on each patch against its parent.
- `seeds`: the five seed posts reproduced on Linux 6.12 (`iowatch reproduce`,
  the Published results page), with their claims table.
"""
