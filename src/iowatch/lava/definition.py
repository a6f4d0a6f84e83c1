"""The LAVA job definition of one measurement on a board class of a LAVA lab.

One job is one boot: deploy the variant's kernel (served by the lab's artifact
store, KERNELS/<commit>/) and a root filesystem that carries iowatch's runner,
fio and fs_mark; boot; then an inline Lava-Test Shell definition writes the
board's inventory (the host's declared devices, nothing else), runs
`iowatch run MATRIX --cells ...` there and uploads the bundle to the iowatch
server with an agent token, which travels as a LAVA secret. The runner's own
device-safety check (iowatch.safety) runs on the board against that inventory,
so a disk of the board that is not declared is never written to.

Two ways to boot, by device type: LAVA's `qemu` type (tmpfs deploy; the
board's disks are QEMU disks made from the inventory's `qemu` keys, each a
fresh blank image a job) and a U-Boot board (tftp deploy of kernel and device
tree, the root filesystem over NFS so that every disk of the board is free to
measure). Every definition is checked with LAVA's own schema (lava_common,
Debian's lava-common package) before anyone sees it: `validate`.
"""
from __future__ import annotations

import base64
import shlex
from dataclasses import dataclass, field

import yaml

from iowatch.inventory import Host, LavaBoard
from iowatch.vlab import device_args, guest_disks, throttling

BOARD_INVENTORY = "/tmp/iowatch-board.yml"
BOARD_BUNDLE = "/var/tmp/iowatch-bundle"
BUNDLE_LINE = "iowatch-bundle: "        # each line of the bundle's base64 tar.gz on the console
TOKEN_SECRET = "IOWATCH_TOKEN"          # the agent token's name in the job's secrets
RUN_CASE = "iowatch-run"                # the test case that carries iowatch run's exit status
SUITE = "iowatch"                       # the inline definition's name: LAVA's suite is 0_iowatch (lava-run here)
HEALTH_SUITE = "iowatch-health"         # the health check's inline definition
KERNEL_IMAGE = {"x86_64": "bzImage", "arm64": "Image", "arm": "zImage"}
UBOOT_KERNEL_TYPE = {"arm64": "image", "arm": "zimage", "x86_64": "image"}
PROMPTS = ["root@[^:#]+:[^#]*# "]        # the rootfs's root shell, after auto-login as root
CONSOLE = {"x86_64": "ttyS0", "arm64": "ttyAMA0", "arm": "ttyAMA0"}


class DefinitionInvalid(ValueError):
    """LAVA's schema refuses the definition: the message is LAVA's, with its path."""


@dataclass(frozen=True)
class Measurement:
    """What one boot measures: a matrix (or its cells) on one kernel variant."""
    matrix: str
    commit: str
    label: str
    server: str | None                  # the iowatch server the board uploads the bundle to; None:
                                        # the bundle comes back in LAVA's log (the agent uploads it)
    cells: tuple[str, ...] = ()
    reps: int | None = None
    profile: str | None = None
    run_args: tuple[str, ...] = ()      # more `iowatch run` options (--series-name ...)
    kernel_url: str | None = None       # default: the lab's KERNELS/<commit>/<image>
    test_minutes: int = 120
    priority: int = 50
    extra: dict = field(default_factory=dict, compare=False)   # metadata to add


def kernel_url(board: LavaBoard, commit: str) -> str:
    base = board.lab.kernels
    if not base:
        raise DefinitionInvalid(f"the LAVA lab {board.lab.group!r} declares no kernels URL "
                                "(iowatch_lava.kernels): give the variant's kernel URL instead")
    return f"{base.rstrip('/')}/{commit}/{KERNEL_IMAGE[board.arch]}"


