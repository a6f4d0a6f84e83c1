"""The decision of one comparison of two sides (compare_sides), with the policy's defaults.

Every verdict iowatch gives goes through `compare_sides`: `iowatch compare`,
the `iowatch check` report, the bisect's choice of what to follow, the
verdicts the server stores when a run arrives (webapp/iowatch_web/regressions), the
change points it confirms, the dashboard's compare, and every report format.
The two sides arrive through one interface (iowatch.side_data.Side: a list
of bundle-shaped manifests) from whichever adapter read them: a bundle
directory, the HTTP API, a study's published numbers, or the Django store
(webapp/iowatch_web/store/sides.py). This module decides:

- Which metrics judge a cell: the study's deciding metrics (`decides: true`
  in jobs/studies/*.yml), per job group. Every other metric is computed and
  shown as a diagnostic, and never opens a regression. A study unknown here
  has no deciding metric: its cells are all diagnostics.
- The minimum effect: the study file's `min_effect_pct` (DEFAULT_MIN_EFFECT, 5%), on the
  server too.
- The cap of repetitions a side: the study file's `max_runs` (default 20).
  It is part of the decision, not of one run: the looks' levels are shares of
  the false-discovery rate spread over the schedule up to the cap, so every
  path takes it from the same study file.
- The family over which the false-discovery rate is controlled: all the
  deciding cells of one comparison (one patch against its parent, one run
  against the previous one). A check of k patches is k families: its false
  alarm rate per patch is bounded by the rate, 5% by default.
- Failed cells: a cell whose repetitions all failed on a side gives no
  performance result. It is listed as failed, with the side, and a patch
  with a failed cell is never "no change".
- One-sample sides (published numbers) are judged by size only, and say so.
- The platform (the canary): a canary study's cells (`canary: true`, a
  workload no storage patch can change much, measured in every boot) never
  decide and never count as a regression. They are judged apart, one family,
  by the same test with the canary's own minimum effect; when a canary is
  confirmed changed between the two sides (either direction) or drifted
  between the rounds of a check beyond its minimum effect (the F test of
  iowatch.stats.blocks), the comparison carries the finding (`platform`) and
  is not confident: a regression, an improvement or "no change" becomes
  "unsure", with words that say the platform drifted (`platform_words`).
- When to add repetitions (`more_runs`): a deciding cell that is suspected
  or unsure gets more, up to its study's cap, at the look schedule of
  iowatch.stats.sequential; a cell stops as decided, as "no change" once the
  slowdown it could still hide is below the minimum effect, or at the cap.
  What is measured beside those cells, and for how many rounds, is
  iowatch.judging.next_measurement's: the ratio partners, the canaries, the
  rounds allowed and the bisect's step plan, for every path alike.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

from iowatch.cells import CellKey, CellLocation, Located
from iowatch.side_data import CellContext, PooledSide, Side, cell_passed, pool
from iowatch.judging.boots import History, boot_variances, one_boot, read_history
from iowatch.metrics import INFO, METRICS
from iowatch.vocabulary import (CONFIDENT_STATES, CONFIRMED_OUTCOMES, DEFAULT_CAP,
                                CANARY_FDR, DEFAULT_MIN_EFFECT, FDR,
                                PATCH_STATES, UNDECIDED_OUTCOMES, Outcome)
from iowatch.stats import (CellInput, CellVerdict, Confounder, compare_matrix, confounders,
                           next_target)
from iowatch.stats.blocks import DRIFT_P
from iowatch.stats.detectable import width_at_cap_pct
from iowatch.stats.sequential import POCOCK
from iowatch.studies import Study


def deciding(study: Study | None) -> set[tuple[str, str]]:
    """(group, metric) pairs that judge a cell of this study."""
    if study is None:
        return set()
    return study.deciding


def watched(study: Study | None) -> set[tuple[str, str]]:
    """(group, metric) pairs a canary study watches; none for other studies."""
    return study.watched if study is not None else set()


def min_effect(study: Study | None) -> float:
    return study.min_effect_pct if study is not None else DEFAULT_MIN_EFFECT


def max_runs(study: Study | None) -> int:
    """The study's cap of repetitions a side (DEFAULT_CAP for a study unknown here)."""
    return study.max_runs if study is not None else DEFAULT_CAP


