"""A check of a patch series: build every cumulative variant, run the matrix on
each in the virtual lab, store the results, and say which patch changed what.

Each variant is compared with its parent (which patch did it) and with the
base (where the series ends up). Build and boot failures are recorded as such,
never as performance results.
"""
from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

from iowatch import bundle, exit_status, figures, paths, progress, resources
from iowatch.bundle import BundleWriter
from iowatch.side_data import Side, in_round
from iowatch.judging import Comparison, compare_sides, platform_words
from iowatch.vocabulary import ci_name
from iowatch.judging.adaptive import adapt
from iowatch.judging.boots import History
from iowatch.judging.next_measurement import next_measurement, rounds_allowed
from iowatch.inventory import Host
from iowatch.kernel.build import Plan, Variant, build_variant, configure, make_variants
from iowatch.kernel.series import Series
from iowatch.stats.sequential import FIRST
from iowatch.vocabulary.outcomes import UNDECIDED_STATES, Outcome, noisy_matrix_words, verdict_label
from iowatch.studies import load_matrix, load_studies
from iowatch.vlab import boot_and_run, guest_run_command, note_device_models
from iowatch.yamlfile import DataFileError


# At most this many repetitions of a side in one boot (issue 24 item 1): one,
# a new boot per repetition, as Pinpoint runs a new bot task per run. A boot
# moves all its repetitions together, so the verdict's degrees of freedom are
# the boots (judging tests boot means when boots differ): on boot-clustered
# draws with 25% of the variance between boots a -20% cell is confirmed in 98%
# at one a boot and 91% at two (bench/accuracy/check_boots.py; docs/verdicts.md,
# "The check's boots"). The price is a boot per repetition: 16-19 s under TCG
# here, about 3 s under KVM. `iowatch check --reps-per-boot N` trades it back.
REPS_PER_BOOT = 1


@dataclass
class VariantRun:
    variant: Variant
    bundle: Path | None = None
    status: str = "pending"        # passed, failed, build-failed, boot-failed, apply-failed
    reason: str = ""
    accel: str | None = None
    boot_s: float | None = None
    matrix_s: float | None = None
    vs_parent: Comparison | None = None
    extra: list[Path] = field(default_factory=list)  # bundles of the rounds that added repetitions
    rounds: list[int] = field(default_factory=list)  # the round of each of `extra`


@dataclass
class CheckResult:
    series: Series
    plan: Plan
    runs: list[VariantRun] = field(default_factory=list)
    phases: dict[str, float] = field(default_factory=dict)
    claims: list[dict] = field(default_factory=list)  # the patch mails' claims judged (claims.series)
    # The host's record of its noise between boots (iowatch.judging.boots), for a
    # variant measured in one boot: a check directory made before round 0 booted
    # every variant twice, judged again (`--history`).
    history: History | None = None

    @property
    def regressing_patches(self) -> list[VariantRun]:
        return [r for r in self.runs if r.vs_parent and r.vs_parent.regressions]

    @property
    def unsure_patches(self) -> list[VariantRun]:
        """Patches whose comparison with their parent is suspected, unsure or failed."""
        return [r for r in self.runs if r.vs_parent and not r.vs_parent.regressions
                and r.vs_parent.state in (*UNDECIDED_STATES, Outcome.FAILED.state)]


def failure_bundle(out: Path, v: Variant, plan: Plan, host: Host, status: str,
                    reason: str, extra: dict) -> Path:
    """A variant that did not build or boot: a bundle that says so, with no cells."""
    series = plan.series.record(plan.base)
    mail = next((p for p in series.get("patches", []) if p["index"] == v.index), {})
    w = BundleWriter(out, run_id=str(uuid.uuid4()),
                     kernel={"release": v.release or f"unbuilt-{v.commit[:12] or 'none'}",
                             **({"git_commit": v.commit} if v.commit else {}),
                             "series": series,
                             "patch": {"index": v.index, "subject": v.subject,
                                       **({"commit": v.commit} if v.commit else {}),
                                       **{k: mail[k] for k in ("message_id", "author") if k in mail}}},
                     host=host.bundle_entry(),
                     devices=[d.bundle_entry() for d in host.devices],
                     environment={"failure": {"status": status, "reason": reason[-4000:], **extra}},
                     label=v.label)
    w.close(status)
    return out


