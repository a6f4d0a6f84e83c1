"""iowatch run: run a matrix (or one study) on a host's devices into a result bundle."""
from __future__ import annotations

import json
import os
import shlex
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from iowatch import bundle, inventory, paths, progress
from iowatch.runner import Interrupted, Runner, plan, summary
from iowatch.safety import DeviceRefused
from iowatch.side_data import Side
from iowatch.studies import load_matrix
from iowatch.yamlfile import DataFileError


def register(sub):
    p = sub.add_parser(
        "run", help="run a matrix or a study on a host's devices into a result bundle",
        description="Expand MATRIX (jobs/smoke.yml, or one study file such as "
                    "jobs/studies/xfs-smallfile-writeback.yml) into cells on the target host, run "
                    "every repetition on a fresh filesystem, and write a result bundle. A rerun "
                    "with the same --out resumes an interrupted bundle. Exit 0: done (with --against: "
                    "no regression, every deciding cell decided); 1: a regression against the "
                    "base, a failed matrix or upload; 2: an error, or a device refused; 3: with "
                    "--against, undecided (a deciding cell still unsure or suspected).")
    p.add_argument("matrix", metavar="MATRIX")
    p.add_argument("--target", required=True, metavar="HOST", help="a host of the inventory")
    p.add_argument("--inventory", default=None, help="default: hardware-inventory.yml")
    p.add_argument("--profile", choices=("quick", "full"), default=None,
                   help="the studies' profile (default: the matrix's, else quick)")
    p.add_argument("--reps", type=int, default=None, help="repetitions per cell")
    p.add_argument("--out", default=None, help="bundle directory (default: a new one under "
                   "$IOWATCH_DATA_DIR/bundles)")
    p.add_argument("--kernel-commit", default=None, help="the running kernel's git commit")
    p.add_argument("--label", default=None, help="a label for this kernel, such as 'patched'")
    p.add_argument("--series-name", default=None, help="the patch series this kernel belongs to")
    p.add_argument("--patch-index", type=int, default=None,
                   help="with --series-name: 0 for the base, k for base plus patches 1..k")
    p.add_argument("--patch-subject", default=None, help="with --series-name: patch k's subject")
    p.add_argument("--series-base", default=None, help="with --series-name: the base commit")
    p.add_argument("--series-record", default=None, metavar="FILE",
                   help="with --series-name: the series as JSON (Message-IDs, To/Cc, patches), "
                        "kept in the bundle's kernel.series")
    p.add_argument("--upload", default=None, metavar="URL", help="upload the bundle to this server")
    p.add_argument("--token", default=os.environ.get("IOWATCH_TOKEN"), help="agent token for --upload")
    p.add_argument("--store", action="store_true",
                   help="store the bundle in this machine's database (embedded SQLite or DATABASE_URL)")
    p.add_argument("--cells", default=None, metavar="ID,ID",
                   help="run only these cells (study/device/filesystem), comma-separated")
    p.add_argument("--against", default=None, metavar="BUNDLE",
                   help="judge each cell against this base bundle as it finishes, and add "
                        "repetitions to the cells still unsure until each is decided or at its "
                        "study's cap (max_runs in the study file, default 20)")
    p.add_argument("--history", action="append", default=None, metavar="DIR",
                   help="with --against: bundles of other kernels booted more than once on this "
                        "host (a bundle or a directory of them; repeatable), whose noise between "
                        "boots joins the test of the two single boots")
    p.add_argument("--boots", default=None, metavar="DIR",
                   help="this kernel's boots on this host, a bundle each: the bundle goes to "
                        "DIR/boot-N (the next N) unless --out says where, and with --against the "
                        "candidate is every bundle in DIR and this run; reboot into the same "
                        "kernel and run the same command again to add a boot (one boot a side "
                        "is at most \"suspected\" without a record of the host's noise between "
                        "boots)")
    p.add_argument("--calibration", action="store_true",
                   help="this run is one boot of the host's calibration: a server stores it as "
                        "the host's record of the noise between boots (what a comparison of one "
                        "boot a side reads) and never compares it; boot the same kernel three "
                        "times or more and run the matrix with this flag in each boot")
    p.add_argument("--harness", choices=("native", "lkp"), default="native",
                   help="lkp: run each fio-basic or fsmark-shaped cell through LKP-tests' `lkp run` "
                        "(README, \"Running through LKP-tests\"); others are skipped with the reason")
    p.add_argument("--lkp-src", default=None, metavar="DIR",
                   help="with --harness lkp: the LKP-tests checkout (default: $LKP_SRC, else /opt/lkp-tests)")
    progress.add_options(p)
    p.set_defaults(func=run)


def _series(args) -> dict | None:
    if not args.series_name:
        return None
    record = json.loads(Path(args.series_record).read_text()) if args.series_record else None
    return {"name": args.series_name, "index": args.patch_index or 0,
            "subject": args.patch_subject, "base": args.series_base, "record": record}


class _Refused(Exception):
    """Why `iowatch run` stops before it runs anything (said on stderr, exit status 2)."""


