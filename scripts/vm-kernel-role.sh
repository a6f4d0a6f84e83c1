#!/usr/bin/env bash
# The Ansible kernel role (ansible/kernel.yml) applied over SSH to a QEMU
# machine that boots like a lab host: a Debian 12 disk with grub-pc, Debian's
# kernel as the default, sshd. Not in CI (it builds a kernel and boots TCG guests).
#   1. builds the variants of kernels/series/e2e-failures with the lab-host
#      fragment (scripts/vmhost/kernel.py): base boots, base+p1 does not build,
#      base+p1+p2 panics in ext4_init_fs at boot;
#   2. makes (or reuses) the disk image (scripts/vmhost/image.sh) and boots a
#      throwaway overlay of it (qemu -accel tcg, user net, ssh forwarded);
#   3. kernel.yml with the base variant: installed, booted once, uname -r is it;
#   4. kernel.yml with the panicking variant: the machine comes back on Debian's
#      kernel by itself and the result file says boot-failed;
#   5. kernel.yml -e kernel_action=restore: default kernel, variant files gone.
# Prints timestamped phase lines and a PASS/FAIL table; exits 1 if a phase failed.
# Cache: $IOWATCH_VM_DIR (default ~/.cache/iowatch/vm): kernel build, image, ssh key.
# The last run's console log and Ansible output are kept in $IOWATCH_VM_DIR/last-run.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
vm_dir=${IOWATCH_VM_DIR:-$HOME/.cache/iowatch/vm}
mkdir -p "$vm_dir"
run=$(mktemp -d /tmp/iowatch-vm-XXXX)
qemu_pid=
t_start=$(date +%s)
declare -a summary=()

log() { echo "[$(date -u +%H:%M:%S)] vm: $*"; }
phase_start() { phase_name=$1; phase_t0=$(date +%s); log "phase: $1"; }
phase_end() {  # STATUS [NOTE]
    local s=$(( $(date +%s) - phase_t0 ))
    summary+=("$(printf '%-28s %-5s %6s s  %s' "$phase_name" "$1" "$s" "${2:-}")")
    log "phase: $phase_name: $1 after $s s${2:+ ($2)}"
    phase_name=
}
fail() { phase_end FAIL "$*"; exit 1; }

