#!/usr/bin/env bash
# A lab host provisioned from the wheel, as docs/lab.md §3 says, on a QEMU
# machine that boots like one: the guest applies ansible/provision.yml to
# itself (`ansible-playbook -c local`) and then benchmarks with the iowatch the
# common role installed. Not in CI (it boots a TCG guest for about half an
# hour); docs/lab.md, "A lab host provisioned from the wheel".
#   1. builds iowatch's wheel from this checkout (pip wheel --no-deps) and two
#      wheelhouses with this machine's Python (3.11, as Debian 12's): iowatch's
#      dependencies, which the common role installs from with --no-index
#      (common_iowatch_wheelhouse; the guest reaches Debian's mirror but not
#      PyPI), and ansible-core at the controller's version for the guest;
#   2. boots a throwaway qcow2 overlay of the cached Debian 12 image
#      (scripts/vmhost/image.sh) on Debian's kernel with four more virtio disks,
#      the lab's test devices, named by serial: /dev/disk/by-id/virtio-iowatch-ssd
#      (class ssd), -r0a and -r0b (the members of an ssd-raid0) and -sd (sdcard);
#   3. copies in ansible/, the wheel, the wheelhouses and an inventory declaring
#      those devices for host lab-vm; installs ansible-core into a virtualenv;
#   4. provision.yml -c local, twice: the second run must change nothing;
#   5. storage.yml (md RAID0, f2fs, ext4, mounts, schedulers), again with no
#      change, then storage_state=absent, twice: the devices are left unmounted,
#      with no array and no md superblock, even after a udev "add" event;
#   6. from the installed copy (/usr/local/bin/iowatch, the role's virtualenv):
#      `iowatch device check` on each declared device, and the smoke matrix,
#      one repetition, on the guest's devices;
#   7. copies the bundle back and checks it here: bundle.load (schema, sha256 of
#      each artifact) and `iowatch compare` of it against itself.
# Prints timestamped phase lines and a PASS/FAIL table; exits 1 if a phase
# failed. Tears the machine down on any exit. The last run's console log,
# Ansible output and bundle are kept in $IOWATCH_VM_DIR/last-provision.
# Cache: $IOWATCH_VM_DIR (default ~/.cache/iowatch/vm): the image and ssh key.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
name=vm-provision
vm_dir=${IOWATCH_VM_DIR:-$HOME/.cache/iowatch/vm}
last_run=$vm_dir/last-provision
mkdir -p "$vm_dir"
run=$(mktemp -d /tmp/iowatch-provision-XXXX)
qemu_pid=
keep=("*.log" "*.txt" bundle)
# shellcheck source=scripts/vmhost/lib.sh
. scripts/vmhost/lib.sh

port=${IOWATCH_VM_SSH_PORT:-$(vm_port)}
host=lab-vm
g=/root/iowatch-provision   # the guest's copy of what the controller sends
guest=$run/guest            # ... made here first

phase_start "tools"
need=(qemu-system-x86_64 qemu-img ssh ssh-keygen tar)
missing=$(for t in "${need[@]}"; do command -v "$t" >/dev/null || echo "$t"; done)
[ -z "$missing" ] || fail "missing $(echo $missing): run ./scripts/setup.sh --vm"
ansible_version=$(.venv/bin/python -c 'from importlib.metadata import version; print(version("ansible-core"))') ||
    fail "no ansible-core in .venv: pip install -e '.[dev]'"
phase_end PASS "ansible-core $ansible_version"

phase_start "wheels"
mkdir -p "$guest/ansible-wheels" "$guest/docker/jenkins/casc"
vm_wheels "$guest"
.venv/bin/pip download -q --only-binary=:all: -d "$guest/ansible-wheels" pip "ansible-core==$ansible_version" \
    >> "$run/wheels.log" 2>&1 || fail "pip download of ansible-core failed: see wheels.log"
cp -r ansible "$guest/ansible"
phase_end PASS "$(basename "$wheel"), $(ls "$guest/wheelhouse" | wc -l) dependency wheels ($(du -sh "$guest/wheelhouse" | cut -f1))"

phase_start "disk image"
vm_image
qemu-img create -q -f qcow2 -F raw -b "$image" "$run/overlay.qcow2"
declare -a disks=()
for d in ssd:2G r0a:1G r0b:1G sd:1G; do
    qemu-img create -q -f qcow2 "$run/${d%%:*}.qcow2" "${d#*:}"
    disks+=(-drive "file=$run/${d%%:*}.qcow2,format=qcow2,if=none,id=${d%%:*}"
            -device "virtio-blk-pci,drive=${d%%:*},serial=iowatch-${d%%:*}")
done
phase_end PASS "$image_note; lab disks ssd 2G, r0a+r0b 1G, sd 1G"

