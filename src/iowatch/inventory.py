"""The lab description: hosts, their devices and device classes (hardware-inventory.yml).

The file is also the Ansible inventory (YAML inventory format). iowatch reads
two host variables, `iowatch_kind` and `iowatch_devices`, validates the whole
file against schemas/inventory-v1.json and refuses a mistake with the file,
line, host, device and key, so a typo cannot silently drop a device or, worse,
point the runner at the wrong disk. The device-safety check (safety.py) reads
the devices declared here; nothing else decides what may be touched.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import yaml

from iowatch import yamlfile

DEFAULT_FILE = "hardware-inventory.yml"
IOWATCH_HOST_VARS = ("iowatch_kind", "iowatch_devices", "iowatch_lava_board")
LAVA_GROUP_VAR = "iowatch_lava"     # on a group: the group is a LAVA lab (iowatch.lava)

_UNITS = {"": 1, "B": 1, "K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4,
          "KIB": 1024, "MIB": 1024**2, "GIB": 1024**3, "TIB": 1024**4,
          "KB": 1000, "MB": 1000**2, "GB": 1000**3, "TB": 1000**4}


@dataclass(frozen=True)
class Problem:
    """One thing wrong in the inventory, located as precisely as the file allows."""
    file: str
    line: int | None
    message: str
    host: str | None = None
    device: str | None = None
    key: str | None = None

    def __str__(self) -> str:
        where = [f"{self.file}:{self.line}" if self.line else self.file]
        if self.host is not None:
            where.append(f"host {self.host!r}")
        if self.device is not None:
            where.append(f"device {self.device}")
        if self.key is not None:
            where.append(f"key {self.key!r}")
        return ", ".join(where) + ": " + self.message


class InventoryError(ValueError):
    """An inventory iowatch refuses; `problems` lists every mistake found."""

    def __init__(self, problems: list[Problem]):
        self.problems = problems
        super().__init__("\n".join(str(p) for p in problems))


@dataclass(frozen=True)
class Device:
    name: str
    device_class: str
    filesystems: tuple[str, ...]
    path: str | None = None
    image: str | None = None
    size_bytes: int | None = None
    members: tuple[str, ...] = ()
    model: str | None = None
    rotational: bool | None = None
    partition_table: str = "none"
    discard: bool = True             # mkfs discards the device first (the tools' default)
    qemu: dict = field(default_factory=dict, compare=False)
    line: int | None = field(default=None, compare=False)

    @property
    def is_image(self) -> bool:
        return self.image is not None

    @property
    def wants_rotational(self) -> bool:
        """The rotational flag the device should show: the inventory's, else hdd only."""
        return self.rotational if self.rotational is not None else self.device_class == "hdd"

    def bundle_entry(self) -> dict:
        """The device as a result bundle lists it (the bundle schema's devices)."""
        return {"name": self.name, "class": self.device_class,
                "path": self.path or (f"image:{self.image}" if self.image else None),
                "model": self.model, "size_bytes": self.size_bytes,
                "rotational": self.wants_rotational,
                # An md RAID0 iowatch makes (iowatch.mdraid): how many members, for the
                # mail's reproduction without iowatch (iowatch.replay).
                **({"md_members": len(self.members)} if self.members and not self.path else {})}


@dataclass(frozen=True)
class LavaLab:
    """A LAVA lab: a group whose hosts are board classes of one LAVA server.
    The API token is read from the environment variable `token_env` when it is
    used, and never written in the inventory."""
    group: str
    server: str
    token_env: str
    user: str | None = None
    rootfs: str | None = None       # the root filesystem image with iowatch's runner, fio and fs_mark
    kernels: str | None = None      # where built kernels are served: KERNELS/<commit>/bzImage
    disks: str | None = None        # qemu boards: blank disk images, DISKS/blank-<bytes>.img.xz
    file: str = DEFAULT_FILE

    def token(self, environ=os.environ) -> str:
        value = environ.get(self.token_env, "").strip()
        if not value:
            raise InventoryError([Problem(self.file, None, (
                f"the LAVA lab {self.group!r} ({self.server}) takes its API token from the environment "
                f"variable {self.token_env}, which is not set; export {self.token_env}=<token> (a LAVA "
                "API token of the lab's user; never write it in the inventory)"), key="token_env")])
        return value


