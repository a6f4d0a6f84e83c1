"""The virtual lab's QEMU disks follow the inventory's qemu hosts, per device class."""
from __future__ import annotations

from pathlib import Path

import pytest

from iowatch import inventory
from iowatch.vlab import guest_kernel_args, guest_run_command, modelled_disks, qemu_device_args

REPO = Path(__file__).resolve().parents[2]


def test_each_device_class_gets_its_emulated_disk(tmp_path):
    host = inventory.load(REPO / "hardware-inventory.yml").host("vlab")
    args = qemu_device_args(host, tmp_path / "disks")
    devices = [args[i + 1] for i, a in enumerate(args) if a == "-device"]
    drives = [args[i + 1] for i, a in enumerate(args) if a == "-drive"]
    # ssd and the two RAID0 members on virtio-blk, in that order (vda, vdb, vdc).
    assert [d for d in devices if d.startswith("virtio-blk-pci")] == [
        "virtio-blk-pci,drive=iow-vssd,serial=iow-vssd",
        "virtio-blk-pci,drive=iow-vraid0-0,serial=iow-vraid0-0",
        "virtio-blk-pci,drive=iow-vraid0-1,serial=iow-vraid0-1"]
    # hdd: scsi-hd that reports a rotation rate, IOPS-limited; sdcard: sdhci + sd-card, bps-limited.
    assert any(d.startswith("scsi-hd,drive=iow-vhdd") and "rotation_rate=7200" in d for d in devices)
    assert any("id=iow-vhdd" in d and "throttling.iops-total=150" in d for d in drives)
    assert "sd-card,drive=iow-vsd" in devices and "sdhci-pci,id=iow-sdhci-vsd" in devices
    assert any("id=iow-vsd" in d and "throttling.bps-total=20000000" in d for d in drives)
    # emmc: the nearest QEMU 7.2 has, a second SD card on its own controller (mmcblk1),
    # limited to the seed's eMMC rates.
    assert "sd-card,drive=iow-vemmc" in devices and "sdhci-pci,id=iow-sdhci-vemmc" in devices
    assert devices.index("sdhci-pci,id=iow-sdhci-vsd") < devices.index("sdhci-pci,id=iow-sdhci-vemmc")
    assert any("id=iow-vemmc" in d and "throttling.bps-total=125000000" in d
               and "throttling.iops-total=3000" in d for d in drives)
    # No id clashes with virtme-ng's own (such as sd0): every id of ours starts with iow.
    assert all("id=iow" in d for d in drives)
    images = sorted(p.name for p in (tmp_path / "disks").glob("*.img"))
    assert images == ["vemmc.img", "vhdd.img", "vraid0-0.img", "vraid0-1.img", "vsd.img",
                      "vssd.img"]
    assert (tmp_path / "disks" / "vsd.img").stat().st_size == 1 << 30
    assert all(str(tmp_path / "disks") in d for d in drives)


def test_a_null_blk_device_is_the_guest_kernels_own(tmp_path):
    inv = inventory.load(REPO / "hardware-inventory.yml")
    host = inv.host("vlab-nullblk")
    # No QEMU disk: the guest's built-in null_blk makes nullb0 from the command line.
    assert qemu_device_args(host, tmp_path / "disks") == []
    assert not list((tmp_path / "disks").glob("*.img"))
    words = dict(w.split("=", 1) for w in guest_kernel_args(host))
    assert words == {"null_blk.nr_devices": "1", "null_blk.gb": "2", "null_blk.memory_backed": "1",
                     "null_blk.irqmode": "2", "null_blk.completion_nsec": "100000",
                     "null_blk.hw_queue_depth": "64"}
    # The QEMU disks' host leaves null_blk's defaults alone.
    assert guest_kernel_args(inv.host("vlab")) == []


def test_the_guest_runs_the_hosts_iowatch_with_the_series_filled_in(tmp_path):
    host = inventory.load(REPO / "hardware-inventory.yml").host("vlab")
    argv = guest_run_command("jobs/e2e.yml", host, REPO / "hardware-inventory.yml", tmp_path / "b",
                             profile="quick", reps=5, kernel_commit="abc1234", label="base+p1..p1",
                             series={"name": "s", "index": 1, "subject": "fs: x", "base": "def5678"})
    assert argv[2].endswith("/iowatch") and argv[3] == "run" and "--target" in argv
    assert argv[argv.index("--patch-index") + 1] == "1"
    assert argv[argv.index("--series-name") + 1] == "s"
    from iowatch.cli import build_parser
    parsed = build_parser().parse_args(argv[3:])  # the guest's command parses against the CLI
    assert parsed.patch_subject == "fs: x" and parsed.reps == 5


