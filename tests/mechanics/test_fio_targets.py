"""Each device model's calibration targets, measured as a guest would see the
device, from outside: fio's nbd engine against the model's NBD export, served
by nbdkit's Python plugin on this host (no guest). Every target of every
profile in src/iowatch/data/device-models.yml must come within its tolerance
(20% unless the profile says otherwise), each in a fresh export; and a flash
card's open-unit knee and a disk's seek curve must be visible through it.

A target marked host_reachable: false (an SSD's latency at depth 1, which the
Python plugin's own cost per request hides) is skipped, saying why."""
import shutil
from pathlib import Path

import pytest

from iowatch.mechanics import export, probe, profiles

pytestmark = pytest.mark.skipif(not shutil.which("nbdkit") or not shutil.which("fio"),
                                reason="needs nbdkit (with its Python plugin) and fio: scripts/setup.sh")

CAPACITY = 2 << 30
CASES = [(name, i) for name, p in sorted(profiles.load().items()) for i in range(len(p.targets))]


@pytest.fixture
def served(tmp_path):
    def serve(profile):
        image = tmp_path / f"{profile.name}.img"
        with open(image, "wb") as f:
            f.truncate(CAPACITY)
        return export.serve(profile, image, tmp_path / "model.sock", seed=1, stats=tmp_path / "stats.json")
    return serve


@pytest.mark.parametrize("name,index", CASES, ids=[f"{n}-{i}" for n, i in CASES])
def test_target_within_tolerance(served, name, index, tmp_path):
    p = profiles.get(name)
    t = p.targets[index]
    if not t.host_reachable:
        pytest.skip(f"{name} {t.label} ({t.source}): host_reachable: false in device-models.yml, "
                    "the export's own cost a request hides it (the profile's source says how much)")
    with served(p) as uri:
        m = probe.target(uri, p, t, runtime_s=3.0)
    print(f"{name} {m.label}: {m.value:.2f} {m.metric}, target {m.target:g} ({m.off_pct:+.1f}%)")
    assert m.within, f"{name} {m.label}: {m.value:.2f} {m.metric}, target {m.target:g} ({m.off_pct:+.1f}%, tolerance ±{m.tolerance_pct:g}%)"
    stats = (tmp_path / "stats.json").read_text()          # written when nbdkit stopped
    assert '"requests"' in stats


def test_open_unit_knee_is_visible_through_the_export(served):
    p = profiles.get("sd-lexar-633x")
    n = p.params["open_aus"]
    with served(p) as uri:
        inside, past = probe.open_unit_knee(uri, p, range(n, n + 2), runtime_s=2.0)
    assert past.value < inside.value / 2, (inside, past)


def test_seek_curve_is_visible_through_the_export(served):
    p = profiles.get("hdd-st1000dm003")
    with served(p) as uri:
        near, far = probe.seek_curve(uri, CAPACITY, distances=(0.001, 0.9), runtime_s=2.0)
    rotation_ms = 60e3 / p.params["rpm"] / 2
    # near: track to track and half a rotation; far: most of a full stroke and half a rotation
    assert near.value == pytest.approx(p.params["track_to_track_ms"] + rotation_ms, rel=0.25)
    assert far.value > near.value + 0.6 * (p.params["full_stroke_ms"] - p.params["track_to_track_ms"])


def test_export_refuses_a_missing_image(tmp_path):
    with pytest.raises(export.ExportError, match="exited"):
        with export.serve(profiles.get("sd-lexar-633x"), tmp_path / "missing.img", tmp_path / "s.sock"):
            pass