@dataclass(frozen=True)
class LavaBoard:
    """Which boards of a LAVA lab an iowatch host stands for: one device type,
    narrowed by device tags. The host's iowatch_devices are the board's disks,
    as the board sees them; the runner on the board writes to those only."""
    lab: LavaLab
    device_type: str
    tags: tuple[str, ...] = ()
    arch: str = "x86_64"
    rootfs: str | None = None       # default: the lab's
    dtb: str | None = None          # U-Boot boards: the device tree, under the kernel's dtbs/


@dataclass(frozen=True)
class Host:
    name: str
    kind: str
    devices: tuple[Device, ...] = ()
    vars: dict = field(default_factory=dict, compare=False)
    groups: tuple[str, ...] = ()
    lava: LavaBoard | None = field(default=None, compare=False)

    def device(self, name: str) -> Device:
        for d in self.devices:
            if d.name == name:
                return d
        known = ", ".join(d.name for d in self.devices) or "none"
        raise KeyError(f"host {self.name!r} declares no device {name!r} (it declares: {known})")

    def bundle_entry(self) -> dict:
        """The host as a result bundle names it: its name and kind, and for a board
        class of a LAVA lab the device type and tags of its boards."""
        entry = {"name": self.name, "kind": self.kind}
        if self.lava is not None:
            entry["lava"] = {"device_type": self.lava.device_type, "tags": list(self.lava.tags)}
        return entry


@dataclass(frozen=True)
class Inventory:
    file: str
    hosts: dict[str, Host]

    def host(self, name: str) -> Host:
        try:
            return self.hosts[name]
        except KeyError:
            known = ", ".join(sorted(self.hosts)) or "none"
            raise KeyError(f"{self.file} has no host {name!r} (hosts: {known})") from None


# A device's qemu.bus when the guest kernel makes the device (null_blk, built in;
# iowatch.vlab.guest_kernel_args gives its module parameters), not QEMU.
NULL_BLK = "null_blk"


def default_path() -> Path:
    """$IOWATCH_INVENTORY, else hardware-inventory.yml here, else the one
    iowatch ships (the local target, the virtual lab and an example lab)."""
    if os.environ.get("IOWATCH_INVENTORY"):
        return Path(os.environ["IOWATCH_INVENTORY"])
    here = Path(DEFAULT_FILE)
    if here.exists():
        return here
    from iowatch.resources import packaged_inventory
    return packaged_inventory()


def parse_size(value: int | str) -> int:
    """Bytes from 2147483648, '2GiB', '512 MiB' or '10GB' (K/M/G/T alone are binary)."""
    if isinstance(value, int):
        return value
    m = re.fullmatch(r"([0-9]+(?:\.[0-9]+)?) ?([KMGTkmgt]?i?B?)", value.strip())
    if not m or m.group(2).upper() not in _UNITS:
        raise ValueError(f"not a size: {value!r}")
    return int(float(m.group(1)) * _UNITS[m.group(2).upper()])


def schema() -> dict:
    return yamlfile.schema("inventory-v1.json")


def load(path: str | os.PathLike | None = None) -> Inventory:
    """Read, validate and model the inventory; InventoryError names every mistake."""
    path = Path(path) if path is not None else default_path()
    try:
        text = path.read_text()
    except OSError as e:
        raise InventoryError([Problem(str(path), None, f"cannot read the inventory: {e.strerror}")]) from None
    return loads(text, str(path))


def loads(text: str, file: str = DEFAULT_FILE) -> Inventory:
    try:
        data, root = yamlfile.parse(text, file)
    except yamlfile.DataFileError as e:
        raise InventoryError([Problem(file, e.line, e.message)]) from None
    if data is None:
        raise InventoryError([Problem(file, None,
                                      "the inventory is empty: declare the lab's hosts under `all:`")])

    import jsonschema

    validator = jsonschema.Draft7Validator(schema())
    problems = [_problem(e, data, root, file) for e in validator.iter_errors(data)]
    if problems:
        raise InventoryError(_sorted(problems))
    return _model(data, root, file)