@dataclass
class _Against:
    """What this run is judged against: the base side, the host's record of its
    noise between boots (--history), and this kernel's earlier boots (--boots)."""
    base: Side
    history: list[Side] | None = None
    earlier: list[dict] = field(default_factory=list)
    boots_dir: str | None = None

    def candidate(self, out: Path) -> Side:
        return Side(str(out), str(out), [*self.earlier, bundle.load(out)])


def run(args) -> int:
    try:
        host, matrix, against, reps, harness = _prepare(args)
    except _Refused as e:
        print(f"iowatch run: {e}", file=sys.stderr)
        return 2
    out = Path(args.out) if args.out else next_boot(Path(args.boots)) if args.boots else (
        paths.data_dir() / "bundles" / f"{matrix.name}-{host.name}-{time.strftime('%Y%m%d-%H%M%S')}")
    display = progress.from_args(args, "run")
    command = "iowatch run " + " ".join(shlex.quote(a) for a in sys.argv[2:])
    try:
        runner = Runner(matrix, host, out, profile=args.profile, reps=reps,
                        kernel_commit=args.kernel_commit, label=args.label, command=command,
                        progress=display, series=_series(args), harness=harness,
                        only=set(args.cells.split(",")) if args.cells else None)
    except FileExistsError as e:
        print(f"iowatch run: {e}", file=sys.stderr)
        return 2
    try:
        with display:
            doc = runner.run()
            if against is not None:
                doc = _adaptive(runner, against)
    except (KeyboardInterrupt, Interrupted) as e:
        print(f"iowatch run: interrupted ({e or 'Ctrl-C'}); bundle {out} is marked incomplete; "
              f"rerun with --out {out} to finish it", file=sys.stderr)
        return 130
    except DeviceRefused as e:
        print(f"iowatch run: refused: {e}; nothing was written to it", file=sys.stderr)
        return 2
    return _finish(args, doc, out, against, matrix)


def next_boot(boots: Path) -> Path:
    """DIR/boot-N for this boot: N one past the highest there."""
    taken = [int(p.name[5:]) for p in boots.glob("boot-*") if p.name[5:].isdigit()]
    return boots / f"boot-{max(taken, default=0) + 1}"


def _earlier_boots(args, host) -> list[dict]:
    """This kernel's boots in --boots DIR before this one, each checked to be of
    this host and of the kernel running now (release, --kernel-commit, config)."""
    import platform

    from iowatch.environment import kernel_config_summary, kernel_config_text
    from iowatch.judging.sides import SideNotFound
    from iowatch.side_sources import boots_side, kernel_of
    boots = Path(args.boots)
    if not boots.is_dir() or not any(boots.glob(f"**/{bundle.MANIFEST}")):
        return []
    try:
        side = boots_side(args.boots, "--boots", leave_out=Path(args.out) if args.out else None)
    except SideNotFound as e:
        raise _Refused(e) from None
    run = side.runs[0]
    now = (platform.release(), args.kernel_commit, kernel_config_summary(kernel_config_text())[0])
    if (run.get("host") or {}).get("name") != host.name or kernel_of(run) != now:
        was = f"kernel {kernel_of(run)[0]} commit {kernel_of(run)[1]} on {(run.get('host') or {}).get('name')}"
        raise _Refused(f"--boots {args.boots}: its boots are of {was}, not of this run (kernel "
                       f"{now[0]} commit {now[1]} on {host.name}); a directory of boots holds one "
                       "kernel on one host: give this kernel's own (a new directory for a new kernel)")
    return side.runs


def _prepare(args):
    """The host, matrix, --against side, repetitions and harness of a run, each
    checked before anything runs (_Refused says what is wrong)."""
    try:
        inv = inventory.load(args.inventory)
        host = inv.host(args.target)
        matrix = load_matrix(args.matrix)
    except (DataFileError, inventory.InventoryError) as e:
        raise _Refused(e) from None
    except KeyError as e:
        raise _Refused(e.args[0]) from None
    # Imported here: iowatch.stats loads scipy, about a second that a run without
    # --against (and a guest under TCG) should not pay.
    from iowatch.stats.sequential import FIRST, MIN_REPS
    against = None
    earlier = _earlier_boots(args, host) if args.boots else []
    if args.against:
        from iowatch.judging.sides import SideNotFound
        from iowatch.side_sources import bundles_history, load_side
        try:
            against = _Against(load_side(args.against, role="--against"),
                               bundles_history(args.history) if args.history else None,
                               earlier, args.boots)
        except SideNotFound as e:
            raise _Refused(e) from None
    reps = args.reps or matrix.reps
    if reps < MIN_REPS:
        # Allowed (runs of one kernel pool on a side), but said: alone, one
        # repetition a side is judged by size only.
        print(f"iowatch run: {reps} repetition a cell: compared alone, it is judged by size "
              f"only; a verdict needs at least {MIN_REPS} a side (pool runs, or --reps)",
              file=sys.stderr)
    if against is not None and reps < FIRST:
        print(f"iowatch run: with --against, {reps} repetitions become {FIRST}: the first look "
              "of the verdict's schedule", file=sys.stderr)
        reps = FIRST
    if os.geteuid() != 0:
        raise _Refused("needs root (loop devices, mkfs, mount, drop_caches)")
    harness = None
    if args.harness == "lkp":
        from iowatch.lkp.harness import LkpError, LkpHarness, find_src
        try:
            harness = LkpHarness(find_src(args.lkp_src), host, paths.data_dir())
        except LkpError as e:
            raise _Refused(f"--harness lkp: {e}") from None
    return host, matrix, against, reps, harness


