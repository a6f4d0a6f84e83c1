#!/usr/bin/env bash
# The lab loop of scripts/vm-lab.sh on the LAVA lab of scripts/lava-lab.sh
# (issue 45 item 6; docs/lab.md §12): every boot is a LAVA job on the boards of lava-qemu
# (lava-qemu-01, -02), submitted and followed by `iowatch agent --host lava-qemu`
# (iowatch.lava.host.LavaHost) against a local `iowatch serve`:
#   1. the range: kernels/series/e2e-bisect applied on Debian's 6.12 as the
#      branch iowatch-lab/next of the kept kernel tree (commit 4 of 6 sleeps
#      10 ms before every ext4 direct write);
#   2. night 1: `iowatch agent --nightly debian-base --boots 4`: built here
#      with the lab host's configuration, the kernel published where the board
#      fetches it, four LAVA jobs each run the e2e matrix on the board's disks,
#      each bundle back from LAVA's log and uploaded as a run of the night:
#      no regression, and the board class's record of its noise between boots
#      (4 boots of one kernel: the 3 degrees of freedom iowatch.judging.boots
#      needs before one boot a side is judged with it);
#   3. the same first night on the second board class, lava-qemu-b (board
#      lava-qemu-03, LAVA tag iowatch-lab-b), with an agent of its own: the
#      lab's second host of the device classes, with its own record;
#   4. night 2: iowatch-lab/next booted once (a lab host's night, judged with
#      the record): a nightly regression on the board's rotational disk, its
#      bisect queued by the server, and its confirmation queued on
#      lava-qemu-b: the mail waits (`iowatch report` exits 3);
#   5. `iowatch agent --once`: claims the bisect and works it, one LAVA job per
#      step, to the first bad commit;
#   6. `iowatch agent --host lava-qemu-b --once`: claims the confirmation and
#      boots the good and the bad kernel ABAB, one LAVA job a boot on
#      lava-qemu-03: confirmed;
#   7. the mail: `iowatch report ID --format email`, confirmed on 2 of 2 hosts;
#   8. the hosts page: `iowatch manage refresh_lava_boards` asks this LAVA
#      server for its boards' state, and /hosts/ shows them.
# Run by `scripts/lava-lab.sh --nightly` (as root, with the server, worker,
# board, root filesystem and kernel store it sets up, and IOWATCH_LAVA_TOKEN
# exported); not in CI. Prints timestamped phase lines and a PASS/FAIL table;
# exits 1 if a phase failed. The lab's kernels are built in their own data
# directory ($IOWATCH_LAVA_DATA, default /var/lib/iowatch/lava/data: the lab
# host's configuration is not the virtual lab's); the last run's logs, the
# agent's output and the mail are kept in /var/lib/iowatch/lava/last-nightly.
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=$PWD
name=lava-nightly
serve_dir=/var/lib/iowatch/lava
last_run=$serve_dir/last-nightly
run=$(mktemp -d /tmp/iowatch-lava-nightly-XXXX)
qemu_pid=
server_pid=
keep=("*.log" "*.txt" "*.json" "agent-*")
# shellcheck source=scripts/vmhost/lib.sh
. scripts/vmhost/lib.sh
# errexit off first: `(exit $rc)` must hand the status to teardown, not end the trap.
trap 'rc=$?; set +e; [ -n "$server_pid" ] && kill -- "-$server_pid" 2>/dev/null; (exit $rc); teardown' EXIT

[ -n "${IOWATCH_LAVA_TOKEN:-}" ] || { echo "$name: no IOWATCH_LAVA_TOKEN: run scripts/lava-lab.sh --nightly" >&2; exit 2; }
host=lava-qemu
board=lava-qemu-01
second=lava-qemu-b      # the second board class (board lava-qemu-03): the confirmation
branch=iowatch-lab/next
web_port=$(vm_port)
server_data=$run/server
lab_data=${IOWATCH_LAVA_DATA:-$serve_dir/data}
lab_args=(--matrix e2e --reps 5)

lab_range
lab_server lava-agent "$host"
token_b=$(IOWATCH_DATA_DIR=$server_data .venv/bin/iowatch manage create_agent lava-agent-b --host "$second" |
          awk '{print $NF}' | tail -1)

export IOWATCH_DATA_DIR=$lab_data   # the agent's kernel builds, spool and bundles
agent() {  # LOG ARGS...: iowatch agent for the board class (as_host, as_token: another's), its
           # output in LOG (and shown); sets agent_rc
    local out=$run/$1; shift
    agent_rc=0
    .venv/bin/iowatch agent --host "${as_host:-$host}" --server "$url" --token "${as_token:-$token}" --source "$tree" \
        --out "$run/agent-${as_host:-$host}" "${lab_args[@]}" "$@" > "$out" 2>&1 || agent_rc=$?
    sed 's/^/    /' "$out"
}
jobs_of() { grep -o "LAVA job [0-9]*" "$run/$1" | sort -u | awk '{print $3}' | paste -sd, -; }

