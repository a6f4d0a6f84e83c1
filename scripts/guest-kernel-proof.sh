#!/usr/bin/env bash
# The slow proof of the virtual lab's guest kernel (not in CI): a build of
# Debian's 6.12 from allnoconfig plus kernels/config/*.config, then one boot
# a host, that runs every study on every device class of the virtual lab's
# hosts (jobs/guest-proof.yml: quick profile, one repetition), including md
# RAID0, f2fs and null_blk, which this machine's own kernel does not have; and
# the mail's reproduction steps of the seeds on f2fs and md, on loop devices.
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

# The mail's "reproduce without iowatch" steps of the five seeds, from their kept
# reproductions, run by bash on loop devices inside a guest of this kernel:
# tests/runner/test_replay_of_seeds.py (7 tests). On the host, whose kernel has no
# f2fs and no md, seeds 000, 002 and 004 skip. Its pytest runs read-only from this checkout.
start=$SECONDS
mkdir -p "$out/replay"
"$iowatch" kernel boot --quiet --host vlab --shared "$out/replay" --timeout 5400 "$artifacts" -- \
    env IOWATCH_DATA_DIR=/tmp/iowatch PYTHONDONTWRITEBYTECODE=1 "$py" -m pytest -q -rs -p no:cacheprovider \
    --basetemp=/tmp/replay-pytest "$(pwd)/tests/runner/test_replay_of_seeds.py" \
    > "$out/replay/boot.log" 2>&1 || bad=1
# The guest's pytest writes to its console, among the kernel's lines.
summary=$(grep -aE "^[0-9]+ (passed|failed)|^(FAILED|SKIPPED) " "$out/replay/console.log" || true)
echo "${summary:-no pytest summary on the console}" | sed 's/^/guest-proof: replay steps: /'
grep -aqE "^7 passed in" "$out/replay/console.log" || { echo "guest-proof: replay steps: not all 7 ran and passed"; bad=1; }
echo "guest-proof: replay steps in the guest $((SECONDS - start)) s; console $out/replay/console.log"

# The device models of vlab-mech (iowatch.mechanics) measured from inside a guest:
# each modelled device's fio table, and what must be visible through the guest's
# driver path: the disk's sequential-against-random ratio and seek curve, a card's
# open-unit knee (docs/seeds.md, "Devices with mechanics").
start=$SECONDS
mkdir -p "$out/vlab-mech"
"$iowatch" kernel boot --quiet --host vlab-mech --shared "$out/vlab-mech" --timeout 5400 "$artifacts" -- \
    env IOWATCH_DATA_DIR=/tmp/iowatch "$py" -m iowatch.mechanics.probe --host vlab-mech \
    --inventory "$(pwd)/hardware-inventory.yml" --out "$out/vlab-mech/probe.json" --runtime 3 \
    --devices mhdd,msd,memmc || bad=1
echo "guest-proof: vlab-mech: probe $((SECONDS - start)) s; console $out/vlab-mech/console.log"
"$py" - "$out/vlab-mech/probe.json" <<'PY' || bad=1
import json, statistics, sys
table = json.load(open(sys.argv[1]))
rows = {dev: {r["label"]: r["value"] for r in t["rows"]} for dev, t in table.items()}
bad = 0
def check(what, ok):
    global bad
    bad += not ok
    print(f"guest-proof: vlab-mech: {what}: {'ok' if ok else 'NOT visible'}")
hdd = rows["mhdd"]
ratio = hdd["read 1m QD1"] / (hdd["randread 4k QD1"] * 4096 / 1e6)
check(f"hdd sequential 1 MiB against random 4 KiB reads, {ratio:.0f}x (>= 50x)", ratio >= 50)
near, far = hdd["0.001 of the disk"], hdd["0.900 of the disk"]
check(f"hdd seek curve, {near:.1f} ms near against {far:.1f} ms far (>= 8 ms apart)", far - near >= 8)
for dev, n_open in (("msd", 5), ("memmc", 6)):
    knee = {int(k.split()[0]): v for k, v in rows[dev].items() if "writer" in k}
    inside = statistics.mean(v for n, v in knee.items() if n <= n_open)
    past = statistics.mean(v for n, v in knee.items() if n > n_open)
    check(f"{dev} open-unit knee, {inside:.2f} MB/s up to {n_open} writers against {past:.2f} past it "
          f"(past < 0.8x)", past < 0.8 * inside)
sys.exit(1 if bad else 0)
PY
exit $bad
