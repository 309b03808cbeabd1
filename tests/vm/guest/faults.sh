#!/usr/bin/env bash
# The VM half of tests/vm/faults.sh for the manifest mode (which boots it:
# see there): faults injected into an agent programming 5,000 Services,
# under traffic.
#
# The VM's root namespace is the node (192.0.2.10). Four backend pods
# (namespaces b1..b4, 10.245.0.1-4) run `traffic serve`; four stable
# Services (stable-1..4, ClusterIPs allocated by the agent and kept in its
# state file) have two of them each. A client namespace (10.245.1.1) holds
# two long connections to each stable Service (`traffic hold`, a ping every
# 500 ms) and opens new ones in a loop (`traffic loop`) while a fault
# lasts; after recovery a bounded loop of 100 new connections runs. The
# 5,000 other Services (tests/vm/bench-gen.sh: 10 endpoints each, nothing
# behind them) make the table large.
#
# Every fault ends with three checks: the kernel's table equals what
# `ipvs-agent plan` prints for the same manifests and state (sorted
# `ipvsadm-save -n`), no held connection broke, no new connection failed
# after recovery; and prints the counts (failures while the fault lasted
# are printed, not judged). The faults, in order:
#
#   kill-mid-sync   the 5,000 Services added while the agent is stopped; it
#                   starts, is killed (-9) while its first sync is programming
#                   them (seen in /proc/net/ip_vs), and starts again
#   torn-state      the state file truncated to half, then filled with
#                   garbage: the agent refuses to start, names the file and
#                   says what to do, and touches nothing in the kernel; the
#                   saved copy put back, it starts and changes nothing
#   netlink-enobufs the receive buffers of the agent's netlink sockets shrunk
#                   to the kernel's minimum from outside (netlink_shrink), then
#                   10,000 real servers change: answers are dropped (ENOBUFS,
#                   counted in /proc/net/netlink), and the agent reads the
#                   table again until it matches
#   concurrent-edits another process adds virtual servers of its own and
#                   deletes the agent's for 20 s while the manifests change
#                   every second; its own stay untouched, the agent's come back
#   disk-full       the state file's file system (a 48 MiB tmpfs) filled up, 20
#                   Services added: programmed all the same,
#                   svcnet_state_file_unsaved 1 and write errors counted; once
#                   space returns, written within seconds
#   fd-exhaustion   the agent's open-file limit lowered to its lowest free
#                   descriptor (prlimit): /healthz cannot be accepted, the agent spends no
#                   more CPU than before (no spinning) and logs the trouble a
#                   bounded number of times; the limit restored, /healthz
#                   answers 200 again
#
# Data: /data/faults/manifests/{services.yaml,slices-*.yaml} (the 5,000),
# /data/faults/stable.yaml; /vm/faults-lib.sh (what both fault scripts
# share); /usr/local/bin/{ipvs-agent,traffic,netlink_shrink,prlimit}.
# shellcheck disable=SC2317 # fault functions are called through vm_scenario
# shellcheck source=tests/vm/lib.sh
VM_NODE_IP4=192.0.2.10
. /vm/lib.sh

DATA=/data/faults
M=/tmp/manifests
STATE_DIR=/state
STATE=$STATE_DIR/state.json
F=/tmp/faults
mkdir -p "$F"
LOG=$F/agent.log
COMMON=(--manifests "$M" --state-file "$STATE" --node-name node-a --node-ip "$VM_NODE_IP4")
RUN_FLAGS=(--min-sync-period 1s --sync-period 10s --nftables=false
    --healthz-bind-address 127.0.0.1:10256 --metrics-bind-address 127.0.0.1:10249)
SERVICES=${SVCNET_FAULTS_SERVICES:-5000}

# shellcheck source=tests/vm/guest/faults-lib.sh
. /vm/faults-lib.sh

# --- setup ---------------------------------------------------------------------

# selected NAME: whether the fault runs (SVCNET_FAULTS_ONLY, NAME,NAME...:
# all by default).
selected() { [[ -z ${SVCNET_FAULTS_ONLY:-} || ",$SVCNET_FAULTS_ONLY," == *",$1,"* ]]; }