phase_start "night 1: debian-base, 4 boots"
agent night-1.log --nightly debian-base --branch "$branch" --night 2026-11-20 --boots 4
[ "$agent_rc" = 0 ] || fail "night 1 exited $agent_rc: see night-1.log"
grep -q "no regression with this run on the bad side" "$run/night-1.log" || fail "night 1 found something: see night-1.log"
phase_end PASS "LAVA jobs $(jobs_of night-1.log); $(grep -m1 '^nightly ' "$run/night-1.log" | cut -c1-80)"

phase_start "night 1 of the second board class $second: debian-base, 4 boots"
as_host=$second as_token=$token_b agent night-1b.log --nightly debian-base --branch "$branch" --night 2026-11-20 --boots 4
[ "$agent_rc" = 0 ] || fail "night 1 of $second exited $agent_rc: see night-1b.log"
grep -q "no regression with this run on the bad side" "$run/night-1b.log" || fail "night 1 of $second found something: see night-1b.log"
phase_end PASS "LAVA jobs $(jobs_of night-1b.log); $(grep -m1 '^nightly ' "$run/night-1b.log" | cut -c1-80)"

phase_start "night 2: $branch, 1 boot"
agent night-2.log --nightly "$branch" --branch "$branch" --night 2026-11-21 --boots 1
[ "$agent_rc" = 1 ] || fail "night 2 exited $agent_rc, not 1 (a regression): see night-2.log"
regression=$(sed -n 's/^  regression \([0-9]*\) (nightly.*/\1/p' "$run/night-2.log" | head -1)
[ -n "$regression" ] || fail "no nightly regression in night-2.log"
grep -q "bisect queued" "$run/night-2.log" || fail "the regression's bisect is not queued: see night-2.log"
rc=0
.venv/bin/iowatch report "$regression" --format email --server "$url" > "$run/mail-early.txt" 2> "$run/mail-early.log" || rc=$?
[ "$rc" = 3 ] && grep -q "$second" "$run/mail-early.log" ||
    fail "the mail did not wait for the confirmation on $second (exit $rc): see mail-early.log"
phase_end PASS "LAVA job $(jobs_of night-2.log); regression $regression, bisect queued; mail waits: $(head -c 90 "$run/mail-early.log")"

phase_start "bisect as LAVA jobs"
agent bisect.log --once
[ "$agent_rc" = 0 ] || fail "the agent exited $agent_rc: see bisect.log"
line=$(grep -m1 "^agent: bisect #" "$run/bisect.log" || true)
[[ "$line" == *"first bad"*"$first_bad_subject"* ]] || fail "the bisect did not name commit 4: $line"
phase_end PASS "LAVA jobs $(jobs_of bisect.log); ${line#agent: }"

phase_start "the confirmation on $second as LAVA jobs"
as_host=$second as_token=$token_b agent confirm.log --once
[ "$agent_rc" = 0 ] || fail "the agent of $second exited $agent_rc: see confirm.log"
line=$(grep -m1 "^agent: confirmation #" "$run/confirm.log" || true)
[[ "$line" == *": done, confirmed"* ]] || fail "the confirmation on $second did not confirm: $line"
phase_end PASS "LAVA jobs $(jobs_of confirm.log); ${line#agent: }"

phase_start "the mail"
.venv/bin/iowatch report "$regression" --format email --server "$url" > "$run/mail.txt" 2> "$run/mail.log" ||
    fail "iowatch report failed: see mail.log"
sed 's/^/    /' "$run/mail.txt"
# The body is folded at 72 columns, as kernel mail is: read it unfolded.
unfolded=$(tr -s ' \n' '  ' < "$run/mail.txt")
[[ "$unfolded" == *"first bad commit: "*"(\"$first_bad_subject\")"* ]] ||
    fail "the mail does not name the first bad commit"
[[ "$unfolded" == *"second host: confirmed on 2 of 2 hosts"* ]] || fail "the mail does not say confirmed on 2 of 2 hosts"
phase_end PASS "$(grep -m1 '^Subject:' "$run/mail.txt" | cut -c1-100)"

phase_start "the hosts page: LAVA's board"
IOWATCH_DATA_DIR=$server_data .venv/bin/iowatch manage refresh_lava_boards > "$run/refresh.log" 2>&1 ||
    fail "refresh_lava_boards failed: see refresh.log"
sed 's/^/    /' "$run/refresh.log"
curl -sf "$url/hosts/" > "$run/hosts.html" || fail "/hosts/ did not answer"
for b in "$board" lava-qemu-03; do grep -q "$b" "$run/hosts.html" || fail "/hosts/ does not show $b"; done
phase_end PASS "$(head -1 "$run/refresh.log" | cut -c1-100)"