teardown() {
    local rc=$?
    [ -n "${phase_name:-}" ] && phase_end FAIL "interrupted (exit $rc)"
    if [ -n "$qemu_pid" ] && kill -0 "$qemu_pid" 2>/dev/null; then
        kill "$qemu_pid"; wait "$qemu_pid" 2>/dev/null || true
    fi
    rm -rf "$vm_dir/last-run"
    mkdir -p "$vm_dir/last-run"
    cp "$run"/*.log "$run"/*.json "$vm_dir/last-run/" 2>/dev/null || true
    rm -rf "$run"
    echo
    echo "vm-kernel-role: summary (total $(( $(date +%s) - t_start )) s; logs in $vm_dir/last-run)"
    printf '%-28s %-5s %8s  %s\n' PHASE STATE TIME NOTE
    printf '%s\n' "${summary[@]}"
    if [ "$rc" -eq 0 ]; then echo "vm-kernel-role: PASS"; else echo "vm-kernel-role: FAIL"; fi
    exit "$rc"
}
trap teardown EXIT
trap 'exit 130' INT TERM

ssh_key=$vm_dir/ssh/id_ed25519
port=${IOWATCH_VM_SSH_PORT:-$(.venv/bin/python -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')}
vm_ssh() {
    ssh -q -i "$ssh_key" -p "$port" -o BatchMode=yes -o ConnectTimeout=10 \
        -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null root@127.0.0.1 "$@"
}

phase_start "tools"
need=(mmdebstrap qemu-system-x86_64 qemu-img sfdisk mkfs.ext4 ssh ssh-keygen)
missing=$(for t in "${need[@]}"; do command -v "$t" >/dev/null || echo "$t"; done)
[ -z "$missing" ] || fail "missing $(echo $missing): run ./scripts/setup.sh --vm"
[ -x .venv/bin/ansible-playbook ] || fail "no .venv/bin/ansible-playbook: run ./scripts/setup.sh --vm"
phase_end PASS

phase_start "disk image"
image=$vm_dir/lab-host-bookworm.img
stamp=$(sha256sum scripts/vmhost/image.sh | cut -c1-16)
if [ ! -f "$ssh_key" ]; then
    mkdir -p "$(dirname "$ssh_key")"
    ssh-keygen -q -t ed25519 -N '' -C iowatch-vm -f "$ssh_key"
fi
if [ -f "$image" ] && [ "$(cat "$image.stamp" 2>/dev/null)" = "$stamp" ]; then
    note="reused $image"
else
    rm -f "$image" "$image.stamp"
    scripts/vmhost/image.sh "$image" "$ssh_key.pub" > "$run/image.log" 2>&1 ||
        fail "image.sh failed: see $run/image.log and $image.firstboot.log"
    echo "$stamp" > "$image.stamp"
    note="made $image"
fi
qemu-img create -q -f qcow2 -F raw -b "$image" "$run/overlay.qcow2"
phase_end PASS "$note"

log "starting the machine in the background (it boots while the variants build)"
# TCG: KVM on this machine cannot boot mainline guests. No -no-reboot: the
# guest's reboots (and its panic=10 reboot) must come back as on a real host.
qemu-system-x86_64 -accel tcg -cpu max -m 2048 -smp 2 -display none -no-user-config -nodefaults \
    -serial "file:$run/console.log" \
    -drive file="$run/overlay.qcow2",format=qcow2,if=virtio \
    -nic user,model=virtio-net-pci,hostfwd=tcp:127.0.0.1:"$port"-:22 &
qemu_pid=$!
qemu_t0=$(date +%s)

phase_start "kernel variants"
IOWATCH_DATA_DIR=$vm_dir/data PYTHONPATH=scripts .venv/bin/python -m vmhost.kernel \
    > "$run/variants.json" 2> "$run/kernel-build.log" || fail "build failed: see $run/kernel-build.log"
sed 's/^/    /' "$run/kernel-build.log"
read -r good bad good_release states < <(.venv/bin/python - "$run/variants.json" <<'PY'
import json, sys
v = json.load(open(sys.argv[1]))
print(v[0]["artifacts"] or "-", v[-1]["artifacts"] or "-", v[0]["release"] or "-",
      ",".join(x["status"] for x in v))
PY
)
[ "$states" = "built,build-failed,built" ] || fail "expected built,build-failed,built, got $states"
phase_end PASS "$states; release $good_release"

phase_start "boot the machine"
# A TCG boot of Debian takes 1-2 min on an idle machine, 8 on a loaded one.
while ! vm_ssh true 2>/dev/null; do
    kill -0 "$qemu_pid" 2>/dev/null || fail "qemu exited: see console.log"
    [ $(( $(date +%s) - qemu_t0 )) -lt 1200 ] || fail "no ssh on port $port 1200 s after qemu started"
    sleep 5
done
default_release=$(vm_ssh uname -r)
phase_end PASS "ssh $(( $(date +%s) - qemu_t0 )) s after qemu started; default kernel $default_release"

cat > "$run/inventory.yml" <<EOF
lab_agents:
  hosts:
    lab-vm:
      ansible_host: 127.0.0.1
      ansible_port: $port
      ansible_user: root
      ansible_ssh_private_key_file: $ssh_key
      ansible_ssh_common_args: -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null
EOF
playbook() {  # LOG ARGS...: the lab's own playbook, with the VM's inventory
    local out=$run/$1; shift
    (cd ansible && ANSIBLE_CONFIG=ansible.cfg ANSIBLE_FORCE_COLOR=0 \
        "$repo/.venv/bin/ansible-playbook" -i "$run/inventory.yml" kernel.yml "$@") > "$out" 2>&1
}
result() { .venv/bin/python -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$@"; }

phase_start "boot the base variant"
playbook boot-base.log -e kernel_variant_dir="$good" -e kernel_result_file="$run/boot-base.json" ||
    fail "kernel.yml failed: see boot-base.log"
state=$(result "$run/boot-base.json" state)
running=$(vm_ssh uname -r)
version=$(vm_ssh cat /proc/version)
cmdline=$(vm_ssh cat /proc/cmdline)
[ "$state" = booted ] || fail "result file says $state"
[ "$running" = "$good_release" ] || fail "uname -r is $running, not $good_release"
[[ "$version" == "Linux version $good_release "* ]] || fail "/proc/version: $version"
[[ "$cmdline" == *"iowatch.commit=$(result "$good/meta.json" commit)"* ]] || fail "/proc/cmdline: $cmdline"
phase_end PASS "uname -r $running, result $state"

phase_start "boot the panicking variant"
set +e
playbook boot-panic.log -e kernel_variant_dir="$bad" -e kernel_result_file="$run/boot-panic.json"
rc=$?
set -e
[ "$rc" -ne 0 ] || fail "kernel.yml passed a variant that panics"
[ -f "$run/boot-panic.json" ] || fail "no result file: see boot-panic.log"
state=$(result "$run/boot-panic.json" state)
running=$(vm_ssh uname -r)
[ "$state" = boot-failed ] || fail "result file says $state"
[ "$running" = "$default_release" ] || fail "back on $running, not the default $default_release"
grep -q "Kernel panic - not syncing: iowatch" "$run/console.log" || fail "no iowatch panic in console.log"
phase_end PASS "panicked, back on $running by itself, result $state"

phase_start "restore the default kernel"
playbook restore.log -e kernel_action=restore -e kernel_variant_dir="$bad" ||
    fail "kernel.yml restore failed: see restore.log"
running=$(vm_ssh uname -r)
left=$(vm_ssh "ls -A /boot/iowatch; ls -d /boot/config-$good_release /lib/modules/$good_release \
    /etc/grub.d/42_iowatch 2>/dev/null; grep -c iowatch /boot/grub/grub.cfg; grub-editenv list" || true)
[ "$running" = "$default_release" ] || fail "runs $running, not $default_release"
[ "$left" = 0 ] || fail "left behind: $left"
phase_end PASS "uname -r $running, no variant files or grub entry left"
