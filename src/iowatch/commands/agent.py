"""iowatch agent: one lab host's loop, on the controller beside it
(iowatch.agent.loop says what a turn does; docs/lab.md §10)."""
from __future__ import annotations

import datetime as dt
import os
import sys
import time
from pathlib import Path
from types import SimpleNamespace

from iowatch import inventory, paths


def register(sub):
    p = sub.add_parser(
        "agent", help="work a lab host's jobs: confirmations, bisects and nightlies, booting each "
                      "commit on the host with the kernel role",
        description="Run beside one lab host of the inventory (on the controller or the build "
                    "machine, which reaches the host over ssh). Each turn: say what the host does "
                    "(a heartbeat), claim a confirmation queued for this host, else a bisect of a "
                    "device class the host has; build each commit here with the lab host's "
                    "configuration, boot it once on the host with ansible/kernel.yml (a panic or a "
                    "hang is a boot-failed step: the role brings the host back on its default "
                    "kernel), run the cells there, upload, post; then the default kernel goes "
                    "back. With --nightly it builds, boots and measures a branch head instead, "
                    "uploads it as that night's run and waits for the verdict. Exit 0: the work "
                    "went through (--once: the queue is empty); 1: a job failed (posted as "
                    "failed with the reason); 2: the host or the server could not be used.")
    p.add_argument("--host", required=True, metavar="NAME", help="the lab host, as the inventory names it")
    p.add_argument("--server", default=os.environ.get("IOWATCH_SERVER"), help="default: $IOWATCH_SERVER")
    p.add_argument("--token", default=os.environ.get("IOWATCH_TOKEN"), help="the agent's ingest token "
                   "(default: $IOWATCH_TOKEN)")
    p.add_argument("--inventory", default=None, help="the lab's inventory, also Ansible's "
                   "(default: $IOWATCH_INVENTORY, else hardware-inventory.yml)")
    p.add_argument("--source", default=None, metavar="TREE", help="the kernel tree commits are built "
                   "from (default: the one iowatch keeps, Debian's 6.12)")
    p.add_argument("--config-base", choices=("allnoconfig", "vng"), default=None,
                   help="the lab kernel's base configuration (default: the virtual lab's)")
    p.add_argument("--fragment", action="append", default=[], metavar="FILE",
                   help="another config fragment after lab-host.config (repeatable)")
    p.add_argument("--matrix", default=None, help="the matrix a job's cells come from (default: "
                   "the regression's)")
    p.add_argument("--reps", type=int, default=None, help="repetitions a boot")
    p.add_argument("--profile", choices=("quick", "full"), default=None)
    p.add_argument("--out", default=None, help="where bundles and logs go (default: under "
                   "$IOWATCH_DATA_DIR/agent/HOST)")
    p.add_argument("--bisect-any", action="store_true", help="also bisect regressions other hosts "
                   "found on a device class this host has (default: only this host's)")
    p.add_argument("--once", action="store_true", help="stop when the queue is empty")
    p.add_argument("--poll", type=float, default=60.0, metavar="S", help="seconds between claims "
                   "when idle (default 60)")
    p.add_argument("--replay", default=None, metavar="DIR", help="a dry run: recorded bundles per "
                   "commit stand in for the host's boots and runs (iowatch.agent.hosts.RecordedHost); "
                   "needs --variants")
    p.add_argument("--variants", default=None, metavar="FILE", help="with --replay: the recorded "
                   "range, as `iowatch kernel build --json` prints it")
    night = p.add_argument_group("a nightly through the agent")
    night.add_argument("--nightly", default=None, metavar="REF", help="build, boot and measure this "
                       "ref of --source, upload it as a nightly and wait for the verdict")
    night.add_argument("--branch", default=None, help="the tracked branch's name (default: REF)")
    night.add_argument("--night", default=None, metavar="YYYY-MM-DD")
    night.add_argument("--boots", type=int, default=None, metavar="N",
                       help="boot the head N times, each boot a run of that night (default 2: the "
                            "night's side then holds the noise between boots, as the virtual lab's "
                            "nightly does; one boot a side is at most \"suspected\" unless the host "
                            "has a record of that noise)")
    night.add_argument("--wait", type=float, default=1800.0, metavar="S",
                       help="how long to wait for the server's verdict (default 1800)")
    p.set_defaults(func=run)


def _heartbeat(client, host: str):
    from iowatch.heartbeat import Heartbeat
    return Heartbeat(client, host)


def _builds(args):
    from iowatch.agent.bisect import recorded_range
    from iowatch.agent.loop import Builds, source_builds
    if args.replay:
        plan_for, built = recorded_range(Path(args.variants))

        def head(ref: str):
            from iowatch.bisect.job import recorded_variants
            variants = recorded_variants(Path(args.variants))
            plan = plan_for(variants[0].commit, variants[-1].commit)
            return plan, next(v for v in plan.variants
                              if v.commit.startswith(ref) or ref.startswith(v.commit))
        return Builds(plan_for, built, head, None)
    from iowatch.kernel.source import open_source
    return source_builds(open_source(args.source or None), [Path(f) for f in args.fragment], args.config_base)