def _sorted(problems: list[Problem]) -> list[Problem]:
    return sorted(set(problems), key=lambda p: (p.line or 0, p.message))


# --- locating a schema error in the file --------------------------------------------

def _host_device(path: list, data: Any) -> tuple[str | None, str | None, str | None]:
    """Host name, device label and key that a schema error path points into."""
    host = device = key = None
    instance = data
    for i, part in enumerate(path):
        after = path[i - 1] if i else None
        if after == "hosts":
            host, key = part, None
        elif after == "iowatch_devices" and isinstance(part, int):
            entry = instance[part] if isinstance(instance, list) and part < len(instance) else None
            name = entry.get("name") if isinstance(entry, dict) else None
            device = f"{name!r} (entry {part + 1})" if isinstance(name, str) else f"entry {part + 1}"
            key = None
        elif host is not None and key is None and isinstance(part, str):
            key = part  # the first key below the host or the device entry
        try:
            instance = instance[part]
        except (KeyError, IndexError, TypeError):
            break
    if device is not None and key == "iowatch_devices":
        key = None
    for var in (LAVA_GROUP_VAR, "iowatch_lava_board"):
        if var in path and path.index(var) + 1 < len(path):
            key = f"{var}.{path[path.index(var) + 1]}"
        elif var in path:
            key = var
    return host, device, key


def _problem(error, data: Any, root: yaml.Node, file: str) -> Problem:
    path = list(error.absolute_path)
    key_node, node = None, root
    for part in path:
        key_node, node = yamlfile.child(node, part)
    host, device, key = _host_device(path, data)
    line = yamlfile.line_of(key_node) or yamlfile.line_of(node)
    what = error.validator
    instance = error.instance
    about = error.schema.get("description") if isinstance(error.schema, dict) else None

    if what is None:  # a `false` schema: an iowatch_* variable iowatch does not know
        return _unknown_variable(path, data, node, file, line, host, device)
    if what == "additionalProperties":
        extra = [k for k in instance if k not in error.schema.get("properties", {})]
        k_node, _ = yamlfile.child(node, extra[0])
        if "token" in extra and "token_env" in error.schema.get("properties", {}):
            return Problem(file, yamlfile.line_of(k_node) or line, "a LAVA token is never written in the "
                           "inventory: remove it, export it in an environment variable and name that "
                           "variable in token_env (such as token_env: IOWATCH_LAVA_TOKEN)",
                           host, device, _lava_key(path, "token"))
        allowed = ", ".join(error.schema.get("properties", {}))
        if device is None and host is None and "hosts" in allowed:
            context = "a group holds only"
        else:
            context = "allowed keys:"
        return Problem(file, yamlfile.line_of(k_node) or line,
                       f"unknown key{'s' if len(extra) > 1 else ''} {', '.join(map(repr, extra))}; "
                       f"{context} {allowed}", host, device, extra[0] if len(extra) == 1 else key)
    if what == "required":
        missing = re.match(r"'([^']+)'", error.message)
        miss = missing.group(1) if missing else error.message
        if device is None and host is not None and "iowatch_lava_board" in error.schema["required"]:
            return Problem(file, yamlfile.line_of(node), f"missing key {miss!r}; a host of iowatch_kind lava "
                           "needs iowatch_lava_board (its LAVA device type) and iowatch_devices (the "
                           "board's disks iowatch may write to)", host, None, miss)
        owner = "a device" if device is not None else "a LAVA lab (iowatch_lava)" if "token_env" in \
            error.schema["required"] else "a LAVA board (iowatch_lava_board)" if "device_type" in \
            error.schema["required"] else "this entry"
        return Problem(file, yamlfile.line_of(node), f"missing key {miss!r}; {owner} needs "
                       f"{', '.join(error.schema['required'])}", host, device, _lava_key(path, miss))
    if what == "dependencies":
        needed = re.match(r"'([^']+)'", error.message)
        return Problem(file, line, error.message.replace("is a dependency of", "is needed with"),
                       host, device, needed.group(1) if needed else key)
    if what == "oneOf":
        given = [k for k in ("path", "image", "members") if k in instance]
        return Problem(file, line, "give exactly one of path (a real device), image with size "
                       "(a loop device over an image file) or members (ssd-raid0 made by iowatch); "
                       f"given: {', '.join(given) or 'none'}", host, device, None)
    if what == "type":
        expected = error.validator_value
        names = {"object": "a mapping", "array": "a list", "null": "empty", "string": "a string",
                 "integer": "an integer", "boolean": "true or false"}
        expected = " or ".join(names.get(t, t) for t in
                               (expected if isinstance(expected, list) else [expected]))
        return Problem(file, line, f"{instance!r} is {_yaml_type(instance)}; expected {expected}"
                       + (f" ({about})" if about else ""), host, device, key)
    if what == "const" and key == "class":
        return Problem(file, line, f"{instance!r} cannot have members; members are for class "
                       f"{error.validator_value} (iowatch makes the md RAID0 array from them)",
                       host, device, key)
    if what in ("enum", "const"):
        allowed = error.validator_value if what == "enum" else [error.validator_value]
        return Problem(file, line, f"{instance!r} is not allowed; allowed: {', '.join(map(str, allowed))}",
                       host, device, key)
    return Problem(file, line, f"{instance!r}: {about or error.message}", host, device, key)