def test_kernel_boot_names_a_missing_kernel_and_refuses_a_bare_metal_host(tmp_path, capsys):
    from iowatch.cli import main
    assert main(["kernel", "boot", str(tmp_path / "nothing"), "true"]) == 2
    err = capsys.readouterr().err
    assert f"{tmp_path / 'nothing'}: no bzImage there" in err and "iowatch kernel build" in err
    (tmp_path / "bzImage").write_bytes(b"not booted: the host is refused first")
    assert main(["kernel", "boot", str(tmp_path), "--host", "localhost", "true"]) == 2
    assert "host localhost is local; only a qemu host" in capsys.readouterr().err
    assert main(["kernel", "boot", str(tmp_path), "--host", "nosuch", "true"]) == 2
    assert "nosuch" in capsys.readouterr().err


def test_the_cli_imports_only_the_command_it_runs():
    import subprocess
    import sys
    code = ("import sys; from iowatch.cli import main; main(['device', '--help'])")
    done = subprocess.run([sys.executable, "-X", "importtime", "-c", code], capture_output=True, text=True)
    assert "usage: iowatch device" in done.stdout
    assert "scipy" not in done.stderr and "iowatch.commands.check" not in done.stderr


def test_modelled_disks_are_nbd_exports_of_their_device_models(tmp_path, monkeypatch):
    """vlab-mech's disks are served by nbdkit through their device models
    (iowatch.mechanics) for the life of a boot: QEMU gets an NBD drive on each
    model's socket (the guest's driver path unchanged), the exports answer, and
    what each model served is recorded with its seed after they stop."""
    import json
    import shutil

    from iowatch.mechanics import probe
    if not shutil.which("nbdkit"):
        pytest.skip("needs nbdkit: scripts/setup.sh")
    monkeypatch.setenv("IOWATCH_MODEL_SEED", "41")
    host = inventory.load(REPO / "hardware-inventory.yml").host("vlab-mech")
    images, record = tmp_path / "disks", tmp_path / "device-models.json"
    images.mkdir()
    with modelled_disks(host, images, record) as exports:
        assert sorted(exports) == ["memmc", "mhdd", "mraid0-0", "mraid0-1", "msd", "mssd"]
        args = qemu_device_args(host, images, exports)
        drives = [args[i + 1] for i, a in enumerate(args) if a == "-drive"]
        assert all(d.startswith("driver=nbd,server.type=unix,server.path=") for d in drives)
        assert "scsi-hd,drive=iow-mhdd,bus=iowscsi.0,rotation_rate=7200,serial=iow-mhdd" in args
        assert "sd-card,drive=iow-msd" in args
        job = probe.fio(f"nbd+unix:///?socket={exports['mhdd']}", "--rw=randread", "--bs=4k",
                        "--size=100%", runtime_s=1)
        reads = job["read"]["total_ios"]
        assert 20 < reads < 200                          # a 7200-rpm disk: about 78 a second
    assert not list(images.glob("*.nbd"))                  # stopped, sockets gone
    served = json.loads(record.read_text())
    assert served["mhdd"]["model"] == "hdd-st1000dm003" and served["mhdd"]["seed"] == 41 + 3   # the fourth disk: mssd, mraid0-0, mraid0-1, mhdd
    assert served["mhdd"]["served"]["requests"]["read"] == reads
    assert "Lexar 633x" in served["msd"]["stands_for"]
    assert {e["time_scale"] for e in served.values()} == {1.0} and served["msd"]["accel"] == "kvm"


def test_under_tcg_the_cards_and_the_ssd_run_slowed_and_the_bundle_says_so(tmp_path, monkeypatch):
    """A guest under TCG gets each device model at its profile's time scale
    (device-models.yml `tcg`): the SD card model charges the same 4 KiB random
    writes through its export its factor (16) times the unslowed card's time,
    and fio sees them slower, the disk's do
    not move, and a bundle's devices are told which model served them, slowed
    by how much (vlab.note_device_models)."""
    import json
    import shutil

    from iowatch.mechanics import probe, profiles
    from iowatch.vlab import note_device_models

    if not shutil.which("nbdkit"):
        pytest.skip("needs nbdkit: scripts/setup.sh")
    host = inventory.load(REPO / "hardware-inventory.yml").host("vlab-mech")
    rate, charged = {}, {}
    monkeypatch.setenv("IOWATCH_MODEL_SEED", "7")  # the same card, and 40 writes, on both sides
    for accel in ("kvm", "tcg"):
        images, record = tmp_path / accel, tmp_path / accel / "device-models.json"
        images.mkdir()
        with modelled_disks(host, images, record, accel=accel) as exports:
            job = probe.fio(f"nbd+unix:///?socket={exports['msd']}", "--rw=randwrite", "--bs=4k",
                            "--size=64m", "--time_based=0", "--number_ios=40", runtime_s=20)
            rate[accel] = job["write"]["iops"]
        served = json.loads(record.read_text())
        assert served["msd"]["accel"] == accel
        stats = json.loads((images / "msd.model.json").read_text())
        charged[accel] = stats["model_s"] / sum(stats["requests"].values())
    scale = profiles.get("sd-lexar-633x").tcg_time_scale
    assert served["msd"]["time_scale"] == scale and served["mhdd"]["time_scale"] == 1.0
    assert served["mssd"]["time_scale"] == profiles.get("ssd-860evo").tcg_time_scale
    # What the model charged a write is the time scale's doing alone; fio's wall
    # rate also carries the host's own cost a request (the plugin, the socket,
    # fio), the same on both sides and larger on a loaded host, which pulls the
    # rates' ratio below the scale: (scale*m + h) / (m + h). So the scale is held
    # on the charged time, and the rate only has to fall by a quarter of it (5.2x
    # of 16 in a CI run beside heavy work).
    assert scale / 1.25 < charged["tcg"] / charged["kvm"] < scale * 1.25
    assert rate["kvm"] / rate["tcg"] > scale / 4
    doc = {"devices": [{"name": "msd", "class": "sdcard", "model": "SD card over the sd-lexar-633x model"},
                       {"name": "mhdd", "class": "hdd"}, {"name": "vssd"}]}
    note = note_device_models(tmp_path / "tcg", doc)
    assert doc["devices"][0]["device_model"]["time_scale"] == scale
    assert doc["devices"][0]["model"] == f"SD card over the sd-lexar-633x model, every cost x{scale:g} under TCG"
    assert doc["devices"][1]["device_model"]["model"] == "hdd-st1000dm003"
    assert "device_model" not in doc["devices"][2]
    assert note.startswith("device models slowed under TCG: ") and f"msd (sd-lexar-633x) x{scale:g}" in note


