"""manage.py ingest_bundle DIR...: store bundle directories without going through HTTP.

The same validation and the same store_bundle as the ingest API; for a server
that reads bundles from disk, and for `iowatch import-published`.
"""
from django.core.management.base import BaseCommand, CommandError

from iowatch import bundle
from iowatch_web.results.ingest import RunConflict, store_bundle


class Command(BaseCommand):
    help = "Validate and store result bundle directories (idempotent on the run UUID)."

    def add_arguments(self, parser):
        parser.add_argument("bundles", nargs="+", metavar="DIR")

    def handle(self, bundles, **options):
        failed = 0
        for d in bundles:
            try:
                doc = bundle.validate(bundle.loads(bundle.to_wire(d), d))
                stored = store_bundle(doc)
            except (bundle.BundleError, RunConflict) as e:
                self.stderr.write(f"{d}: {e}")
                failed += 1
                continue
            state = "stored" if stored.created else "already stored"
            self.stdout.write(f"{state}: run {stored.run.run_id} from {d} "
                              f"({stored.cells} cells, {stored.samples} samples)")
        if failed:
            raise CommandError(f"{failed} of {len(bundles)} bundles were not stored")
