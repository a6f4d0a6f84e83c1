#!/usr/bin/env bash
# Captures the device-state fixtures of tests/fixtures/devstate/ from real
# tools on QEMU's emulated devices (tests/fixtures/devstate/README.md). Not in
# CI: it boots a TCG guest (several minutes) and the guest apt-gets
# smartmontools and mmc-utils from Debian's mirror.
#   1. boots a throwaway qcow2 overlay of the cached Debian 12 image
#      (scripts/vmhost/image.sh; the image itself is never written) with an
#      NVMe disk, two AHCI SATA disks (one serial, two firmware revisions: the
#      confounder tests' "firmware changed") and an SD card on sdhci-pci;
#   2. apt-get installs smartmontools and mmc-utils in the guest;
#   3. runs `smartctl -j -a` on each disk (and on the virtio system disk,
#      which smartctl cannot read), `mmc extcsd read` on the SD card (an SD
#      card has no EXT_CSD: the refusal is the capture), and copies the SD
#      card's MMC core attributes from sysfs;
#   4. writes them under tests/fixtures/devstate/ (OUT to write elsewhere).
# The machine is killed on any exit. Cache: $IOWATCH_VM_DIR (default ~/.cache/iowatch/vm).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
name=devstate-fixtures
vm_dir=${IOWATCH_VM_DIR:-$HOME/.cache/iowatch/vm}
out=${OUT:-$repo/tests/fixtures/devstate}
run=$(mktemp -d /tmp/iowatch-devstate-XXXX)
last_run=$run.last
qemu_pid=
keep=("*.log")
# shellcheck source=scripts/vmhost/lib.sh
. scripts/vmhost/lib.sh

image=$vm_dir/lab-host-bookworm.img
ssh_key=$vm_dir/ssh/id_ed25519
[ -f "$image.stamp" ] || { log "no $image.stamp: make the image with scripts/vm-provision.sh first"; exit 1; }
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')

phase_start "boot"
qemu-img create -q -f qcow2 -F raw -b "$image" "$run/overlay.qcow2"
for d in nvme sata0 sata1 sd; do qemu-img create -q -f qcow2 "$run/$d.qcow2" 256M; done
nice -n 10 qemu-system-x86_64 -accel tcg -cpu max -m 1536 -smp 2 -display none -no-user-config -nodefaults \
    -serial "file:$run/console.log" \
    -drive file="$run/overlay.qcow2",format=qcow2,if=none,id=system \
    -device virtio-blk-pci,drive=system,bootindex=0 \
    -drive file="$run/nvme.qcow2",format=qcow2,if=none,id=iwnvme \
    -device nvme,serial=IOWATCH-NVME0,drive=iwnvme \
    -device ahci,id=iwahci \
    -drive file="$run/sata0.qcow2",format=qcow2,if=none,id=iwsata0 \
    -device ide-hd,drive=iwsata0,bus=iwahci.0,serial=IOWATCH-SATA0,model=QEMU-SATA-SSD,ver=FW-A,rotation_rate=1 \
    -drive file="$run/sata1.qcow2",format=qcow2,if=none,id=iwsata1 \
    -device ide-hd,drive=iwsata1,bus=iwahci.1,serial=IOWATCH-SATA0,model=QEMU-SATA-SSD,ver=FW-B,rotation_rate=1 \
    -device sdhci-pci \
    -drive file="$run/sd.qcow2",format=qcow2,if=none,id=iwsd \
    -device sd-card,drive=iwsd \
    -nic user,model=virtio-net-pci,hostfwd=tcp:127.0.0.1:"$port"-:22 &
qemu_pid=$!
qemu_t0=$(date +%s)
vm_wait_ssh 1500
phase_end PASS "ssh $(( $(date +%s) - qemu_t0 )) s after qemu started; kernel $(vm_ssh uname -r)"

phase_start "tools in the guest"
vm_ssh 'DEBIAN_FRONTEND=noninteractive apt-get -q update && DEBIAN_FRONTEND=noninteractive apt-get -q install -y smartmontools mmc-utils' \
    > "$run/apt.log" 2>&1 || fail "apt-get failed: see apt.log"
phase_end PASS "$(vm_ssh 'smartctl --version | head -1; dpkg-query -W mmc-utils')"

phase_start "capture"
mkdir -p "$out"
vm_ssh 'lsblk -d -o NAME,MODEL,SERIAL,REV,TRAN,ROTA,SIZE; uname -r; smartctl --version | head -1; dpkg-query -W smartmontools mmc-utils' \
    > "$out/guest.txt"
sata() {  # the /dev/sdX whose serial and firmware revision are given
    vm_ssh "lsblk -d -n -o NAME,SERIAL,REV | awk '\$2 == \"$1\" && \$3 == \"$2\" {print \$1}'"
}
s0=$(sata IOWATCH-SATA0 FW-A); s1=$(sata IOWATCH-SATA0 FW-B)
[ -n "$s0" ] && [ -n "$s1" ] || fail "the AHCI disks are not in the guest: see guest.txt"
# smartctl's exit status is a bit mask (bit 2: a SMART command failed): kept, not fatal.
for pair in "nvme0n1:smartctl-nvme-qemu.json" "$s0:smartctl-sata-qemu-fw-a.json" \
            "$s1:smartctl-sata-qemu-fw-b.json" "vda:smartctl-virtio-qemu.json"; do
    vm_ssh "smartctl -j -a /dev/${pair%%:*}; echo \"exit status \$?\" >&2" \
        > "$out/${pair#*:}" 2>> "$out/exit-status.txt" || true
done
mmc=$(vm_ssh 'ls /sys/block | grep "^mmcblk[0-9]*$" | head -1')
[ -n "$mmc" ] || fail "no mmcblk device in the guest (sdhci-pci + sd-card): see console.log"
rm -rf "$out/sd-qemu-sysfs"
mkdir -p "$out/sd-qemu-sysfs"
vm_ssh "cd /sys/block/$mmc/device && for f in *; do [ -f \"\$f\" ] && [ -r \"\$f\" ] && printf '%s\t' \"\$f\" && cat \"\$f\" 2>/dev/null | head -c 200 | tr '\n' ' ' && echo; done" \
    > "$run/attrs.tsv" || true
while IFS=$'\t' read -r attr value; do
    case "$attr" in uevent|modalias|power|driver*|subsystem) continue;; esac
    printf '%s\n' "${value% }" > "$out/sd-qemu-sysfs/$attr"
done < "$run/attrs.tsv"
vm_ssh "mmc extcsd read /dev/$mmc; echo \"exit status \$?\"" > "$out/mmc-extcsd-sd-qemu.txt" 2>&1 || true
phase_end PASS "nvme0n1, $s0, $s1, vda, $mmc"