def _unknown_variable(path: list, data: Any, node: yaml.Node, file: str, line: int | None,
                      host: str | None, device: str | None) -> Problem:
    """An iowatch_* variable iowatch does not know, in a group's or a host's variables."""
    parent = data
    for part in path:
        parent = parent[part]
    in_group = path[-1] == "vars"
    known = {LAVA_GROUP_VAR} if in_group else set(IOWATCH_HOST_VARS)
    unknown = [k for k in parent if k.startswith("iowatch_") and k not in known]
    k_node, _ = yamlfile.child(node, unknown[0]) if unknown else (None, None)
    if in_group:
        text = (f"unknown iowatch variable in group variables; a group takes only {LAVA_GROUP_VAR} "
                f"(the group is a LAVA lab); {', '.join(IOWATCH_HOST_VARS)} are set on the host itself")
    else:
        text = f"unknown iowatch variable in host variables; iowatch reads {', '.join(IOWATCH_HOST_VARS)}"
    return Problem(file, yamlfile.line_of(k_node) or line, text,
                   host, device, unknown[0] if unknown else None)


def _lava_key(path: list, key: str | None) -> str | None:
    """A key inside iowatch_lava or iowatch_lava_board, named with its variable."""
    for var in (LAVA_GROUP_VAR, "iowatch_lava_board"):
        if var in path and key is not None and key != var:
            return f"{var}.{key}"
    return key


def _yaml_type(value: Any) -> str:
    return {bool: "a boolean", int: "an integer", float: "a number", str: "a string",
            list: "a list", dict: "a mapping", type(None): "empty"}.get(type(value), type(value).__name__)


# --- from validated data to the model ----------------------------------------------

def _walk_groups(groups: dict, gnode: yaml.Node, trail: tuple[str, ...]) -> Iterator[tuple]:
    """(group names, host name, host vars, key node, value node) for every host occurrence."""
    for gname, group in (groups or {}).items():
        _, group_node = yamlfile.child(gnode, gname)
        group = group or {}
        _, hosts_node = yamlfile.child(group_node, "hosts")
        for hname, hvars in (group.get("hosts") or {}).items():
            k, v = yamlfile.child(hosts_node, hname)
            yield trail + (gname,), hname, hvars or {}, k, v
        _, children_node = yamlfile.child(group_node, "children")
        yield from _walk_groups(group.get("children") or {}, children_node, trail + (gname,))


