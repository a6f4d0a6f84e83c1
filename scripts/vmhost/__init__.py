"""The Ansible kernel role on a QEMU machine that boots like a lab host
(scripts/vm-kernel-role.sh): its kernel variants, its disk image and the machine."""
