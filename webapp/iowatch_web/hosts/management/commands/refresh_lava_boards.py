"""manage.py refresh_lava_boards: ask each LAVA lab of the inventory for its
boards' state and health, and store them for the hosts page
(iowatch_web.hosts.lava_boards): once (from cron or a timer), or every N
seconds as a service of its own (`--every 60`, docker-compose's lava-boards)."""
import time
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from iowatch import inventory
from iowatch_web.hosts.lava_boards import labs_of, refresh


class Command(BaseCommand):
    help = ("Ask each LAVA lab of the inventory (groups with iowatch_lava) for the state and health "
            "of its board classes' boards (REST /api/v0.2/devices/), and store them for the hosts "
            "page; a lab not reached is stored with the error. Once: exit 1 when a lab was not "
            "reached. With --every: again every SECONDS, reading the inventory each time, until "
            "stopped (or --count refreshes), saying what each refresh found and going on past a "
            "lab not reached or an inventory that does not load.")

    def add_arguments(self, parser):
        parser.add_argument("--inventory", default=None, help="the lab's inventory (default: "
                            "$IOWATCH_INVENTORY, else hardware-inventory.yml)")
        parser.add_argument("--every", type=float, default=None, metavar="SECONDS",
                            help="refresh again every SECONDS (at least 1; 60 is about right)")
        parser.add_argument("--count", type=int, default=None, metavar="N",
                            help="with --every: stop after N refreshes (default: never)")

    def handle(self, **options):
        path = Path(options["inventory"] or inventory.default_path())
        every, count = options["every"], options["count"]
        if every is None:
            if not self._once(path):
                raise CommandError("a LAVA lab was not reached: the hosts page says so, with the error")
            return
        if every < 1 and count is None:
            raise CommandError(f"--every {every:g}: ask LAVA at most once a second (60 is about right)")
        done = 0
        while count is None or done < count:
            started = time.monotonic()
            try:
                self._once(path)
            except CommandError as e:  # the inventory: said, and tried again next time
                self.stderr.write(str(e))
            done += 1
            if count is None or done < count:
                time.sleep(max(0.0, every - (time.monotonic() - started)))

    def _once(self, path: Path) -> bool:
        """One refresh of every lab; False when one was not reached."""
        try:
            labs = labs_of(inventory.load(path))
        except (OSError, ValueError) as e:
            raise CommandError(f"refresh_lava_boards: {e}") from None
        if not labs:
            self.stdout.write(f"{path}: no LAVA lab (a group with iowatch_lava): nothing to ask")
            return True
        lines = refresh(labs)
        for line in lines:
            self.stdout.write(line)
        return not any(": not reached: " in line for line in lines)
