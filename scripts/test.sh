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

if [ "${1:-}" = "--heavy" ]; then
    # The checks at their issue's own scale (marked heavy: minutes each, not in
    # `make test`), on PostgreSQL and then on SQLite.
    shift
    echo "== heavy tests against PostgreSQL ($DATABASE_URL)"
    .venv/bin/pytest -q -s -m heavy "$@"
    echo "== heavy tests against SQLite"
    unset DATABASE_URL
    IOWATCH_DATA_DIR=$(mktemp -d) .venv/bin/pytest -q -s -m "heavy and not one_engine" "$@" \
        tests/webapp tests/dashboard tests/test_upload.py tests/test_bundle.py
    exit 0
fi

# Every part runs on every core (pytest-xdist). The statistics' simulations
# (thousands of simulated checks, pure CPU, no store, no device) a file a
# worker. Everything else a file a worker too, except the tests of this
# machine's local target (loop devices, mounts): two groups, each one worker,
# one test after another (tests/conftest.py); and the items that share a node
# id, which xdist would run once, after, in one process (marked one_process).
# --durations: where the time goes.
workers=$(nproc)
echo "== tests against PostgreSQL ($DATABASE_URL), $workers workers"
if [ $# -eq 0 ]; then
    status=0
    .venv/bin/pytest -q -n "$workers" --dist loadfile --durations=10 tests/stats || status=$?
    .venv/bin/pytest -q -n "$workers" --dist loadgroup --durations=40 -m "not heavy and not one_process" \
        --ignore=tests/stats || status=$?
    # Items that share a node id (marked one_process): xdist would run each id once.
    .venv/bin/pytest -q -p no:xdist -m "one_process and not heavy" --ignore=tests/stats || status=$?
    [ "$status" -eq 0 ] || exit "$status"
else
    .venv/bin/pytest -q "$@"
fi

# The store, API and upload tests again on the embedded default. Not the ones
# whose subject is the same on either engine (marked one_engine).
echo "== store, API, dashboard and upload tests against SQLite"
unset DATABASE_URL
sqlite_parts=(tests/webapp tests/dashboard tests/test_upload.py tests/test_bundle.py)
if [ $# -gt 0 ]; then
    # Arguments given: of the paths, those inside the SQLite parts; options as given.
    selected=() paths=0
    for arg in "$@"; do
        case "$arg" in
        -*) selected+=("$arg") ;;
        *) paths=$((paths + 1))
           for part in "${sqlite_parts[@]}"; do
               case "$arg" in "$part"|"$part"/*|"$part"::*) selected+=("$arg"); break ;; esac
           done ;;
        esac
    done
    if [ "$paths" -gt 0 ] && [ ${#selected[@]} -eq $(( $# - paths )) ]; then
        echo "   (none of the paths asked for is in ${sqlite_parts[*]}: nothing to run on SQLite)"
        exit 0
    fi
    [ "$paths" -gt 0 ] || selected=("${sqlite_parts[@]}" "${selected[@]}")
    sqlite_parts=("${selected[@]}")
fi
data_dir=$(mktemp -d)
status=0
# pytest's exit 5: nothing of this selection in the tests asked for (arguments given).
IOWATCH_DATA_DIR=$data_dir .venv/bin/pytest -q -n "$workers" --dist loadgroup --durations=20 \
    -m "not heavy and not one_engine and not one_process" "${sqlite_parts[@]}" \
    || { rc=$?; [ "$rc" -eq 5 ] || status=$rc; }
IOWATCH_DATA_DIR=$data_dir .venv/bin/pytest -q -p no:xdist \
    -m "one_process and not heavy and not one_engine" "${sqlite_parts[@]}" \
    || { rc=$?; [ "$rc" -eq 5 ] || status=$rc; }
exit "$status"