def _finish(args, doc: dict, out: Path, against: _Against | None, matrix) -> int:
    """What a finished run says (its summary, the verdict against --against),
    sends (--upload, --store), and its exit status."""
    if args.calibration:
        doc["trigger"] = {"kind": "calibration"}
        bundle.write_manifest(out, doc)
    print(f"bundle {out} ({doc['status']}, run {doc['run_id']})")
    for line in summary(doc, {s.slug: s for s in matrix.studies}):
        print(line)
    env = doc["environment"].get("runner", {})
    print(f"runner: wall {env.get('wall_s')} s, inside the tools {env.get('tool_s')} s, "
          f"overhead {env.get('overhead_pct')}%")
    verdict = _against_report(against, out) if against is not None else None
    if args.upload:
        from iowatch.upload import Spool, upload
        outcomes = upload([str(out)], args.upload, args.token or "", Spool(paths.spool_dir()))
        for o in outcomes:
            print(f"upload: {o.state}: run {o.run_id}: {o.detail}")
        if not all(o.state in ("sent", "already-stored") for o in outcomes):
            return 1
    if args.store:
        from iowatch.local_store import store_bundles
        if store_bundles([str(out)]):
            return 1
    from iowatch import exit_status
    if verdict == "regression" or doc["status"] == "failed":
        return exit_status.REGRESSION
    return exit_status.of_states([verdict] if verdict else [])


def _judge(against: _Against, out: Path):
    from iowatch import resources
    from iowatch.judging import compare_sides
    from iowatch.studies import load_studies
    return compare_sides(against.base, against.candidate(out),
                         studies=load_studies(resources.studies_dir()), history=against.history)


def against_targets(cmp, studies, bundle_doc: dict) -> dict[str, int]:
    """Cell id -> the repetitions the candidate bundle should reach: what
    judging's next_measurement asks of the comparison (the unsure cells, a
    ratio cell's raw partner, the canaries), on the candidate side (the base
    bundle cannot grow), for the cells the bundle holds and has fewer of."""
    from iowatch.judging.next_measurement import next_measurement
    have = {c["id"]: len(c["repetitions"]) for c in bundle_doc["cells"]}
    return {cell_id: want.candidate
            for cell_id, want in next_measurement(cmp, studies).cells.items()
            if cell_id in have and have[cell_id] < want.candidate}


def _adaptive(runner: Runner, against: _Against) -> dict:
    """Add repetitions to the cells whose verdict against the base is unsure,
    a look at a time, until every deciding cell is decided or at its study's
    cap (iowatch.judging.adaptive; the base bundle cannot grow)."""
    from iowatch import resources
    from iowatch.judging.adaptive import adapt
    from iowatch.studies import load_studies
    studies = load_studies(resources.studies_dir())
    canaries = {c.id for c in plan(runner.matrix, runner.host) if c.study.canary}

    def measure(targets: dict[str, int], _round: int) -> bool:
        progress.current().note("unsure against the base, adding repetitions: " + ", ".join(
            f"{cid} to {n}" for cid, n in sorted(targets.items()) if cid not in canaries))
        runner.add_repetitions(targets)
        return True

    adapt(lambda: _judge(against, runner.out),
          lambda cmp: against_targets(cmp, studies, runner.writer.doc), measure)
    return runner.writer.doc


def _against_report(against: _Against, out: Path) -> str:
    from iowatch.report import render_text
    cmp = _judge(against, out)
    boots = cmp.boots_a_side
    recorded = any(v.boot_variance for v in cmp.verdicts)
    if recorded or any(v.one_boot for v in cmp.verdicts):
        # One boot a side: the boots' own offset is in the test only through a
        # recorded history; else a change is at most suspected (issue 41 item 1).
        again = (f"reboot into this kernel and run the same command again (--boots "
                 f"{against.boots_dir} adds the boot)" if against.boots_dir else
                 f"give --boots DIR (this bundle moved to DIR/boot-1), then reboot into this "
                 "kernel and run the same command with --boots DIR again")
        print(f"iowatch run: --against: {boots[0]} boot(s) on the base side and {boots[1]} on this "
              "one: " + ("the noise between boots is taken from --history" if recorded else
                         "a boot's own offset is not in the test, so a change is at most "
                         f"suspected: {again}; or give --history with bundles of kernels "
                         "booted more than once on this host"), file=sys.stderr)
    print()
    print(render_text(cmp), end="")
    return cmp.state
