#!/usr/bin/env bash
# The root filesystem a LAVA board of the lava-qemu class boots (issue 45 item
# 2): Debian 12 (debootstrap, minbase) with iowatch's runner and what it runs,
# fio, fs_mark and the mkfs tools, so the job's `iowatch run` is the board's
# own (no share of this machine's, as the busybox trial root needed).
#
#   scripts/lava/rootfs.sh OUT.ext4.xz      # as root; about 5 minutes here
#
# iowatch is this checkout's src/ under /opt/iowatch, its runner's libraries
# (pyproject.toml's dependencies) wheels under /opt/iowatch/lib; a .pth file
# puts both on Debian's python3 path. Init is busybox's, as on
# the trial board: the guest kernel iowatch builds (allnoconfig and the
# fragments) has no cgroups for systemd, and the root needs only a serial
# login and /dev/disk/by-uuid links for LAVA's test overlay
# (scripts/lava/busybox-rcS). Root logs in without a password on ttyS0, as
# LAVA's auto_login expects; the prompt is Debian's (root@board:~#).
set -euo pipefail
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
cd "$(dirname "$0")/../.."
repo=$PWD
out=${1:?usage: scripts/lava/rootfs.sh OUT.ext4.xz}
mirror=${IOWATCH_DEBIAN_MIRROR:-http://deb.debian.org/debian}
work=$(mktemp -d /var/tmp/iowatch-rootfs.XXXXXX)
trap 'umount -R "$work/root/proc" 2>/dev/null || true; rm -rf "$work"' EXIT
root=$work/root

packages=busybox,login,passwd,bash,procps,util-linux,kmod,python3
packages+=,fio,fsmark,e2fsprogs,xfsprogs,f2fs-tools,mdadm,xz-utils,gzip,tar,coreutils
debootstrap --variant=minbase --include="$packages" bookworm "$root" "$mirror" >"$work/debootstrap.log" 2>&1 \
    || { tail -20 "$work/debootstrap.log"; echo "rootfs: debootstrap failed" >&2; exit 1; }

mkdir -p "$root/opt/iowatch" "$root/etc/init.d"
cp -a "$repo/src" "$root/opt/iowatch/"
find "$root/opt/iowatch" -name __pycache__ -prune -exec rm -rf {} +
# The runner's libraries at the versions pyproject.toml asks for (Debian 12's
# numpy, scipy, jsonschema and fastjsonschema are older): wheels for the
# board's Python 3.11, fetched by this machine's pip into /opt/iowatch/lib.
deps=$(python3 -c "import tomllib; print(' '.join(tomllib.load(open('pyproject.toml', 'rb'))['project']['dependencies']))")
# shellcheck disable=SC2086  # one argument a requirement
"$repo/.venv/bin/pip" install -q --no-warn-conflicts --target "$root/opt/iowatch/lib" --python-version 3.11 \
    --implementation cp --only-binary=:all: --platform manylinux2014_x86_64 \
    --platform manylinux_2_17_x86_64 --platform manylinux_2_28_x86_64 $deps
printf '/opt/iowatch/src\n/opt/iowatch/lib\n' > "$root/usr/lib/python3/dist-packages/iowatch.pth"
cat > "$root/usr/local/bin/iowatch" <<'EOF'
#!/bin/sh
exec python3 -c 'import sys; from iowatch.cli import main; sys.argv[0] = "iowatch"; sys.exit(main())' "$@"
EOF
chmod 755 "$root/usr/local/bin/iowatch"

ln -sf /bin/busybox "$root/sbin/init"
printf '::sysinit:/etc/init.d/rcS\nttyS0::respawn:/bin/busybox getty -L 115200 ttyS0 vt100\n' > "$root/etc/inittab"
install -m 755 scripts/lava/busybox-rcS "$root/etc/init.d/rcS"
chroot "$root" passwd -d root >/dev/null
echo board > "$root/etc/hostname"
printf '127.0.0.1 localhost board\n' > "$root/etc/hosts"
rm -rf "$root/var/cache/apt/archives"/*.deb "$root/var/lib/apt/lists"/*

size=$(( $(du -sm "$root" | cut -f1) + 256 ))
truncate -s "${size}M" "$work/rootfs.ext4"
mkfs.ext4 -q -d "$root" "$work/rootfs.ext4"
xz -0 -T2 "$work/rootfs.ext4"
mv "$work/rootfs.ext4.xz" "$out"
echo "rootfs: $out ($(du -h "$out" | cut -f1), ${size} MiB unpacked)"
