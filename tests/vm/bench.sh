#!/usr/bin/env bash
# The IPVS programming benchmark, inside the VM (driven by
# tests/vm/bench-host.sh, `make bench-vm`). It expects in /bench:
#   manifests/   Services and EndpointSlices (tests/vm/bench-gen.sh)
#   rules.txt    the same rules as `ipvsadm -R` input, printed by
#                `ipvs-agent plan --format ipvsadm-save` on those manifests
# and measures, BENCH_ROUNDS times (default 3; medians reported):
#   agent     `ipvs-agent run --once --nftables=false` (IPVS alone; see
#             RUN_ONLY) from empty (a fresh network namespace:
#             no IPVS rules, no kube-ipvs0): wall clock, and the duration_ms
#             it logs
#   restore   `ipvsadm -R < rules.txt`, from empty (a fresh namespace too)
#   addresses binding the same ClusterIPs on kube-ipvs0 with `ip -batch`,
#             which the agent does too and ipvsadm -R does not
#   resync    `run --once` again over the programmed table (adopts it, 0 ops)
#   plan      `ipvs-agent plan --format ipvsadm-save` (no kernel: the
#             userspace part alone)
# then, with `ipvs-agent run` in the background, BENCH_CHANGES endpoint
# changes (default 4: an endpoint removed from one EndpointSlice file, then
# put back, alternately): the time from the file's rename until
# `ipvsadm -Ln` shows the change, and the duration_ms of that sync.
# Checks that the agent and ipvsadm -R end with identical `ipvsadm-save -n`.
# Results: /tmp/bench/results.json, exported as agent.json.
# shellcheck disable=SC2317,SC2153 # scenario functions are called through vm_scenario; facts files set variables
# shellcheck source=tests/vm/lib.sh
VM_NODE_IP4=192.168.0.10
. /vm/lib.sh

ROUNDS="${BENCH_ROUNDS:-3}"
CHANGES="${BENCH_CHANGES:-4}"
B=/tmp/bench
MAN=$B/manifests
mkdir -p "$B"
COMMON=(--manifests "$MAN" --state-file "$B/state.json" --node-name node-a --node-ip "$VM_NODE_IP4")
# `run` programs IPVS alone here (--nftables=false): this benchmark measures
# IPVS programming, against `ipvsadm -R`, which sets no nftables rules
# either, and its figures stay comparable with those measured before the
# nftables table inet svcnet was kept by default. (This VM loads no
# nf_tables unless a test asks, so the default would only add a warning
# here; the nftables transactions get a benchmark of their own.)
RUN_ONLY=(--nftables=false)

agent() { NO_COLOR=1 ipvs-agent "$@"; }
# No vm_node_init: every measurement runs in a namespace of its own (bench_ns).

ms_since() { awk -v a="$1" -v b="$(vm_now_us)" 'BEGIN { printf "%.1f", (b - a) / 1000 }'; }
# median of the arguments
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else printf "%.1f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
json_list() { local IFS=,; echo "[$*]"; }

# Two rule files are identical; prints the first differences if not.
same_rules() {
    local name="$1" a="$2" b="$3"
    if cmp -s "$a" "$b"; then
        vm_pass "$name" "$(wc -l <"$a") lines"
    else
        echo "--- $name: first differences ($a vs $b)"
        diff "$a" "$b" | head -n 20
        vm_fail "$name" "$(wc -l <"$a") vs $(wc -l <"$b") lines"
    fi
}

# bench_ns NAME: a fresh network namespace, so a fresh IPVS: each network
# namespace has its own table, and its own "trash" of deleted real servers.
# (Re-programming after `ipvsadm -C` in the same namespace is much slower:
# the kernel keeps deleted real servers for about 2 minutes and scans that
# list on every real server it adds; measured 62 s then 215 s for the same
# ipvsadm -R.) The namespace gets the node address and default routes, so
# NAT real servers are accepted. Namespaces are kept until the end: deleting
# one with 55,000 rules costs the kernel time in the background.
bench_ns() {
    local ns="$1"
    ip netns add "$ns"
    ip -n "$ns" link set lo up
    ip -n "$ns" link add node0 type dummy
    ip -n "$ns" link set node0 up
    ip -n "$ns" addr add "$VM_NODE_IP4/24" dev node0
    ip -n "$ns" route add default dev node0
}
in_ns() {
    local ns="$1"
    shift
    ip netns exec "$ns" "$@"
}