# A deciding metric whose base side is so noisy that, at the study's cap, the
# change's 95% CI would be wider than NOISY_TIMES minimum effects cannot answer
# the study's question: it is shown, not judged, unless the study says why it
# decides (its metric's `why`, what the post decided on). Judged, it would hold
# the check to its cap and spend the family's false-discovery rate on a cell
# that ends "the study cannot decide this cell at this noise" (docs/verdicts.md,
# "Too noisy to decide"); the same factor as that wording's.
NOISY_TIMES = 3


def too_noisy(study: Study | None, group: str, metric: str, base: list[float]) -> float | None:
    """The CI half-width (%) at the cap that makes a deciding metric a diagnostic
    here (width_at_cap_pct of the base side's runs), or None when it decides:
    it is quiet enough, the study says why it decides, or the base has under 3
    runs (nothing to tell)."""
    if study is None or (group, metric) in study.decides_why:
        return None
    width = width_at_cap_pct(base, max_runs(study))
    return width if width is not None and width > NOISY_TIMES * min_effect(study) else None


@dataclass(frozen=True)
class FailedCell(Located):
    """A cell that ran on a side without a single passed repetition."""
    study: str
    device_class: str
    device: str
    filesystem: str
    side: str  # "base", "candidate" or "both"
    status: str

    @classmethod
    def at(cls, where: CellLocation, side: str, status: str) -> FailedCell:
        return cls(where.study, where.device_class, where.device, where.filesystem, side, status)


def _signed(x: float) -> str:
    return f"{x:+.1f}%" if abs(x) < 10 else f"{x:+.0f}%"


@dataclass(frozen=True)
class PlatformDrift:
    """A canary that moved: the platform changed under the comparison.

    between "kernels": the canary's A/B of the two sides is a confirmed
    change, either way (its outcome is a regression or an improvement at its
    own minimum effect); the change and its CI are the A/B's. between
    "rounds": its rounds' levels differ beyond chance (F's p <= DRIFT_P) and
    by at least its minimum effect; the change is the fastest round's level
    against the slowest's, later against earlier, and the CI that drift's."""
    canary: CellVerdict
    between: str  # "kernels" or "rounds"

    @property
    def change_pct(self) -> float:
        v = self.canary
        return v.change_pct if self.between == "kernels" else v.drift_pct

    @property
    def ci(self) -> tuple[float, float] | None:
        v = self.canary
        if self.between == "kernels":
            return (v.ci_low, v.ci_high) if v.ci_low is not None else None
        return v.drift_ci

    @property
    def words(self) -> str:
        k = self.canary.key
        ci = f", CI {_signed(self.ci[0])}..{_signed(self.ci[1])}" if self.ci else ""
        where = "between the kernels" if self.between == "kernels" else \
            f"between rounds {self.canary.drift_rounds[0]} and {self.canary.drift_rounds[1]}"
        return f"canary {k.study} {k.metric} moved {_signed(self.change_pct)}{ci}, {where}"


def platform_findings(canary: CellVerdict) -> list[PlatformDrift]:
    """What one canary's verdict says of the platform: nothing when it held."""
    out = []
    if canary.outcome in CONFIRMED_OUTCOMES:
        out.append(PlatformDrift(canary, "kernels"))
    if canary.drift_p is not None and canary.drift_p <= DRIFT_P and \
            canary.drift_pct is not None and abs(canary.drift_pct) >= canary.min_effect_pct:
        out.append(PlatformDrift(canary, "rounds"))
    return out