def run_check(tree: Path, base_ref: str, series: Series, host: Host, inventory: Path,
              matrix: str, out: Path, *, profile: str | None = None, reps: int | None = None,
              per_boot: int = REPS_PER_BOOT, store: Callable[[Path], None] = lambda p: None,
              say: Callable[[str], None] = print, echo_console: bool = False) -> CheckResult:
    """Build, boot and measure every variant, then the adaptive rounds. out/check.json
    (summary) is written after the first round and after every later one, so a
    check that dies on the way leaves what it measured judgeable
    (`iowatch reproduce --from`, or the bundles themselves)."""
    t_all = time.monotonic()
    plan = make_variants(tree, base_ref, series)
    result = CheckResult(series, plan)
    check_id = uuid.uuid4().hex  # each bundle records it with its round (check_round)
    t0 = time.monotonic()
    configure(plan)
    result.phases["configure"] = time.monotonic() - t0
    say(f"check: {len(series.patches)} patches of {series.name} on {plan.base[:12]}; "
        f"matrix {matrix} on {host.name}")
    first, *later = first_round_boots(reps or matrix_reps(matrix), per_boot)
    for v in plan.variants:
        if v.status == "apply-failed":
            result.runs.append(VariantRun(v, status="apply-failed", reason=v.error or ""))
            say(f"variant {v.index}: patch does not apply:\n{v.error}")
            break
        result.runs.append(run_variant(plan, v, host, inventory, matrix, out, profile=profile,
                                       reps=first, store=store, say=say, echo_console=echo_console,
                                       phases=result.phases, check_id=check_id))
    boots: dict[tuple[int, int], int] = {}  # (variant, round) -> boots so far

    def booted(vr: VariantRun, round_no: int) -> str:
        """The directory name of the variant's next boot in the round."""
        k = boots[vr.variant.index, round_no] = boots.get((vr.variant.index, round_no), 0) + 1
        if not round_no:
            return f"{vr.variant.index:02d}-boot{k + 1}"  # the first boot is variant-NN itself
        return f"{vr.variant.index:02d}-round{round_no}" + (f"-boot{k}" if k > 1 else "")

    def boot_again(vr: VariantRun, reps: int) -> VariantRun:
        times: dict[str, float] = {}
        name = booted(vr, 0)
        again = run_variant(plan, vr.variant, host, inventory, matrix, out / f"variant-{name}",
                            profile=profile, reps=reps, store=store, say=say,
                            echo_console=echo_console, shared_name=f"guest-{name}", phases=times,
                            check_id=check_id)
        _add_times(result.phases, times)  # round 0's boot and matrix times hold all its boots
        return again

    second_boots(result, boot_again, later, say)

    def measure_more(vr: VariantRun, cells: list[str], reps: int, round_no: int) -> VariantRun:
        times: dict[str, float] = {}
        name = booted(vr, round_no)
        again = run_variant(plan, vr.variant, host, inventory, matrix, out / f"variant-{name}",
                            profile=profile, reps=reps, cells=cells, store=store, say=say,
                            echo_console=echo_console, shared_name=f"guest-{name}", phases=times,
                            round_no=round_no, check_id=check_id)
        _add_times(result.phases, times)  # a round's boot and matrix times hold all its boots
        return again

    add_repetitions(result, measure_more, say, per_boot=per_boot,
                    on_compare=lambda: write_summary(result, out))
    result.phases["total"] = time.monotonic() - t_all
    write_summary(result, out)
    return result


