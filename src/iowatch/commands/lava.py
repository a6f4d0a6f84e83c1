"""iowatch lava: one measurement on a board class of a LAVA lab, by hand or from
Jenkins. `submit` makes the job definition (checked with LAVA's schema), submits
it and, with --follow, follows it to the end; `follow` follows a job submitted
before; `boards` lists the board class's boards with LAVA's state and health;
`health-check` prints LAVA's health check for the class's boards. The agent
(`iowatch agent --host BOARD_CLASS`) does the same for its job kinds."""
from __future__ import annotations

import os
import sys

from iowatch import inventory

EXIT = {"done": 0, "failed": 1, "boot-failed": 1, "infrastructure": 2}


def register(sub):
    p = sub.add_parser("lava", help="run a measurement as a LAVA job on a board class of a LAVA lab",
                       description=__doc__)
    lava = p.add_subparsers(dest="lava_command", metavar="ACTION", required=True)
    s = lava.add_parser("submit", help="make, check, submit (and follow) the job of one boot")
    _host(s)
    s.add_argument("matrix", metavar="MATRIX")
    s.add_argument("--commit", required=True, help="the variant's git commit (its kernel: KERNELS/<commit>/)")
    s.add_argument("--label", default="lava", help="the kernel's label in the bundle (default lava)")
    s.add_argument("--cells", default=None, metavar="ID,ID", help="only these cells")
    s.add_argument("--reps", type=int, default=None)
    s.add_argument("--profile", choices=("quick", "full"), default=None)
    s.add_argument("--kernel-url", default=None, help="default: the lab's kernels URL, <commit>/<image>")
    s.add_argument("--server", default=os.environ.get("IOWATCH_SERVER"),
                   help="the iowatch server the board uploads to (default: $IOWATCH_SERVER)")
    s.add_argument("--token", default=os.environ.get("IOWATCH_TOKEN"),
                   help="the agent token the board uploads with (default: $IOWATCH_TOKEN)")
    s.add_argument("--dry-run", action="store_true", help="print the checked definition (token hidden), submit nothing")
    s.add_argument("--follow", action="store_true", help="follow the job to its end; exit 0 done, 1 failed, "
                   "2 infrastructure")
    s.add_argument("--retries", type=int, default=1, help="infrastructure failures tried again (default 1)")
    s.set_defaults(func=run_submit)
    f = lava.add_parser("follow", help="follow a LAVA job of the board class to its end")
    _host(f)
    f.add_argument("job", type=int)
    f.set_defaults(func=run_follow)
    h = lava.add_parser("health-check", help="print LAVA's health check for the board class's boards",
                        description="Print the health check (a LAVA job definition, checked with LAVA's "
                        "schema) for the boards of BOARD_CLASS: boot a kernel known to be good and run "
                        "`iowatch device check` on each declared disk; a disk refused ends the job "
                        "Incomplete and LAVA marks the board Bad. A lab admin saves it as "
                        "dispatcher-config/health-checks/<device type>.yaml on the LAVA server.")
    _host(h)
    h.add_argument("--commit", required=True, help="the known-good kernel's commit (KERNELS/<commit>/)")
    h.add_argument("--kernel-url", default=None, help="default: the lab's kernels URL, <commit>/<image>")
    h.set_defaults(func=run_health_check)
    b = lava.add_parser("boards", help="the board class's boards: idle, running, offline or bad health")
    _host(b)
    b.set_defaults(func=run_boards)


def _host(p) -> None:
    p.add_argument("host", metavar="BOARD_CLASS", help="a host of iowatch_kind lava in the inventory")
    p.add_argument("--inventory", default=None, help="default: hardware-inventory.yml")
    p.add_argument("--poll", type=float, default=30.0, help="seconds between looks at a job (default 30)")


def _load(args):
    from iowatch.lava.client import LavaClient
    host = inventory.load(args.inventory).host(args.host)
    if host.kind != "lava":
        raise ValueError(f"host {host.name!r} is {host.kind}, not a board class of a LAVA lab")
    return host, (lambda: LavaClient.for_lab(host.lava.lab))


def _guarded(work) -> int:
    from iowatch.lava.client import LavaError
    from iowatch.lava.definition import DefinitionInvalid
    try:
        return work()
    except (KeyError, ValueError, LavaError, DefinitionInvalid) as e:
        print(f"iowatch lava: {e.args[0] if isinstance(e, KeyError) else e}", file=sys.stderr)
        return 2


def run_submit(args) -> int:
    def work() -> int:
        from iowatch.lava import definition, follow
        host, client = _load(args)
        m = definition.Measurement(args.matrix, args.commit, args.label, args.server or None,
                                   cells=tuple(c for c in (args.cells or "").split(",") if c),
                                   reps=args.reps, profile=args.profile, kernel_url=args.kernel_url)
        job = definition.validate(definition.make(host, m, args.token))
        if args.dry_run:
            print(definition.render(job), end="")
            return 0
        lava = client()
        if not args.follow:
            job_id = lava.submit(definition.render(job, hide_secrets=False))
            print(f"lava: {host.name}: submitted job {job_id} ({lava.job_url(job_id)})")
            return 0
        run = follow.run_job(lava, host, job, retries=args.retries, poll_s=args.poll)
        print(run.line())
        return EXIT[run.state]
    return _guarded(work)


def run_health_check(args) -> int:
    def work() -> int:
        from iowatch.lava import definition
        host, _ = _load(args)
        print(definition.render(definition.validate(definition.health_check(host, args.commit, args.kernel_url))),
              end="")
        return 0
    return _guarded(work)


def run_follow(args) -> int:
    def work() -> int:
        from iowatch.lava import follow
        host, client = _load(args)
        lava = client()
        run = follow.read_finished(lava, host, follow.wait(lava, args.job, poll_s=args.poll))
        print(run.line())
        return EXIT[run.state]
    return _guarded(work)


def run_boards(args) -> int:
    def work() -> int:
        host, client = _load(args)
        boards = client().boards(host.lava.device_type)
        for b in boards:
            print(f"{b.hostname:24} {b.label:11} (LAVA: {b.state}, health {b.health}; worker {b.worker or '-'})")
        if not boards:
            print(f"lava: no boards of device type {host.lava.device_type} at {host.lava.lab.server}")
        return 0
    return _guarded(work)
