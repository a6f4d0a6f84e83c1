"""The device models' profiles: which real device each stands for, its
parameters, and the figures it is calibrated to (device-models.yml)."""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from iowatch import resources, yamlfile
from iowatch.mechanics import models


@dataclass(frozen=True)
class Target:
    rw: str
    bs: str
    iodepth: int
    metric: str
    value: float
    source: str
    tolerance_pct: float
    size: str | None = None
    host_reachable: bool = True

    @property
    def label(self) -> str:
        span = f" over {self.size}" if self.size else ""
        return f"{self.rw} {self.bs} QD{self.iodepth}{span}"


@dataclass(frozen=True)
class Profile:
    name: str
    kind: str
    device_class: str
    stands_for: str
    source: str
    params: dict
    targets: tuple[Target, ...]
    tcg_time_scale: float = 1.0  # how much slower the device runs for a guest under TCG (models.Model)
    tcg_why: str = ""

    def time_scale(self, accel: str) -> float:
        """The model's time scale for a guest under `accel` ("kvm" or "tcg")."""
        return self.tcg_time_scale if accel == "tcg" else 1.0

    def model(self, seed: int, capacity: int) -> models.Model:
        """A fresh model of this profile for a disk of `capacity` bytes (a
        rotational disk's stroke spans it)."""
        params = dict(self.params)
        if self.kind == "disk":
            params.setdefault("capacity", capacity)
        return models.make(self.kind, params, seed)


def models_file() -> Path:
    return resources.device_models()


@lru_cache(maxsize=None)
def load(path: str | None = None) -> dict[str, Profile]:
    path = path or str(models_file())
    data = yamlfile.load(path, "device-models-v1.json")
    out = {}
    for name, m in data["models"].items():
        targets = tuple(Target(t["rw"], t["bs"], t["iodepth"], t["metric"], float(t["value"]), t["source"],
                               float(t.get("tolerance_pct", m["tolerance_pct"])), t.get("size"),
                               t.get("host_reachable", True))
                        for t in m["targets"])
        tcg = m.get("tcg", {})
        out[name] = Profile(name, m["kind"], m["class"], m["stands_for"], " ".join(m["source"].split()),
                            dict(m["params"]), targets, float(tcg.get("time_scale", 1)),
                            " ".join(tcg.get("why", "").split()))
    return out


def get(name: str) -> Profile:
    """The named profile; an unknown name is refused with the names there are."""
    known = load()
    if name not in known:
        raise KeyError(f"no device model {name!r} in {models_file()}; known: {', '.join(sorted(known))}")
    return known[name]
