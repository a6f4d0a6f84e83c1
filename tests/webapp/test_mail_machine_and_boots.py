"""The regression mail's test-machine and boots lines (iowatch.mailreport), on
the nights the LAVA loop ran (docs/lab.md §12): night 1 boots the good kernel
four times, the host's record of its noise between boots; night 2 boots the
bad one once, 30% slower, and is judged with that record.

- A LAVA board class's runs name it so (host kind lava, with the device type:
  iowatch.lava.definition.board_inventory); the mail said "(bare-metal)".
- The kernels' config is the agent's build (allnoconfig, the fragments and
  lab-host.config); the mail said "the host's distribution config".
- The boots line says the record stood in, as the text report and the compare
  page do (boots_words with Comparison.recorded_boots); the mail said "boot
  each kernel again". A regression stored before the record was kept says
  what it said then."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from iowatch import inventory, mailreport
from iowatch.lava import definition
from iowatch_web.regressions.models import ConfirmJob, Regression, StoredComparison
from iowatch_web.results.models import Host
from test_confirmations import BAD, GOOD, lab_bundle

pytestmark = pytest.mark.django_db

REPO_INVENTORY = Path(__file__).resolve().parents[2] / "hardware-inventory.yml"
FIRST_NIGHT = (1.0, 1.01, 0.99, 1.005)  # four boots of the good kernel, about 0.8% apart
LAB_HOST = {"name": "lab-1", "kind": "bare-metal"}


def board_host(name: str = "lava-qemu") -> dict:
    """A board class's host entry as the runner on its board writes it: from the
    inventory the job definition hands the board."""
    host = inventory.load(REPO_INVENTORY).host(name)
    return inventory.loads(definition.board_inventory(host), "board.yml").host(name).bundle_entry()


def night_bundle(host: dict, commit: str, bw: float, night: int, boot: int) -> dict:
    """A nightly's run on `host` (its bundle entry), the boot-th boot of the night."""
    doc = lab_bundle(host["name"], commit, bw, night=night)
    doc.update(host=dict(host), started_at=f"2024-05-{1 + night:02d}T{2 + boot:02d}:00:00Z")
    return doc


def nights(post, host: dict) -> Regression:
    for boot, offset in enumerate(FIRST_NIGHT):
        status, body = post(night_bundle(host, GOOD, 1000 * offset, night=0, boot=boot))
        assert status == 201, body
    status, body = post(night_bundle(host, BAD, 700, night=1, boot=0))
    assert status == 201, body
    return Regression.objects.get()


def mail_of(client, regression: Regression) -> str:
    """The mail's body as the report endpoint gives it, its folded lines rejoined."""
    response = client.get(f"/api/v1/regressions/{regression.pk}/report?format=text")
    assert response.status_code == 200, response.content
    return " ".join(response.content.decode().split())


def test_the_mail_of_a_lava_board_class_names_the_board_class_and_its_device_type(post, client):
    regression = nights(post, board_host())
    assert Host.objects.get(name="lava-qemu").kind == "lava"
    detail = client.get(f"/api/v1/regressions/{regression.pk}").json()
    assert (detail["host_kind"], detail["host_lava"]) == ("lava", {"device_type": "qemu",
                                                                   "tags": ["iowatch-lab-a"]})
    text = mail_of(client, regression)
    assert "test machine: lava-qemu (LAVA board class, device type qemu, device tags iowatch-lab-a)" \
        in text
    assert "bare-metal" not in text


@pytest.mark.parametrize("kind", ["lava", "bare-metal", "qemu"])
def test_the_kernels_config_is_the_one_the_kernels_were_built_with(kind):
    """A lab host's agent (a board class's too) builds the virtual lab's config
    with lab-host.config after it (iowatch.agent.loop.source_builds), not a
    distribution's; the virtual lab's kernels have no lab-host.config."""
    words = mailreport._config_words({"host_kind": kind})
    merged = ("make allnoconfig, then scripts/kconfig/merge_config.sh -m .config guest-base.config "
              "iowatch.config no-debug.config")
    assert words.startswith(merged) and words.endswith("make olddefconfig")
    assert ("lab-host.config" in words) == (kind != "qemu") and "distribution" not in words


@pytest.mark.parametrize("second", [lambda: board_host("lava-qemu-b"), lambda: LAB_HOST | {"name": "lab-2"}],
                         ids=["board-class", "bare-metal"])
def test_a_lava_board_classs_regression_is_confirmed_on_another_lab_host_of_the_class(post, second):
    """A board class was a bare-metal host to the server, whose confirmations
    it had (scripts/lava/nightly.sh confirms on lava-qemu-b): as kind lava it
    keeps them, on another board class or a lab machine."""
    second = second()
    status, body = post(night_bundle(second, GOOD, 1000, night=0, boot=0))
    assert status == 201, body
    regression = nights(post, board_host())
    (job,) = ConfirmJob.objects.filter(regression=regression)
    assert (job.host, job.device_class) == (second["name"], "sdcard")


def test_a_night_of_one_boot_judged_with_the_first_nights_four_says_the_record_stood_in(post, client):
    regression = nights(post, LAB_HOST)
    assert regression.regressed_cells().count() == 1
    text = mail_of(client, regression)
    assert "boot each kernel again" not in text
    said = re.search(r"boots: 4 vs 1 boots a side \(base vs candidate\); (the variance between boots "
                     r"taken from 4 recorded boots of 1 kernel on this host \(sd [0-9.]+% a boot\)) "
                     r"nightly:", text)
    assert said, text
    # The words judging gave when it stored the verdict, kept with the comparison.
    assert client.get(f"/api/v1/regressions/{regression.pk}").json()["recorded_boots"] == said.group(1)


def test_a_regression_stored_before_the_record_was_kept_says_what_it_said(post, client):
    regression = nights(post, LAB_HOST)
    StoredComparison.objects.filter(pk=regression.comparison_id).update(recorded_boots="")
    detail = client.get(f"/api/v1/regressions/{regression.pk}").json()
    assert detail["recorded_boots"] is None
    text = mail_of(client, regression)
    assert ("boots: 4 vs 1 boots a side (base vs candidate); a boot's own offset is not in the test "
            "with one boot a side: boot each kernel again") in text
    # A detail from a server older than the key renders the same.
    del detail["recorded_boots"]
    assert mailreport.body(detail) == mailreport.body({**detail, "recorded_boots": None})
