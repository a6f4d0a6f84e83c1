"""The guest kernel's configuration step on Debian's real 6.12 tree, without
building: allnoconfig plus kernels/config/*.config gives a .config that has
every option the fragments set and none of the heavy subsystems a storage
guest never uses (DRM, sound, wireless, USB). Only the Kconfig world of the
tree is unpacked (Kconfig and Makefiles, scripts/, arch/x86, include/): about
30 s, most of it xz."""
from __future__ import annotations

import glob
import os
import subprocess
from pathlib import Path

import pytest

from iowatch.kernel import build
from iowatch.kernel.source import DEBIAN_TARBALLS, SourceError

REPO = Path(__file__).resolve().parents[2]
KCONFIG_WORLD = ("*Kconfig*", "*Makefile*", "*/Kbuild", "*/scripts/*", "*/arch/x86/*",
                 "*/include/*", "*/kernel/configs/*", "*/tools/*")
HEAVY = ("CONFIG_DRM", "CONFIG_SOUND", "CONFIG_SND", "CONFIG_CFG80211", "CONFIG_MAC80211",
         "CONFIG_WLAN", "CONFIG_WIRELESS", "CONFIG_USB", "CONFIG_USB_SUPPORT", "CONFIG_HID",
         "CONFIG_BT", "CONFIG_MODULES",
         # no network in the guest (9p needs sockets, not IP), nor what olddefconfig
         # adds by default once ACPI and x86 are in: power, thermal, frequency drivers
         "CONFIG_INET", "CONFIG_IPV6", "CONFIG_NETDEVICES", "CONFIG_ETHTOOL_NETLINK",
         "CONFIG_VSOCKETS", "CONFIG_ACPI_BATTERY", "CONFIG_ACPI_THERMAL", "CONFIG_CPU_FREQ",
         "CONFIG_THERMAL")


@pytest.fixture(scope="module")
def kconfig_tree(tmp_path_factory) -> Path:
    tarballs = sorted(glob.glob(DEBIAN_TARBALLS))
    if not tarballs:
        if os.environ.get("CI"):
            pytest.fail("CI installs linux-source-6.12 (scripts/setup.sh): no tarball in /usr/src")
        pytest.skip("no Debian kernel source (apt-get install linux-source-6.12)")
    dest = tmp_path_factory.mktemp("kconfig")
    subprocess.run(["tar", "-xJf", tarballs[-1], "-C", str(dest), "--wildcards", *KCONFIG_WORLD],
                   check=True)
    (tree,) = [p for p in dest.iterdir() if p.is_dir()]
    return tree


@pytest.fixture(scope="module")
def guest_config(kconfig_tree, tmp_path_factory) -> dict[str, str]:
    out = tmp_path_factory.mktemp("guest-build")
    config = build.make_config(kconfig_tree, out, build.default_fragments())
    return build.read_config(config.read_text())


def test_every_option_of_the_fragments_is_in_the_guest_config(guest_config):
    wanted = {}
    for frag in build.default_fragments():
        wanted.update(build.read_config(frag.read_text()))
    assert len(wanted) > 100
    wrong = {k: (v, guest_config.get(k, "n")) for k, v in wanted.items()
             if guest_config.get(k, "n") != v}
    assert not wrong
    # What the studies run on, spelled out (iowatch.config): the check above
    # is only as good as the fragments, so name the ones a study dies without.
    for option in ("CONFIG_F2FS_FS", "CONFIG_XFS_FS", "CONFIG_EXT4_FS", "CONFIG_MD_RAID0",
                   "CONFIG_MMC_SDHCI_PCI", "CONFIG_SCSI_VIRTIO", "CONFIG_VIRTIO_BLK",
                   "CONFIG_9P_FS", "CONFIG_SYSVIPC", "CONFIG_IKCONFIG_PROC"):
        assert guest_config.get(option) == "y", option


def test_the_guest_config_has_no_heavy_subsystem(guest_config):
    assert {k: guest_config[k] for k in HEAVY if guest_config.get(k, "n") != "n"} == {}
    # A benchmark kernel is built for speed, not size, and without debug info.
    assert guest_config.get("CONFIG_CC_OPTIMIZE_FOR_PERFORMANCE") == "y"
    assert guest_config.get("CONFIG_DEBUG_INFO", "n") == "n"
    assert guest_config.get("CONFIG_64BIT") == "y"


def test_a_fragment_option_that_cannot_be_met_is_refused_by_name(kconfig_tree, tmp_path):
    # MMC_SDHCI_PCI needs PCI: a fragment that turns PCI off cannot have it.
    bad = tmp_path / "no-pci.config"
    bad.write_text("# CONFIG_PCI is not set\n")
    with pytest.raises(SourceError) as err:
        build.make_config(kconfig_tree, tmp_path / "out", build.default_fragments() + [bad])
    assert "CONFIG_MMC_SDHCI_PCI wanted y, got n" in str(err.value)
    assert "no-pci.config" in str(err.value)


def test_an_unknown_base_is_refused(kconfig_tree, tmp_path):
    with pytest.raises(SourceError, match="unknown kernel config base 'tinyconfg'"):
        build.make_config(kconfig_tree, tmp_path, build.default_fragments(), base="tinyconfg")
