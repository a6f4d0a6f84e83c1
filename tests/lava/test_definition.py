"""Every job definition iowatch makes for a LAVA lab passes LAVA's own schema
(lava_common, Debian's lava-common), and one LAVA refuses is refused with LAVA's
message. The board gets this host's declared devices and nothing else."""
from __future__ import annotations

import base64
import re
import shlex
import uuid
from pathlib import Path

import pytest
import yaml

from iowatch import bundle, inventory
from iowatch.lava import definition

REPO_INVENTORY = Path(__file__).resolve().parents[2] / "hardware-inventory.yml"

UBOOT_LAB = """\
all:
  children:
    lava_lab:
      vars:
        iowatch_lava:
          server: https://lava.example.org/
          token_env: IOWATCH_LAVA_TOKEN
          rootfs: https://artifacts.example.org/iowatch/rootfs-arm64.tar.xz
          kernels: https://artifacts.example.org/iowatch/kernels/
      hosts:
        lava-rk3399-sd:
          iowatch_kind: lava
          iowatch_lava_board: {device_type: rk3399-gru-kevin, tags: [sd-evo32], arch: arm64,
                               dtb: rockchip/rk3399-gru-kevin.dtb}
          iowatch_devices:
            - name: sd0
              class: sdcard
              path: /dev/mmcblk1
              filesystems: [f2fs, ext4]
"""

MEASUREMENTS = [
    definition.Measurement("jobs/smoke.yml", "a" * 40, "good", "http://iowatch.example.org/"),
    definition.Measurement("f2fs-dio-write", "b" * 40, "bisect step 3", "http://iowatch.example.org/",
                           cells=("f2fs-dio-write/lsd/f2fs", "canary-tmpfs-read/lsd/tmpfs"), reps=5,
                           profile="quick", run_args=("--series-name", "s", "--patch-index", "2")),
]


def qemu_host() -> inventory.Host:
    return inventory.load(REPO_INVENTORY).host("lava-qemu")


def uboot_host() -> inventory.Host:
    return inventory.loads(UBOOT_LAB, "lab.yml").host("lava-rk3399-sd")


def steps(job: dict) -> list[str]:
    (test,) = [a["test"] for a in job["actions"] if "test" in a]
    return test["definitions"][0]["repository"]["run"]["steps"]


def shipped_inventory(job: dict) -> str:
    (line,) = [s for s in steps(job) if definition.BOARD_INVENTORY in s and "base64 -d" in s]
    return base64.b64decode(line.split()[1]).decode()


@pytest.mark.parametrize("make_host", [qemu_host, uboot_host], ids=["qemu", "u-boot"])
@pytest.mark.parametrize("m", MEASUREMENTS, ids=["matrix", "cells"])
def test_every_definition_iowatch_makes_passes_lavas_schema(make_host, m):
    host = make_host()
    job = definition.make(host, m, token="agent-token")
    assert definition.validate(job) is job
    # and the YAML iowatch submits is the same definition
    assert yaml.safe_load(definition.render(job, hide_secrets=False)) == job
    assert job["device_type"] == host.lava.device_type and job["metadata"]["iowatch.host"] == host.name


def test_the_qemu_board_boots_the_variant_with_the_board_disks_of_the_inventory():
    job = definition.make(qemu_host(), MEASUREMENTS[0], token="t")
    images = job["actions"][0]["deploy"]["images"]
    assert images["kernel"]["url"] == f"file:///var/lib/iowatch/lava/kernels/{'a' * 40}/bzImage"
    # the root is the first virtio-blk device (/dev/vda) made with -device, as the disks are:
    # an if=virtio drive would be created after them
    assert images["rootfs"]["image_arg"] == ("-drive format=raw,if=none,id=iow-rootfs,file={rootfs} "
                                             "-device virtio-blk-pci,drive=iow-rootfs")
    # In sorted order: lava-server stores a definition with its keys sorted, and
    # QEMU numbers the disks in the order of their -device (the root first: vda).
    assert list(images) == sorted(images) == ["kernel", "rootfs", "storage_lhdd", "storage_lsd",
                                                "storage_lssd"]
    assert "throttling.iops-total=150" in images["storage_lhdd"]["image_arg"]
    assert "-device sd-card,drive=iow-lsd" in images["storage_lsd"]["image_arg"]
    assert images["storage_lsd"]["url"].endswith("/blank-1073741824.img.xz")
    # every {placeholder} names an image LAVA downloads
    for key, image in images.items():
        assert set(re.findall(r"\{(\w+)\}", image["image_arg"])) == {key}


