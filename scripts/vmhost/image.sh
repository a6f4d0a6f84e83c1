#!/usr/bin/env bash
# Make the lab-host disk image: Debian 12 from Debian's packages (mmdebstrap),
# grub-pc on an MBR disk, openssh-server with root's key, python3, Debian's
# linux-image-amd64 as the default kernel, systemd-networkd on DHCP and a serial
# console. Usage: image.sh DISK.img PUBKEY [SIZE]
# No loop device and no mount: the root filesystem is filled with mke2fs -d and
# put into a partitioned image file. grub-install needs the disk as a block
# device, so the image's first boot (QEMU, Debian's kernel given directly) runs
# grub-install and update-grub inside the guest, as an installer would, and
# powers off.
set -euo pipefail
disk=$1 pubkey=$2 size=${3:-6G}
mirror=${IOWATCH_VM_MIRROR:-http://deb.debian.org/debian}
work=$(mktemp -d "${disk}.work-XXXX")
qemu_pid=
cleanup() {
    [ -n "$qemu_pid" ] && kill "$qemu_pid" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT
root=$work/root
uuid=$(cat /proc/sys/kernel/random/uuid)

# The first boot's unit: install grub on the disk the guest sees, then power off.
cat > "$work/firstboot.service" <<'UNIT'
[Unit]
Description=iowatch: install grub on the lab host's disk (first boot only)
ConditionPathExists=!/boot/grub/grub.cfg
After=local-fs.target
[Service]
Type=oneshot
ExecStart=/bin/sh -c 'echo "grub-pc grub-pc/install_devices multiselect /dev/vda" | debconf-set-selections && grub-install /dev/vda && update-grub && systemctl disable iowatch-firstboot.service'
ExecStartPost=/bin/systemctl --no-block poweroff
StandardOutput=journal+console
[Install]
WantedBy=multi-user.target
UNIT

mmdebstrap --variant=important --components=main \
    --include=linux-image-amd64,grub-pc,openssh-server,python3,sudo,initramfs-tools,systemd-sysv,udev,kmod,iproute2 \
    --customize-hook='echo lab-vm > "$1/etc/hostname"' \
    --customize-hook="echo 'UUID=$uuid / ext4 errors=remount-ro 0 1' > \"\$1/etc/fstab\"" \
    --customize-hook='mkdir -p -m 700 "$1/root/.ssh"' \
    --customize-hook="copy-in $pubkey /root/.ssh" \
    --customize-hook="chroot \"\$1\" sh -c 'cat /root/.ssh/$(basename "$pubkey") > /root/.ssh/authorized_keys && chmod 600 /root/.ssh/authorized_keys'" \
    --customize-hook='printf "[Match]\nName=en*\n[Network]\nDHCP=yes\n" > "$1/etc/systemd/network/20-wired.network"' \
    --customize-hook='chroot "$1" systemctl enable systemd-networkd serial-getty@ttyS0' \
    --customize-hook='sed -i -e "s/^GRUB_TIMEOUT=.*/GRUB_TIMEOUT=1/" -e "s/^GRUB_CMDLINE_LINUX_DEFAULT=.*/GRUB_CMDLINE_LINUX_DEFAULT=\"\"/" -e "s/^GRUB_CMDLINE_LINUX=.*/GRUB_CMDLINE_LINUX=\"console=ttyS0,115200\"/" "$1/etc/default/grub"; echo GRUB_TERMINAL=serial >> "$1/etc/default/grub"' \
    --customize-hook="copy-in $work/firstboot.service /etc/systemd/system" \
    --customize-hook='mv "$1/etc/systemd/system/firstboot.service" "$1/etc/systemd/system/iowatch-firstboot.service"; chroot "$1" systemctl enable iowatch-firstboot.service' \
    bookworm "$root" "$mirror"

# The partition starts at 1 MiB (grub's core image goes before it).
part=$work/root.ext4
truncate -s "$size" "$disk.tmp"
printf 'label: dos\nstart=2048, type=83, bootable\n' | sfdisk -q "$disk.tmp"
sectors=$(sfdisk -l -o Sectors "$disk.tmp" | tail -1 | tr -d ' ')
mkfs.ext4 -q -F -U "$uuid" -L lab-root -d "$root" "$part" "$((sectors / 2))k"
dd if="$part" of="$disk.tmp" bs=1M seek=1 conv=notrunc,sparse status=none

vmlinuz=$(ls "$root"/boot/vmlinuz-* | tail -1)
initrd=$(ls "$root"/boot/initrd.img-* | tail -1)
timeout 1200 qemu-system-x86_64 -accel tcg -m 2048 -smp 2 -nographic -no-reboot \
    -drive file="$disk.tmp",format=raw,if=virtio \
    -kernel "$vmlinuz" -initrd "$initrd" -append "root=UUID=$uuid ro console=ttyS0,115200" \
    -nic user,model=virtio-net-pci > "$disk.firstboot.log" 2>&1 &
qemu_pid=$!
wait "$qemu_pid" || { echo "image: first boot failed, see $disk.firstboot.log" >&2; exit 1; }
qemu_pid=
grep -q "Installation finished. No error reported" "$disk.firstboot.log" ||
    { echo "image: grub-install did not finish, see $disk.firstboot.log" >&2; exit 1; }
mv "$disk.tmp" "$disk"