@dataclass
class Comparison:
    base: Side
    candidate: Side
    fdr: float
    verdicts: list[CellVerdict]  # the deciding cells, one family
    confounders: list[Confounder]
    context: dict[CellLocation, CellContext]
    studies: dict[str, Study]
    diagnostics: list[CellVerdict] = field(default_factory=list)  # shown, never judged
    failed: list[FailedCell] = field(default_factory=list)
    # The canaries' cells, a family of their own: the platform, never the patch.
    canaries: list[CellVerdict] = field(default_factory=list)
    # Deciding metrics shown among the diagnostics, too noisy for their study:
    # the cell's key -> its CI half-width (%) at the cap (too_noisy).
    too_noisy: dict[CellKey, float] = field(default_factory=dict)

    @property
    def platform(self) -> list[PlatformDrift]:
        """The canaries' findings: empty while the platform held (or had no canary)."""
        return [d for v in self.canaries for d in platform_findings(v)]

    @property
    def caps(self) -> list[int]:
        """The caps of repetitions a side of the deciding cells, smallest first."""
        return sorted({v.cap for v in self.verdicts})

    @property
    def boots_a_side(self) -> tuple[int, int] | None:
        """The fewest boots a side over the deciding cells (base, candidate); None
        without a cell judged beyond its size (issue 41 item 1)."""
        counts = [v.boot_counts for v in self.verdicts if v.boot_counts]
        if not counts:
            return None
        return min(b for b, _ in counts), min(c for _, c in counts)

    @property
    def recorded_boots(self) -> str | None:
        """The words of the host's recorded variance between boots that stood in
        for one-boot sides (the deciding cell with the most recorded boots); None
        when none did."""
        recorded = [v.boot_variance for v in self.verdicts if v.boot_variance is not None]
        return max(recorded, key=lambda r: r.boots).words if recorded else None

    @property
    def regressions(self) -> list[CellVerdict]:
        """The regressions the comparison stands behind: none while the platform
        drifted (each cell's verdict still says what its test found)."""
        if self.platform:
            return []
        return [v for v in self.verdicts if v.outcome == "regression"]

    @property
    def suspected(self) -> list[CellVerdict]:
        return [v for v in self.verdicts if v.outcome == "suspected"]

    @property
    def unsure(self) -> list[CellVerdict]:
        return [v for v in self.verdicts if v.outcome in UNDECIDED_OUTCOMES]

    @property
    def state(self) -> str:
        """The comparison in one word (PATCH_STATES): never "no-change" while a
        deciding cell is unsure or failed, and never confident (a regression,
        an improvement, "no change") while the platform drifted: "unsure"."""
        return state_of([v.outcome for v in self.verdicts], bool(self.failed), bool(self.platform))

    @property
    def decision(self) -> dict:
        """What a store keeps of the comparison (decision_of)."""
        return decision_of((((v.key.study, v.key.device_class), v.outcome) for v in self.verdicts),
                           self.failed, bool(self.platform))


def state_of(outcomes, failed: bool = False, platform_drifted: bool = False) -> str:
    """The state (PATCH_STATES) of a comparison whose deciding cells have these
    outcomes: Comparison.state, and a stored comparison's (decision_of)."""
    found = {Outcome(o) for o in outcomes} | ({Outcome.FAILED} if failed else set())
    state = min(found, key=lambda o: o.rank).state if found else Outcome.UNSURE.state
    return Outcome.UNSURE.state if state in CONFIDENT_STATES and platform_drifted else state


def failed_cells(base: PooledSide, candidate: PooledSide) -> list[FailedCell]:
    """The cells measured on both pooled sides without one passed repetition on
    a side (a skipped cell is none: pool leaves it out)."""
    bcells, ccells = base.cells, candidate.cells
    failed = []
    for where in sorted(set(bcells) & set(ccells)):
        sides = [role for role, cells in (("base", bcells), ("candidate", ccells))
                 if not cell_passed(cells[where])]
        if sides:
            cell = (ccells if "candidate" in sides else bcells)[where]
            failed.append(FailedCell.at(where, side="both" if len(sides) == 2 else sides[0],
                                        status=cell.get("status") or "failed"))
    return failed


