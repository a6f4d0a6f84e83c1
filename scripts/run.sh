#!/usr/bin/env bash
# The main job on the embedded default: set up, load what the studies publish
# and the seeds' kept reproductions, run the smoke matrix on the local target's
# loop devices, store the results, and serve the dashboard. Ctrl-C stops the
# server; the data stays in IOWATCH_DATA_DIR (default ~/.local/share/iowatch).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
IOWATCH=.venv/bin/iowatch
unset DATABASE_URL   # the embedded SQLite store; see README for PostgreSQL

$IOWATCH import-published jobs/studies/
# The seeds' reproductions on the virtual lab's 6.12, kept as fixtures: the
# Published results page judges each post's claims on them.
$IOWATCH import-reproductions tests/fixtures/reproductions/
$IOWATCH run jobs/smoke.yml --target localhost --store
exec $IOWATCH serve --host "${IOWATCH_HOST:-127.0.0.1}" --port "${IOWATCH_PORT:-8000}"
