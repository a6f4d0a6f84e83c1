"""Devices with mechanics: cost models behind the virtual lab's disks.

models: the pure models (a disk's seeks and rotation, a flash card's
allocation units, an SSD's channels); profiles: the named real devices they
are calibrated to (src/iowatch/data/device-models.yml); export: a model served
as an NBD export by nbdkit (nbdplugin is the plugin nbdkit loads), started and
stopped with a guest by iowatch.vlab, or by the tests and bench/devmodels.
"""
from pathlib import Path


def nbdplugin_path() -> Path:
    """The plugin file nbdkit loads (it runs under the system's Python)."""
    return Path(__file__).with_name("nbdplugin.py")