def column_states(cells, failed, platform_drifted: bool = False) -> dict[tuple[str, str], str]:
    """The state of each (study, device class) of a comparison by state_of's
    rule, from its deciding cells as ((study, device class), outcome) and its
    failed cells' (study, device class): what a series page's chip says."""
    outcomes: dict[tuple[str, str], list[str]] = {}
    for column, outcome in cells:
        outcomes.setdefault(column, []).append(outcome)
    bad = set(failed)
    return {column: state_of(outcomes.get(column, []), column in bad, platform_drifted)
            for column in sorted(set(outcomes) | bad)}


def decision_of(cells, failed: list[FailedCell], platform_drifted: bool = False) -> dict:
    """A comparison's decision as plain data, what a store keeps so that its
    readers never work it out again: the state, whether it stands behind a
    regression (Comparison.regressions: one is a state of "regression"), the
    failed cells and the state of each (study, device class). `cells` are its
    deciding cells as ((study, device class), outcome)."""
    cells = list(cells)
    state = state_of([outcome for _, outcome in cells], bool(failed), platform_drifted)
    columns = column_states(cells, ((f.study, f.device_class) for f in failed), platform_drifted)
    return {"state": state, "regressed": state == Outcome.REGRESSION.state,
            "platform_drifted": platform_drifted, "failed_cells": [asdict(f) for f in failed],
            "column_states": [{"study": study, "device_class": device_class, "state": column}
                              for (study, device_class), column in columns.items()]}


def compare_sides(base: Side, candidate: Side, *, studies: dict[str, Study],
                  fdr: float = FDR, history: History | None = None) -> Comparison:
    """Pair the two sides' cells and judge the deciding ones as one family.
    `history`: the host's runs of other kernels booted more than once
    (iowatch.judging.boots), read only when a judged cell is one boot a side."""
    b, c = pool(base), pool(candidate)
    bv, cv, bcells, ccells = b.values, c.values, b.cells, c.cells
    host = c.hosts if b.hosts == c.hosts else f"{b.hosts} -> {c.hosts}"
    recorded = _recorded(b, c, history, studies)
    judged, shown, watching, noisy = [], [], [], {}
    for key in sorted(set(bv) & set(cv)):
        cell_key = CellKey.on_host(key, host)
        study, metric = studies.get(cell_key.study), cell_key.metric
        decides, watches = (cell_key.group, metric) in deciding(study), \
            (cell_key.group, metric) in watched(study)
        if decides and (width := too_noisy(study, cell_key.group, metric, bv[key])) is not None:
            noisy[cell_key], decides = width, False
        if decides or watches:
            # Each side's values with their boots: the test is on boot means
            # when a side's repetitions came from two boots or more; with the
            # rounds of a check (blocks) when every value has one, the change
            # is judged within rounds if the platform drifted between them.
            rb, rc = b.rounds.get(key), c.rounds.get(key)
            blocked = rb and rc and None not in rb and None not in rc
            (judged if decides else watching).append(
                CellInput(cell_key, bv[key], cv[key], METRICS[metric].direction,
                          min_effect(study), max_runs(study),
                          base_boots=b.boots[key], candidate_boots=c.boots[key],
                          base_rounds=rb if blocked else None,
                          candidate_rounds=rc if blocked else None,
                          boot_variance=recorded.get(key)))
        elif study is not None and study.canary:
            continue  # a canary's other metrics: neither the patch's nor the platform's say
        elif METRICS[metric].direction != INFO:
            shown.append(CellInput(cell_key, bv[key], cv[key], INFO, min_effect(study),
                                   max_runs(study)))
    verdicts = compare_matrix(judged, fdr=fdr, cap=DEFAULT_CAP)
    diagnostics = compare_matrix(shown, fdr=fdr, cap=DEFAULT_CAP)
    # The canaries are their own family: a moved platform must not spend, nor
    # borrow, the deciding cells' false-discovery rate or variance prior.
    # They are judged at their own rate, spent early (vocabulary.CANARY_FDR).
    canaries = compare_matrix(watching, fdr=CANARY_FDR, cap=DEFAULT_CAP, spending=POCOCK)
    failed = failed_cells(b, c)
    context = {where: CellContext(device_model=c.device_models.get(where.device)
                                  or b.device_models.get(where.device),
                                  candidate_cell=ccells[where])
               for where in set(bcells) & set(ccells)}
    conf: list[Confounder] = []
    if base.runs and candidate.runs:
        # Pooled sides: compare the first run of each; pooled runs of one kernel share a setup.
        conf = confounders(base.runs[0], candidate.runs[0])
    return Comparison(base, candidate, fdr, verdicts, conf, context, studies, diagnostics,
                      failed, canaries, noisy)


