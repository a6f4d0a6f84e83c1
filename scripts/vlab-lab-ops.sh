#!/usr/bin/env bash
# The storage role with md RAID0, in a virtual-lab guest (not in CI: it needs a
# built kernel; this CI's host kernel has no md driver). Builds the base kernel
# (incremental after ./scripts/e2e-check.sh), boots it with the `vlab` host's
# emulated disks and runs tests/lab_ops/test_storage_role.py inside: the role on
# loop devices with md RAID0, and on the guest's SD card, SSD, RAID0 pair of
# virtio disks and rotational disk; each applied twice (the second changes
# nothing) and torn down. Every test must run: a skip fails this check.
# Usage: scripts/vlab-lab-ops.sh [KERNEL]   (a bzImage or an artifacts directory)
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
./scripts/setup.sh --kernel
kernel=${1:-}
if [ -z "$kernel" ]; then
    kernel=$(.venv/bin/iowatch kernel build --base debian-base --json \
        | .venv/bin/python -c 'import json, sys; print(json.load(sys.stdin)[0]["artifacts"])')
fi
shared=$(mktemp -d /tmp/iowatch-lab-ops-XXXX)
start=$(date +%s)
set +e
# Under TCG the five tests take 45-50 min on an idle machine and ran past the
# boot's default hour beside a niced bench (stop 65): two hours before the guest is stopped.
.venv/bin/iowatch kernel boot --quiet --timeout 7200 --shared "$shared" "$kernel" -- sh -c \
    "cd '$repo' && PYTHONDONTWRITEBYTECODE=1 .venv/bin/pytest -q -p no:django -p no:cacheprovider -rs \
     --junitxml='$shared/lab-ops.xml' tests/lab_ops/test_storage_role.py"
rc=$?
set -e
echo "lab-ops: the guest's pytest exited $rc after $(( $(date +%s) - start )) s; console: $shared/console.log"
.venv/bin/python - "$shared/lab-ops.xml" "$shared/console.log" <<'PY'
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

report = Path(sys.argv[1])
if not report.is_file():
    print(f"lab-ops: FAIL: no test report from the guest; see {sys.argv[2]}")
    sys.exit(1)
suite = ET.parse(report).getroot()
suite = suite if suite.tag == "testsuite" else suite.find("testsuite")
for case in suite.iter("testcase"):
    outcome = next((c.tag for c in case if c.tag in ("failure", "error", "skipped")), "passed")
    print(f"lab-ops: {case.get('name')}: {outcome} in {float(case.get('time', 0)):.0f} s")
counts = {k: int(suite.get(k, 0)) for k in ("tests", "failures", "errors", "skipped")}
ok = counts["tests"] > 0 and counts["failures"] == counts["errors"] == counts["skipped"] == 0
print(f"lab-ops: {counts}: " + ("PASS" if ok else "FAIL: every test must run and pass in the guest"))
sys.exit(0 if ok else 1)
PY
