#!/usr/bin/env bash
# The end-to-end check (not in CI: it builds a kernel). Builds Debian's
# linux-source-6.12 with the two-patch series kernels/series/e2e-slow-ext4-dio
# (patch 1 harmless, patch 2 delays ext4 direct writes), boots each variant in
# the virtual lab, runs jobs/e2e.yml, and must name patch 2 and not patch 1.
# Prints the wall time of the whole check and of each phase. Then the lab's
# storage role runs in a guest of the base kernel, md RAID0 included
# (scripts/vlab-lab-ops.sh); both parts must pass.
# A first run builds the kernel from scratch (about 15-25 min on 2 cores);
# later runs are incremental.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh --kernel
out=${IOWATCH_E2E_OUT:-$(mktemp -d /tmp/iowatch-e2e-XXXX)}
start=$(date +%s)
set +e
.venv/bin/iowatch check --series kernels/series/e2e-slow-ext4-dio --base debian-base \
    --matrix jobs/e2e.yml --out "$out" "$@"
rc=$?
set -e
echo "e2e: iowatch check exited $rc after $(( $(date +%s) - start )) s; details in $out/check.json"
set +e
.venv/bin/python - "$out/check.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
print("e2e: phases:", ", ".join(f"{k} {v:.0f} s" for k, v in s["phases_s"].items()))
for v in s["variants"]:
    print(f"e2e: variant {v['index']}: {v['status']}, build {v['build_s']} s"
          f"{' (incremental)' if v['incremental'] else ''}, {v['accel']} boot {v['boot_s']} s, "
          f"matrix {v['matrix_s']} s")
named = s["regressing_patches"]
ok = named == [2]
print(f"e2e: regressing patches {named}: " + ("PASS: patch 2 named, patch 1 not" if ok else "FAIL: expected [2]"))
sys.exit(0 if ok else 1)
PY
check_ok=$?
set -e
./scripts/vlab-lab-ops.sh
[ "$check_ok" -eq 0 ] && echo "e2e: PASS (series check and lab operations in the guest)"
exit "$check_ok"