def test_a_uboot_board_takes_kernel_and_dtb_over_tftp_and_its_root_over_nfs():
    job = definition.make(uboot_host(), MEASUREMENTS[0], token="t")
    deploy, boot = job["actions"][0]["deploy"], job["actions"][1]["boot"]
    kernels = "https://artifacts.example.org/iowatch/kernels/" + "a" * 40
    assert deploy["to"] == "tftp" and deploy["kernel"] == {"url": f"{kernels}/Image", "type": "image"}
    assert deploy["dtb"] == {"url": f"{kernels}/dtbs/rockchip/rk3399-gru-kevin.dtb"}
    assert deploy["nfsrootfs"]["compression"] == "xz"
    assert (boot["method"], boot["commands"]) == ("u-boot", "nfs")
    assert job["tags"] == ["sd-evo32"]


def test_the_board_runs_the_cells_and_uploads_with_the_token_of_the_secrets():
    m = MEASUREMENTS[1]
    job = definition.make(qemu_host(), m, token="agent-token")
    assert job["secrets"] == {definition.TOKEN_SECRET: "agent-token"} and job["visibility"] != "public"
    (run,) = [s for s in steps(job) if "iowatch run" in s]
    argv = shlex.split(run.split("; ", 1)[1].removesuffix(" || rc=$?"))
    assert argv[:3] == ["iowatch", "run", "f2fs-dio-write"]
    assert argv[argv.index("--cells") + 1] == "f2fs-dio-write/lsd/f2fs,canary-tmpfs-read/lsd/tmpfs"
    assert argv[argv.index("--upload") + 1] == "http://iowatch.example.org/"
    assert argv[argv.index("--target") + 1] == "lava-qemu" and argv[-4:] == list(m.run_args)
    assert "--token" not in argv  # iowatch run reads IOWATCH_TOKEN, exported from LAVA's secrets file
    assert "export IOWATCH_TOKEN" in steps(job)[0]
    # what is shown or logged hides the token
    assert "agent-token" not in definition.render(job)


def test_the_board_gets_the_declared_devices_only():
    host = qemu_host()
    job = definition.make(host, MEASUREMENTS[0], token="t")
    board = inventory.loads(shipped_inventory(job), "board.yml").host("lava-qemu")
    assert (board.kind, board.lava.device_type) == ("lava", "qemu")
    assert [(d.name, d.path) for d in board.devices] == [(d.name, d.path) for d in host.devices]
    assert all(not d.qemu for d in board.devices)


@pytest.mark.parametrize("make_host", [qemu_host, uboot_host], ids=["qemu", "u-boot"])
def test_the_boards_bundle_names_a_lava_board_class_of_its_device_type(make_host, tmp_path):
    """The runner on the board writes its host as the inventory it is handed
    says: a LAVA board class (it said bare-metal, and so did the mail)."""
    host = make_host()
    board = inventory.loads(shipped_inventory(definition.make(host, MEASUREMENTS[0], token="t")),
                            "board.yml").host(host.name)
    entry = board.bundle_entry()
    assert entry == {"name": host.name, "kind": "lava",
                     "lava": {"device_type": host.lava.device_type, "tags": list(host.lava.tags)}}
    # The bundle schema takes it (a bundle of the board as the runner writes one).
    w = bundle.BundleWriter(tmp_path, run_id=str(uuid.uuid4()), kernel={"release": "6.13.0"},
                            host=entry, devices=[d.bundle_entry() for d in board.devices])
    w.close()
    assert bundle.load(tmp_path)["host"] == entry
    # Nothing of the lab's but its server and the token's variable's name goes to the board.
    shipped = yaml.safe_load(shipped_inventory(definition.make(host, MEASUREMENTS[0], token="t")))
    (lab,) = shipped["all"]["children"].values()
    assert lab["vars"] == {"iowatch_lava": {"server": host.lava.lab.server,
                                            "token_env": host.lava.lab.token_env}}


