# Shell helpers of the lab-host VM scripts (scripts/vm-*.sh), sourced after
# they set `name` (the script's name; log_tag, if set, names it in phase lines),
# `repo`, vm_dir (the cache), run (the run's temporary directory), last_run
# (where the run's logs are kept), keep (globs under $run copied there) and
# qemu_pid:
#   log, phase_start, phase_end STATUS [NOTE], fail NOTE: timestamped phase
#     lines, collected for the PASS/FAIL table print_summary prints;
#   vm_image: the cached Debian 12 disk image (scripts/vmhost/image.sh), made
#     once, and its ssh key; sets image, ssh_key;
#   vm_port: a free local port for the guest's sshd;
#   vm_wheels DIR: iowatch's wheel from this checkout in DIR/dist and a
#     wheelhouse of its dependencies in DIR/wheelhouse (the hosts' Python is
#     Debian 12's 3.11 on x86_64, as this machine's); sets wheel;
#   vm_ssh ARGS: ssh as root into the guest on $port;
#   vm_wait_ssh TIMEOUT: wait until the guest started at qemu_t0 answers on ssh;
#   lab_range: the lab loop's range (scripts/vm-lab.sh, scripts/lava/nightly.sh),
#     kernels/series/e2e-bisect on debian-base as $branch of the kept kernel
#     tree; sets tree, good, bad, first_bad_subject;
#   lab_server AGENT HOST: `iowatch serve` on $web_port with its own SQLite in
#     $server_data and an agent token for HOST; sets url, token, server_pid;
#   teardown (the EXIT trap): qemu killed, the kept files copied to $last_run,
#     $run removed, the table printed, the script's exit status kept.
t_start=$(date +%s)
declare -a summary=()
phase_name=

log() { echo "[$(date -u +%H:%M:%S)] ${log_tag:-$name}: $*"; }
phase_start() { phase_name=$1; phase_t0=$(date +%s); log "phase: $1"; }
phase_end() {  # STATUS [NOTE]
    local s=$(( $(date +%s) - phase_t0 ))
    summary+=("$(printf '%-28s %-5s %6s s  %s' "$phase_name" "$1" "$s" "${2:-}")")
    log "phase: $phase_name: $1 after $s s${2:+ ($2)}"
    phase_name=
}
fail() { phase_end FAIL "$*"; exit 1; }

print_summary() {  # RC
    echo
    echo "$name: summary (total $(( $(date +%s) - t_start )) s; logs in $last_run)"
    printf '%-28s %-5s %8s  %s\n' PHASE STATE TIME NOTE
    printf '%s\n' "${summary[@]}"
    if [ "$1" -eq 0 ]; then echo "$name: PASS"; else echo "$name: FAIL"; fi
}

vm_image() {
    ssh_key=$vm_dir/ssh/id_ed25519
    image=$vm_dir/lab-host-bookworm.img
    local stamp
    stamp=$(sha256sum "$repo/scripts/vmhost/image.sh" | cut -c1-16)
    if [ ! -f "$ssh_key" ]; then
        mkdir -p "$(dirname "$ssh_key")"
        ssh-keygen -q -t ed25519 -N '' -C iowatch-vm -f "$ssh_key"
    fi
    if [ -f "$image" ] && [ "$(cat "$image.stamp" 2>/dev/null)" = "$stamp" ]; then
        image_note="reused $image"
    else
        rm -f "$image" "$image.stamp"
        "$repo/scripts/vmhost/image.sh" "$image" "$ssh_key.pub" > "$run/image.log" 2>&1 ||
            fail "image.sh failed: see $run/image.log and $image.firstboot.log"
        echo "$stamp" > "$image.stamp"
        image_note="made $image"
    fi
}