def board_inventory(host: Host) -> str:
    """The inventory the runner on the board reads: this board class alone in its
    lab, with its declared devices only. The runner checks those devices as on
    any host (iowatch.safety reads no kind), and its bundle names the host a
    LAVA board class of its device type, not a bare-metal machine."""
    board = _board(host)
    devices = [{k: v for k, v in d.items() if k != "qemu"} for d in host.vars.get("iowatch_devices") or []]
    entry = {"iowatch_kind": "lava",
             "iowatch_lava_board": {"device_type": board.device_type, "arch": board.arch,
                                    **({"tags": list(board.tags)} if board.tags else {})},
             "iowatch_devices": devices}
    # The lab's server and the name of its token variable only: the board asks LAVA nothing.
    lab = {"server": board.lab.server, "token_env": board.lab.token_env}
    doc = {"all": {"children": {board.lab.group: {"vars": {"iowatch_lava": lab},
                                                  "hosts": {host.name: entry}}}}}
    return yaml.safe_dump(doc, sort_keys=False)


def _boot_actions(host: Host, board: LavaBoard, kernel: str, commit: str) -> list[dict]:
    if not board.rootfs:
        raise DefinitionInvalid(f"host {host.name!r}: no root filesystem for its boards; set rootfs in "
                                f"iowatch_lava of group {board.lab.group!r} or in iowatch_lava_board")
    return (_qemu_actions(host, board, kernel) if board.device_type == "qemu"
            else _uboot_actions(board, kernel, commit))


def make(host: Host, m: Measurement, token: str | None = None) -> dict:
    """The job definition (a dict, as LAVA's schema reads it) of `m` on `host`."""
    board = _board(host)
    boot_actions = _boot_actions(host, board, m.kernel_url or kernel_url(board, m.commit), m.commit)
    job = {
        "job_name": f"iowatch {host.name}: {m.label} {m.commit[:12]} {m.matrix}"[:200],
        "device_type": board.device_type,
        "priority": m.priority,
        # personal: when the board uploads, the agent token rides in the job's secrets.
        "visibility": "personal",
        "timeouts": {"job": {"minutes": 15 + 10 + m.test_minutes}, "action": {"minutes": 10},
                     "connection": {"minutes": 2}},
        "metadata": {"iowatch.host": host.name, "iowatch.commit": m.commit, "iowatch.label": m.label,
                     "iowatch.matrix": m.matrix, **m.extra},
        "actions": boot_actions + [_test_action(host, m)],
    }
    if m.server:
        if not token:
            raise DefinitionInvalid(f"the board uploads its bundle to {m.server}: give the agent token")
        job["secrets"] = {TOKEN_SECRET: token}
    if board.tags:
        job["tags"] = list(board.tags)
    if board.device_type == "qemu":
        job["context"] = {"arch": board.arch}
    return job


def health_check(host: Host, commit: str, kernel: str | None = None) -> dict:
    """LAVA's health check for the boards of `host` (a lab admin puts it in
    dispatcher-config/health-checks/<device type>.yaml): boot a kernel known to be
    good and run `iowatch device check` on every disk the class declares. A disk
    missing, of another size or kind, or mounted ends the job Incomplete
    (lava-test-raise), so LAVA marks the board Bad and schedules no job on it;
    one that passes marks it Good. LAVA keeps one health check a device type:
    board classes of one type with other disks need device dictionaries that
    extend a device type of their own."""
    board = _board(host)
    boot_actions = _boot_actions(host, board, kernel or kernel_url(board, commit), commit)
    inv = base64.b64encode(board_inventory(host).encode()).decode()
    steps = [f"echo {inv} | base64 -d > {BOARD_INVENTORY}"]
    for dev in host.vars.get("iowatch_devices") or []:
        check = shlex.join(["iowatch", "device", "check", host.name, dev["path"], "--inventory", BOARD_INVENTORY])
        case = f"device-{dev['name']}"
        steps.append(f"if {check}; then lava-test-case {case} --result pass; else "
                     f"lava-test-case {case} --result fail; "
                     f"lava-test-raise {shlex.quote(dev['name'] + ' ' + dev['path'] + ': iowatch device check refused it')}; fi")
    return {
        "job_name": f"iowatch health check: {host.name} ({board.device_type}), kernel {commit[:12]}",
        "device_type": board.device_type,
        "priority": "high",
        "visibility": "public",
        "timeouts": {"job": {"minutes": 30}, "action": {"minutes": 10}, "connection": {"minutes": 2}},
        "metadata": {"iowatch.host": host.name, "iowatch.commit": commit, "iowatch.health-check": "true"},
        **({"context": {"arch": board.arch}} if board.device_type == "qemu" else {}),
        "actions": boot_actions + [_inline_test(HEALTH_SUITE, f"iowatch device check of {host.name}'s disks",
                                                steps, minutes=10)],
    }