@pytest.mark.parametrize("model,words", [
    ("hdd-nonesuch", "no device model 'hdd-nonesuch'"),
    ("sd-lexar-633x", "models a sdcard device"),
])
def test_a_device_model_must_exist_and_fit_the_devices_class(tmp_path, model, words):
    text = (REPO / "hardware-inventory.yml").read_text().replace(
        "qemu: {bus: scsi-hd, size: 2GiB, rotation_rate: 7200, model: hdd-st1000dm003}",
        f"qemu: {{bus: scsi-hd, size: 2GiB, rotation_rate: 7200, model: {model}}}")
    bad = tmp_path / "inventory.yml"
    bad.write_text(text)
    with pytest.raises(inventory.InventoryError) as e:
        inventory.load(bad)
    assert words in str(e.value) and "mhdd" in str(e.value) and "qemu.model" in str(e.value)


def test_check_and_reproduce_default_to_the_modelled_lab_where_the_inventory_has_it(tmp_path):
    """No --hosts: check and reproduce boot on vlab-mech (devices with
    mechanics); an inventory without it falls back to vlab; a bisect keeps
    vlab (its agents' granted host)."""
    from iowatch.commands.guest_options import MODELLED_HOST, PLAIN_HOST, qemu_host

    shipped = REPO / "hardware-inventory.yml"
    assert qemu_host(shipped, None, "-").name == MODELLED_HOST == "vlab-mech"
    assert qemu_host(shipped, "vlab", "-").name == PLAIN_HOST
    text = shipped.read_text()
    start, end = text.index("        vlab-mech:"), text.index("    # Groups by device class")
    without = text[:start] + text[end:]
    assert "vlab-mech:" not in without
    path = tmp_path / "inventory.yml"
    path.write_text(without)
    assert qemu_host(path, None, "-").name == PLAIN_HOST


def test_an_sd_cards_guest_path_is_found_by_its_controller_not_its_mmcblk_number(tmp_path):
    """The guest numbers mmcblk devices in the order the cards are detected,
    which is not stable (seed 000 on vlab-mech: one boot of three wrote the SD
    card's study to the eMMC model's card). vlab.guest_path finds the k-th card
    of the inventory on the guest's k-th MMC host; other devices keep their path."""
    from iowatch.vlab import guest_path

    host = inventory.load(REPO / "hardware-inventory.yml").host("vlab-mech")
    sys_root = tmp_path / "sys"
    # As one boot had it: mmc0 on the second controller's slot (00:0f.0) and its
    # card mmcblk0; msd's controller, the first slot (00:0e.0), is mmc1 with mmcblk1.
    for ctrl, pci, disk in (("mmc0", "0000:00:0f.0", "mmcblk0"), ("mmc1", "0000:00:0e.0", "mmcblk1")):
        (sys_root / "devices" / pci).mkdir(parents=True)
        (sys_root / "class" / "mmc_host" / ctrl / f"{ctrl}:4567" / "block" / disk).mkdir(parents=True)
        (sys_root / "class" / "mmc_host" / ctrl / "device").symlink_to(sys_root / "devices" / pci)
    assert guest_path(host, host.device("msd"), str(sys_root)) == "/dev/mmcblk1"
    assert guest_path(host, host.device("memmc"), str(sys_root)) == "/dev/mmcblk0"
    assert guest_path(host, host.device("mhdd"), str(sys_root)) == "/dev/sda"
    # Not a guest of this host (no controllers, or another count): the inventory's path.
    assert guest_path(host, host.device("msd"), str(tmp_path / "nothing")) == "/dev/mmcblk0"