vm_wheels() {
    mkdir -p "$1/dist" "$1/wheelhouse"
    "$repo/.venv/bin/pip" wheel -q --no-deps -w "$1/dist" "$repo" > "$run/wheels.log" 2>&1 ||
        fail "pip wheel failed: see wheels.log"
    wheel=$(ls "$1"/dist/iowatch-*.whl)
    "$repo/.venv/bin/pip" download -q --only-binary=:all: -d "$1/wheelhouse" "$wheel" >> "$run/wheels.log" 2>&1 ||
        fail "pip download of iowatch's dependencies failed: see wheels.log"
    rm "$1/wheelhouse/$(basename "$wheel")"
}

vm_port() {
    "$repo/.venv/bin/python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

vm_ssh() {
    ssh -q -i "$ssh_key" -p "$port" -o BatchMode=yes -o ConnectTimeout=10 \
        -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null root@127.0.0.1 "$@"
}

vm_wait_ssh() {  # TIMEOUT_S
    # A TCG boot of Debian takes 1-2 min on an idle machine, 8 on a loaded one.
    while ! vm_ssh true 2>/dev/null; do
        kill -0 "$qemu_pid" 2>/dev/null || fail "qemu exited: see console.log"
        [ $(( $(date +%s) - qemu_t0 )) -lt "$1" ] || fail "no ssh on port $port $1 s after qemu started"
        sleep 5
    done
}

lab_range() {
    phase_start "the range"
    tree=$("$repo/.venv/bin/python" -c 'from iowatch.kernel.source import open_source; print(open_source(None))')
    if ! git -C "$tree" rev-parse -q --verify "refs/heads/$branch" >/dev/null; then
        local wt=$run/range-tree
        git -C "$tree" worktree add -q --detach "$wt" debian-base
        git -C "$wt" -c user.name=iowatch -c user.email=iowatch@localhost am -q \
            "$repo"/kernels/series/e2e-bisect/*.patch > "$run/range.log" 2>&1 || fail "git am failed: see range.log"
        git -C "$tree" branch "$branch" "$(git -C "$wt" rev-parse HEAD)"
        git -C "$tree" worktree remove --force "$wt"
    fi
    good=$(git -C "$tree" rev-parse debian-base)
    bad=$(git -C "$tree" rev-parse "$branch")
    first_bad_subject="ext4: yield to buffered readers before each direct write"
    phase_end PASS "$tree: debian-base ${good:0:12} .. $branch ${bad:0:12} ($(git -C "$tree" rev-list --count "$good..$bad") commits)"
}

lab_server() {  # AGENT HOST
    phase_start "server"
    url=http://127.0.0.1:$web_port
    mkdir -p "$server_data"
    IOWATCH_DATA_DIR=$server_data "$repo/.venv/bin/iowatch" manage migrate --noinput -v 0 > "$run/server-migrate.log" 2>&1 ||
        fail "migrate failed: see server-migrate.log"
    token=$(IOWATCH_DATA_DIR=$server_data "$repo/.venv/bin/iowatch" manage create_agent "$1" --host "$2" | awk '{print $NF}' | tail -1)
    IOWATCH_DATA_DIR=$server_data setsid "$repo/.venv/bin/iowatch" serve --port "$web_port" > "$run/server.log" 2>&1 &
    server_pid=$!
    for _ in $(seq 60); do curl -sf "$url/api/v1/health" >/dev/null && break; sleep 1; done
    curl -sf "$url/api/v1/health" >/dev/null || fail "iowatch serve did not answer: see server.log"
    phase_end PASS "$url (embedded SQLite in $server_data), agent token made"
}

teardown() {
    local rc=$? f
    [ -n "${phase_name:-}" ] && phase_end FAIL "interrupted (exit $rc)"
    if [ -n "$qemu_pid" ] && kill -0 "$qemu_pid" 2>/dev/null; then
        kill "$qemu_pid"; wait "$qemu_pid" 2>/dev/null || true
    fi
    rm -rf "$last_run"
    mkdir -p "$last_run"
    for f in "${keep[@]}"; do
        # shellcheck disable=SC2086  # $f is a glob
        cp -r "$run"/$f "$last_run/" 2>/dev/null || true
    done
    rm -rf "$run"
    print_summary "$rc"
    exit "$rc"
}
trap teardown EXIT
trap 'exit 130' INT TERM
