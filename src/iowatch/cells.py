"""How a cell is named: one key type per thing a key means, never a bare tuple.

- CellLocation: where a cell ran, hosts pooled: study, device class, device,
  filesystem. The bundle names the same cell by a string, `cell_id`
  (study/device/filesystem), which stays the bundle's and the API's format.
- PooledKey: one metric of one job group at a location: the key of a side's
  pooled values (a side may pool runs of several hosts, so no host).
- CellKey: a PooledKey on the host (or "a -> b" hosts) it was compared on:
  the name a verdict carries.

The keys keep their fields flat, as the verdict and report JSON carry them
(CellKey's order, host second, is the stored one); Located gives each record
with a location's four fields its `location` and `cell_id`.

Plain data with no statistics in it, so the runner side can name cells
without importing scipy (iowatch.stats re-exports CellKey beside the
verdicts that carry it).
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, order=True)
class CellLocation:
    """Where a cell ran: study, device class, device, filesystem."""
    study: str
    device_class: str
    device: str
    filesystem: str

    @property
    def cell_id(self) -> str:
        """The bundle's id of the cell: study/device/filesystem."""
        return f"{self.study}/{self.device}/{self.filesystem}"


class Located:
    """A record that carries a location's four fields flat (they are its JSON
    fields too) and names the location from them."""
    study: str
    device_class: str
    device: str
    filesystem: str

    @property
    def location(self) -> CellLocation:
        return CellLocation(self.study, self.device_class, self.device, self.filesystem)

    @property
    def cell_id(self) -> str:
        return self.location.cell_id


@dataclass(frozen=True, order=True)
class PooledKey(Located):
    """One metric of one job group at a location, hosts pooled."""
    study: str
    device_class: str
    device: str
    filesystem: str
    group: str
    metric: str

    @classmethod
    def at(cls, where: CellLocation, group: str, metric: str) -> PooledKey:
        return cls(where.study, where.device_class, where.device, where.filesystem, group, metric)


@dataclass(frozen=True, order=True)
class CellKey(Located):
    """One metric of one group in one cell on a host: the name a verdict carries."""
    study: str
    host: str
    device_class: str
    device: str
    filesystem: str
    group: str
    metric: str

    @classmethod
    def on_host(cls, pooled: PooledKey, host: str) -> CellKey:
        return cls(pooled.study, host, pooled.device_class, pooled.device, pooled.filesystem,
                   pooled.group, pooled.metric)

    @property
    def pooled(self) -> PooledKey:
        """The key of the pooled values this verdict was computed from."""
        return PooledKey.at(self.location, self.group, self.metric)