def _recorded(b: PooledSide, c: PooledSide, history: History | None,
              studies: dict[str, Study]) -> dict:
    """The recorded variance between boots of each judged cell with a side of
    one boot (iowatch.judging.boots): both sides one boot, or one against a few
    boots, whose boot means alone leave the test few degrees of freedom; none
    across two hosts, whose boots no one host's history describes."""
    if history is None or b.hosts != c.hosts:
        return {}
    keys = [key for key in set(b.values) & set(c.values)
            if (key.group, key.metric) in deciding(studies.get(key.study))
            | watched(studies.get(key.study))
            and (one_boot(b, key) or one_boot(c, key))]
    return boot_variances(read_history(history), keys, c.hosts) if keys else {}


def platform_words(cmp: Comparison) -> str:
    """The canaries' result in one line, for every report of a comparison: the
    drift with what to do when the platform moved, else what the canary
    measured; "" when no canary was measured on both sides."""
    if cmp.platform:
        return ("the platform drifted (" + "; ".join(d.words for d in cmp.platform)
                + "): rerun on a quiet host")
    said = []
    for v in cmp.canaries:
        k = v.key
        if v.change_pct is None:
            said.append(f"canary {k.study} {k.metric} not comparable")
            continue
        ci = f", CI {_signed(v.ci_low)}..{_signed(v.ci_high)}" if v.ci_low is not None else ""
        rounds = f", rounds apart by {_signed(v.drift_pct)}" if v.drift_pct is not None else ""
        said.append(f"canary {k.study} {k.metric} {_signed(v.change_pct)}{ci} between "
                    f"the kernels{rounds} [{v.base.n} vs {v.candidate.n} runs]")
    if not said:
        return ""
    minimum = max(v.min_effect_pct for v in cmp.canaries)
    return (f"the platform held ({'; '.join(said)}): no move of {minimum:g}% or more confirmed")


@dataclass(frozen=True)
class RunsWanted:
    """The repetitions a side should reach in a cell: the next look of each side."""
    base: int
    candidate: int


def more_runs(cmp: Comparison) -> dict[CellLocation, RunsWanted]:
    """Cells that need more repetitions, with the count each side should
    reach: the next look of the schedule for each side, never past the cell's cap. A
    cell whose sides are both at the cap is left as it is: its verdict says
    the budget is spent."""
    want: dict[CellLocation, RunsWanted] = {}
    for v in cmp.verdicts:
        if v.outcome not in UNDECIDED_OUTCOMES or v.size_only or v.budget_spent or v.one_boot:
            continue  # one_boot: more runs of the same boot cannot confirm it
        nb, nc = v.base.n, v.candidate.n
        target = (next_target(nb, cap=v.cap), next_target(nc, cap=v.cap))
        if target[0] > nb or target[1] > nc:
            where = v.key.location
            old = want.get(where, RunsWanted(0, 0))
            want[where] = RunsWanted(max(old.base, target[0]), max(old.candidate, target[1]))
    return want
