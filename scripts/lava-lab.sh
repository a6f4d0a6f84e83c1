#!/usr/bin/env bash
# A LAVA lab on this machine, unaided (issue 45 item 6; docs/lab.md §12, "A
# LAVA lab"): Debian's lava-server and lava-dispatcher (2023.01), started
# without systemd, with one board of LAVA's `qemu` device type whose disks are
# the virtual lab's classes (the inventory's `lava-qemu` board class), and
# iowatch's own job for it submitted to the server and followed through LAVA's
# REST API (`iowatch lava submit --follow`).
#
#   ./scripts/lava-lab.sh            # install, start, register, then one job
#   ./scripts/lava-lab.sh --no-job   # everything but the job
#   ./scripts/lava-lab.sh --nightly  # then, instead of the one job, the lab loop:
#                                    # two nights, the regression, its bisect as
#                                    # LAVA jobs, the mail (scripts/lava/nightly.sh)
#   ./scripts/lava-lab.sh --boards   # then, instead of the one job, a broken board:
#                                    # a second board, LAVA's health check, an
#                                    # infrastructure error retried on the other
#                                    # board, a job failure with LAVA's log
#                                    # (scripts/lava/boards.sh)
#   ./scripts/lava-lab.sh --stop     # stop the server's processes
#
# IOWATCH_LAVA_NICE=N runs the worker (and so its boards' QEMU) at nice N, for a
# machine that measures something else at the same time.
#
# lava-server keeps its data in a PostgreSQL cluster of its own (`15 lava` on
# port 5433), so its package's postinst (which creates its roles and database
# in whatever cluster answers pg_isready) never touches iowatch's cluster on
# 5432. Its processes run as systemd would run them (the units' ExecStart):
# gunicorn on 127.0.0.1:8010 (iowatch's dashboard keeps 8000), the scheduler
# and the worker, with pid files and logs under /var/log/lava-server/.
# Each phase prints its state and time. Needs root; not in CI (a TCG guest).
set -euo pipefail
cd "$(dirname "$0")/.."
# Debian's python3 (lava-server's Django), not a user's pyenv or virtualenv.
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
repo=$PWD
port=5433
url=http://127.0.0.1:8010/
run=/run/iowatch-lava
logs=/var/log/lava-server
t0=$(date +%s)
phase() { printf '%s  +%4ss  %s\n' "$(date -u +%H:%M:%S)" "$(( $(date +%s) - t0 ))" "$*"; }
die() { echo "lava-lab: $*" >&2; exit 2; }
[ "$(id -u)" = 0 ] || die "run as root (it installs packages and starts LAVA's daemons)"

stop() {
    for p in worker scheduler gunicorn; do
        [ -f "$run/$p.pid" ] && kill "$(cat "$run/$p.pid")" 2>/dev/null || true
        rm -f "$run/$p.pid"
    done
}
if [ "${1:-}" = --stop ]; then stop; phase "stopped"; exit 0; fi

phase "1. PostgreSQL cluster 15/lava on port $port"
if ! pg_lsclusters -h | awk '{print $2}' | grep -qx lava; then
    pg_createcluster 15 lava --port "$port" >/dev/null
fi
pg_ctlcluster 15 lava start >/dev/null 2>&1 || true
pg_isready -q -p "$port" || die "cluster 15/lava does not answer on port $port (pg_lsclusters)"

phase "2. lava-server's database settings (cluster 15/lava)"
mkdir -p /etc/lava-server/settings.d
db=/etc/lava-server/settings.d/00-database.yaml
if [ ! -f "$db" ] || ! grep -q "PORT: $port" "$db"; then
    cat > "$db" <<EOF
# Written by iowatch's scripts/lava-lab.sh: lava-server's own cluster (15/lava).
DATABASES:
  default:
    ENGINE: "django.db.backends.postgresql"
    NAME: "lavaserver"
    USER: "lavaserver"
    PASSWORD: "$(head -c 18 /dev/urandom | base64 | tr -dc A-Za-z0-9)"
    HOST: "127.0.0.1"
    PORT: $port
EOF
    chmod 640 "$db"