def boot_sizes(reps: int, per_boot: int = REPS_PER_BOOT) -> tuple[int, ...]:
    """`reps` repetitions of a side split over boots of at most `per_boot`, as
    even as they can be, larger first: boot_sizes(5, 2) == (2, 2, 1)."""
    if reps <= 0:
        return ()
    n = -(-reps // max(per_boot, 1))
    return tuple(reps // n + (i < reps % n) for i in range(n))


def _add_times(phases: dict[str, float], times: dict[str, float]) -> None:
    for key, secs in times.items():
        phases[key] = phases.get(key, 0.0) + secs


def first_round_boots(reps: int, per_boot: int = REPS_PER_BOOT) -> tuple[int, ...]:
    """The first round's repetitions a side, split over boots (boot_sizes) and
    never fewer than two: one boot a side cannot confirm anything (its
    between-boot noise is unmeasured, docs/verdicts.md). Fewer than 2
    repetitions: one boot."""
    sizes = boot_sizes(reps, per_boot)
    if len(sizes) == 1 and reps >= 2:
        sizes = (reps - reps // 2, reps // 2)
    return sizes


def matrix_reps(matrix: str) -> int:
    try:
        return load_matrix(matrix).reps
    except (OSError, DataFileError):  # the guest says what is wrong with it; split the first look
        return FIRST


def second_boots(result: CheckResult, boot_again: Callable[[VariantRun, int], VariantRun],
                 reps: int | Sequence[int], say: Callable[[str], None] = print) -> int:
    """Round 0's later boots of every measured variant, after the first boot of
    all of them and interleaved (v0 v1 v2 v0 v1 v2 ..., as Pinpoint
    interleaves): `reps` is each later boot's repetitions (first_round_boots
    after the first), and boot_again(variant, repetitions) boots it again and
    runs the whole matrix. All are round 0, one block of the rounds' drift
    test. Returns the boots that measured."""
    sizes = [reps] if isinstance(reps, int) else list(reps)
    measured = measured_runs(result)
    done = 0
    for k, n in enumerate(sizes, start=2):
        for vr in measured if n > 0 else []:
            say(f"variant {vr.variant.index}: boot {k} of the first round, {n} repetitions")
            again = boot_again(vr, n)
            if again.status in ("passed", "failed") and again.bundle:
                vr.extra.append(again.bundle)
                vr.rounds.append(0)
                done += 1
    return done


def add_repetitions(result: CheckResult,
                    measure_more: Callable[[VariantRun, list[str], int, int], VariantRun],
                    say: Callable[[str], None] = print, per_boot: int = REPS_PER_BOOT,
                    on_compare: Callable[[], None] = lambda: None) -> int:
    """Compare, then while a patch's comparison with its parent has unsure
    deciding cells, measure both sides of it again (only those cells, as many
    repetitions as the next look needs, in boots of at most `per_boot`
    interleaved between the variants: measure_more(variant, cell ids,
    repetitions, round) boots it once) and compare again, for at most the
    rounds judging allows (next_measurement.rounds_allowed: 3 for 20 a side).
    What each round measures is judging's too (next_measurement: the unsure
    cells, their ratio partners and the canaries). on_compare() hears each
    comparison (the check writes its summary then). Returns the rounds taken."""
    def judge() -> CheckResult:
        compare_with_parents(result)
        on_compare()
        return result

    def measure(wants: dict[int, dict[str, int]], round_no: int) -> bool:
        by_index = {r.variant.index: r for r in result.runs}
        t_round = time.monotonic()
        plan = {index: boot_sizes(max(cells.values()), per_boot) for index, cells in wants.items()}
        for index, cells in sorted(wants.items()):
            say(f"variant {index}: unsure cells, {sum(plan[index])} more repetitions of "
                f"{', '.join(sorted(cells))} in {len(plan[index])} boot(s) (round {round_no})")
        for k in range(max(len(sizes) for sizes in plan.values())):  # v0 v1 v2 v0 v1 v2 ...
            for index in sorted(plan):
                if k < len(plan[index]):
                    extra = measure_more(by_index[index], sorted(wants[index]), plan[index][k],
                                         round_no)
                    if extra.status in ("passed", "failed") and extra.bundle:
                        by_index[index].extra.append(extra.bundle)
                        by_index[index].rounds.append(round_no)
        result.phases[f"round {round_no}"] = time.monotonic() - t_round
        return True  # a round whose boots failed still ends: the next asks again

    max_rounds = rounds_allowed(r.vs_parent for r in judge().runs if r.vs_parent)
    return adapt(judge, _wanted_repetitions, measure, max_rounds=max_rounds, first=result).rounds


def _wanted_repetitions(result: CheckResult) -> dict[int, dict[str, int]]:
    """variant index -> cell id -> repetitions to add: what judging's
    next_measurement asks of each patch's comparison with its parent (ratio
    partners and canaries included), the parent's side on the parent."""
    studies = load_studies(resources.studies_dir())
    wants: dict[int, dict[str, int]] = {}
    for cur in result.runs:
        if cur.vs_parent is None:
            continue
        parent = _parent(result, cur)
        for cell_id, want in next_measurement(cur.vs_parent, studies).cells.items():
            for vr, add in ((parent, want.add_base), (cur, want.add_candidate)):
                if vr is not None and add > 0:
                    cells = wants.setdefault(vr.variant.index, {})
                    cells[cell_id] = max(cells.get(cell_id, 0), add)
    return wants


def measured_runs(result: CheckResult) -> list[VariantRun]:
    """The variants that ran their matrix (passed, or some cells failed), in order."""
    return [r for r in result.runs if r.status in ("passed", "failed") and r.bundle]


def _parent(result: CheckResult, cur: VariantRun) -> VariantRun | None:
    measured = measured_runs(result)
    earlier = [r for r in measured if r.variant.index < cur.variant.index]
    return earlier[-1] if earlier else None


def run_variant(plan: Plan, v: Variant, host: Host, inventory: Path, matrix: str, out: Path, *,
                profile: str | None = None, reps: int | None = None,
                store: Callable[[Path], None] = lambda p: None, say: Callable[[str], None] = print,
                echo_console: bool = False, phases: dict[str, float] | None = None,
                cells: list[str] | None = None, shared_name: str | None = None,
                round_no: int = 0, check_id: str | None = None) -> VariantRun:
    """Build one variant, boot it in the virtual lab and run the matrix: its bundle
    (a failure bundle when it does not build or boot) is stored either way. A
    check's bundle records the check and the round it was measured in
    (check_round), so the server can judge the check's rounds as blocks too."""
    phases = {} if phases is None else phases
    in_round = f" round {round_no}" if round_no else ""
    series = plan.series
    vr = VariantRun(v)
    vdir = out / f"variant-{v.index:02d}"
    t0 = time.monotonic()
    if not (v.status == "built" and v.artifacts and (Path(v.artifacts) / "bzImage").is_file()):
        build_variant(plan, v)  # a variant measured again keeps the kernel it has
        phases[f"build {v.index}"] = time.monotonic() - t0
    if v.status == "build-failed":
        vr.status, vr.reason = "build-failed", v.error or ""
        vr.bundle = failure_bundle(vdir, v, plan, host, "build-failed", v.error or "",
                                    {"build_log": str(Path(v.artifacts) / "build.log")})
        store(vr.bundle)
        say(f"variant {v.index} ({v.label}): build-failed in {v.build_s} s")
        return vr
    say(f"variant {v.index} ({v.label}): built {v.release} in {v.build_s} s"
        f"{' (incremental)' if v.incremental else ''}; booting")
    shared = out / (shared_name or f"guest-{v.index:02d}")
    guest_out = shared / "bundle"
    record = shared / "series.json"  # the guest sees the shared directory at the same path
    shared.mkdir(parents=True, exist_ok=True)
    record.write_text(json.dumps(series.record(plan.base), indent=1) + "\n")
    cmd = guest_run_command(matrix, host, inventory, guest_out, profile=profile, reps=reps,
                            kernel_commit=v.commit, label=v.label, cells=cells,
                            series={"name": series.name, "index": v.index,
                                    "subject": v.subject, "base": plan.base, "record": record})
    t0 = time.monotonic()
    with progress.current().guest(f"variant {v.index}") as relay:
        boot = boot_and_run(Path(v.artifacts) / "bzImage", host, cmd, shared,
                            shared / "console.log", echo=echo_console, on_line=relay.line)
    vr.accel, vr.boot_s = boot.accel, boot.boot_s
    vr.matrix_s = round(boot.wall_s - (boot.boot_s or 0), 1)
    # The boot to the guest's first command, and the rest of the guest's life (the matrix).
    phases[f"boot {v.index}{in_round}"] = boot.boot_s or 0.0
    phases[f"matrix {v.index}{in_round}"] = time.monotonic() - t0 - (boot.boot_s or 0.0)
    if boot.status != "passed" or not (guest_out / bundle.MANIFEST).is_file():
        reason = boot.reason or f"the guest exited {boot.exit_code} without a bundle"
        vr.status, vr.reason = "boot-failed", reason
        tail = boot.console.read_text(errors="replace")[-3000:] if boot.console else ""
        vr.bundle = failure_bundle(vdir, v, plan, host, "boot-failed", reason,
                                    {"console_log": str(boot.console), "console_tail": tail,
                                     "attempts": boot.attempts})
        store(vr.bundle)
        say(f"variant {v.index}: boot-failed ({'; '.join(boot.attempts)}); console: {boot.console}")
        return vr
    vr.bundle = guest_out
    try:
        doc = bundle.load(guest_out)
    except bundle.BundleError as e:
        # A bundle this iowatch cannot read (a guest that ran other code, a tool's
        # output the parser broke on): the variant is failed, the check goes on.
        vr.status, vr.reason, vr.bundle = "failed", f"{guest_out}: {e}", None
        say(f"variant {v.index}: its bundle cannot be read: {e}")
        return vr
    vr.status = doc["status"]
    models_note = note_device_models(shared, doc)
    if check_id:
        doc["check_round"] = {"check": check_id, "round": round_no}
    if check_id or any("device_model" in d for d in doc.get("devices", [])):
        bundle.write_manifest(guest_out, doc)
    store(guest_out)
    say(f"variant {v.index}: ran under {boot.accel.upper()} (boot {boot.boot_s:.0f} s, "
        f"matrix {vr.matrix_s:.0f} s): {doc['status']}{'; ' + models_note if models_note else ''}")
    return vr


def _side(vr: VariantRun) -> Side:
    """A variant's side: its first run pooled with the rounds that added
    repetitions, each run marked with its round (the first is round 0): rounds
    are the blocks the verdict judges within when the platform drifted."""
    rounds = [0, *vr.rounds] if len(vr.rounds) == len(vr.extra) else [None] * (1 + len(vr.extra))
    return Side(spec=vr.variant.label, source=str(vr.bundle),
                runs=[in_round(bundle.load(p), k) for p, k in zip([vr.bundle, *vr.extra], rounds)])


def compare_with_parents(result: CheckResult, history: History | None = None) -> None:
    """Each measured variant judged against the nearest earlier one that ran
    (vs_parent); `history`: the host's record of its noise between boots, for a
    variant measured in one boot (iowatch.judging.boots); the result's own by default."""
    history = result.history if history is None else history
    studies = load_studies(resources.studies_dir())
    measured = measured_runs(result)
    if not measured or measured[0].variant.index != 0:
        return
    for prev, cur in zip(measured, measured[1:]):
        # The parent is the nearest earlier variant that ran (a failed build in
        # between makes the comparison span two patches, and the report says so).
        cur.vs_parent = compare_sides(_side(prev), _side(cur), studies=studies, history=history)


def compare_with_base(result: CheckResult) -> Comparison | None:
    """The last measured patch against the series base (variant 0): what a
    cover letter's claims speak of. None when either was not measured."""
    measured = measured_runs(result)
    if len(measured) < 2 or measured[0].variant.index != 0:
        return None
    return compare_sides(_side(measured[0]), _side(measured[-1]),
                         studies=load_studies(resources.studies_dir()), history=result.history)


def report(result: CheckResult) -> str:
    """One row per patch, with the cells that changed, like the seeds' tables."""
    lines = [f"iowatch check: series {result.series.name} ({len(result.series.patches)} patches) "
             f"on {result.plan.base[:12]}", ""]
    # Said once, at the top, when the matrix is mostly cells its studies cannot decide.
    noisy = noisy_matrix_words([c for r in result.runs if r.vs_parent for c in r.vs_parent.verdicts])
    if noisy:
        lines[-1:] = [noisy, ""]
    for r in result.runs:
        v = r.variant
        head = "base" if v.index == 0 else f"patch {v.index}/{len(result.series.patches)}: {v.subject}"
        if r.status in ("build-failed", "boot-failed", "apply-failed"):
            first = (r.reason or "").strip().splitlines()[:1]
            lines.append(f"{head}\n    {r.status.upper()}: {first[0] if first else ''}")
            continue
        if v.index == 0:
            lines.append(f"{head}: {v.release} ({v.commit[:12]}), matrix {r.status}")
            continue
        cmp = r.vs_parent
        if cmp is None:
            lines.append(f"{head}: not compared")
            continue
        parent = f"vs its parent {cmp.base.title}" if cmp.base else ""
        lines.append(f"{head}\n    {_state_words(cmp)} {parent}")
        drift = drift_words(cmp)
        if drift:
            lines.append(f"    {drift}")
        lines += [f"    {w}" for w in [platform_words(cmp)] if w]  # the canary's finding
        for c in cmp.verdicts:
            if c.outcome == "no-change" and c.within_pct is None:
                continue
            named = f"{ci_name(c)} " if c.ci_family else "CI "
            stat = (f" ({named}{figures.ci(c.ci_low, c.ci_high)}, p {figures.p_value(c.p_adjusted)} "
                    f"against {c.level:.2g})" if c.ci_low is not None and c.p_adjusted is not None
                    else "")
            k = c.key
            outcome = Outcome(c.outcome)
            # A patch's lines are under its headline: "suspected" says enough there.
            label = outcome.short if outcome is Outcome.SUSPECTED else verdict_label(c)
            lines.append(f"    - {label}: {k.study} {k.device} {k.filesystem} [{k.group}] "
                         f"{c.words}{stat}{_mde(c)}")
        for f in cmp.failed:
            lines.append(f"    - FAILED: {f.study} {f.device} {f.filesystem} on the {f.side} side")
        same = [c for c in cmp.verdicts if c.outcome == "no-change" and c.within_pct is None]
        if same:
            # The cell's study and device when the cells are of more than one: two
            # studies on one device (seed 003's halves) have the same groups and metrics.
            several = len({(c.key.study, c.key.device, c.key.filesystem) for c in same}) > 1
            lines.append(f"    ({len(same)} deciding cells without change: "
                         + ", ".join(f"{f'{c.key.study} {c.key.device} ' if several else ''}"
                                     f"{c.key.group} {c.key.metric} [{c.base.n} vs {c.candidate.n} runs"
                                     f"{_mde(c, ', ')}]" for c in same[:6]) + ")")
    lines.append("")
    slow = result.regressing_patches
    lines.append("regressing patches: " + (", ".join(
        f"patch {r.variant.index} ({r.variant.subject})" for r in slow) if slow else "none"))
    unsure = result.unsure_patches
    if unsure:
        lines.append("not decided (rerun): " + ", ".join(
            f"patch {r.variant.index} ({r.vs_parent.state})" for r in unsure))
    slower = [r for r in result.runs if r.vs_parent and r.vs_parent.state == Outcome.SLOWER.state]
    if slower:
        lines.append("slower, not confirmed (not a regression, not \"no change\"): " + ", ".join(
            f"patch {r.variant.index} ({r.variant.subject})" for r in slower))
    lines += phase_lines(result.phases)
    return "\n".join(lines)


def exit_code(result: CheckResult) -> int:
    """The check's exit status (iowatch.exit_status): 1 when a patch regresses,
    3 when a patch is still unsure or suspected after every round (not a pass)."""
    if result.regressing_patches:
        return exit_status.REGRESSION
    return exit_status.of_states(r.vs_parent.state for r in result.runs if r.vs_parent)


def phase_lines(phases: dict[str, float]) -> list[str]:
    """Where the check's wall time went: configure, then each variant's build,
    boot and matrix, then each adaptive round with the boots and matrices in it."""
    out = ["wall time:"]
    if "configure" in phases:
        out.append(f"  configure {phases['configure']:.0f} s")
    rounds = sorted({int(k.rsplit(" ", 1)[1]) for k in phases if k.startswith("round ")})
    for round_no in [0, *rounds]:
        tag = f" round {round_no}" if round_no else ""
        parts = {}
        for key, secs in phases.items():
            words = key.split(" ")
            if words[0] in ("build", "boot", "matrix") and key.endswith(tag) and \
                    (round_no or len(words) == 2):
                parts.setdefault(int(words[1]), []).append(f"{words[0]} {secs:.0f} s")
        body = "; ".join(f"variant {i}: {', '.join(p)}" for i, p in sorted(parts.items()))
        if round_no:
            out.append(f"  round {round_no} {phases[f'round {round_no}']:.0f} s ({body})")
        elif body:
            out += [f"  variant {i}: {', '.join(p)}" for i, p in sorted(parts.items())]
    if "total" in phases:
        out.append(f"  total {phases['total']:.0f} s ({phases['total'] / 60:.1f} min)")
    return out


def _mde(c, sep: str = "; ") -> str:
    """A deciding cell's minimum detectable effect at its repetitions (the
    smallest slowdown its noise lets the test confirm 80% of the time)."""
    return "" if c.mde_pct is None else f"{sep}minimum detectable effect {c.mde_pct:g}%"


def drift_words(cmp: Comparison) -> str:
    """What the rounds' drift did, when a deciding cell was judged within rounds
    because its rounds' levels differed beyond chance: the largest drift."""
    blocked = [v for v in cmp.verdicts if v.blocked and v.drift_pct is not None]
    if not blocked:
        return ""
    v = max(blocked, key=lambda v: abs(v.drift_pct))
    first, last = v.drift_rounds
    return (f"the platform drifted by {v.drift_pct:+.0f}% between rounds {first} and {last} "
            f"({v.key.group} {v.key.metric}, both sides alike): {len(blocked)} deciding "
            f"cell{'s' if len(blocked) != 1 else ''} judged within rounds")


def _state_words(cmp: Comparison) -> str:
    """A patch's state in the report; "at the repetition cap" only when every
    undecided cell is at its cap, else the runs it stopped at."""
    unsure = cmp.unsure
    if cmp.state == Outcome.SLOWER.state:
        caps = [v.cap for v in cmp.verdicts if v.outcome == Outcome.SLOWER.word]
        where = f"at the repetition cap of {max(caps)} a side"
    elif unsure and all(v.budget_spent for v in unsure):
        where = f"at the repetition cap of {max(v.cap for v in unsure)} a side"
    elif unsure:
        runs = min(min(v.base.n, v.candidate.n) for v in unsure)
        where = f"after {runs} runs a side, below the cap of {max(v.cap for v in unsure)}"
    else:
        where = ""
    return Outcome(cmp.state).headline.format(where=where)


def store_locally(path: Path) -> None:
    from iowatch.local_store import store_bundles
    store_bundles([str(path)])


def default_out(series: Series) -> Path:
    return paths.data_dir() / "checks" / f"{series.name}-{time.strftime('%Y%m%d-%H%M%S')}"


def write_summary(result: CheckResult, out: Path) -> Path:
    """out/check.json, written whole or not at all (a temporary file renamed)."""
    out.mkdir(parents=True, exist_ok=True)
    tmp = out / "check.json.tmp"
    tmp.write_text(json.dumps(summary(result), indent=1) + "\n")
    tmp.replace(out / "check.json")
    return out / "check.json"


def summary(result: CheckResult) -> dict:
    """The check as data: per variant its status, times and the regressions it brought."""
    return {"series": result.series.name, "base": result.plan.base,
            "phases_s": {k: round(v, 1) for k, v in result.phases.items()},
            "regressing_patches": [r.variant.index for r in result.regressing_patches],
            "claims": result.claims,
            "variants": [{"index": r.variant.index, "subject": r.variant.subject,
                          "commit": r.variant.commit, "status": r.status, "reason": r.reason[:500],
                          "build_s": r.variant.build_s, "incremental": r.variant.incremental,
                          "accel": r.accel, "boot_s": r.boot_s, "matrix_s": r.matrix_s,
                          "bundle": str(r.bundle) if r.bundle else None,
                          "state": r.vs_parent.state if r.vs_parent else None,
                          "extra_bundles": [str(p) for p in r.extra],
                          "extra_rounds": r.rounds,
                          "drift": drift_words(r.vs_parent) if r.vs_parent else "",
                          "platform": platform_words(r.vs_parent) if r.vs_parent else "",
                          "regressions": [c.words for c in (r.vs_parent.regressions if r.vs_parent else [])],
                          "unsure": [c.words for c in (r.vs_parent.unsure if r.vs_parent else [])]}
                         for r in result.runs]}
