#!/usr/bin/env bash
# What a LAVA lab does when a board breaks, through the real server of
# scripts/lava-lab.sh (issue 45 item 3; docs/lab.md §12, "When a board
# breaks"):
#   1. LAVA's health check of the class's two boards, lava-qemu-01 and -02
#      (lava-lab.sh registers them with the tag iowatch-lab-a, and writes the
#      check as `iowatch lava health-check` prints it: a kernel known to be
#      good, `iowatch device check` on each declared disk): both come back Good;
#   2. lava-qemu-01 breaks after its health check: its device dictionary
#      names an emulator the worker does not have (LAVA's validate raises an
#      InfrastructureError, as when a power switch or a serial line is gone).
#      lava-qemu-02 is held in Maintenance until LAVA has given the job to
#      lava-qemu-01, then put back to Good;
#   3. `iowatch lava submit lava-qemu ... --follow`: the job ends Incomplete
#      with an infrastructure error on lava-qemu-01, iowatch submits it again,
#      it runs on lava-qemu-02 and is done (exit 0, "after 2 attempts");
#   4. LAVA's own health check of lava-qemu-01 fails: `iowatch lava boards`
#      shows it "bad health", out of the pool;
#   5. a job that fails on the board: an inventory that names a disk the
#      board does not have (/dev/vdz): `iowatch run`'s device check refuses
#      it on the board, the job is read as failed (exit 1) with LAVA's log
#      URL, and that log (fetched with the token) says why;
#   6. lava-qemu-01 repaired: its dictionary back, health Unknown, its health
#      check passes and it is Good again.
# Run by `scripts/lava-lab.sh --boards COMMIT WORK` (as root, with the server,
# worker, board, root filesystem and the kernel COMMIT it serves, and
# IOWATCH_LAVA_TOKEN exported); not in CI. Prints timestamped phases and a
# PASS/FAIL table; exits 1 if a phase failed.
set -euo pipefail
cd "$(dirname "$0")/../.."
commit=$1
work=$2
url=http://127.0.0.1:8010/
devices=/etc/lava-server/dispatcher-config/devices
iowatch=.venv/bin/iowatch
t0=$(date +%s)
results=()
phase() { printf '%s  +%4ss  %s\n' "$(date -u +%H:%M:%S)" "$(( $(date +%s) - t0 ))" "$*"; }
check() { results+=("$1|$2|$3"); phase "   $2: $1 ($3)"; }
manage() { runuser -u lavaserver -- lava-server manage "$@"; }
django() { runuser -u lavaserver -- lava-server manage shell -c "$1" | tail -1; }
board_health() { django "from lava_scheduler_app.models import Device; print(Device.objects.get(hostname='$1').get_health_display())"; }
board_job() { django "from lava_scheduler_app.models import TestJob; j = TestJob.objects.get(id=$1); print(j.actual_device.hostname if j.actual_device else '')"; }
wait_health() {  # board, wanted, seconds: until LAVA says it (a health check ran)
    local h=
    for _ in $(seq $(( $3 / 5 ))); do
        h=$(board_health "$1"); [ "$h" = "$2" ] && return 0
        [ "$2" = Good ] && [ "$h" = Bad ] && break
        sleep 5
    done
    echo "$h"; return 1
}
phase "1. LAVA's health check of lava-qemu's two boards (lava-lab.sh wrote it: iowatch lava health-check)"
for b in lava-qemu-01 lava-qemu-02; do manage devices update --health UNKNOWN "$b" >/dev/null; done
for b in lava-qemu-01 lava-qemu-02; do
    if got=$(wait_health "$b" Good 1200); then check PASS "health check $b" "Good"
    else check FAIL "health check $b" "health ${got:-?}: see its health-check job at ${url}scheduler/device/$b"; fi
done

