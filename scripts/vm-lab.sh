#!/usr/bin/env bash
# The whole lab loop on a stand-in host (issue 29; docs/lab.md §10): a QEMU
# machine that boots like a lab host (Debian 12, grub, sshd: the image of
# scripts/vmhost/image.sh) with two emulated lab disks of two classes (hdd,
# ssd), provisioned from the wheel with ansible/provision.yml over ssh as a lab
# controller does, then driven only by `iowatch agent` against a local
# `iowatch serve`:
#   1. the range: kernels/series/e2e-bisect applied on Debian's 6.12 as the
#      branch iowatch-lab/next of the kept kernel tree (commit 4 of 6 sleeps
#      10 ms before every ext4 direct write);
#   2. night 1: `iowatch agent --nightly debian-base --boots 4`: the head built
#      here with the lab host's configuration, booted four times by the kernel
#      role, the e2e matrix run on the host each time, each boot uploaded as a
#      run of the night: no regression, and the host's record of its noise
#      between boots (the 3 degrees of freedom iowatch.judging.boots needs);
#   3. night 2: iowatch-lab/next booted once, judged with the record: a nightly
#      regression, its bisect queued by the server;
#   4. `iowatch agent --once`: claims the bisect and works it on the host, commit
#      by commit (build here, kernel role, cells there, step posted), to the
#      first bad commit; the host ends on its default kernel;
#   5. the mail: `iowatch report ID --format email`: the first bad commit, and
#      why no second host confirmed it (the stand-in lab has one host).
# Not in CI (it builds kernels and boots a TCG machine many times). Prints
# timestamped phase lines, the agent's boots and a PASS/FAIL table with each
# phase's wall time; exits 1 if a phase failed.
# Cache: $IOWATCH_VM_DIR (default ~/.cache/iowatch/vm): the image, the ssh key
# and the lab kernels' build tree (data-lab: its .config is not the virtual
# lab's). The last run's logs, agent output and mail are kept in
# $IOWATCH_VM_DIR/last-lab.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
name=vm-lab
vm_dir=${IOWATCH_VM_DIR:-$HOME/.cache/iowatch/vm}
last_run=$vm_dir/last-lab
mkdir -p "$vm_dir"
run=$(mktemp -d /tmp/iowatch-lab-XXXX)
qemu_pid=
server_pid=
keep=("*.log" "*.txt" "*.json" "*.yml" agent)
# shellcheck source=scripts/vmhost/lib.sh
. scripts/vmhost/lib.sh
# errexit off first: `(exit $rc)` must hand the status to teardown, not end the trap.
trap 'rc=$?; set +e; [ -n "$server_pid" ] && kill -- "-$server_pid" 2>/dev/null; (exit $rc); teardown' EXIT

port=${IOWATCH_VM_SSH_PORT:-$(vm_port)}
web_port=$(vm_port)
host=lab-vm
branch=iowatch-lab/next
export IOWATCH_DATA_DIR=$vm_dir/data-lab   # the agent's builds, spool and bundles
server_data=$run/server
lab_args=(--config-base allnoconfig --fragment scripts/vmhost/vm.config --matrix e2e --reps 5)

phase_start "tools"
need=(qemu-system-x86_64 qemu-img ssh ssh-keygen tar git)
missing=$(for t in "${need[@]}"; do command -v "$t" >/dev/null || echo "$t"; done)
[ -z "$missing" ] || fail "missing $(echo $missing): run ./scripts/setup.sh --vm"
[ -x .venv/bin/ansible-playbook ] || fail "no .venv/bin/ansible-playbook: run ./scripts/setup.sh --vm"
phase_end PASS "$(.venv/bin/ansible-playbook --version | head -1)"

phase_start "wheels"
vm_wheels "$run"
phase_end PASS "$(basename "$wheel"), $(ls "$run/wheelhouse" | wc -l) dependency wheels"

phase_start "disk image"
vm_image
qemu-img create -q -f qcow2 -F raw -b "$image" "$run/overlay.qcow2"
declare -a disks=()
for d in hdd:2G ssd:2G; do
    qemu-img create -q -f qcow2 "$run/${d%%:*}.qcow2" "${d#*:}"
    disks+=(-drive "file=$run/${d%%:*}.qcow2,format=qcow2,if=none,id=${d%%:*},cache=none"
            -device "virtio-blk-pci,drive=${d%%:*},serial=iowatch-${d%%:*}")
done
phase_end PASS "$image_note; lab disks hdd 2G, ssd 2G"

log "starting the machine in the background (TCG; it boots while the range is made)"
qemu-system-x86_64 -accel tcg -cpu max -m 2048 -smp 2 -display none -no-user-config -nodefaults \
    -serial "file:$run/console.log" \
    -drive file="$run/overlay.qcow2",format=qcow2,if=none,id=system \
    -device virtio-blk-pci,drive=system,bootindex=0 \
    "${disks[@]}" \
    -nic user,model=virtio-net-pci,hostfwd=tcp:127.0.0.1:"$port"-:22 &
qemu_pid=$!
qemu_t0=$(date +%s)

lab_range
lab_server lab-agent "$host"

