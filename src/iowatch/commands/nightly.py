"""iowatch nightly: one night of a tracked branch on one target, as Jenkins runs it."""
from __future__ import annotations

import datetime as dt
import os
import sys
import time
from pathlib import Path

from iowatch import inventory, paths, progress


def register(sub):
    p = sub.add_parser(
        "nightly", help="build a branch head, run the matrix on a target, upload, print what the server found",
        description="Build the head of BRANCH (incremental) and run the matrix on the target: a qemu "
                    "host boots it in the virtual lab; a lab host (or the local target) must already "
                    "run it (iowatch.commit= on its kernel command line, as ansible/kernel.yml boots "
                    "it, or --kernel-commit). The bundle is uploaded marked as a nightly; then the "
                    "command waits for the server's verdict and prints the regressions whose bad side "
                    "is this run, with their bisect state. Exit 0 no regression and every deciding cell "
                    "decided, 1 regression found, 2 error, 3 undecided (the server's comparison "
                    "with the previous run has a deciding cell still unsure or suspected).")
    p.add_argument("--branch", required=True, help="the tracked branch (or any ref) of the tree")
    p.add_argument("--source", default=None, metavar="TREE",
                   help="kernel git tree (default: Debian's linux-source-6.12); on a lab host only "
                        "used to resolve the branch head when given")
    p.add_argument("--target", metavar="HOST", help="a host of the inventory: qemu (virtual lab), "
                   "bare-metal or local (the host this runs on)")
    p.add_argument("--matrix", default="check-quick",
                   help="a file, or the name of a matrix or study iowatch ships (default check-quick)")
    p.add_argument("--server", default=os.environ.get("IOWATCH_SERVER"),
                   help="the iowatch server (default $IOWATCH_SERVER)")
    p.add_argument("--token", default=os.environ.get("IOWATCH_TOKEN"),
                   help="agent token for the upload (default $IOWATCH_TOKEN)")
    p.add_argument("--inventory", default=None,
                   help="default: $IOWATCH_INVENTORY, ./hardware-inventory.yml, else the one iowatch ships")
    p.add_argument("--profile", choices=("quick", "full"), default=None)
    p.add_argument("--reps", type=int, default=None)
    p.add_argument("--out", default=None, help="where the bundle (and guest console) go")
    p.add_argument("--kernel-commit", default=None, metavar="SHA",
                   help="lab or local target: the commit the host runs (else iowatch.commit= on "
                        "/proc/cmdline); checked against the branch head when --source is given")
    p.add_argument("--night", default=None, metavar="YYYY-MM-DD",
                   help="the night the run belongs to (default: today, UTC)")
    p.add_argument("--wait", type=float, default=None, metavar="SECONDS",
                   help="how long to wait for the server's verdict (default 1800)")
    p.add_argument("--build-only", default=None, metavar="DIR",
                   help="only build the head and link DIR to its kernel (bzImage, config, "
                        "meta.json) for ansible/kernel.yml's kernel_variant_dir")
    p.add_argument("--console", action="store_true", help="echo the guest's console")
    p.add_argument("--boots", type=int, default=None, metavar="N",
                   help="virtual lab: boot the night's kernel N times, a run each (default 2: a "
                        "night of one boot is at most \"suspected\" against the last one unless "
                        "the host has a record of its noise between boots). A lab host runs in the "
                        "kernel it booted: its pipeline reboots it and calls the nightly again "
                        "with the same --night (jobs/pipelines/nightly.Jenkinsfile, BOOTS)")
    progress.add_options(p)
    p.set_defaults(func=run)


