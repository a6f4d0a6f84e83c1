"""LAVA's board states beside iowatch's own hosts (issue 45 item 4, docs/lab.md
§12): each LAVA lab of the inventory is asked for the boards of its board
classes' device types (iowatch.lava.client, REST /api/v0.2/devices/) by
`iowatch manage refresh_lava_boards`, run from cron or a timer, never by a
page read: a LAVA server that hangs or refuses costs the page nothing. The
hosts page reads the stored rows and says how old they are, or that the lab
was not reached and why."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from django.db import transaction
from django.utils import timezone

from iowatch.inventory import InventoryError
from iowatch.lava.labels import BOARD_LABELS
from iowatch_web.hosts.models import LavaBoardState, LavaLabRefresh


@dataclass(frozen=True)
class LabToAsk:
    """A LAVA lab and the device types its board classes stand for."""
    lab: object                     # iowatch.inventory.LavaLab
    device_types: tuple[str, ...]


def labs_of(inventory) -> list[LabToAsk]:
    """The inventory's LAVA labs, each with its board classes' device types."""
    found: dict[str, tuple[object, set[str]]] = {}
    for host in inventory.hosts.values():
        if host.lava is not None:
            lab = host.lava.lab
            found.setdefault(lab.group, (lab, set()))[1].add(host.lava.device_type)
    return [LabToAsk(lab, tuple(sorted(types))) for lab, types in
            (found[g] for g in sorted(found))]


def refresh(labs: list[LabToAsk], client_for: Callable | None = None) -> list[str]:
    """Ask each lab for its boards and store what it said, or why it was not
    reached (its last boards are kept, with their age); a line per lab.
    `client_for(lab)`: LavaClient.for_lab unless given (imported here: the
    client needs the `lava` extra, which a server without LAVA labs lacks)."""
    from iowatch.lava.client import LavaClient, LavaError
    client_for = client_for or LavaClient.for_lab
    lines = []
    for ask in labs:
        now = timezone.now()
        try:
            boards = [b for t in ask.device_types for b in client_for(ask.lab).boards(t)]
        except (LavaError, InventoryError) as e:
            LavaLabRefresh.objects.update_or_create(
                lab=ask.lab.group, defaults={"server": ask.lab.server, "tried_at": now,
                                             "error": str(e)[:2000]})
            lines.append(f"{ask.lab.group} ({ask.lab.server}): not reached: {e}")
            continue
        with transaction.atomic():
            row, _ = LavaLabRefresh.objects.update_or_create(
                lab=ask.lab.group, defaults={"server": ask.lab.server, "tried_at": now,
                                             "reached_at": now, "error": ""})
            row.boards.all().delete()
            LavaBoardState.objects.bulk_create(
                LavaBoardState(lab=row, hostname=b.hostname, device_type=b.device_type, state=b.state,
                               health=b.health, label=b.label, worker=b.worker or "")
                for b in {b.hostname: b for b in boards}.values())
        counts = {w: sum(1 for b in boards if b.label == w) for w in sorted({b.label for b in boards})}
        lines.append(f"{ask.lab.group} ({ask.lab.server}): {len(boards)} board(s) of "
                     f"{', '.join(ask.device_types)}: "
                     + (", ".join(f"{n} {w}" for w, n in counts.items()) or "none"))
    return lines


def board_states() -> list[dict]:
    """What the hosts page shows of each LAVA lab: its boards as last stored,
    when LAVA was last asked and answered, and the error of a failed refresh."""
    out = []
    for lab in LavaLabRefresh.objects.prefetch_related("boards"):
        boards = list(lab.boards.all())
        out.append({"lab": lab.lab, "server": lab.server, "tried_at": lab.tried_at,
                    "reached_at": lab.reached_at, "error": lab.error, "boards": boards,
                    "counts": {w: sum(1 for b in boards if b.label == w)
                               for w in BOARD_LABELS}})
    return out
