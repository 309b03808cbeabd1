# shellcheck shell=bash
# What the two fault scripts (tests/vm/guest/faults.sh, manifest mode, and
# faults-api.sh, API mode) share: the pods and the client, the stable
# Services' addresses, the traffic held and looped through a fault, and the
# table compared with the plan. Sourced after /vm/lib.sh, with COMMON (the
# agent's flags that `plan` takes too), F (a work folder) set.

HOLD_INTERVAL_MS=500
# The targets of the clients: each stable ClusterIP twice, port 80.
TARGETS=()

agent() { NO_COLOR=1 ipvs-agent "$@"; }
# log_has PATTERN: whether the agent's log ($LOG) has a matching line. grep
# reads it all (-c), so the writer never dies of SIGPIPE, which pipefail
# would take for a miss.
log_has() { vm_agent_log "$LOG" | grep -c -- "$1" >/dev/null; }
agent_pid() { cat "$VM_STATE/agent.pid"; }

# pods_and_client: backend pods b1..b4 (10.245.0.1-4, `traffic serve` on
# 8080) and the client namespace (10.245.1.1).
pods_and_client() {
    local i
    vm_node_init
    for i in 1 2 3 4; do
        vm_netns_add "b$i" "10.245.0.$i"
        vm_bg "b$i" traffic serve "b$i" 8080 >"$F/b$i.log" 2>&1
    done
    vm_netns_add client 10.245.1.1
}

# stable_targets: the stable Services' ClusterIPs from the plan, into
# $F/targets (read back with `mapfile -t TARGETS <"$F/targets"` after the
# scenario's subshell), and a first round of connections through them.
stable_targets() {
    local i ip dns
    dns="$(agent plan "${COMMON[@]}" --format dns)"
    for i in 1 2 3 4; do
        ip="$(awk -v n="stable-$i.default.svc.cluster.local." '$1 == n && $4 == "A" { print $5 }' <<<"$dns")"
        [[ -n $ip ]] || { echo "no ClusterIP for stable-$i in plan --format dns"; return 1; }
        TARGETS+=("$ip:80" "$ip:80")
    done
    printf '%s\n' "${TARGETS[@]}" >"$F/targets"
    vm_info "stable Services at ${TARGETS[*]}"
    ip netns exec client traffic loop count=8 10 2000 "${TARGETS[@]}"
}

# --- the table against the plan ------------------------------------------------

save_sorted() { ipvsadm-save -n | sort; }
# plan_sorted: what `plan` prints, sorted; a plan that takes more than
# 180 s is stopped and said (in API mode it lists the apiserver).
plan_sorted() {
    local status=0
    timeout 180 ipvs-agent plan "${COMMON[@]}" --format ipvsadm-save >"$F/plan.out" 2>"$F/plan.err" || status=$?
    ((status != 124)) || vm_info "plan: no answer within 180 s ($(tail -n 1 "$F/plan.err"))"
    sort "$F/plan.out"
}
table_is_plan() { [[ "$(save_sorted)" == "$(plan_sorted)" ]]; }
virtual_servers() { grep -c '^TCP\|^UDP' /proc/net/ip_vs || true; }

# check_table NAME [TIMEOUT]: the table equals the plan within TIMEOUT s.
check_table() {
    local name="$1" t="${2:-90}"
    if vm_wait_until "$t" table_is_plan; then
        vm_pass "$name-table-equals-plan" "$(virtual_servers) virtual servers"
    else
        vm_check_eq "$name-table-equals-plan" "$(plan_sorted)" "$(save_sorted)" || true
    fi
}

# --- traffic -------------------------------------------------------------------

# traffic_start NAME: the held connections and the loop of new ones.
traffic_start() {
    local name="$1"
    rm -f "$F/$name.stop"
    ip netns exec client traffic hold "$F/$name.stop" "$HOLD_INTERVAL_MS" "${TARGETS[@]}" >"$F/$name.hold" 2>&1 &
    echo $! >"$F/$name.hold.pid"
    ip netns exec client traffic loop "until=$F/$name.stop" 100 2000 "${TARGETS[@]}" >"$F/$name.during" 2>&1 &
    echo $! >"$F/$name.during.pid"
    sleep 3
}

# traffic_end NAME: stop them, run 100 new connections, check and print.
traffic_end() {
    local name="$1" held broken during after
    touch "$F/$name.stop"
    wait "$(cat "$F/$name.hold.pid")" 2>/dev/null || true
    wait "$(cat "$F/$name.during.pid")" 2>/dev/null || true
    ip netns exec client traffic loop count=100 20 2000 "${TARGETS[@]}" >"$F/$name.after" 2>&1 || true
    grep -v '^held ' "$F/$name.hold" | head -n 20 || true
    grep '^failed ' "$F/$name.during" "$F/$name.after" | head -n 10 || true
    held="$(sed -n 's/^hold: \([0-9]*\) held, \([0-9]*\) broken$/\1/p' "$F/$name.hold")"
    broken="$(sed -n 's/^hold: \([0-9]*\) held, \([0-9]*\) broken$/\2/p' "$F/$name.hold")"
    during="$(sed -n 's/^loop: \([0-9]*\) ok, \([0-9]*\) failed$/\1 ok, \2 failed/p' "$F/$name.during")"
    after="$(sed -n 's/^loop: \([0-9]*\) ok, \([0-9]*\) failed$/\2/p' "$F/$name.after")"
    vm_info "$name: held connections ${held:-?} kept, ${broken:-?} broken; new connections during the fault: ${during:-?}; after recovery: $((100 - ${after:-100})) ok, ${after:-?} failed"
    vm_check_eq "$name-held-connections-unbroken" "0 of ${#TARGETS[@]}" "${broken:-?} of $((${held:-0} + ${broken:-0}))" || true
    # A break is found in the agent's log by its time (the hold's stderr
    # line): run.sh writes it to target/vm/out/<test>/<name>-agent.log.
    if [[ ${broken:-1} != 0 && -n ${LOG:-} ]]; then
        vm_agent_log "$LOG" | tail -n 3000 >"$F/$name-agent.log"
        vm_export "$name-agent.log" "$F/$name-agent.log"
    fi
    vm_check_eq "$name-new-connections-after-recovery-fail-0" 0 "${after:-?}" || true
}

