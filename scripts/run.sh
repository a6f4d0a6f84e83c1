#!/usr/bin/env bash
# The main job on the embedded default: set up, load what the studies publish,
# and serve the dashboard. Ctrl-C stops the server; the data stays in
# IOWATCH_DATA_DIR (default ~/.local/share/iowatch).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
IOWATCH=.venv/bin/iowatch
unset DATABASE_URL   # the embedded SQLite store; see README for PostgreSQL

$IOWATCH manage migrate --noinput -v 0
if [ -d jobs/studies ] && $IOWATCH import-published --help >/dev/null 2>&1; then
    $IOWATCH import-published jobs/studies/
else
    echo "run: no studies to import yet (jobs/studies/ comes with the runner)"
fi
exec $IOWATCH serve --host "${IOWATCH_HOST:-127.0.0.1}" --port "${IOWATCH_PORT:-8000}"
