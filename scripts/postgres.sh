#!/usr/bin/env bash
# Start a local PostgreSQL cluster and make sure the iowatch role and database
# exist. Prints the DATABASE_URL to use. For the test suite and a one-machine
# setup; a real lab runs PostgreSQL from docker-compose.yml.
set -euo pipefail
PGUSER_NAME=${IOWATCH_PG_USER:-iowatch}
PGPASS=${IOWATCH_PG_PASSWORD:-iowatch}
PGDB=${IOWATCH_PG_DB:-iowatch}
PGPORT=${IOWATCH_PG_PORT:-5432}

if ! command -v pg_lsclusters >/dev/null; then
    echo "postgres: PostgreSQL is not installed; run scripts/setup.sh first" >&2
    exit 1
fi
version=$(ls /usr/lib/postgresql | sort -n | tail -1)
if ! pg_lsclusters -h | awk '{print $1" "$2}' | grep -q "^$version main$"; then
    pg_createcluster "$version" main --port "$PGPORT" >/dev/null
fi
if ! pg_lsclusters -h | awk '$1=="'"$version"'" && $2=="main" {print $4}' | grep -q online; then
    pg_ctlcluster "$version" main start
fi
for _ in $(seq 1 30); do
    runuser -u postgres -- pg_isready -q -p "$PGPORT" && break
    sleep 1
done
psql_admin() { runuser -u postgres -- psql -p "$PGPORT" -v ON_ERROR_STOP=1 -qAt "$@"; }
if [ "$(psql_admin -c "SELECT 1 FROM pg_roles WHERE rolname='$PGUSER_NAME'")" != 1 ]; then
    # CREATEDB: the test suite makes and drops its own test database.
    psql_admin -c "CREATE ROLE $PGUSER_NAME LOGIN CREATEDB PASSWORD '$PGPASS'"
fi
if [ "$(psql_admin -c "SELECT 1 FROM pg_database WHERE datname='$PGDB'")" != 1 ]; then
    psql_admin -c "CREATE DATABASE $PGDB OWNER $PGUSER_NAME"
fi
echo "postgres://$PGUSER_NAME:$PGPASS@127.0.0.1:$PGPORT/$PGDB"