def _board(host: Host) -> LavaBoard:
    if host.kind != "lava" or host.lava is None:
        raise DefinitionInvalid(f"host {host.name!r} is {host.kind}, not a board class of a LAVA lab "
                                "(iowatch_kind lava in hardware-inventory.yml)")
    return host.lava


def _login() -> dict:
    return {"prompts": list(PROMPTS), "auto_login": {"login_prompt": "login:", "username": "root"}}


def _qemu_actions(host: Host, board: LavaBoard, kernel: str) -> list[dict]:
    """tmpfs deploy of kernel, root filesystem (the first virtio disk, /dev/vda)
    and one fresh blank image for each QEMU disk of the board class, in the
    order of their names (a board's inventory paths follow it)."""
    cmdline = f"root=/dev/vda rw console={CONSOLE[board.arch]},115200 rootwait"
    images = {
        "kernel": {"url": kernel, "image_arg": f'-kernel {{kernel}} -append "{cmdline}"'},
        # An explicit -device, not if=virtio: QEMU creates if=virtio drives after every
        # -device, so the root would come after the board's disks (lava-run here: the
        # 2 GiB disk became vda and the kernel found no root filesystem on it).
        "rootfs": {"url": board.rootfs, "image_arg": "-drive format=raw,if=none,id=iow-rootfs,file={rootfs} "
                                                      "-device virtio-blk-pci,drive=iow-rootfs",
                   **_compression(board.rootfs)},
    }
    if guest_disks(host) and not board.lab.disks:
        raise DefinitionInvalid(f"host {host.name!r} has QEMU disks but its lab {board.lab.group!r} "
                                "declares no disks URL (iowatch_lava.disks) to take blank images from")
    # lava-server stores a definition with its keys sorted (a job it ran on the
    # lava-qemu board put the board's disks before the root, which was then not
    # vda), and QEMU numbers the disks in the order of their -device: so the
    # images are made in the sorted order of their keys, the root's sorting
    # before every disk's ("rootfs" < "storage_..."), and the disks in the order
    # of their names.
    scsi = False
    for key, (disk_id, dev, size) in sorted((_image_key(d[0]), d) for d in guest_disks(host)):
        q = dev.qemu or {}
        drive = f"iow-{disk_id}"
        arg = [f"-drive file={{{key}}},if=none,id={drive},format=raw,cache=none,aio=threads{throttling(q)}"]
        arg += [" ".join(device_args(q, disk_id, drive, first_scsi=not scsi))]
        scsi = scsi or q.get("bus") == "scsi-hd"
        images[key] = {"url": f"{board.lab.disks.rstrip('/')}/blank-{size}.img.xz", "compression": "xz",
                       "image_arg": " ".join(arg)}
    return [{"deploy": {"to": "tmpfs", "os": "debian", "timeout": {"minutes": 15}, "images": images}},
            {"boot": {"method": "qemu", "media": "tmpfs", "timeout": {"minutes": 10}, **_login()}}]


def _uboot_actions(board: LavaBoard, kernel: str, commit: str) -> list[dict]:
    """tftp deploy of kernel and device tree, the root filesystem over NFS (so the
    board's own disks are all free to measure), booted by U-Boot's nfs commands."""
    deploy = {"to": "tftp", "os": "debian", "timeout": {"minutes": 15},
              "kernel": {"url": kernel, "type": UBOOT_KERNEL_TYPE[board.arch]},
              "nfsrootfs": {"url": board.rootfs, **_compression(board.rootfs)}}
    if board.dtb:
        deploy["dtb"] = {"url": f"{kernel.rsplit('/', 1)[0]}/dtbs/{board.dtb}"}
    return [{"deploy": deploy},
            {"boot": {"method": "u-boot", "commands": "nfs", "timeout": {"minutes": 10}, **_login()}}]


