#!/usr/bin/env bash
# LAVA's dispatcher alone on a job iowatch makes (issue 45; docs/lab.md §12,
# "What was tried here"): `lava-run` of the definition `iowatch lava submit
# lava-qemu --dry-run` prints, on LAVA's qemu device type with the board
# class's disks (ssd virtio-blk, hdd scsi-hd, SD card on sdhci-pci), without
# lava-server (its postinst reconfigures PostgreSQL; see §12):
#   1. the files the lab serves (hardware-inventory.yml, lava_local): a built
#      kernel under /var/lib/iowatch/lava/kernels/<commit>/, blank disk images,
#      and a busybox root filesystem (no Python: iowatch is not on it);
#   2. the definition, checked with LAVA's schema by iowatch, then by lava-run
#      --validate;
#   3. the job: deploy, boot under TCG, LAVA's test overlay, iowatch's test.
# With the busybox root `iowatch run` is not found: the job is Complete with
# the iowatch-run case failed, measurement 127. The one edit to the definition
# is `os: oe` (LAVA runs its test shell with /bin/bash for os: debian, which a
# busybox root has not). Needs root, lava-dispatcher, python3-guestfs and a
# kernel iowatch built (IOWATCH_LAVA_KERNEL, default: the newest under
# ~/.local/share/iowatch/kernel/artifacts). Not in CI.
# With --measure the board runs one cell for real (ext4-dio-randread on the
# board's ssd): the busybox root gets an `iowatch` that runs this machine's
# iowatch, fio and mkfs over 9p in a chroot (scripts/lava/busybox-iowatch; the
# job's context adds the 9p share), and the bundle the board prints on its
# console is taken back from LAVA's log by iowatch.lava.follow.bundle_from.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
work=${IOWATCH_LAVA_TRIAL_DIR:-/tmp/iowatch-lava-trial}
measure=${1:-}
serve=/var/lib/iowatch/lava
mkdir -p "$work" "$serve/disks"
t0=$(date +%s)
phase() { printf '%s  +%4ss  %s\n' "$(date -u +%H:%M:%S)" "$(( $(date +%s) - t0 ))" "$*"; }

phase "1. serving kernel, blank disks, a busybox root"
. scripts/lava/serve.sh
root=$work/rootfs
rm -rf "$root" && mkdir -p "$root"/{bin,sbin,etc/init.d,proc,sys,dev,tmp,root,var/tmp}
cp /bin/busybox "$root/bin/"
for applet in $(/bin/busybox --list); do [ -e "$root/bin/$applet" ] || ln -s busybox "$root/bin/$applet"; done
ln -s ../bin/busybox "$root/sbin/init"; ln -s ../bin/busybox "$root/sbin/getty"
printf '::sysinit:/etc/init.d/rcS\nttyS0::respawn:/sbin/getty -L 115200 ttyS0 vt100\n' > "$root/etc/inittab"
install -m 755 scripts/lava/busybox-rcS "$root/etc/init.d/rcS"
printf 'root::0:0:root:/root:/bin/sh\n' > "$root/etc/passwd"; printf 'root:x:0:\n' > "$root/etc/group"
printf "export PS1='root@board:\\\\w# '\n" | tee "$root/etc/profile" > "$root/root/.profile"
if [ "$measure" = --measure ]; then
    mkdir -p "$root/usr/local/bin"
    sed -e "s|@VENV@|$(readlink -f .venv)|g" -e "s|@SRC@|$repo/src|g" scripts/lava/busybox-iowatch > "$root/bin/iowatch"
    chmod 755 "$root/bin/iowatch"
fi
rm -f "$work/rootfs.ext4" "$work/rootfs.ext4.xz"
truncate -s 64M "$work/rootfs.ext4" && mkfs.ext4 -q -d "$root" "$work/rootfs.ext4" && xz -0 -T1 "$work/rootfs.ext4"
cp "$work/rootfs.ext4.xz" "$serve/rootfs.ext4.xz"


phase "2. the definition (LAVA's schema, then lava-run --validate)"
.venv/bin/iowatch lava submit lava-qemu jobs/smoke.yml --commit "$commit" --label trial --reps 1 \
    --inventory "$repo/hardware-inventory.yml" --dry-run \
    ${measure:+--cells ext4-dio-randread/lssd/ext4} | sed 's/^    os: debian$/    os: oe/' > "$work/job.yaml"
device=scripts/lava/qemu-01.yaml
if [ "$measure" = --measure ]; then
    # The 9p share of this machine's root, read-only. A job's context reaches the
    # device configuration when lava-server renders it; lava-run alone takes it
    # from the device configuration, so it goes there.
    device=$work/qemu-01-9p.yaml
    sed 's|^          - -monitor none$|&\n          extra:\n          - -virtfs local,path=/,mount_tag=hostroot,security_model=none,readonly=on|' \
        scripts/lava/qemu-01.yaml > "$device"
fi
lava-run --job-id 1 --output-dir "$work/out-validate" --device "$device" --validate "$work/job.yaml" \
    > "$work/validate.log" 2>&1 || { tail -5 "$work/validate.log"; exit 1; }

phase "3. lava-run (TCG; libguestfs builds LAVA's test overlay with the same kernel)"
modules=$work/no-modules/lib/modules/iowatch
mkdir -p "$modules" && touch "$modules"/modules.{dep,order,builtin}
LIBGUESTFS_BACKEND=direct LIBGUESTFS_BACKEND_SETTINGS=force_tcg SUPERMIN_KERNEL=$kernel \
SUPERMIN_MODULES=$modules SUPERMIN_KERNEL_VERSION=iowatch \
    timeout 1200 lava-run --job-id 2 --output-dir "$work/out-run" --device "$device" "$work/job.yaml" \
    > "$work/run.log" 2>&1 || true
grep -E '"lvl": "info", "msg": "(start|end): [0-9]' "$work/run.log" | sed -E 's/.*"msg": "([^"]*)".*/   \1/'
grep -E '"lvl": "results"' "$work/run.log" | grep -E '"case": "(iowatch-run|job)"' | sed -E 's/^.*"msg": /   /'
if [ "$measure" = --measure ]; then
    phase "4. the bundle back from LAVA's log"
    PYTHONPATH=$repo/src .venv/bin/python - "$work/run.log" "$work/bundle" <<'PY'
import sys
from pathlib import Path
from iowatch import bundle
from iowatch.lava.follow import bundle_from, run_id_from
import yaml
logs = [yaml.safe_load(line) for line in open(sys.argv[1]) if line.startswith("{")]
out = bundle_from(logs, Path(sys.argv[2]))
doc = bundle.load(out) if out else None
print(f"   run {run_id_from(logs)}: bundle {out}, status {doc and doc['status']}, host {doc and doc['host']['name']}")
PY
fi
phase "done: $work/run.log"
