# The files a LAVA job of the lava-qemu board class fetches (hardware-inventory.yml,
# lava_local), sourced by scripts/lava-run-trial.sh and scripts/lava-lab.sh with
# $repo, $work, $serve and $measure set and phase() defined: the newest kernel
# iowatch built (or $IOWATCH_LAVA_KERNEL) under $serve/kernels/<commit>/, blank
# disk images, and a busybox root filesystem (no Python: iowatch is not on it;
# with --measure an `iowatch` that runs this machine's over 9p, as
# scripts/lava/busybox-iowatch says). Sets $kernel and $commit.
kernel=${IOWATCH_LAVA_KERNEL:-$(ls -t ~/.local/share/iowatch/kernel/artifacts/*/*/bzImage 2>/dev/null | head -1)}
[ -f "$kernel" ] || { echo "lava: no built kernel (iowatch kernel build, or set IOWATCH_LAVA_KERNEL)" >&2; exit 2; }
commit=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['commit'])" "$(dirname "$kernel")/meta.json")
phase "1. serving kernel $commit, blank disks, a busybox root"
mkdir -p "$serve/kernels/$commit" && cp "$kernel" "$serve/kernels/$commit/bzImage"
for size in 2147483648 1073741824; do
    [ -f "$serve/disks/blank-$size.img.xz" ] || { truncate -s "$size" "$work/blank-$size.img"; xz -0 -T1 "$work/blank-$size.img"; mv "$work/blank-$size.img.xz" "$serve/disks/"; }
done
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