phase "2. lava-qemu-01 loses its emulator; lava-qemu-02 held in Maintenance until the job is on lava-qemu-01"
cp "$devices/lava-qemu-01.jinja2" "$work/lava-qemu-01.jinja2.good"
cat > "$devices/lava-qemu-01.jinja2" <<'DEV'
{# iowatch's scripts/lava/boards.sh: lava-qemu-01 broken on purpose: the worker
   has no emulator at this path, so LAVA's validate raises an InfrastructureError. #}
{% extends 'qemu.jinja2' %}
{% block qemu_method %}
        parameters:
          command: /opt/iowatch-lab/missing/qemu-system-x86_64
{% endblock qemu_method %}
DEV
chown lavaserver:lavaserver "$devices/lava-qemu-01.jinja2"
manage devices update --health MAINTENANCE lava-qemu-02 >/dev/null

phase "3. iowatch lava submit lava-qemu ... --follow: infrastructure error on lava-qemu-01, tried again"
rc=0
$iowatch lava submit lava-qemu jobs/smoke.yml --commit "$commit" --label lava-retry --reps 1 \
    --cells ext4-dio-randread/lssd/ext4 --poll 5 --follow > "$work/retry.log" 2>&1 &
submit=$!
job=
for _ in $(seq 60); do
    job=$(sed -n 's/.*submitted job \([0-9]*\).*/\1/p' "$work/retry.log" | head -1); [ -n "$job" ] && break; sleep 1
done
on=
for _ in $(seq 120); do on=$(board_job "${job:-0}"); [ -n "$on" ] && break; sleep 1; done
manage devices update --health GOOD lava-qemu-02 >/dev/null
wait "$submit" || rc=$?
cat "$work/retry.log"
last=$(tail -1 "$work/retry.log")
if [ "$on" = lava-qemu-01 ] && [ "$rc" = 0 ] && grep -q "infrastructure error on lava-qemu-01: trying again" "$work/retry.log" \
        && grep -q "on lava-qemu-02: done after 2 attempts" <<<"$last"; then
    check PASS "retry on another board" "job $job on lava-qemu-01: infrastructure; again on lava-qemu-02: done"
else
    check FAIL "retry on another board" "first job $job on ${on:-?}, exit $rc: $last"
fi

phase "4. LAVA's health check takes lava-qemu-01 out of the pool"
if got=$(wait_health lava-qemu-01 Bad 600); then
    check PASS "broken board out of the pool" "$($iowatch lava boards lava-qemu | grep lava-qemu-01 | tr -s ' ')"
else
    check FAIL "broken board out of the pool" "lava-qemu-01's health is ${got:-?}, not Bad"
fi

phase "5. a job that fails on the board (an inventory naming /dev/vdz), its LAVA log"
sed 's#path: /dev/vdb#path: /dev/vdz#' hardware-inventory.yml > "$work/inventory-vdz.yml"
rc=0
$iowatch lava submit lava-qemu jobs/smoke.yml --inventory "$work/inventory-vdz.yml" --commit "$commit" \
    --label lava-fail --reps 1 --cells ext4-dio-randread/lssd/ext4 --poll 5 --follow > "$work/fail.log" 2>&1 || rc=$?
cat "$work/fail.log"
last=$(tail -1 "$work/fail.log")
log_url=${last##*; log }
curl -sf -H "Authorization: Token $IOWATCH_LAVA_TOKEN" "$log_url" > "$work/fail-lava.log" || true
why=$(grep -o '/dev/vdz[^"]*' "$work/fail-lava.log" | head -1 || true)
if [ "$rc" = 1 ] && grep -q "failed: iowatch run exited" <<<"$last" && [ -n "$why" ]; then
    check PASS "job failure with LAVA's log" "exit 1; log $log_url says: ${why:0:100}"
else
    check FAIL "job failure with LAVA's log" "exit $rc: $last; log ${log_url:-none} (${why:-no /dev/vdz line})"
fi

phase "6. lava-qemu-01 repaired: its dictionary back, its health check passes"
cp "$work/lava-qemu-01.jinja2.good" "$devices/lava-qemu-01.jinja2"
chown lavaserver:lavaserver "$devices/lava-qemu-01.jinja2"
manage devices update --health UNKNOWN lava-qemu-01 >/dev/null
if got=$(wait_health lava-qemu-01 Good 1200); then check PASS "repaired board back" "Good"
else check FAIL "repaired board back" "health ${got:-?}"; fi
$iowatch lava boards lava-qemu

phase "the table"
status=0
printf '%-34s %-5s %s\n' "check" "" "what happened"
for r in "${results[@]}"; do
    IFS='|' read -r verdict what detail <<<"$r"
    printf '%-34s %-5s %s\n' "$what" "$verdict" "$detail"
    [ "$verdict" = PASS ] || status=1
done
echo "lava-boards: $([ $status = 0 ] && echo PASS || echo FAIL)"
exit $status
