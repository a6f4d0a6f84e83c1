#!/usr/bin/env bash
# The slow proof of the virtual lab's guest kernel (not in CI): a build of
# Debian's 6.12 from allnoconfig plus kernels/config/*.config, then one boot
# a host, that runs every study on every device class of the virtual lab's
# hosts (jobs/guest-proof.yml: quick profile, one repetition), including md
# RAID0, f2fs and null_blk, which this machine's own kernel does not have.
# Prints the build, each boot, and each cell's status; exits non-zero when any
# cell did not pass.
#
#   ./scripts/guest-kernel-proof.sh            # output under a new /tmp dir
#   IOWATCH_PROOF_OUT=DIR ./scripts/guest-kernel-proof.sh
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh --kernel
out=${IOWATCH_PROOF_OUT:-$(mktemp -d /tmp/iowatch-guest-proof-XXXXXX)}
mkdir -p "$out"
py=.venv/bin/python
iowatch=$(pwd)/.venv/bin/iowatch

start=$SECONDS
"$iowatch" kernel build --base debian-base --no-progress --json > "$out/build.json"
echo "guest-proof: build $((SECONDS - start)) s"
artifacts=$("$py" -c 'import json, sys; v = json.load(open(sys.argv[1]))[0]; print(v["artifacts"])' "$out/build.json")
grep -c '=y' "$artifacts/config" | sed 's/^/guest-proof: options built in: /'

# Every qemu host of the virtual lab: vlab (SD card, eMMC, SSD, md RAID0,
# rotational disk: QEMU's disks) and vlab-nullblk (the guest's own null_blk SSD).
bad=0
for host in vlab vlab-nullblk; do
    start=$SECONDS
    rc=0
    mkdir -p "$out/$host"
    "$iowatch" kernel boot --quiet --host "$host" --shared "$out/$host" --timeout 5400 "$artifacts" -- \
        env IOWATCH_DATA_DIR=/tmp/iowatch "$iowatch" run "$(pwd)/jobs/guest-proof.yml" --target "$host" \
        --out "$out/$host/bundle" --no-progress || rc=$?
    echo "guest-proof: $host: boot and matrix $((SECONDS - start)) s (guest exit $rc); console $out/$host/console.log"
    "$py" - "$out/$host/bundle" "$host" <<'PY' || bad=1
import sys
from iowatch import bundle
doc = bundle.load(sys.argv[1])
print(f"guest-proof: {sys.argv[2]}: kernel {doc['kernel']['release']}, run {doc['status']}")
classes = {d["name"]: d.get("class", "-") for d in doc.get("devices", [])}
bad = 0
for cell in doc["cells"]:
    ok = cell["status"] == "passed"
    bad += not ok
    print(f"  {cell['study']:<24} {classes.get(cell.get('device'), '-'):<10} {cell.get('device', '-'):<7} "
          f"{cell.get('filesystem', '-'):<6} {cell['status']}")
print(f"guest-proof: {sys.argv[2]}: {len(doc['cells']) - bad} of {len(doc['cells'])} cells passed")
sys.exit(1 if bad else 0)
PY
done
exit $bad