fi
# The migrations run as lavaserver: its settings must be readable by it.
getent passwd lavaserver >/dev/null || adduser --quiet --system --group \
    --home /var/lib/lava-server/home/ --shell /bin/sh lavaserver
cat > /etc/lava-server/settings.d/50-iowatch.yaml <<EOF
# Written by iowatch's scripts/lava-lab.sh: the server answers on $url.
ALLOWED_HOSTS: ["127.0.0.1", "localhost"]
EOF

chown lavaserver:lavaserver "$db" /etc/lava-server/settings.d/50-iowatch.yaml

phase "3. lava-server and lava-dispatcher (apt)"
if ! dpkg -s lava-server lava-dispatcher >/dev/null 2>&1; then
    apt-get update -q >/dev/null
    # PGPORT: the postinst's pg_isready and psql talk to the lava cluster.
    DEBIAN_FRONTEND=noninteractive PGPORT=$port apt-get install -y -q --no-install-recommends \
        lava-server lava-dispatcher python3-guestfs >/dev/null
fi

phase "4. lava-server's roles, database and migrations in 15/lava"
PGPORT=$port python3 /usr/share/lava-server/postinst.py --db >"$run.postinst.log" 2>&1 \
    || { tail -20 "$run.postinst.log"; die "postinst --db failed (log $run.postinst.log)"; }

phase "5. gunicorn on $url, the scheduler, the worker (no systemd)"
mkdir -p "$run" "$logs"
touch "$logs/lava-scheduler.log" && chown lavaserver:adm "$logs/lava-scheduler.log"
start() {  # name, command...: start unless its pid file names a live process
    local name=$1; shift
    if [ -f "$run/$name.pid" ] && kill -0 "$(cat "$run/$name.pid")" 2>/dev/null; then return; fi
    setsid "$@" >>"$logs/$name.out" 2>&1 < /dev/null &
    echo $! > "$run/$name.pid"
}
start gunicorn /usr/bin/gunicorn3 lava_server.wsgi --log-level INFO --log-file "$logs/gunicorn.log" \
    -u lavaserver -g lavaserver --worker-class eventlet --workers 2 --bind 127.0.0.1:8010
start scheduler runuser -u lavaserver -- lava-server manage lava-scheduler --level INFO \
    --log-file "$logs/lava-scheduler.log"
for _ in $(seq 60); do curl -sf "${url}api/v0.2/system/version/" >/dev/null && break; sleep 1; done
curl -sf "${url}api/v0.2/system/version/" >/dev/null || die "gunicorn does not answer on $url ($logs/gunicorn.log)"

phase "6. the lab: user iowatch and its token, device type qemu, worker, boards lava-qemu-01..03"
manage() { runuser -u lavaserver -- lava-server manage "$@"; }
django() { runuser -u lavaserver -- lava-server manage shell -c "$1"; }
# (each list is read whole before grep: grep -q closing the pipe early would
# fail the pipeline under pipefail)
has() { local out; out=$(manage "$1" list 2>/dev/null); grep -qw -- "$2" <<<"$out"; }
has users iowatch || manage users add iowatch --superuser --staff --passwd "$(head -c 12 /dev/urandom | base64)" >/dev/null
token_file=/etc/lava-server/iowatch-token
if [ ! -s "$token_file" ]; then
    manage tokens add --user iowatch --description "iowatch lava-lab.sh" | tail -1 > "$token_file"
    chmod 600 "$token_file"