cat > "$run/inventory.yml" <<EOF
# The stand-in lab: one bare-metal-like host, reached over ssh as a lab host
# is; its lab disks named by the by-id paths their virtio serials give.
all:
  children:
    lab:
      hosts:
        $host:
          ansible_host: 127.0.0.1
          ansible_port: $port
          ansible_user: root
          ansible_python_interpreter: /usr/bin/python3
          ansible_ssh_private_key_file: $ssh_key
          ansible_ssh_common_args: -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null
          iowatch_kind: bare-metal
          iowatch_devices:
            - name: hdd
              class: hdd
              path: /dev/disk/by-id/virtio-iowatch-hdd
              model: virtio-blk disk (QEMU), stands in for a disk
              rotational: true
              filesystems: [ext4]
            - name: ssd
              class: ssd
              path: /dev/disk/by-id/virtio-iowatch-ssd
              model: virtio-blk disk (QEMU), stands in for an SSD
              rotational: false
              filesystems: [ext4, raw]
    lab_agents: {hosts: {$host: {}}}
    hdd: {hosts: {$host: {}}}
    ssd: {hosts: {$host: {}}}
EOF

phase_start "boot the machine"
vm_wait_ssh 1500
default_release=$(vm_ssh uname -r)
phase_end PASS "ssh $(( $(date +%s) - qemu_t0 )) s after qemu started; default kernel $default_release"

phase_start "provision.yml (over ssh)"
(cd ansible && ANSIBLE_CONFIG=ansible.cfg ANSIBLE_FORCE_COLOR=0 ANSIBLE_NOCOLOR=1 \
    "$repo/.venv/bin/ansible-playbook" -i "$run/inventory.yml" -l "$host" provision.yml \
    -e "common_iowatch_wheel=$wheel" -e "common_iowatch_wheelhouse=$run/wheelhouse" \
    -e "common_server_url=$url" -e "jenkins_agent_public_key='$(cat "$ssh_key.pub")'") \
    > "$run/provision.log" 2>&1 || fail "provision.yml failed: see provision.log"
installed=$(vm_ssh "readlink -f \$(command -v iowatch)") || fail "no iowatch on the host after provisioning"
phase_end PASS "$(grep -E "^$host +: " "$run/provision.log" | tail -1 | sed "s/^$host *: *//; s/  */ /g"); $installed"

agent() {  # LOG ARGS...: iowatch agent for the host, its output in LOG (and shown); sets agent_rc
    local out=$run/$1; shift
    agent_rc=0
    .venv/bin/iowatch agent --host "$host" --server "$url" --token "$token" \
        --inventory "$run/inventory.yml" --out "$run/agent" "${lab_args[@]}" "$@" > "$out" 2>&1 ||
        agent_rc=$?
    sed 's/^/    /' "$out"
}

phase_start "night 1: debian-base"
agent night-1.log --nightly debian-base --branch "$branch" --night 2026-11-20 --boots 4
[ "$agent_rc" = 0 ] || fail "night 1 exited $agent_rc: see night-1.log"
grep -q "no regression with this run on the bad side" "$run/night-1.log" || fail "night 1 found something: see night-1.log"
phase_end PASS "$(grep -m1 '^nightly ' "$run/night-1.log" | cut -c1-100)"

phase_start "night 2: $branch"
agent night-2.log --nightly "$branch" --branch "$branch" --night 2026-11-21 --boots 1
[ "$agent_rc" = 1 ] || fail "night 2 exited $agent_rc, not 1 (a regression): see night-2.log"
regression=$(sed -n 's/^  regression \([0-9]*\) (nightly.*/\1/p' "$run/night-2.log" | head -1)
[ -n "$regression" ] || fail "no nightly regression in night-2.log"
grep -q "bisect queued" "$run/night-2.log" || fail "the regression's bisect is not queued: see night-2.log"
phase_end PASS "regression $regression, bisect queued"

phase_start "bisect on the host"
agent bisect.log --once
[ "$agent_rc" = 0 ] || fail "the agent exited $agent_rc: see bisect.log"
line=$(grep -m1 "^agent: bisect #" "$run/bisect.log" || true)
[[ "$line" == *"first bad"*"$first_bad_subject"* ]] || fail "the bisect did not name commit 4: $line"
running=$(vm_ssh uname -r)
[ "$running" = "$default_release" ] || fail "the host runs $running after the bisect, not $default_release"
phase_end PASS "${line#agent: }; host back on $running"

phase_start "the mail"
.venv/bin/iowatch report "$regression" --format email --server "$url" > "$run/mail.txt" 2> "$run/mail.log" ||
    fail "iowatch report failed: see mail.log"
sed 's/^/    /' "$run/mail.txt"
# The body is folded at 72 columns, as kernel mail is: read it unfolded.
unfolded=$(tr -s ' \n' '  ' < "$run/mail.txt")
[[ "$unfolded" == *"first bad commit: "*"(\"$first_bad_subject\")"* ]] ||
    fail "the mail does not name the first bad commit"
[[ "$unfolded" == *"second host: not confirmed on a second host"* ]] ||
    fail "the mail does not say why it is unconfirmed"
phase_end PASS "$(grep -m1 '^Subject:' "$run/mail.txt" | cut -c1-100)"

curl -sf "$url/api/v1/bisects/$(curl -sf "$url/api/v1/regressions/$regression" | .venv/bin/python -c 'import json,sys; print(json.load(sys.stdin)["bisect"]["id"])')" \
    > "$run/bisect-job.json" || true
