"""manage.py refresh_lava_boards: ask each LAVA lab of the inventory for its
boards' state and health, and store them for the hosts page
(iowatch_web.hosts.lava_boards); run it from cron or a timer, every minute or so."""
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from iowatch import inventory
from iowatch_web.hosts.lava_boards import labs_of, refresh


class Command(BaseCommand):
    help = ("Ask each LAVA lab of the inventory (groups with iowatch_lava) for the state and health "
            "of its board classes' boards (REST /api/v0.2/devices/), and store them for the hosts "
            "page; a lab not reached is stored with the error. Exit 1 when a lab was not reached.")

    def add_arguments(self, parser):
        parser.add_argument("--inventory", default=None, help="the lab's inventory (default: "
                            "$IOWATCH_INVENTORY, else hardware-inventory.yml)")

    def handle(self, **options):
        path = Path(options["inventory"] or inventory.default_path())
        try:
            labs = labs_of(inventory.load(path))
        except (OSError, ValueError) as e:
            raise CommandError(f"refresh_lava_boards: {e}") from None
        if not labs:
            self.stdout.write(f"{path}: no LAVA lab (a group with iowatch_lava): nothing to ask")
            return
        lines = refresh(labs)
        for line in lines:
            self.stdout.write(line)
        if any(": not reached: " in line for line in lines):
            raise CommandError("a LAVA lab was not reached: the hosts page says so, with the error")
