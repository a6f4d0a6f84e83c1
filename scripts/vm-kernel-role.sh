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
name=vm-kernel-role
vm_dir=${IOWATCH_VM_DIR:-$HOME/.cache/iowatch/vm}
last_run=$vm_dir/last-run
mkdir -p "$vm_dir"
run=$(mktemp -d /tmp/iowatch-vm-XXXX)
qemu_pid=
keep=("*.log" "*.json")
log_tag=vm
# shellcheck source=scripts/vmhost/lib.sh
. scripts/vmhost/lib.sh

port=${IOWATCH_VM_SSH_PORT:-$(vm_port)}

phase_start "tools"
need=(mmdebstrap qemu-system-x86_64 qemu-img sfdisk mkfs.ext4 ssh ssh-keygen)
missing=$(for t in "${need[@]}"; do command -v "$t" >/dev/null || echo "$t"; done)
[ -z "$missing" ] || fail "missing $(echo $missing): run ./scripts/setup.sh --vm"
[ -x .venv/bin/ansible-playbook ] || fail "no .venv/bin/ansible-playbook: run ./scripts/setup.sh --vm"
phase_end PASS

phase_start "disk image"
vm_image
qemu-img create -q -f qcow2 -F raw -b "$image" "$run/overlay.qcow2"
phase_end PASS "$image_note"

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
vm_wait_ssh 1200
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