cat > "$guest/inventory.yml" <<EOF
# The VM's inventory: one lab host provisioning itself (-c local), its lab
# disks declared by the by-id paths their virtio serials give.
all:
  children:
    vmlab:
      hosts:
        $host:
          ansible_connection: local
          ansible_python_interpreter: /usr/bin/python3
          iowatch_kind: bare-metal
          iowatch_devices:
            - name: ssd
              class: ssd
              path: /dev/disk/by-id/virtio-iowatch-ssd
              model: virtio-blk disk (QEMU), stands in for an SSD
              rotational: false
              filesystems: [ext4, raw]
            - name: pair
              class: ssd-raid0
              members: [/dev/disk/by-id/virtio-iowatch-r0a, /dev/disk/by-id/virtio-iowatch-r0b]
              model: md RAID0 of two virtio-blk disks (QEMU)
              rotational: false
              filesystems: [xfs]
            - name: sd
              class: sdcard
              path: /dev/disk/by-id/virtio-iowatch-sd
              model: virtio-blk disk (QEMU), stands in for an SD card
              rotational: false
              filesystems: [f2fs]
    lab_agents: {hosts: {$host: {}}}
    ssd: {hosts: {$host: {}}}
    ssd_raid0: {hosts: {$host: {}}}
    sdcard: {hosts: {$host: {}}}
EOF

# TCG by default, as scripts/vm-kernel-role.sh (KVM on this machine cannot boot
# mainline guests); IOWATCH_VM_ACCEL=kvm where it can. bootindex: SeaBIOS boots
# only the first disk it finds, and the lab disks come before the system disk
# otherwise.
accel=${IOWATCH_VM_ACCEL:-tcg}
cpu=max
[ "$accel" = kvm ] && cpu=host
log "starting the machine (Debian's kernel, $accel)"
qemu-system-x86_64 -accel "$accel" -cpu "$cpu" -m 2048 -smp 2 -display none -no-user-config -nodefaults \
    -serial "file:$run/console.log" \
    -drive file="$run/overlay.qcow2",format=qcow2,if=none,id=system \
    -device virtio-blk-pci,drive=system,bootindex=0 \
    "${disks[@]}" \
    -nic user,model=virtio-net-pci,hostfwd=tcp:127.0.0.1:"$port"-:22 &
qemu_pid=$!
qemu_t0=$(date +%s)

phase_start "boot the machine"
vm_wait_ssh 1200
kernel=$(vm_ssh uname -r)
md_at_boot=$(vm_ssh 'test -e /proc/mdstat && echo loaded || echo "not loaded"')
phase_end PASS "ssh $(( $(date +%s) - qemu_t0 )) s after qemu started; kernel $kernel; md $md_at_boot"

phase_start "ansible into the guest"
tar -C "$guest" -cf - . | vm_ssh "rm -rf $g && mkdir -p $g && tar -C $g -xf -" ||
    fail "copying into the guest failed"
# No python3-venv on the image (the common role installs it): a venv without
# pip, and pip run from its own wheel to fill it.
vm_ssh "cd $g && python3 -m venv --without-pip ansible-venv &&
    ansible-venv/bin/python \$(ls ansible-wheels/pip-*.whl)/pip install -q --no-index \
        --find-links ansible-wheels ansible-core==$ansible_version" > "$run/ansible-install.log" 2>&1 ||
    fail "installing ansible-core in the guest failed: see ansible-install.log"
phase_end PASS "$(vm_ssh "$g/ansible-venv/bin/ansible-playbook --version | head -1")"

playbook() {  # LOG PLAYBOOK ARGS...: ansible-playbook -c local in the guest, on itself
    local out=$run/$1 book=$2
    shift 2
    vm_ssh "cd $g/ansible && ANSIBLE_CONFIG=ansible.cfg ANSIBLE_FORCE_COLOR=0 ANSIBLE_NOCOLOR=1 \
        $g/ansible-venv/bin/ansible-playbook -c local -i $g/inventory.yml -l $host $book $*" > "$out" 2>&1
}
recap() {  # LOG: "ok=.. changed=.. failed=.." of the host's PLAY RECAP line
    grep -E "^$host +: " "$run/$1" | tail -1 | sed "s/^$host *: *//; s/  */ /g"
}
changed() { recap "$1" | sed -n 's/.*changed=\([0-9]*\).*/\1/p'; }

provision_args="-e common_iowatch_wheel=$g/dist/$(basename "$wheel") -e common_iowatch_wheelhouse=$g/wheelhouse \
    -e \"jenkins_agent_public_key='$(cat "$ssh_key.pub")'\""

phase_start "provision.yml"
playbook provision-1.log provision.yml "$provision_args" || fail "provision.yml failed: see provision-1.log"
phase_end PASS "$(recap provision-1.log)"

phase_start "provision.yml again"
playbook provision-2.log provision.yml "$provision_args" || fail "provision.yml failed: see provision-2.log"
[ "$(changed provision-2.log)" = 0 ] || fail "not idempotent: $(recap provision-2.log); see provision-2.log"
phase_end PASS "$(recap provision-2.log)"

phase_start "storage.yml"
playbook storage-1.log storage.yml || fail "storage.yml failed: see storage-1.log"
vm_ssh "findmnt -rn -o SOURCE,TARGET,FSTYPE | grep /srv/iowatch/scratch; cat /proc/mdstat" > "$run/storage.txt" 2>&1 || true
mounts=$(grep -c /srv/iowatch/scratch "$run/storage.txt" || true)
[ "$mounts" = 3 ] || fail "expected 3 scratch mounts, found $mounts: see storage.txt"
grep -q "raid0" "$run/storage.txt" || fail "no md RAID0 in /proc/mdstat: see storage.txt"
phase_end PASS "$(recap storage-1.log); 3 scratch mounts (ext4, xfs on md RAID0, f2fs)"