def _build_only(args) -> int:
    from iowatch.kernel.source import SourceError, open_source
    from iowatch.nightly import build_head, say_phase
    try:
        plan, v = build_head(open_source(args.source), args.branch)
    except SourceError as e:
        print(f"iowatch nightly: {e}", file=sys.stderr)
        return 2
    if v.status != "built":
        print(f"iowatch nightly: the head of {args.branch} ({v.commit[:12]}) did not build:\n"
              f"{(v.error or '').strip()[-2000:]}", file=sys.stderr)
        return 2
    link = Path(args.build_only)
    if link.is_symlink():
        link.unlink()
    elif link.exists():
        print(f"iowatch nightly: --build-only {link}: exists and is not a link; give a new path",
              file=sys.stderr)
        return 2
    link.symlink_to(Path(v.artifacts).resolve())
    say_phase(f"built {args.branch} {v.commit} as {v.release} in {v.build_s} s; {link} -> {v.artifacts}")
    return 0


def run(args) -> int:
    args.source = args.source or None  # a pipeline passes "" for Debian's tree
    with progress.from_args(args, "nightly"):
        return _build_only(args) if args.build_only else _nightly(args)


def _nightly(args) -> int:
    from iowatch.ciapi import Client, ServerError
    from iowatch.kernel.source import SourceError, open_source, resolve
    from iowatch.nightly import (DEFAULT_BOOTS, DEFAULT_WAIT_S, NightlyError, lab_commit, render,
                                 run_in_vlab, run_on_lab_host, say_phase, trigger)
    from iowatch.safety import DeviceRefused
    from iowatch.yamlfile import DataFileError
    if not args.target or not args.server:
        print("iowatch nightly: give --target HOST and --server URL (or $IOWATCH_SERVER)",
              file=sys.stderr)
        return 2
    try:
        night = dt.date.fromisoformat(args.night) if args.night else None
    except ValueError:
        print(f"iowatch nightly: --night {args.night!r} is not a date YYYY-MM-DD", file=sys.stderr)
        return 2
    boots = args.boots if args.boots is not None else DEFAULT_BOOTS
    if boots < 1:
        print(f"iowatch nightly: --boots {boots}: give 1 or more", file=sys.stderr)
        return 2
    client = Client(args.server, args.token or "")
    wait_s = args.wait if args.wait is not None else DEFAULT_WAIT_S
    out = Path(args.out) if args.out else paths.data_dir() / "nightly" / (
        f"{args.branch.replace('/', '_')}-{args.target}-{time.strftime('%Y%m%d-%H%M%S')}")
    try:
        inv_path = Path(args.inventory or inventory.default_path())
        host = inventory.load(inv_path).host(args.target)
        if host.kind != "qemu" and args.boots not in (None, 1):
            raise NightlyError(f"--boots {args.boots}: {host.name} runs in the kernel it booted, "
                               "once a call; reboot it into the same kernel and run the nightly "
                               "again with the same --night (the server pools the night's runs)")
        if host.kind == "qemu":
            tree = open_source(args.source)
            say_phase(f"building the head of {args.branch} in {tree}")
            result = run_in_vlab(tree, args.branch, host, inv_path, args.matrix, out,
                                 trigger(args.branch, str(tree), night), client, profile=args.profile,
                                 reps=args.reps, wait_s=wait_s, echo_console=args.console,
                                 boots=boots)
        else:
            expected = args.kernel_commit
            if args.source:
                head = resolve(open_source(args.source), args.branch)
                if expected and not head.startswith(expected):
                    raise NightlyError(f"--kernel-commit {expected} is not the head of {args.branch} "
                                       f"({head[:12]}) in {args.source}")
                expected = head
            commit = lab_commit(host, expected, given=bool(args.kernel_commit))
            result = run_on_lab_host(host, args.matrix, out, commit,
                                     trigger(args.branch, args.source or "", night), client,
                                     profile=args.profile, reps=args.reps, wait_s=wait_s)
    except (NightlyError, ServerError, SourceError, DataFileError, inventory.InventoryError,
            DeviceRefused) as e:
        print(f"iowatch nightly: {e}", file=sys.stderr)
        return 2
    except KeyError as e:
        print(f"iowatch nightly: {e.args[0]}", file=sys.stderr)
        return 2
    print(render(result, args.branch), flush=True)
    return result.exit_code
