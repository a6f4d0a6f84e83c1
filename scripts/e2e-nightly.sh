#!/usr/bin/env bash
# The nightly's end-to-end check (not in CI: it builds and boots kernels).
#
# A local `iowatch serve` (SQLite in a scratch data dir, or the scratch
# PostgreSQL database IOWATCH_E2E_DATABASE_URL names), and a branch
# iowatch-e2e-nightly in Debian's linux-source-6.12 git tree:
#   night 1: the branch is debian-base; `iowatch nightly --boots 4` builds it,
#            boots it four times in the virtual lab with jobs/e2e.yml and
#            uploads each boot: no regression, and the record of the noise
#            between boots;
#   night 2: the branch gains 8 commits: the six of kernels/series/e2e-bisect
#            (comments, and commit 4 of them: a 10 ms sleep before each ext4
#            direct write) with, after the third, one that does not build
#            (#error in fs/ext4/super.c) and one that puts the file back;
#            `iowatch nightly --boots 1` must exit 1: the server opened a nightly
#            regression and queued its bisect;
#   bisect:  `iowatch bisect --next` claims the job and must name the slow
#            commit (the 6th of 8) in at most ceil(log2 8) + 1 = 4 measured
#            commits between the ends, the unbuilt one skipped, not blamed;
#            Its step runs open no regression of their own, and the regression
#            ends "bisected";
#   report:  `iowatch report ID --format email` prints the mail.
# Prints each phase's wall time. The branch is deleted at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh --kernel
IOW=$PWD/.venv/bin/iowatch
PY=$PWD/.venv/bin/python
work=${IOWATCH_E2E_OUT:-$(mktemp -d /tmp/iowatch-nightly-XXXX)}
mkdir -p "$work"
BR=iowatch-e2e-nightly
t0=$(date +%s)
t_phase=$t0
phase() {
    local now
    now=$(date +%s)
    echo "e2e-nightly: phase $1: $(( now - t_phase )) s"
    t_phase=$now
}

# --- the server -------------------------------------------------------------------
if [ -n "${IOWATCH_E2E_DATABASE_URL:-}" ]; then
    server_env=(env -u DJANGO_SETTINGS_MODULE DATABASE_URL="$IOWATCH_E2E_DATABASE_URL")
else
    server_env=(env -u DJANGO_SETTINGS_MODULE -u DATABASE_URL)