fi
has device-types qemu || manage device-types add qemu >/dev/null
has workers lava-local || manage workers add lava-local --health ACTIVE >/dev/null
board() {  # name, MAC, tag: a board of LAVA's qemu type on worker lava-local, with its class's tag
    cat > "/etc/lava-server/dispatcher-config/devices/$1.jinja2" <<DEV
{# iowatch's scripts/lava-lab.sh: LAVA's qemu device type under TCG (this machine's
   /dev/kvm boots no mainline kernel), 1 GiB; the board's disks come with each
   job (hardware-inventory.yml: the board class whose tag is $3). #}
{% extends 'qemu.jinja2' %}
{% set no_kvm = True %}
{% set memory = 1024 %}
{% set mac_addr = '$2' %}
{# LAVA's test overlay on virtio (qemu.jinja2's default is ide, which the guest
   kernel has no driver for): if=virtio, after the board's disks #}
{% set guestfs_interface = 'virtio' %}
{# TCG's default CPU (qemu64) lacks SSE4.2, which numpy 2's wheels need on the
   board (iowatch run died of SIGILL): the emulator's every feature #}
{% set extra_options = ['-cpu max'] %}
DEV
    chown lavaserver:lavaserver "/etc/lava-server/dispatcher-config/devices/$1.jinja2"
    has devices "$1" || manage devices add --device-type qemu --worker lava-local "$1" >/dev/null
    django "from lava_scheduler_app.models import Device, Tag
d = Device.objects.get(hostname='$1'); d.tags.add(Tag.objects.get_or_create(name='$3')[0])" >/dev/null
    # Good unless a health check has put it out of the pool (Bad): that is the lab admin's to clear.
    [ "$(django "from lava_scheduler_app.models import Device; print(Device.objects.get(hostname='$1').health)" | tail -1)" = 3 ] \
        || manage devices update --health GOOD "$1" >/dev/null   # Device.HEALTH_BAD is 3
}
# The board classes of hardware-inventory.yml's lava_local: lava-qemu (tag
# iowatch-lab-a: two boards, so that an infrastructure failure is tried on the
# other) and lava-qemu-b (tag iowatch-lab-b: the second host that confirms).
board lava-qemu-01 52:54:00:12:34:59 iowatch-lab-a
board lava-qemu-02 52:54:00:12:34:5a iowatch-lab-a
board lava-qemu-03 52:54:00:12:34:5b iowatch-lab-b
# The boards share this machine: one job at a time, or one board's job would
# measure another's (and a health check would land beside a measurement).
django "from lava_scheduler_app.models import Worker
w = Worker.objects.get(hostname='lava-local'); w.job_limit = 1; w.save()" >/dev/null
# The dispatcher's environment for every job (LAVA's env.yaml): libguestfs, which
# builds the test overlay, boots its appliance on the guest kernel under TCG.
worker_token=$(django "from lava_scheduler_app.models import Worker; print(Worker.objects.get(hostname='lava-local').token)" | tail -1)
start worker ${IOWATCH_LAVA_NICE:+nice -n "$IOWATCH_LAVA_NICE"} lava-worker --name lava-local --url "$url" --token "$worker_token" \
    --worker-dir /var/lib/lava/dispatcher/worker/ --level INFO --log-file /var/log/lava-dispatcher/lava-worker.log
for _ in $(seq 60); do
    state=$(django "from lava_scheduler_app.models import Worker; print(Worker.objects.get(hostname='lava-local').state)" | tail -1)
    [ "$state" = 0 ] && break; sleep 2   # Worker.STATE_ONLINE is 0 (models.Worker)
done
[ "$state" = 0 ] || die "the worker lava-local is not online (/var/log/lava-dispatcher/lava-worker.log)"
echo "   server $url (15/lava:$port), worker lava-local online (one job at a time), boards lava-qemu-01, -02 (iowatch-lab-a), -03 (iowatch-lab-b); token in $token_file"
[ "${1:-}" = --no-job ] && { phase "done (no job)"; exit 0; }

phase "7. the board's root: Debian 12 with iowatch, fio, fs_mark (scripts/lava/rootfs.sh)"
work=${IOWATCH_LAVA_DIR:-/tmp/iowatch-lava-lab}
serve=/var/lib/iowatch/lava
mkdir -p "$work" "$serve/disks"
debian=$serve/rootfs-debian.ext4.xz
# made again when iowatch's source or the recipe is newer than the image (at
# nice 19 with IOWATCH_LAVA_NICE, as the worker)
if [ ! -f "$debian" ] || [ -n "$(find src scripts/lava/rootfs.sh pyproject.toml -newer "$debian" \
        \( -name '*.py' -o -name '*.sh' -o -name '*.toml' \) -print -quit)" ]; then
    ${IOWATCH_LAVA_NICE:+nice -n 19} scripts/lava/rootfs.sh "$debian"
fi
cp "$debian" "$serve/rootfs.ext4.xz"
. scripts/lava/serve.sh
# LAVA's health check of the qemu type (`iowatch lava health-check`): a board
# new, in health Unknown (after an infrastructure error) or unchecked for a day
# boots the served kernel and `iowatch device check`s its disks before it takes
# a job; one that fails is Bad, out of the pool.
mkdir -p /etc/lava-server/dispatcher-config/health-checks
.venv/bin/iowatch lava health-check lava-qemu --commit "$commit" > /etc/lava-server/dispatcher-config/health-checks/qemu.yaml
chown lavaserver:lavaserver /etc/lava-server/dispatcher-config/health-checks/qemu.yaml
# libguestfs (LAVA's test overlay) boots its appliance on the guest kernel under
# TCG: the worker's dispatcher environment (dispatcher.d/<worker>/env.yaml).
modules=$serve/no-modules/lib/modules/iowatch
mkdir -p "$modules" /etc/lava-server/dispatcher.d/lava-local && touch "$modules"/modules.{dep,order,builtin}
cat > /etc/lava-server/dispatcher.d/lava-local/env.yaml <<ENV
# Written by iowatch's scripts/lava-lab.sh.
purge: false
overrides:
  LIBGUESTFS_BACKEND: direct
  LIBGUESTFS_BACKEND_SETTINGS: force_tcg
  SUPERMIN_KERNEL: $kernel
  SUPERMIN_MODULES: $modules
  SUPERMIN_KERNEL_VERSION: iowatch
ENV
chown -R lavaserver:lavaserver /etc/lava-server/dispatcher.d
export IOWATCH_LAVA_TOKEN
IOWATCH_LAVA_TOKEN=$(cat "$token_file")
if [ "${1:-}" = --nightly ]; then
    phase "8. the lab loop through LAVA (scripts/lava/nightly.sh)"
    rc=0
    scripts/lava/nightly.sh || rc=$?
    phase "done: exit $rc"
    exit $rc
fi

if [ "${1:-}" = --boards ]; then
    phase "8. a broken board: health check, retry on another board, a job failure (scripts/lava/boards.sh)"
    rc=0
    scripts/lava/boards.sh "$commit" "$work" || rc=$?
    phase "done: exit $rc"
    exit $rc
fi

phase "8. one measurement through LAVA: iowatch lava submit --follow (ext4-dio-randread on the board's ssd)"
rc=0
.venv/bin/iowatch lava submit lava-qemu jobs/smoke.yml --commit "$commit" --label lava-lab --reps 1 \
    --cells ext4-dio-randread/lssd/ext4 --poll 10 --follow | tee "$work/submit.log" || rc=$?
job=$(sed -n 's/.*submitted job \([0-9]*\).*/\1/p' "$work/submit.log" | head -1)

phase "9. the bundle back from job $job's log (the board printed it on its console)"
rm -rf "$work/bundle"
PYTHONPATH=$repo/src .venv/bin/python - "$url" "$IOWATCH_LAVA_TOKEN" "$job" "$work/bundle" <<'PY' || rc=$?
import sys
from pathlib import Path
from iowatch import bundle
from iowatch.lava.client import LavaClient
from iowatch.lava.follow import bundle_from
out = bundle_from(LavaClient(sys.argv[1], sys.argv[2]).logs(int(sys.argv[3])), Path(sys.argv[4]))
if out is None:
    sys.exit("lava-lab: the board printed no bundle")
doc = bundle.load(out)
iops = [s["value"] for c in doc["cells"] if c["id"] == "ext4-dio-randread/lssd/ext4"
        for r in c["repetitions"] for s in r["samples"] if s["metric"] == "read.iops"]
print(f"   bundle {out}: status {doc['status']}, host {doc['host']['name']}, kernel "
      f"{doc['kernel'].get('release')}, cells {[c['id'] for c in doc['cells']]}, "
      f"ext4 read.iops {iops[:1]}")
PY
phase "done: exit $rc"
exit $rc