def test_a_definition_lava_refuses_is_refused_with_lavas_message():
    job = definition.make(qemu_host(), MEASUREMENTS[0], token="t")
    job["actions"][1]["boot"]["method"] = "qemu-nfs-typo"
    with pytest.raises(definition.DefinitionInvalid, match=r"LAVA's schema refuses the job definition: "
                                                          r"unknown action type .*actions.*boot"):
        definition.validate(job)
    job = definition.make(qemu_host(), MEASUREMENTS[0], token="t")
    job["timeouts"]["action"] = {"minutes": 999}
    with pytest.raises(definition.DefinitionInvalid, match="Global timeout is larger than job timeout"):
        definition.validate(job)


def test_a_board_class_without_a_root_filesystem_is_refused():
    text = UBOOT_LAB.replace("          rootfs: https://artifacts.example.org/iowatch/rootfs-arm64.tar.xz\n", "")
    host = inventory.loads(text, "lab.yml").host("lava-rk3399-sd")
    with pytest.raises(definition.DefinitionInvalid, match="no root filesystem for its boards; set rootfs"):
        definition.make(host, MEASUREMENTS[0], token="t")


def test_a_host_that_is_not_a_lava_board_is_refused():
    host = inventory.load(REPO_INVENTORY).host("vlab")
    with pytest.raises(definition.DefinitionInvalid, match="host 'vlab' is qemu, not a board class"):
        definition.make(host, MEASUREMENTS[0], token="t")


@pytest.mark.parametrize("make_host", [qemu_host, uboot_host], ids=["qemu", "u-boot"])
def test_the_health_check_passes_lavas_schema_and_checks_every_declared_disk(make_host):
    host = make_host()
    job = definition.validate(definition.health_check(host, "c" * 40))
    assert job["device_type"] == host.lava.device_type and "secrets" not in job
    assert job["metadata"]["iowatch.health-check"] == "true"
    board = inventory.loads(shipped_inventory(job), "board.yml").host(host.name)
    assert [d.path for d in board.devices] == [d.path for d in host.devices]
    checks = [shlex.split(s.split(";")[0].removeprefix("if ")) for s in steps(job) if s.startswith("if ")]
    assert checks == [["iowatch", "device", "check", host.name, d.path, "--inventory", definition.BOARD_INVENTORY]
                      for d in host.devices]


def test_a_disk_the_health_check_refuses_ends_the_job_with_lava_test_raise(tmp_path):
    """The steps run in a shell with the real `iowatch device check` and LAVA's two
    helpers recorded: /dev/vdb does not exist here, so the ssd is refused."""
    import os
    import subprocess
    import sys
    job = definition.health_check(qemu_host(), "c" * 40)
    calls = tmp_path / "calls"
    for helper in ("lava-test-case", "lava-test-raise"):
        (tmp_path / helper).write_text(f'#!/bin/sh\necho "{helper} $*" >> {calls}\n')
        (tmp_path / helper).chmod(0o755)
    inventory_step, lssd = steps(job)[0], steps(job)[1]
    script = inventory_step.replace(definition.BOARD_INVENTORY, str(tmp_path / "board.yml")) + "\n" + \
        lssd.replace(definition.BOARD_INVENTORY, str(tmp_path / "board.yml"))
    env = {**os.environ, "PATH": f"{tmp_path}:{Path(sys.executable).parent}:{os.environ['PATH']}"}
    subprocess.run(["sh", "-c", script], env=env, check=True, capture_output=True, text=True)
    assert calls.read_text().splitlines() == [
        "lava-test-case device-lssd --result fail",
        "lava-test-raise lssd /dev/vdb: iowatch device check refused it"]