prepare() {
    cp -r /bench/manifests "$MAN"
    VS=$(grep -c '^-A ' /bench/rules.txt)
    RS=$(grep -c '^-a ' /bench/rules.txt)
    vm_info "rules: $VS virtual servers, $RS real servers ($(wc -l </bench/rules.txt) lines); manifests $(du -sh "$MAN" | cut -f1)"
    # The addresses the agent binds, as an `ip -batch` file.
    sed -n 's/^-A -[tu] \([0-9.]*\):[0-9]* .*/addr add \1\/32 dev kube-ipvs0/p' /bench/rules.txt | sort -u >"$B/addresses.txt"
    printf 'VS=%s\nRS=%s\n' "$VS" "$RS" >"$B/facts"
}

rounds() {
    local r t0 status agent_ms=() agent_log_ms=() restore_ms=() addr_ms=() resync_ms=() resync_ops=() ops=()
    for ((r = 1; r <= ROUNDS; r++)); do
        # The agent, from empty: no rules, no kube-ipvs0, no state file.
        bench_ns "agent-$r"
        rm -f "$B/state.json"
        t0="$(vm_now_us)"
        status=0
        in_ns "agent-$r" env NO_COLOR=1 ipvs-agent run --once "${COMMON[@]}" "${RUN_ONLY[@]}" >"$B/once-$r.log" 2>&1 || status=$?
        agent_ms+=("$(ms_since "$t0")")
        ((status == 0)) || { vm_agent_log "$B/once-$r.log" | tail -n 20; vm_fail "round-$r-agent" "exit status $status"; }
        agent_log_ms+=("$(vm_agent_sync_field "$B/once-$r.log" duration_ms || echo null)")
        ops+=("$(vm_agent_sync_field "$B/once-$r.log" operations || echo null)")
        ((r == 1)) && in_ns agent-1 ipvsadm-save -n >"$B/save-agent.txt"

        # Adopting the whole table: a second run --once with nothing to do.
        t0="$(vm_now_us)"
        in_ns "agent-$r" env NO_COLOR=1 ipvs-agent run --once "${COMMON[@]}" "${RUN_ONLY[@]}" >"$B/resync-$r.log" 2>&1 || true
        resync_ms+=("$(ms_since "$t0")")
        resync_ops+=("$(vm_agent_sync_field "$B/resync-$r.log" operations || echo null)")

        # ipvsadm -R, from empty too.
        bench_ns "restore-$r"
        t0="$(vm_now_us)"
        in_ns "restore-$r" ipvsadm -R </bench/rules.txt
        restore_ms+=("$(ms_since "$t0")")
        ((r == 1)) && in_ns restore-1 ipvsadm-save -n >"$B/save-restore.txt"

        # What ipvsadm -R leaves undone: the ClusterIPs on kube-ipvs0.
        # The link down, as the agent and kube-proxy leave it.
        in_ns "restore-$r" ip link add kube-ipvs0 type dummy
        t0="$(vm_now_us)"
        in_ns "restore-$r" ip -batch "$B/addresses.txt"
        addr_ms+=("$(ms_since "$t0")")
        vm_info "round $r: agent ${agent_ms[-1]} ms (logged ${agent_log_ms[-1]} ms, ${ops[-1]} operations), ipvsadm -R ${restore_ms[-1]} ms, ip -batch addresses ${addr_ms[-1]} ms, agent resync ${resync_ms[-1]} ms (${resync_ops[-1]} operations)"
    done
    {
        printf 'AGENT_MS=(%s)\nAGENT_LOG_MS=(%s)\nAGENT_OPS=(%s)\n' "${agent_ms[*]}" "${agent_log_ms[*]}" "${ops[*]}"
        printf 'RESTORE_MS=(%s)\nADDR_MS=(%s)\nRESYNC_MS=(%s)\nRESYNC_OPS=(%s)\n' "${restore_ms[*]}" "${addr_ms[*]}" "${resync_ms[*]}" "${resync_ops[*]}"
    } >>"$B/facts"
    same_rules identical-save-agent-vs-restore "$B/save-agent.txt" "$B/save-restore.txt"
    # The rules file comes from plan, so this is check a) at scale too.
    same_rules identical-save-vs-plan /bench/rules.txt "$B/save-agent.txt" || true
    vm_check_eq resync-operations-0 "0" "$(printf '%s\n' "${resync_ops[@]}" | sort -u | tr '\n' ' ' | sed 's/ $//')" || true
    # The same ClusterIPs are bound on kube-ipvs0 too.
    in_ns restore-1 ip -o -4 addr show dev kube-ipvs0 | awk '{ print $4 }' | sort >"$B/addresses-restore.txt"
    in_ns agent-1 ip -o -4 addr show dev kube-ipvs0 | awk '{ print $4 }' | sort >"$B/addresses-agent.txt"
    same_rules identical-addresses "$B/addresses-restore.txt" "$B/addresses-agent.txt" || true
}