setup() {
    pods_and_client
    mkdir -p "$STATE_DIR"
    mount -t tmpfs -o size=48m tmpfs "$STATE_DIR"
    rm -rf "$M" && mkdir -p "$M"
    cp "$DATA/stable.yaml" "$M/"
    # kill-mid-sync brings in the 5,000; without it, they are here at start.
    selected kill-mid-sync || cp "$DATA"/manifests/*.yaml "$M/"
    VM_AGENT_START_TIMEOUT=600 vm_agent_start "$LOG" "${COMMON[@]}" "${RUN_FLAGS[@]}"
    selected kill-mid-sync || check_table setup 600
    stable_targets
}

# --- the faults ------------------------------------------------------------------

kill_mid_sync() {
    local base lines pid vs status=0 t0
    traffic_start kill-mid-sync
    vm_agent_stop
    cp "$DATA"/manifests/*.yaml "$M/"
    base="$(wc -l </proc/net/ip_vs)"
    : >"$LOG"
    NO_COLOR=1 ipvs-agent run "${COMMON[@]}" "${RUN_FLAGS[@]}" >>"$LOG" 2>&1 &
    pid=$!
    echo "$pid" >"$VM_STATE/agent.pid"
    t0="$(vm_uptime)"
    # Killed once its first sync has programmed some 500 virtual servers.
    while kill -0 "$pid" 2>/dev/null; do
        lines="$(wc -l </proc/net/ip_vs)"
        ((lines > base + 5000)) && break
        awk -v u="$(vm_uptime)" -v t="$t0" 'BEGIN { exit !(u - t > 180) }' && break
        sleep 0.05
    done
    kill -9 "$pid" 2>/dev/null || status=$?
    wait "$pid" 2>/dev/null || true
    vs="$(virtual_servers)"
    vm_info "kill-mid-sync: killed (-9) $(awk -v u="$(vm_uptime)" -v t="$t0" 'BEGIN { printf "%.1f", u - t }') s after start with $vs virtual servers programmed"
    vm_check_eq kill-mid-sync-killed-while-running 0 "$status"
    if ((vs > 10 && vs < SERVICES)) && ! grep -q 'sync complete' "$LOG"; then
        vm_pass kill-mid-sync-during-the-first-sync "$vs of $((SERVICES + 5)) virtual servers, no sync had completed"
    else
        vm_fail kill-mid-sync-during-the-first-sync "$vs virtual servers at the kill; syncs completed: $(grep -c 'sync complete' "$LOG")" || true
    fi
    vm_agent_start "$LOG" "${COMMON[@]}" "${RUN_FLAGS[@]}"
    vm_info "kill-mid-sync: restarted; its first sync: $(vm_agent_log "$LOG" | grep -m1 'sync complete' | grep -o 'operations=[0-9]* failed=[0-9]*')"
    check_table kill-mid-sync
    traffic_end kill-mid-sync
}

# torn_variant NAME: the state file already broken; the agent must refuse
# and leave the kernel alone.
torn_variant() {
    local name="$1" before status=0 out
    before="$(save_sorted)"
    out="$(NO_COLOR=1 timeout 60 ipvs-agent run "${COMMON[@]}" "${RUN_FLAGS[@]}" 2>&1)" || status=$?
    printf '%s\n' "$out" | tail -n 3
    ((status != 0)) && vm_pass "torn-state-$name-refused" "exit status $status" ||
        vm_fail "torn-state-$name-refused" "exit status 0" || true
    grep -q "state file $STATE" <<<"$out" && grep -q 'move it away' <<<"$out" &&
        vm_pass "torn-state-$name-message-names-the-file-and-the-way-out" ||
        vm_fail "torn-state-$name-message-names-the-file-and-the-way-out" || true
    vm_check_eq "torn-state-$name-kernel-untouched" "$before" "$(save_sorted)" || true
}

torn_state() {
    local size
    traffic_start torn-state
    vm_agent_stop
    cp "$STATE" "$F/state.good"
    size="$(stat -c %s "$STATE")"
    head -c $((size / 2)) "$F/state.good" >"$STATE"
    vm_info "torn-state: state file truncated from $size to $((size / 2)) bytes"
    torn_variant truncated
    head -c 65536 /dev/urandom >"$STATE"
    torn_variant garbage
    cp "$F/state.good" "$STATE"
    chmod 600 "$STATE"
    vm_agent_start "$LOG" "${COMMON[@]}" "${RUN_FLAGS[@]}"
    vm_check_eq torn-state-restarted-with-no-change 0 "$(vm_agent_sync_field "$LOG" operations 1)" || true
    check_table torn-state
    traffic_end torn-state
}

# drops: the drop counters of netlink sockets in /proc/net/netlink, summed.
netlink_drops() { awk 'NR > 1 { d += $9 } END { print d + 0 }' /proc/net/netlink; }

netlink_enobufs() {
    local pid drops0 drops1 f
    traffic_start netlink-enobufs
    pid="$(agent_pid)"
    drops0="$(netlink_drops)"
    netlink_shrink "$pid" 16 1
    netlink_shrink "$pid" 0 1
    # 1,000 Services' endpoints move: 10,000 real servers out, 10,000 in.
    for f in "$M"/slices-0[0-9].yaml; do
        sed -i 's/{addresses: \[10\.244\./{addresses: [10.246./' "$f"
    done
    check_table netlink-enobufs 180
    drops1="$(netlink_drops)"
    vm_info "netlink-enobufs: netlink drops $drops0 -> $drops1; the agent's log:"
    vm_agent_log "$LOG" | grep -i 'ENOBUFS\|overrun' | tail -n 4 || true
    if ((drops1 > drops0)) && log_has ENOBUFS; then
        vm_pass netlink-enobufs-overrun-happened "netlink drops counted: $((drops1 - drops0))"
    else
        vm_fail netlink-enobufs-overrun-happened "no drop counted or no ENOBUFS logged: the fault did not happen" || true
    fi
    traffic_end netlink-enobufs
}

# The other process: for DURATION s, a virtual server of its own added
# (10.99.0.N) and one of the agent's deleted, about 10 times a second.
editor() {
    local duration="$1" n=0 end
    end=$(($(cut -d. -f1 /proc/uptime) + duration))
    while (($(cut -d. -f1 /proc/uptime) < end)); do
        n=$((n + 1))
        ipvsadm -A -t "10.99.0.$((n % 200 + 1)):80" -s rr 2>/dev/null || true
        ipvsadm -D -t "10.100.$((n * 7 % 20)).$((n * 13 % 250 + 1)):80" 2>/dev/null || true
        sleep 0.1
    done
    echo "$n"
}

concurrent_edits() {
    local i f edits foreign editor_pid
    traffic_start concurrent-edits
    editor 20 >"$F/editor.out" &
    editor_pid=$!
    # An endpoint of another Service moves every second (10.244 -> 10.247).
    for i in $(seq 1 20); do
        f="$M/slices-$((20 + i)).yaml"
        sed -i "$(grep -n '^- {addresses: \[10\.244\.' "$f" | sed -n "${i}p" | cut -d: -f1)s/10\.244\./10.247./" "$f"
        sleep 1
    done
    wait "$editor_pid"
    edits="$(cat "$F/editor.out")"
    foreign="$(ipvsadm-save -n | grep -c '^-A -t 10\.99\.0\.' || true)"
    vm_info "concurrent-edits: the other process made $edits rounds (an add and a delete each); $foreign of its virtual servers are there"
    ((foreign > 0)) && vm_pass concurrent-edits-foreign-virtual-servers-left-alone "$foreign" ||
        vm_fail concurrent-edits-foreign-virtual-servers-left-alone "none left" || true
    for i in $(seq 1 200); do ipvsadm -D -t "10.99.0.$i:80" 2>/dev/null || true; done
    check_table concurrent-edits 60
    traffic_end concurrent-edits
}

metric() { vm_http_get 127.0.0.1:10249 /metrics | awk -v m="$1" '$1 == m { print $2 }'; }
unsaved_is() { [[ "$(metric svcnet_state_file_unsaved)" == "$1" ]]; }

disk_full() {
    local i errors0 errors1 f="$M/added.yaml"
    traffic_start disk-full
    errors0="$(metric svcnet_state_file_write_errors_total)"
    dd if=/dev/zero of="$STATE_DIR/filler" bs=1M 2>/dev/null || true
    vm_info "disk-full: $(df -k "$STATE_DIR" | awk 'NR == 2 { print $4 }') KiB left on $STATE_DIR"
    : >"$f.tmp"
    for i in $(seq 1 20); do
        printf -- '---\napiVersion: v1\nkind: Service\nmetadata: {name: added-%d}\nspec:\n  clusterIP: 10.102.0.%d\n  ports: [{port: 80, targetPort: 8080}]\n---\napiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata: {name: added-%d-a, labels: {kubernetes.io/service-name: added-%d}}\naddressType: IPv4\nports: [{port: 8080, protocol: TCP}]\nendpoints:\n- {addresses: [10.245.0.1], conditions: {ready: true}}\n' "$i" "$i" "$i" "$i" >>"$f.tmp"
    done
    mv "$f.tmp" "$f"
    vm_wait_until 30 ipvsadm -Ln -t 10.102.0.20:80 &&
        vm_pass disk-full-new-services-programmed ||
        vm_fail disk-full-new-services-programmed "10.102.0.20:80 not in the table after 30 s" || true
    vm_wait_until 15 unsaved_is 1 &&
        vm_pass disk-full-metric-says-unsaved ||
        vm_fail disk-full-metric-says-unsaved "svcnet_state_file_unsaved $(metric svcnet_state_file_unsaved)" || true
    sleep 3
    errors1="$(metric svcnet_state_file_write_errors_total)"
    vm_info "disk-full: svcnet_state_file_write_errors_total $errors0 -> $errors1"
    vm_agent_log "$LOG" | grep 'cannot save' | tail -n 2 || true
    ((errors1 > errors0)) && vm_pass disk-full-write-errors-counted "$((errors1 - errors0))" ||
        vm_fail disk-full-write-errors-counted || true
    grep -q added-20 "$STATE" && vm_fail disk-full-not-written-while-full "the state file has added-20" || true
    rm -f "$STATE_DIR/filler"
    vm_wait_until 15 unsaved_is 0 &&
        vm_pass disk-full-written-once-space-returns ||
        vm_fail disk-full-written-once-space-returns "svcnet_state_file_unsaved $(metric svcnet_state_file_unsaved)" || true
    grep -q '"added-20"' "$STATE" &&
        vm_pass disk-full-state-file-has-the-new-services ||
        vm_fail disk-full-state-file-has-the-new-services || true
    check_table disk-full
    traffic_end disk-full
}

# cpu_ticks PID: user + system clock ticks (1/100 s) so far.
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

# cpu_rate PID SECONDS: the ticks PID spends per 10 s, measured over SECONDS
# while CMD... runs (or sleeping).
cpu_rate() {
    local pid="$1" seconds="$2" t0 t1 u0 u1
    shift 2
    t0="$(cpu_ticks "$pid")" u0="$(vm_uptime)"
    "$@"
    sleep "$seconds"
    t1="$(cpu_ticks "$pid")" u1="$(vm_uptime)"
    awk -v t=$((t1 - t0)) -v a="$u0" -v b="$u1" 'BEGIN { printf "%d", t * 10 / (b - a) }'
}

# lowest_free_fd PID: the lowest descriptor number PID has free, where its
# next open or accept lands. A limit at that number makes every one fail
# (EMFILE); a limit at the count of open descriptors does not when the
# count caught a file open for a moment. The agent reads its manifests
# ($M) at every sync period, for seconds at 5,000 Services, and writes its
# state file in $STATE_DIR: descriptors on those count as free.
lowest_free_fd() {
    local -A held=()
    local fd target n=0
    while read -r fd target; do
        [[ $target == "$M"/* || $target == "$STATE_DIR"/* ]] || held[$fd]=1
    done < <(ls -l "/proc/$1/fd" | awk 'NF > 2 { print $(NF - 2), $NF }')
    while [[ -n ${held[$n]:-} ]]; do n=$((n + 1)); done
    echo "$n"
}

# settled_lowest_free_fd PID: the least of ten looks 0.1 s apart, so a
# descriptor open for a moment in one look (a connection, a pipe) does not
# count either.
settled_lowest_free_fd() {
    local least n _
    least="$(lowest_free_fd "$1")"
    for _ in 1 2 3 4 5 6 7 8 9; do
        sleep 0.1
        n="$(lowest_free_fd "$1")"
        ((n < least)) && least="$n"
    done
    echo "$least"
}

knock_healthz() {
    local _
    for _ in 1 2 3 4 5; do vm_http_status 127.0.0.1:10256 /healthz >/dev/null || true; done
}

healthz_ok() { [[ "$(vm_http_status 127.0.0.1:10256 /healthz)" == 200 ]]; }

fd_exhaustion() {
    local pid open limit idle busy warns status
    traffic_start fd-exhaustion
    pid="$(agent_pid)"
    idle="$(cpu_rate "$pid" 10 true)"
    limit="$(prlimit --pid "$pid" --nofile --noheadings --output SOFT,HARD | awk '{ print $1 ":" $2 }')"
    open="$(settled_lowest_free_fd "$pid")"
    prlimit --pid "$pid" --nofile="$open:$open"
    status="$(vm_http_status 127.0.0.1:10256 /healthz || true)"
    vm_info "fd-exhaustion: open files limited to $open, the lowest free descriptor (from $limit); /healthz answered ${status:-nothing}"
    [[ $status != 200 ]] && vm_pass fd-exhaustion-accept-fails ||
        vm_fail fd-exhaustion-accept-fails "/healthz still answered: the fault did not happen" || true
    # Connections keep coming while the limit holds.
    busy="$(cpu_rate "$pid" 5 knock_healthz)"
    warns="$(vm_agent_log "$LOG" | grep -c 'cannot accept' || true)"
    vm_info "fd-exhaustion: the agent's CPU ticks (1/100 s) per 10 s: $idle before, $busy while accept fails; 'cannot accept' logged $warns times"
    # Spinning on accept would burn a whole CPU: 1,000 ticks per 10 s.
    ((busy < idle + 300)) && vm_pass fd-exhaustion-no-spinning "$busy ticks per 10 s against $idle before" ||
        vm_fail fd-exhaustion-no-spinning "$busy ticks per 10 s against $idle before" || true
    ((warns >= 1 && warns <= 2)) && vm_pass fd-exhaustion-logged-once "$warns" ||
        vm_fail fd-exhaustion-logged-once "$warns lines" || true
    prlimit --pid "$pid" --nofile="$limit"
    vm_wait_until 20 healthz_ok &&
        vm_pass fd-exhaustion-healthz-recovers ||
        vm_fail fd-exhaustion-healthz-recovers "no 200 within 20 s of the limit's return" || true
    log_has 'accepting HTTP connections again' &&
        vm_pass fd-exhaustion-recovery-logged || vm_fail fd-exhaustion-recovery-logged || true
    check_table fd-exhaustion
    traffic_end fd-exhaustion
}

# fault NAME FUNCTION: the fault, unless SVCNET_FAULTS_ONLY (NAME,NAME...)
# leaves it out.
fault() {
    selected "$1" || return 0
    vm_scenario "$@"
}

vm_scenario setup setup
mapfile -t TARGETS <"$F/targets"
fault kill-mid-sync kill_mid_sync
fault torn-state torn_state
fault netlink-enobufs netlink_enobufs
fault concurrent-edits concurrent_edits
fault disk-full disk_full
fault fd-exhaustion fd_exhaustion
vm_agent_stop
vm_finish