def _model(data: dict, root: yaml.Node, file: str) -> Inventory:
    merged: dict[str, dict] = {}
    groups: dict[str, list[str]] = {}
    where: dict[tuple[str, str], int | None] = {}  # (host, iowatch key) → line that set it
    devices_node: dict[str, yaml.Node | None] = {}
    problems: list[Problem] = []
    for trail, hname, hvars, knode, vnode in _walk_groups(data, root, ()):
        for g in trail:
            if g not in groups.setdefault(hname, []):
                groups[hname].append(g)
        for key, value in hvars.items():
            vk, _ = yamlfile.child(vnode, key)
            if key.startswith("iowatch_"):
                if (hname, key) in where:
                    problems.append(Problem(file, yamlfile.line_of(vk), f"already set on line {where[hname, key]}; "
                                            "declare iowatch variables in one place only", hname, None, key))
                    continue
                where[hname, key] = yamlfile.line_of(vk)
                if key == "iowatch_devices":
                    devices_node[hname] = yamlfile.child(vnode, key)[1]
            merged.setdefault(hname, {})[key] = value
        merged.setdefault(hname, {})

    labs = _lava_labs(data, file)
    hosts: dict[str, Host] = {}
    for hname, hvars in merged.items():
        devs = []
        seen: dict[tuple[str, str], str] = {}
        dnode = devices_node.get(hname)
        for i, entry in enumerate(hvars.get("iowatch_devices") or []):
            _, enode = yamlfile.child(dnode, i)
            dev = _device(entry, yamlfile.line_of(enode))
            for key in ("name", "path", "image"):
                value = entry.get(key)
                if value is None:
                    continue
                if (key, value) in seen:
                    kn, _ = yamlfile.child(enode, key)
                    problems.append(Problem(file, yamlfile.line_of(kn), f"{value!r} is already used by device "
                                            f"{seen[key, value]!r}; each {key} must be unique on a host",
                                            hname, repr(dev.name), key))
                seen[key, value] = dev.name
            problems += _qemu_problems(file, hname, dev, enode)
            devs.append(dev)
        kind = hvars.get("iowatch_kind") or (
            "local" if hvars.get("ansible_connection") == "local" else "bare-metal")
        board = None
        if kind == "lava":
            board = _lava_board(file, hname, hvars, groups.get(hname, []), labs,
                                where.get((hname, "iowatch_kind")), devs, problems)
        hosts[hname] = Host(hname, kind, tuple(devs), hvars, tuple(groups.get(hname, ())), board)
    if problems:
        raise InventoryError(_sorted(problems))
    return Inventory(file, hosts)


def _lava_labs(groups: dict, file: str) -> dict[str, LavaLab]:
    """Every group that declares iowatch_lava (at any depth), by group name."""
    labs: dict[str, LavaLab] = {}
    for gname, group in (groups or {}).items():
        group = group or {}
        lab = (group.get("vars") or {}).get(LAVA_GROUP_VAR)
        if lab:
            labs[gname] = LavaLab(gname, lab["server"], lab["token_env"], lab.get("user"),
                                  lab.get("rootfs"), lab.get("kernels"), lab.get("disks"), file)
        labs.update(_lava_labs(group.get("children") or {}, file))
    return labs


def _lava_board(file: str, hname: str, hvars: dict, host_groups: list[str], labs: dict[str, LavaLab],
                line: int | None, devs: list[Device], problems: list[Problem]) -> LavaBoard | None:
    """The board class a host of kind lava stands for, in the innermost LAVA lab
    group it belongs to; its devices must be the board's own disks (path or members)."""
    mine = [g for g in host_groups if g in labs]
    for dev in devs:
        if dev.is_image:
            problems.append(Problem(file, dev.line, "a LAVA board's devices are its own disks as the "
                                    "board sees them: give path (such as /dev/mmcblk0), not image",
                                    hname, repr(dev.name), "image"))
    if not mine:
        problems.append(Problem(file, line, "a host of iowatch_kind lava belongs to a LAVA lab: list it "
                                f"under a group whose vars set {LAVA_GROUP_VAR} (server, token_env)"
                                + (f"; LAVA labs here: {', '.join(sorted(labs))}" if labs else ""),
                                hname, None, "iowatch_kind"))
        return None
    b = hvars["iowatch_lava_board"]
    return LavaBoard(labs[mine[-1]], b["device_type"], tuple(b.get("tags") or ()), b.get("arch", "x86_64"),
                     b.get("rootfs") or labs[mine[-1]].rootfs, b.get("dtb"))


