#!/usr/bin/env bash
# Set up a fresh machine for iowatch: system packages (when root and missing),
# then the Python environment in .venv with the package installed editable.
# Safe to run again: it only installs what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

# The lab tools and the store. fio/fs_mark and the mkfs tools run the studies;
# postgresql is the server's store in production and in the test suite.
SYSTEM_PACKAGES=(fio fsmark xfsprogs e2fsprogs btrfs-progs f2fs-tools util-linux fdisk mdadm
                 postgresql python3-venv procps
                 docker-compose   # the client only: tests/lab_ops validates docker-compose.yml
                 nodejs           # the dashboard's Chart.js comes from npm (package-lock.json)
                 chromium         # the dashboard's browser tests (Playwright drives it; no download)
                 # LKP-tests (--harness lkp, tests/lkp): its Ruby libraries, GNU time and helpers
                 # (README, "Running through LKP-tests"); gcc and make build its wakeup helper.
                 ruby ruby-activesupport ruby-colorize ruby-term-ansicolor ruby-git ruby-tty-command
                 ruby-gnuplot bc time rsync numactl sysstat gcc make libc6-dev
                 # the kernel series of the seeds (tests/kernel/test_seed_series.py) are
                 # checked with git apply against Debian's 6.12 source in CI too
                 linux-source-6.12
                 # the guest kernel's configuration step (tests/kernel/test_guest_config.py):
                 # kconfig's parser is built with flex and bison
                 flex bison
                 # the virtual lab's device models (iowatch.mechanics; tests/mechanics serve
                 # them to fio on the host): nbdkit runs the model as a Python plugin
                 nbdkit nbdkit-plugin-python
                 # LAVA's job schema (iowatch.lava.definition.validate, tests/lava): lava_common
                 # is not on PyPI; Debian ships it with the voluptuous it was released with.
                 # Not lava-server: its postinst reconfigures PostgreSQL.
                 lava-common python3-voluptuous)

# With --kernel: what building kernels and the virtual lab need (not in CI).
KERNEL_PACKAGES=(linux-source-6.12 qemu-system-x86 ccache bc bison flex libelf-dev libssl-dev
                 build-essential cpio kmod busybox-static git)
# With --vm: also what scripts/vm-kernel-role.sh and scripts/vm-provision.sh need to make and
# boot a lab-host disk image.
VM_PACKAGES=(mmdebstrap qemu-utils openssh-client)
extras="dev"
if [ "${1:-}" = "--kernel" ] || [ "${1:-}" = "--vm" ]; then
    SYSTEM_PACKAGES+=("${KERNEL_PACKAGES[@]}")
    extras="dev,vlab"
fi
if [ "${1:-}" = "--vm" ]; then
    SYSTEM_PACKAGES+=("${VM_PACKAGES[@]}")
fi

missing=()
for p in "${SYSTEM_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# Debian's nodejs comes without npm; NodeSource's includes it (and conflicts with Debian's npm).
command -v npm >/dev/null || missing+=(npm)
if ((${#missing[@]})); then
    if [ "$(id -u)" -ne 0 ]; then
        echo "setup: missing system packages: ${missing[*]}" >&2
        echo "setup: run as root, or: sudo apt-get install ${missing[*]}" >&2
        exit 1
    fi
    echo "setup: installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q
    apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
    "$PY" -m venv .venv
fi
# The venv sees Debian's lava_common and voluptuous and nothing else of the system's
# Python packages: one link each in its site-packages.
site=$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
for module in lava_common voluptuous; do
    [ -e "$site/$module" ] || ln -s "/usr/lib/python3/dist-packages/$module" "$site/$module"
done
stamp=.venv/.iowatch-installed-${extras//,/-}
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
    .venv/bin/pip install -q --upgrade pip
    .venv/bin/pip install -q -e ".[$extras]"
    touch "$stamp"
fi
# The dashboard's browser libraries: pinned in package-lock.json, installed
# into node_modules and copied into the app's static files (not committed).
vendor=webapp/iowatch_web/dashboard/static/dashboard/vendor
if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
    npm ci --no-audit --no-fund --loglevel=error
fi
mkdir -p "$vendor"
for f in node_modules/chart.js/dist/chart.umd.js; do
    [ "$vendor/$(basename "$f")" -nt "$f" ] || cp "$f" "$vendor/"
done

echo "setup: ready: $(.venv/bin/iowatch --version)"
