#!/usr/bin/env bash
# The whole test suite: against PostgreSQL (as in production), then the store,
# API and upload tests again against the embedded SQLite default.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
DATABASE_URL=$(./scripts/postgres.sh | tail -1)
export DATABASE_URL
mkdir -p test-artifacts
# LKP-tests for tests/lkp: beside the repository when it is there (nothing of it is vendored).
if [ -z "${LKP_SRC:-}" ] && [ -x ../shared/lkp-tests/bin/lkp ]; then
    LKP_SRC=$(cd ../shared/lkp-tests && pwd)
    export LKP_SRC
fi

echo "== tests against PostgreSQL ($DATABASE_URL)"
if [ $# -eq 0 ]; then
    # The statistics' simulations (thousands of simulated checks, pure CPU, no
    # store, no device) on every core, a file a worker; then everything else.
    status=0
    # --durations: where the suite's time goes, printed at the end of each part.
    .venv/bin/pytest -q -n "$(nproc)" --dist loadfile --durations=10 tests/stats || status=$?
    .venv/bin/pytest -q --durations=40 --ignore=tests/stats || status=$?
    [ "$status" -eq 0 ] || exit "$status"
else
    .venv/bin/pytest -q "$@"
fi

echo "== store, API, dashboard and upload tests against SQLite"
unset DATABASE_URL
IOWATCH_DATA_DIR=$(mktemp -d) .venv/bin/pytest -q --durations=20 tests/webapp tests/dashboard tests/test_upload.py tests/test_bundle.py "$@"