def _qemu_problems(file: str, hname: str, dev: Device, enode) -> list[Problem]:
    """What the schema cannot say of a device's `qemu`: a null_blk device is the
    guest kernel's nullb0 (its module parameters make one device, iowatch.vlab),
    sized in whole GiB; the null_blk settings mean nothing on a QEMU disk."""
    q, problems = dev.qemu, []
    qnode = yamlfile.child(enode, "qemu")[1]

    def problem(key: str, text: str) -> None:
        problems.append(Problem(file, yamlfile.line_of(yamlfile.child(qnode, key)[0]) or dev.line,
                                text, hname, repr(dev.name), f"qemu.{key}"))
    if q.get("bus") == NULL_BLK:
        if dev.path != "/dev/nullb0" or dev.members:
            problem("bus", "a null_blk device is the guest's /dev/nullb0: give it path: /dev/nullb0 "
                           "(one null_blk device a host)")
        try:
            whole = "size" not in q or parse_size(q["size"]) % (1 << 30) == 0
        except ValueError:
            whole = False
        if not whole:
            problem("size", f"{q['size']!r}: null_blk is sized in whole GiB (null_blk.gb); give 1GiB, 2GiB, ...")
        if "model" in q:
            problem("model", "null_blk is the guest kernel's own device: a device model serves QEMU's disks only")
    else:
        if "model" in q:
            _model_problems(dev, q["model"], problem)
        for key in ("completion_nsec", "hw_queue_depth"):
            if key in q:
                problem(key, f"{key} is a null_blk setting; set bus: null_blk, or remove it "
                             "(QEMU's disks take throttle: for their limits)")
    return problems


def _model_problems(dev: Device, name: str, problem) -> None:
    """A device model must exist and stand for the device's class (a RAID0's
    members are SSDs)."""
    from iowatch.mechanics import profiles

    try:
        profile = profiles.get(name)
    except KeyError as e:
        problem("model", str(e.args[0]))
        return
    wanted = "ssd" if dev.device_class == "ssd-raid0" else dev.device_class
    if profile.device_class != wanted:
        problem("model", f"{name!r} models a {profile.device_class} device ({profile.stands_for}); "
                         f"this device's class is {dev.device_class}: name a model of class {wanted}")


def _device(entry: dict, line: int | None) -> Device:
    size = entry.get("size_bytes")
    if size is None and "size" in entry:
        size = parse_size(entry["size"])
    return Device(
        name=entry["name"], device_class=entry["class"], filesystems=tuple(entry["filesystems"]),
        path=entry.get("path"), image=entry.get("image"), size_bytes=size,
        members=tuple(entry.get("members") or ()), model=entry.get("model"),
        rotational=entry.get("rotational"), partition_table=entry.get("partition_table", "none"),
        discard=entry.get("discard", True), qemu=dict(entry.get("qemu") or {}), line=line)


def main(argv: list[str] | None = None) -> int:
    """`python -m iowatch.inventory --group G [--group H]`: the groups' hosts, one
    a line (the lab-agent pipeline fans out over them)."""
    import argparse
    ap = argparse.ArgumentParser(prog="python -m iowatch.inventory",
                                 description="print the hosts of an inventory group, one a line")
    ap.add_argument("--group", required=True, action="append")
    ap.add_argument("--inventory", default=None, help="default: as iowatch run finds it")
    args = ap.parse_args(argv)
    inv = load(args.inventory)
    for name in sorted(n for n, h in inv.hosts.items() if set(args.group) & set(h.groups)):
        print(name)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