phase_start "storage.yml again"
playbook storage-2.log storage.yml || fail "storage.yml failed: see storage-2.log"
[ "$(changed storage-2.log)" = 0 ] || fail "not idempotent: $(recap storage-2.log); see storage-2.log"
phase_end PASS "$(recap storage-2.log)"

phase_start "storage.yml absent"
playbook storage-absent.log storage.yml -e storage_state=absent || fail "storage.yml absent failed: see storage-absent.log"
# An "add" event on every disk, as a reboot or a hot-plug gives: Debian's mdadm
# udev rules assemble any disk that still carries an md superblock.
left=$(vm_ssh "udevadm trigger --action=add --subsystem-match=block; udevadm settle; sleep 5
    findmnt -rn -o TARGET | grep -c /srv/iowatch/scratch; ls /dev/md 2>/dev/null | wc -l
    for d in r0a r0b; do mdadm --examine /dev/disk/by-id/virtio-iowatch-\$d >/dev/null 2>&1 && echo \$d; done | wc -l" |
    tr '\n' ' ')
[ "$left" = "0 0 0 " ] || fail "left behind (mounts, md arrays, members with superblocks): $left"
playbook storage-absent-2.log storage.yml -e storage_state=absent || fail "storage.yml absent failed: see storage-absent-2.log"
[ "$(changed storage-absent-2.log)" = 0 ] || fail "absent not idempotent: $(recap storage-absent-2.log)"
phase_end PASS "$(recap storage-absent.log); no mount, array or superblock left, even after a udev add event; again: $(recap storage-absent-2.log)"

# The installed copy, as the Jenkins agent runs it: the role's environment file,
# /usr/local/bin/iowatch, from a directory that holds no checkout.
installed="set -a; . /etc/iowatch/iowatch.env; set +a; cd /var/lib/iowatch;"

phase_start "device check (installed)"
vm_ssh "$installed readlink -f \$(command -v iowatch); /opt/iowatch/venv/bin/python -c 'import iowatch; print(iowatch.__file__)'
    for d in ssd r0a r0b sd; do iowatch device check $host /dev/disk/by-id/virtio-iowatch-\$d || exit 1; done
    iowatch device check $host /dev/vda; echo \"exit \$? for /dev/vda\"" > "$run/device-check.txt" 2>&1 ||
    fail "a declared device was refused: see device-check.txt"
sed 's/^/    /' "$run/device-check.txt"
grep -q "^/opt/iowatch/venv/lib/python3.11/site-packages/iowatch/__init__.py" "$run/device-check.txt" ||
    fail "iowatch is not the role's installed copy: see device-check.txt"
grep -q "^exit 1 for /dev/vda" "$run/device-check.txt" || fail "the system disk was not refused: see device-check.txt"
phase_end PASS "4 lab disks allowed, /dev/vda refused"

phase_start "smoke (installed)"
vm_ssh "$installed timeout 2400 iowatch run smoke --target $host --reps 1 --out /var/lib/iowatch/smoke-bundle \
    --no-progress" > "$run/smoke.log" 2>&1 || fail "iowatch run smoke failed: see smoke.log"
sed 's/^/    /' "$run/smoke.log"
passed=$(grep -c "^ *passed " "$run/smoke.log" || true)
failed=$(grep -c "^ *failed " "$run/smoke.log" || true)
[ "$failed" = 0 ] || fail "$failed cells failed: see smoke.log"
[ "$passed" -ge 1 ] || fail "no cell passed: see smoke.log"
phase_end PASS "$passed cells passed, $(grep -c "^ *skipped " "$run/smoke.log" || true) skipped"

phase_start "bundle on the controller"
mkdir -p "$run/bundle"
vm_ssh "tar -C /var/lib/iowatch/smoke-bundle -cf - ." | tar -C "$run/bundle" -xf - || fail "copying the bundle back failed"
.venv/bin/python - "$run/bundle" > "$run/bundle-check.txt" 2>&1 <<'PY' || fail "the bundle does not load: see bundle-check.txt"
import sys
from iowatch import bundle
doc = bundle.load(sys.argv[1])
bundle.to_wire(sys.argv[1])  # every artifact's sha256 against the manifest
print(f"bundle: host {doc['host']['name']}, kernel {doc['kernel']['release']}, "
      f"{len(doc['cells'])} cells: " + ", ".join(f"{c['id']} {c['status']}" for c in doc["cells"]))
PY
.venv/bin/iowatch compare "$run/bundle" "$run/bundle" >> "$run/bundle-check.txt" 2>&1 ||
    fail "iowatch compare of the bundle against itself failed: see bundle-check.txt"
sed 's/^/    /' "$run/bundle-check.txt"
phase_end PASS "$(head -1 "$run/bundle-check.txt" | cut -c1-90)"
