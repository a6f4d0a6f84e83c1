"""manage.py compare ...: `iowatch compare` with sides read from this store.

`iowatch compare` hands itself over to this command when a side is a run id
or a kernel and no --server is given: the arguments are the same, the sides
come from webapp/iowatch_web/results/sides.py, and the verdict is iowatch.judging's.
"""
import sys

from django.core.management.base import BaseCommand

from iowatch.cli import build_parser
from iowatch.commands import compare
from iowatch_web.results.sides import store_side


class Command(BaseCommand):
    help = "iowatch compare BASE CANDIDATE [options], reading run ids and kernels from this store."

    def run_from_argv(self, argv):
        # The options are iowatch compare's, not Django's: parse them with its parser.
        args = build_parser("compare").parse_args(["compare", *argv[2:]])
        args.argv = argv[2:]
        sys.exit(compare.run(args, store_side=store_side))

    def handle(self, *args, **options):  # pragma: no cover - run_from_argv does the work
        raise NotImplementedError
