"""iowatch kernel build: the cumulative variants of a patch series, built."""
from __future__ import annotations

import json
import shlex
import sys
import tempfile
from pathlib import Path

from iowatch import inventory, paths, progress
from iowatch.commands.guest_options import HostError, qemu_host
from iowatch.kernel.build import build_all, make_variants
from iowatch.kernel.series import Series, SeriesError
from iowatch.kernel.series_input import load_series
from iowatch.kernel.source import SourceError, open_source
from iowatch.vlab import boot_and_run
from iowatch.yamlfile import DataFileError



def register(sub):
    p = sub.add_parser("kernel", help="build kernel variants of a patch series")
    ksub = p.add_subparsers(dest="kernel_command", metavar="ACTION")
    b = ksub.add_parser(
        "build", help="build base, base+p1, base+p1+p2, ... incrementally",
        description="Make the series' cumulative variants as commits on a branch of the "
                    "source tree's work tree and build each bzImage in one build directory "
                    "with ccache. A patch that does not apply is named with its rejected hunks; "
                    "a variant that does not build is recorded build-failed and later ones are "
                    "still tried.")
    b.add_argument("--base", required=True, metavar="REF", help="commit, tag or branch to start from "
                   "(the Debian source's is `debian-base`)")
    b.add_argument("--series", default=None, metavar="S",
                   help="a directory with a `series` file, an mbox (b4 am), or a git range A..B; "
                        "without it only the base is built (the nightly build of a branch head)")
    b.add_argument("--source", default=None, metavar="TREE",
                   help="a kernel git tree (default: Debian's linux-source-6.12, unpacked once)")
    b.add_argument("--jobs", type=int, default=None, help="make -j (default: all cores)")
    b.add_argument("--json", action="store_true", help="print the variants as JSON")
    progress.add_options(b)
    b.set_defaults(func=run_build)
    g = ksub.add_parser(
        "boot", help="boot a built kernel in the virtual lab and run a command in the guest",
        description="Boot a bzImage (or a variant's artifacts directory from `iowatch kernel build`) "
                    "in a QEMU guest with the emulated devices of a qemu host of the inventory, run "
                    "COMMAND inside (the host's root filesystem, read-only; /tmp writable) and exit "
                    "with its exit code. The guest gets IOWATCH_VLAB_HOST and IOWATCH_INVENTORY in "
                    "its environment. KVM is tried first and TCG used when KVM hangs.")
    g.add_argument("kernel", metavar="KERNEL", help="a bzImage, or a directory holding one")
    g.add_argument("command", nargs="+", metavar="COMMAND",
                   help="what to run in the guest (put -- before it when it has options)")
    g.add_argument("--host", default="vlab", help="the qemu host of the inventory (default vlab)")
    g.add_argument("--inventory", default=None,
                   help="default: $IOWATCH_INVENTORY, ./hardware-inventory.yml, else the one iowatch ships")
    g.add_argument("--shared", default=None, metavar="DIR",
                   help="a directory the guest may write, also where the console log goes "
                        "(default: a new one under the data dir's vlab/boot/)")
    g.add_argument("--memory", default="2G", help="guest memory (default 2G)")
    g.add_argument("--cpus", type=int, default=2, help="guest CPUs (default 2)")
    g.add_argument("--timeout", type=float, default=3600, help="seconds the guest may run (default 3600)")
    g.add_argument("--quiet", action="store_true", help="do not echo the guest's console")
    g.set_defaults(func=run_boot)
    p.set_defaults(func=lambda args: (p.print_help(), 2)[1])


def print_variant(v) -> None:
    what = "base" if v.index == 0 else f"patch {v.index}: {v.subject}"
    extra = f" in {v.build_s} s{' (incremental)' if v.incremental else ''}" if v.build_s else ""
    progress.current().say(f"  variant {v.index} [{v.status}] {v.commit[:12] or '-'} {what}{extra}")
    if v.error:
        print("    " + v.error.replace("\n", "\n    "), file=sys.stderr)


def run_build(args) -> int:
    try:
        tree = open_source(args.source)
        series = load_series(args.series, tree) if args.series else Series(
            args.base.replace("/", "_"), args.base, ())
        plan = make_variants(tree, args.base, series)
        # With --json, stdout is the JSON alone (pipelines redirect it to a file).
        print(f"kernel build: {len(series.patches)} patches of {series.name} on {plan.base[:12]} "
              f"({tree}); build directory {plan.build}", flush=True,
              file=sys.stderr if args.json else sys.stdout)
        with progress.from_args(args, "kernel build"):
            build_all(plan, args.jobs, on_variant=(lambda v: None) if args.json else print_variant)
    except (SourceError, SeriesError) as e:
        print(f"iowatch kernel build: {e}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps([v.to_dict() for v in plan.variants], indent=1))
    return 0 if all(v.status == "built" for v in plan.variants) else 1


def _bzimage(given: str) -> Path:
    path = Path(given)
    if path.is_dir():
        path = path / "bzImage"
    if not path.is_file():
        raise FileNotFoundError(f"{given}: no bzImage there; give a bzImage or a variant's artifacts "
                                "directory (iowatch kernel build prints where they are)")
    return path


def run_boot(args) -> int:
    try:
        bzimage = _bzimage(args.kernel)
        inv_path = Path(args.inventory or inventory.default_path()).resolve()
        host = qemu_host(inv_path, args.host, "only a qemu host of the inventory is booted here "
                         "(bare-metal hosts boot variants with ansible/kernel.yml)")
    except (FileNotFoundError, DataFileError, inventory.InventoryError, HostError) as e:
        print(f"iowatch kernel boot: {e}", file=sys.stderr)
        return 2
    if args.shared:
        shared = Path(args.shared).resolve()
    else:
        base = paths.data_dir() / "vlab" / "boot"
        base.mkdir(parents=True, exist_ok=True)
        shared = Path(tempfile.mkdtemp(prefix="boot-", dir=base))
    command = ["env", f"IOWATCH_VLAB_HOST={host.name}", f"IOWATCH_INVENTORY={inv_path}",
               f"IOWATCH_SHARED={shared}", *args.command]
    print(f"kernel boot: {bzimage} on {host.name} ({len(host.devices)} emulated devices); "
          f"running: {shlex.join(args.command)}", flush=True)
    result = boot_and_run(bzimage, host, command, shared, shared / "console.log", memory=args.memory,
                          cpus=args.cpus, run_timeout=args.timeout, echo=not args.quiet)
    boot = f"{result.boot_s:.0f} s" if result.boot_s is not None else "-"
    print(f"kernel boot: {result.status} under {result.accel.upper()}, boot {boot}, "
          f"wall {result.wall_s:.0f} s, guest exit {result.exit_code}; tries: "
          f"{'; '.join(result.attempts)}; console {result.console}", flush=True)
    if result.status != "passed":
        print(f"iowatch kernel boot: the guest did not run the command: {result.reason}", file=sys.stderr)
        return 3
    return result.exit_code if result.exit_code is not None else 3