def _lava_host(host):
    """A board class of a LAVA lab: its boots are LAVA jobs (iowatch.lava.host)."""
    from iowatch.lava.client import LavaClient
    from iowatch.lava.host import LavaHost
    return LavaHost(host, LavaClient.for_lab(host.lava.lab))


def run(args) -> int:
    from iowatch.agent.hosts import AnsibleHost, LabHostError, RecordedHost
    from iowatch.agent.loop import Agent
    from iowatch.ciapi import Client, ServerError
    if not args.server:
        print("iowatch agent: give --server URL (or $IOWATCH_SERVER)", file=sys.stderr)
        return 2
    if bool(args.replay) != bool(args.variants):
        print("iowatch agent: give --replay and --variants together (a dry run)", file=sys.stderr)
        return 2
    inv_path = Path(args.inventory or inventory.default_path())
    try:
        host = inventory.load(inv_path).host(args.host)
    except (KeyError, OSError, ValueError) as e:
        print(f"iowatch agent: {e}", file=sys.stderr)
        return 2
    out = Path(args.out) if args.out else paths.data_dir() / "agent" / args.host
    out.mkdir(parents=True, exist_ok=True)
    try:
        lab = (RecordedHost(args.host, Path(args.replay)) if args.replay
               else _lava_host(host) if host.kind == "lava"
               else AnsibleHost(host, inv_path, logs=out / "logs"))
    except ValueError as e:
        print(f"iowatch agent: {e}", file=sys.stderr)
        return 2
    client = Client(args.server, args.token or "", host=args.host)
    devices: dict[str, list[str]] = {}
    for d in host.devices:
        devices.setdefault(d.device_class, []).append(d.name)
    try:
        builds = _builds(args)
    except (OSError, ValueError) as e:
        print(f"iowatch agent: {e}", file=sys.stderr)
        return 2
    beat = _heartbeat(client, args.host)
    agent = Agent(client, lab, builds, out, matrix=args.matrix, reps=args.reps, profile=args.profile,
                  device_classes=tuple(sorted(devices)), devices=devices, beat=beat,
                  bisect_any=args.bisect_any, inventory_host=host)
    t0 = time.monotonic()
    with beat:
        try:
            if args.nightly:
                status = _nightly(agent, args, host)
            else:
                status = agent.forever(args.poll, once=args.once)
        except (LabHostError, ServerError) as e:
            print(f"iowatch agent: {e}", file=sys.stderr)
            status = 2
        except KeyboardInterrupt:
            print("iowatch agent: stopped", file=sys.stderr)
            status = 130
    if agent.log:
        print(f"agent: {args.host}: {len(agent.log)} boot(s) in {time.monotonic() - t0:.0f} s")
        print(agent.table())
    return status


def _nightly(agent, args, host) -> int:
    """A nightly of the host: the head built here, booted there, measured, uploaded."""
    from iowatch import nightly
    from iowatch.agent.hosts import RunRequest
    night = dt.date.fromisoformat(args.night) if args.night else None
    branch = args.branch or args.nightly
    boots = nightly.DEFAULT_BOOTS if args.boots is None else args.boots
    if boots < 1:
        print(f"iowatch agent: --boots {boots}: give 1 or more", file=sys.stderr)
        return nightly.ERROR
    agent.beat.set("building", detail=f"nightly {branch}")
    _, v = agent.builds.head(args.nightly)
    if v.status != "built":
        print(f"iowatch agent: {branch} ({v.commit[:12]}) does not build: {(v.error or '')[-800:]}",
              file=sys.stderr)
        return nightly.ERROR
    matrix = args.matrix or "check-quick"
    out = agent.out / f"nightly-{(night or dt.date.today()).isoformat()}-{v.commit[:12]}"
    trig = nightly.trigger(branch, str(args.source or ""), night)
    request = RunRequest(matrix, v.commit, "nightly", args.reps, args.profile)
    try:
        # Each boot a run of the night (as the virtual lab's nightly): every one
        # but the last uploaded as it ends, the verdict waited for on the last.
        for k in range(1, boots + 1):
            booted, path = agent.boot_and_run(v, request, out if boots == 1 else out / f"boot-{k}")
            if path is None:
                print(f"iowatch agent: {branch} ({v.commit[:12]}) did not boot on {host.name} "
                      f"(boot {k} of {boots}): {booted.detail}", file=sys.stderr)
                return nightly.ERROR
            if k < boots:
                agent.beat.set("uploading", detail=f"nightly {branch}, boot {k} of {boots}")
                agent.say(f"agent: boot {k} of {boots} of {v.commit[:12]} uploaded as run "
                          f"{nightly.upload_boot(path, trig, agent.client)}")
        result = nightly.NightlyOutcome(commit=v.commit)
        agent.beat.set("uploading", detail=f"nightly {branch}")
        nightly.report_and_wait(path, trig, agent.client, SimpleNamespace(name=host.name), result,
                                args.wait, agent.say)
    except nightly.NightlyError as e:
        print(f"iowatch agent: {e}", file=sys.stderr)
        return nightly.ERROR
    finally:
        agent.restore()
        agent.beat.set("idle")
    print(nightly.render(result, branch))
    return result.exit_code