plan_only() {
    local r t0 plan_ms=()
    for ((r = 1; r <= ROUNDS; r++)); do
        t0="$(vm_now_us)"
        agent plan "${COMMON[@]}" --format ipvsadm-save >/dev/null
        plan_ms+=("$(ms_since "$t0")")
    done
    vm_info "plan (no kernel): ${plan_ms[*]} ms"
    printf 'PLAN_MS=(%s)\n' "${plan_ms[*]}" >>"$B/facts"
    vm_pass plan-timed
}

# The file holding svc-N's EndpointSlice, and that slice's last endpoint.
change_target() {
    local n="$1"
    SLICE_FILE="$(grep -l "name: svc-$n-bench," "$MAN"/slices-*.yaml)"
    VIP="$(grep -A 3 "name: svc-$n}" "$MAN/services.yaml" | sed -n 's/^  clusterIP: //p')"
    EP="$(awk -v m="name: svc-$n-bench," 'index($0, m) { on = 1; next } on && /^---/ { exit } on && /addresses:/ { a = $0 } END { print a }' "$SLICE_FILE" |
        sed 's/.*addresses: \[\([0-9.]*\)\].*/\1/')"
    [[ -n $SLICE_FILE && -n $VIP && -n $EP ]]
}

_rs_present() { in_ns changes ipvsadm -Ln -t "$VIP:80" | grep " $EP:8080 " >/dev/null; }
_rs_absent() { ! _rs_present; }

changes() {
    local k t0 n lat=() dur=() syncs rss
    local log=$B/run.log
    bench_ns changes
    rm -f "$B/state.json"
    VM_AGENT_NETNS=changes VM_AGENT_START_TIMEOUT=900 vm_agent_start "$log" "${COMMON[@]}" "${RUN_ONLY[@]}" --min-sync-period 1s --sync-period 10m
    vm_info "background agent: first sync $(vm_agent_sync_field "$log" duration_ms) ms, $(vm_agent_sync_field "$log" operations) operations"
    for ((k = 1; k <= CHANGES; k++)); do
        # Odd k: a new target, its last endpoint removed; even k: put back.
        # shellcheck disable=SC2017 # integer division is meant
        n=$(((k + 1) / 2 * 997 % (VS - 1)))
        ((k % 2)) && change_target "$n"
        syncs="$(vm_agent_syncs "$log")"
        if ((k % 2)); then
            # Remove the endpoint (a pod gone).
            grep -v "addresses: \[$EP\]" "$SLICE_FILE" >"$B/slice.new"
            t0="$(vm_now_us)"
            mv "$B/slice.new" "$SLICE_FILE"
            vm_wait_until 300 _rs_absent
        else
            # Put it back (the pod replaced).
            awk -v m="name: svc-$n-bench," -v ep="$EP" 'index($0, m) { on = 1 } { print } on && /^endpoints:/ { print "- {addresses: [" ep "], conditions: {ready: true}}"; on = 0 }' \
                "$SLICE_FILE" >"$B/slice.new"
            t0="$(vm_now_us)"
            mv "$B/slice.new" "$SLICE_FILE"
            vm_wait_until 300 _rs_present
        fi
        lat+=("$(ms_since "$t0")")
        vm_wait_until 120 _vm_agent_synced "$log" $((syncs + 1)) || true
        dur+=("$(vm_agent_log "$log" | grep 'sync complete' | sed -n "$((syncs + 1)),\$p" |
            sed -n 's/.*duration_ms=\([0-9.]*\).*/\1/p' | awk '{ s += $1 } END { print s + 0 }')")
        vm_info "change $k ($( ((k % 2)) && echo removed || echo added) $EP of svc-$n): in the kernel after ${lat[-1]} ms; sync(s) logged ${dur[-1]} ms"
    done
    rss="$(awk '/VmHWM/ { print $2 }' "/proc/$(cat "$VM_STATE/agent.pid")/status")"
    vm_agent_stop TERM
    printf 'CHANGE_MS=(%s)\nCHANGE_LOG_MS=(%s)\nAGENT_RSS_KB=%s\n' "${lat[*]}" "${dur[*]}" "$rss" >>"$B/facts"
    in_ns changes ipvsadm-save -n >"$B/save-after-changes.txt"
    same_rules identical-save-after-changes "$B/save-agent.txt" "$B/save-after-changes.txt"
}

