"""The bundle schema's device state: every recorded bundle written before it
stays valid, a bundle with it validates, and a malformed record is refused
naming the field."""
from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from iowatch import bundle
from iowatch.devstate import parse_smartctl

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
RECORDED = sorted(FIXTURES.rglob("bundle.json"))
A_BUNDLE = FIXTURES / "e2e-check" / "guest-00" / "bundle" / "bundle.json"


def test_there_are_recorded_bundles_to_check():
    assert len(RECORDED) > 50


@pytest.mark.parametrize("path", RECORDED, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_bundles_recorded_before_device_state_stay_valid(path):
    bundle.validate(json.loads(path.read_text()))


def with_state(state: dict, **more) -> dict:
    doc = json.loads(A_BUNDLE.read_text())
    doc["schema_version"] = 2  # the version that types the state (version 1 left it free-form)
    name = next(iter(doc["environment"]["devices"]))
    doc["environment"]["devices"][name].update(state=state, **more)
    return doc


def nvme() -> dict:
    return parse_smartctl((FIXTURES / "devstate" / "smartctl-nvme-qemu.json").read_text())


def test_a_bundle_with_state_and_preconditioning_validates():
    pre = {"held": True, "rounds_iops": [1200.5, 1190.0], "settings": {"window": 2},
           "steady_state": {"held": True}}
    bundle.validate(with_state(nvme(), state_after=nvme(), precondition={"ext4-dio-randread": pre}))


def test_a_malformed_state_is_refused_naming_the_field():
    bad = {**nvme(), "wear_pct": -3}
    with pytest.raises(bundle.BundleError, match=r"wear_pct"):
        bundle.validate(with_state(bad))
    with pytest.raises(bundle.BundleError, match=r"state"):
        bundle.validate(with_state({"firmware": "1.0"}))  # no status
    doc = with_state(nvme(), precondition={"s": {"held": "yes", "rounds_iops": [], "settings": {}}})
    with pytest.raises(bundle.BundleError, match=r"held"):
        bundle.validate(copy.deepcopy(doc))