fi
server_env+=(IOWATCH_DATA_DIR="$work/server")
"${server_env[@]}" "$IOW" manage migrate --noinput -v 0
token=$("${server_env[@]}" "$IOW" manage create_agent e2e-nightly --host e2e-agent | tail -1 | awk '{print $NF}')
port=$($PY -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
url=http://127.0.0.1:$port
setsid "${server_env[@]}" "$IOW" serve --port "$port" >"$work/serve.log" 2>&1 &
serve_pid=$!
SRC=$($PY -c 'from iowatch.kernel.source import debian_source; print(debian_source())')
cleanup() {
    kill -TERM -- "-$serve_pid" 2>/dev/null || true
    git -C "$SRC" branch -D "$BR" >/dev/null 2>&1 || true
}
trap cleanup EXIT
for _ in $(seq 120); do
    curl -fsS "$url/api/v1/health" >/dev/null 2>&1 && break
    sleep 1
done
curl -fsS "$url/api/v1/health" >/dev/null
echo "e2e-nightly: server $url (log $work/serve.log), work in $work, tree $SRC"
phase "server"

# --- night 1: the base -----------------------------------------------------------------
git -C "$SRC" branch -f "$BR" debian-base
# Night 1 boots the base four times: the virtual lab's record of its noise
# between boots (the 3 degrees of freedom iowatch.judging.boots needs); night
# 2 boots the branch once and is judged with it. Two boots a night against two
# leave the slow commit "undecided": a test on two boot means a side.
nightly() {  # nightly NIGHT OUT BOOTS
    set +e
    "$IOW" nightly --branch "$BR" --source "$SRC" --target vlab --matrix jobs/e2e.yml \
        --server "$url" --token "$token" --night "$1" --out "$2" --boots "$3" --wait 600
    rc=$?
    set -e
}
nightly 2026-01-01 "$work/night1" 4
echo "e2e-nightly: night 1 exited $rc (want 0)"
[ "$rc" -eq 0 ] || { echo "e2e-nightly: FAIL: night 1"; exit 1; }
phase "night 1"

# --- night 2: 8 commits on the branch, made with plumbing (no checkout of the tree) ----
export GIT_INDEX_FILE=$work/index
head=$(git -C "$SRC" rev-parse "$BR")
git -C "$SRC" read-tree "$head"
commit_index() {  # commit_index SUBJECT: the index as a commit on $head
    head=$(printf '%s\n' "$1" | GIT_AUTHOR_NAME="iowatch e2e" GIT_AUTHOR_EMAIL=iowatch@localhost \
        git -C "$SRC" commit-tree "$(git -C "$SRC" write-tree)" -p "$head")
}
super=fs/ext4/super.c
super_blob=$(git -C "$SRC" rev-parse "$head:$super")
n=0
while read -r patch; do
    n=$((n + 1))
    git -C "$SRC" apply --cached "$PWD/kernels/series/e2e-bisect/$patch"
    subject=$(sed -n 's/^Subject: \[PATCH [0-9/]*\] //p' "kernels/series/e2e-bisect/$patch")
    commit_index "$subject"
    if [ "$n" -eq 3 ]; then
        broken=$( (git -C "$SRC" cat-file blob "$super_blob"; printf '\n#error "iowatch e2e: this commit does not build"\n') \
            | git -C "$SRC" hash-object -w --stdin)
        git -C "$SRC" update-index --cacheinfo "100644,$broken,$super"
        commit_index "ext4: a commit that does not build (e2e-nightly)"
        git -C "$SRC" update-index --cacheinfo "100644,$super_blob,$super"
        commit_index "ext4: build again (e2e-nightly)"
    fi
done < kernels/series/e2e-bisect/series
unset GIT_INDEX_FILE
git -C "$SRC" branch -f "$BR" "$head"
git -C "$SRC" log --oneline "debian-base..$BR"
slow=$(git -C "$SRC" log --format=%H --grep='^ext4: yield to buffered readers' "debian-base..$BR")
nightly 2026-01-02 "$work/night2" 1
echo "e2e-nightly: night 2 exited $rc (want 1)"
regression=$(curl -fsS "$url/api/v1/regressions?limit=100" | $PY -c '
import json, sys
print(next((r["id"] for r in json.load(sys.stdin)["items"] if r["kind"] == "nightly"), ""))')
[ "$rc" -eq 1 ] && [ -n "$regression" ] || { echo "e2e-nightly: FAIL: night 2 found no nightly regression"; exit 1; }
phase "night 2"

# --- the bisect agent ----------------------------------------------------------------------
set +e
"$IOW" bisect --next --host e2e-agent --server "$url" --token "$token" --out "$work/bisect"
brc=$?
set -e
echo "e2e-nightly: bisect exited $brc (want 0)"
phase "bisect"

# --- the mail --------------------------------------------------------------------------------
"$IOW" report "$regression" --format email --server "$url" | tee "$work/report.eml"
phase "report"

$PY - "$url" "$regression" "$slow" <<'PY'
import json, math, sys, urllib.request
url, regression, slow = sys.argv[1], sys.argv[2], sys.argv[3]
detail = json.load(urllib.request.urlopen(f"{url}/api/v1/regressions/{regression}"))
job = detail["bisect"]
steps = job["steps"]
between = [s for s in steps[2:] if s["outcome"] != "skipped"]
skipped = [s["commit"][:12] for s in steps if s["outcome"] == "skipped"]
first = (job["result"] or {}).get("first_bad") or {}
print(f"e2e-nightly: bisect #{job['id']} {job['state']}; steps: "
      + ", ".join(f"{s['commit'][:12]} {s['outcome']}" for s in steps))
print(f"e2e-nightly: first bad {first.get('commit', '')[:12]} {first.get('subject')}; skipped {skipped}")
# The bisect's step runs are its evidence (trigger kind bisect): they open no
# regression of their own, and the regression it bisected now says "bisected".
others = [r["id"] for r in json.load(urllib.request.urlopen(f"{url}/api/v1/regressions?limit=100"))["items"]
          if r["id"] != int(regression)]
print(f"e2e-nightly: regression {regression} is {detail['state']}; other regressions: {others or 'none'}")
ok = (job["state"] == "done" and first.get("commit") == slow
      and len(between) <= math.ceil(math.log2(8)) + 1 and first.get("commit") not in skipped
      and detail["state"] == "bisected" and not others)
print("e2e-nightly: " + ("PASS: the slow commit named" if ok else
                         f"FAIL: expected {slow[:12]} within 4 measured commits"))
sys.exit(0 if ok else 1)
PY
echo "e2e-nightly: total $(( $(date +%s) - t0 )) s"
