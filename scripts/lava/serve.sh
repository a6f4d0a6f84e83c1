# The kernel and disks a LAVA job of the lava-qemu board class fetches
# (hardware-inventory.yml, lava_local), sourced by scripts/lava-run-trial.sh and
# scripts/lava-lab.sh with $work and $serve set and phase() defined: the newest
# kernel iowatch built (or $IOWATCH_LAVA_KERNEL) under $serve/kernels/<commit>/
# and blank disk images. Sets $kernel and $commit. The root filesystem is each
# script's own (a busybox trial root; Debian with iowatch, scripts/lava/rootfs.sh).
kernel=${IOWATCH_LAVA_KERNEL:-$(ls -t ~/.local/share/iowatch/kernel/artifacts/*/*/bzImage 2>/dev/null | head -1)}
[ -f "$kernel" ] || { echo "lava: no built kernel (iowatch kernel build, or set IOWATCH_LAVA_KERNEL)" >&2; exit 2; }
commit=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['commit'])" "$(dirname "$kernel")/meta.json")
phase "serving kernel $commit and blank disks"
mkdir -p "$serve/kernels/$commit" && cp "$kernel" "$serve/kernels/$commit/bzImage"
for size in 2147483648 1073741824; do
    [ -f "$serve/disks/blank-$size.img.xz" ] || { truncate -s "$size" "$work/blank-$size.img"; xz -0 -T1 "$work/blank-$size.img"; mv "$work/blank-$size.img.xz" "$serve/disks/"; }
done
