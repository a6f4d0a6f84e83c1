#!/usr/bin/env bash
# The bisect's end-to-end check (not in CI: it builds kernels). Bisects the
# six-commit range kernels/series/e2e-bisect on Debian's linux-source-6.12 in
# the virtual lab with jobs/e2e.yml: the ends and about log2(6) commits between
# are built, booted and measured, and the bisect must name commit 4 (the slow
# ext4 direct write). Prints the steps and the wall time of each phase.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh --kernel
out=${IOWATCH_E2E_OUT:-$(mktemp -d /tmp/iowatch-bisect-XXXX)}
start=$(date +%s)
set +e
.venv/bin/iowatch bisect --base debian-base --series kernels/series/e2e-bisect \
    --matrix jobs/e2e.yml --out "$out" "$@"
rc=$?
set -e
echo "e2e-bisect: iowatch bisect exited $rc after $(( $(date +%s) - start )) s; details in $out/bisect.json"
.venv/bin/python - "$out/bisect.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
bad = s["first_bad"]
measured = [st["index"] for st in s["steps"]]
print(f"e2e-bisect: measured variants {measured}; first bad {bad and bad['index']}: "
      f"{bad and bad['subject']}")
ok = bool(bad) and bad["index"] == 4 and len(measured) <= 2 + 3
print("e2e-bisect: " + ("PASS: commit 4 named" if ok else "FAIL: expected commit 4 within 5 measurements"))
sys.exit(0 if ok else 1)
PY