def _image_key(disk_id: str) -> str:
    """The deploy image's key of a board disk: sorts after "kernel" and "rootfs"."""
    return "storage_" + disk_id.replace("-", "_").replace(".", "_")


def _compression(url: str) -> dict:
    for suffix, name in ((".xz", "xz"), (".gz", "gz"), (".zst", "zstd"), (".bz2", "bz2")):
        if url.endswith(suffix):
            return {"compression": name}
    return {}


def run_command(host: Host, m: Measurement) -> list[str]:
    """`iowatch run` as the board runs it."""
    argv = ["iowatch", "run", m.matrix, "--target", host.name, "--inventory", BOARD_INVENTORY,
            "--no-progress", "--out", BOARD_BUNDLE, "--kernel-commit", m.commit, "--label", m.label]
    if m.server:
        argv += ["--upload", m.server]
    if m.cells:
        argv += ["--cells", ",".join(m.cells)]
    if m.reps is not None:
        argv += ["--reps", str(m.reps)]
    if m.profile:
        argv += ["--profile", m.profile]
    return argv + list(m.run_args)


def _test_action(host: Host, m: Measurement) -> dict:
    """The inline Lava-Test Shell definition: the board's inventory, the run with
    the agent token from the job's secrets, and its exit status as a test case."""
    inv = base64.b64encode(board_inventory(host).encode()).decode()
    run = " ".join(shlex.quote(a) for a in run_command(host, m))
    steps = [
        f"echo {inv} | base64 -d > {BOARD_INVENTORY}",
        f"rc=0; {run} || rc=$?",
        f"if [ $rc -eq 0 ]; then r=pass; else r=fail; fi; "
        f"lava-test-case {RUN_CASE} --result $r --measurement $rc --units exit-status",
    ]
    if m.server:
        # LAVA writes the job's secrets as KEY=VALUE lines into the overlay's secrets file.
        steps.insert(0, 'for f in /lava-*/secrets; do [ -f "$f" ] && . "$f"; done; export IOWATCH_TOKEN')
    else:
        # The bundle comes back on the console, a prefixed base64 line each (follow.bundle_from);
        # gzip, which every root has (busybox's xz only decompresses).
        steps.append(f"[ -d {BOARD_BUNDLE} ] && tar -C {BOARD_BUNDLE} -czf - . | base64 -w 96 | "
                     f"sed 's/^/{BUNDLE_LINE}/'")
    return _inline_test(SUITE, f"iowatch run {m.matrix} on {host.name}", steps, minutes=m.test_minutes)


def _inline_test(name: str, description: str, steps: list[str], *, minutes: int) -> dict:
    """A test action whose Lava-Test Shell definition is inline (inline/NAME.yaml)."""
    definition = {"metadata": {"format": "Lava-Test Test Definition 1.0", "name": name,
                               "description": description},
                  "run": {"steps": steps}}
    return {"test": {"timeout": {"minutes": minutes},
                     "definitions": [{"repository": definition, "from": "inline", "path": f"inline/{name}.yaml",
                                      "name": name}]}}


def validate(job: dict) -> dict:
    """The definition when LAVA's own schema accepts it, else DefinitionInvalid with
    LAVA's message and path (lava_common.schemas.validate, strict, as lava-server
    checks a submission)."""
    try:
        from lava_common import schemas
        from voluptuous import Invalid
    except ImportError as e:
        raise DefinitionInvalid(
            f"LAVA's schema is not importable ({e}): install Debian's lava-common and python3-voluptuous "
            "(apt-get install lava-common python3-voluptuous) and run scripts/setup.sh, which links "
            "them into the virtualenv") from None
    try:
        schemas.validate(job, strict=True)
    except Invalid as e:
        raise DefinitionInvalid(f"LAVA's schema refuses the job definition: {e}") from None
    return job


def render(job: dict, *, hide_secrets: bool = True) -> str:
    """The definition as YAML, the secrets' values hidden unless asked for (to submit)."""
    shown = dict(job)
    if hide_secrets and "secrets" in shown:
        shown["secrets"] = {k: "<hidden>" for k in shown["secrets"]}
    return yaml.safe_dump(shown, sort_keys=False, width=1000)
