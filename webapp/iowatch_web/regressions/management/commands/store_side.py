"""manage.py store_side SPEC ROLE: one side of a comparison read from this
store, printed as JSON: {"spec", "source", "runs"}, the runs bundle-shaped
manifests (store/sides.py, by iowatch.judging.sides.SideQuery's rule).

`iowatch compare` asks for a run id or a kernel that is neither a bundle
directory nor read through --server (iowatch.local_store.store_side) and
judges the side itself: the web app hands it data and never runs the CLI.
A side that matches nothing exits 2 with the reason on standard error.
"""
import json
import sys

from django.core.management.base import BaseCommand
from django.db import DatabaseError, connection

from iowatch.judging.sides import SideNotFound
from iowatch_web.store.sides import store_side


class Command(BaseCommand):
    help = "Print one side (run id, kernel release, label or commit) of this store as JSON."

    def add_arguments(self, parser):
        parser.add_argument("spec")
        parser.add_argument("role", nargs="?", default="side")

    def handle(self, spec, role, **options):
        try:
            side = store_side(spec, role)
        except SideNotFound as e:
            self.stderr.write(str(e))
            sys.exit(2)
        except DatabaseError as e:
            # A fresh data directory has no tables yet: nothing was ever stored.
            where = connection.settings_dict.get("NAME")
            self.stderr.write(f"{role} {spec!r}: this machine's store ({where}) cannot be read "
                              f"({str(e).splitlines()[0]}); store runs first (iowatch run "
                              "--store, iowatch import-published) or give --server URL")
            sys.exit(2)
        json.dump({"spec": side.spec, "source": side.source, "runs": side.runs},
                  self.stdout, separators=(",", ":"), default=str)