report() {
    # shellcheck source=/dev/null
    . "$B/facts"
    local a r ratio ratio_full
    a="$(median "${AGENT_MS[@]}")"
    r="$(median "${RESTORE_MS[@]}")"
    local ad
    ad="$(median "${ADDR_MS[@]}")"
    ratio="$(awk -v a="$a" -v r="$r" 'BEGIN { printf "%.2f", r / a }')"
    ratio_full="$(awk -v a="$a" -v r="$r" -v d="$ad" 'BEGIN { printf "%.2f", (r + d) / a }')"
    cat >"$B/results.json" <<EOF
{
  "kernel": "$(uname -r)",
  "cpus": $(nproc),
  "memory_mib": $(awk '/MemTotal/ { print int($2 / 1024) }' /proc/meminfo),
  "virtual_servers": $VS,
  "real_servers": $RS,
  "rounds": $ROUNDS,
  "agent_run_once_ms": {"median": $a, "samples": $(json_list "${AGENT_MS[@]}")},
  "agent_logged_duration_ms": {"median": $(median "${AGENT_LOG_MS[@]}"), "samples": $(json_list "${AGENT_LOG_MS[@]}")},
  "agent_operations": $(json_list "${AGENT_OPS[@]}"),
  "ipvsadm_restore_ms": {"median": $r, "samples": $(json_list "${RESTORE_MS[@]}")},
  "ip_batch_addresses_ms": {"median": $ad, "samples": $(json_list "${ADDR_MS[@]}")},
  "speedup_vs_ipvsadm_restore": $ratio,
  "speedup_vs_ipvsadm_restore_plus_addresses": $ratio_full,
  "agent_resync_ms": {"median": $(median "${RESYNC_MS[@]}"), "samples": $(json_list "${RESYNC_MS[@]}"), "operations": $(json_list "${RESYNC_OPS[@]}")},
  "plan_only_ms": {"median": $(median "${PLAN_MS[@]}"), "samples": $(json_list "${PLAN_MS[@]}")},
  "endpoint_change_ms": {"median": $(median "${CHANGE_MS[@]}"), "samples": $(json_list "${CHANGE_MS[@]}")},
  "endpoint_change_logged_sync_ms": {"median": $(median "${CHANGE_LOG_MS[@]}"), "samples": $(json_list "${CHANGE_LOG_MS[@]}")},
  "agent_peak_rss_kib": ${AGENT_RSS_KB:-null}
}
EOF
    cat "$B/results.json"
    # The same figures as shell variables, for the host's report (no jq there).
    {
        printf 'KERNEL=%q\nVM_CPUS=%s\nVM_MEM_MIB=%s\nVS=%s\nRS=%s\nROUNDS=%s\n' "$(uname -r)" "$(nproc)" \
            "$(awk '/MemTotal/ { print int($2 / 1024) }' /proc/meminfo)" "$VS" "$RS" "$ROUNDS"
        printf 'AGENT=%s\nAGENT_LOG=%s\nRESTORE=%s\nADDR=%s\nRATIO=%s\nRATIO_FULL=%s\n' "$a" \
            "$(median "${AGENT_LOG_MS[@]}")" "$r" "$ad" "$ratio" "$ratio_full"
        printf 'RESYNC=%s\nPLAN=%s\nCHANGE=%s\nCHANGE_LOG=%s\nRSS_KB=%s\n' "$(median "${RESYNC_MS[@]}")" \
            "$(median "${PLAN_MS[@]}")" "$(median "${CHANGE_MS[@]}")" "$(median "${CHANGE_LOG_MS[@]}")" "${AGENT_RSS_KB:-}"
        printf 'AGENT_SAMPLES="%s"\nRESTORE_SAMPLES="%s"\nADDR_SAMPLES="%s"\nRESYNC_SAMPLES="%s"\n' "${AGENT_MS[*]}" \
            "${RESTORE_MS[*]}" "${ADDR_MS[*]}" "${RESYNC_MS[*]}"
        printf 'PLAN_SAMPLES="%s"\nCHANGE_SAMPLES="%s"\nCHANGE_LOG_SAMPLES="%s"\nAGENT_LOG_SAMPLES="%s"\nAGENT_OPS="%s"\n' \
            "${PLAN_MS[*]}" "${CHANGE_MS[*]}" "${CHANGE_LOG_MS[*]}" "${AGENT_LOG_MS[*]}" "${AGENT_OPS[*]}"
    } >"$B/results.env"
    vm_export agent.json "$B/results.json"
    vm_export results.env "$B/results.env"
    # The agent's own logs of round 1 and of the changes, to see where its time goes.
    local f
    for f in once-1 resync-1 run; do
        [[ -f $B/$f.log ]] && { vm_agent_log "$B/$f.log" | tail -n 200 >"$B/$f.txt"; vm_export "agent-$f.log" "$B/$f.txt"; }
    done
    vm_info "agent ${a} ms vs ipvsadm -R ${r} ms: ratio ${ratio}x (${ratio_full}x counting the address binds)"
    vm_pass report
}

vm_scenario prepare prepare
# shellcheck source=/dev/null # written by prepare
. "$B/facts"
vm_scenario rounds rounds
vm_scenario plan-only plan_only
vm_scenario endpoint-changes changes
vm_scenario report report
# No vm_reset: deleting the namespaces would only cost time.
vm_finish
