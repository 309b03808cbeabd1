#!/usr/bin/env bash
# The VM half of tests/vm/soak.sh (which boots it: see there): churn under
# traffic (issue 15, section 4).
#
# The VM is node-a (192.168.0.10). `ipvs-agent run` (standalone, manifests
# in /tmp/soak/manifests, --nftables, the default sync periods: changes
# picked up within 1 s, a full re-check every 30 s) programs:
#   - the churned Services: SOAK_SERVICES (1000) from `churn init`, one
#     file each, their endpoints in 10.128.0.0/9 (nothing answers there);
#   - four stable Services (00-stable.yaml, never touched), ClusterIPs
#     10.96.0.101-104 port 80, the last also NodePort 30080, each with two
#     backends: namespaces sN-a, sN-b (10.244.1.N1, 10.244.1.N2) running
#     `traffic serve NAME 8080`.
# Then, for SOAK_SECONDS (900), at the same time:
#   churn    `churn run` makes SOAK_RATE (100) changes a second (Services
#            added and removed, endpoints scaled up and down, endpoints set
#            terminating), from seed SOAK_SEED (1);
#   hold     one long connection to each stable frontend from the client
#            namespace (10.244.2.20), pinged every second: none may break;
#   loop     a new connection to the stable frontends in turn every
#            SOAK_LOOP_MS (100 ms), each to read the backend's greeting
#            within 5 s: none may fail;
#   sampler  the agent's VmRSS and open fds every SOAK_SAMPLE_S (10) s.
# After the churn: the clients stop, and after two more syncs the kernel's
# table must equal `ipvs-agent plan` on the final manifests (IPVS rules,
# kube-ipvs0 addresses, the addresses in table inet svcnet). Figures: the
# churn's counts and measured rate, RSS and fd slopes (least squares, after
# the first SOAK_WARMUP_S (60) s of churn), sync p99 (kube-proxy's histogram
# kubeproxy_sync_proxy_rules_duration_seconds from /metrics, and exact from
# the sync log lines), exported as results.env, soak.json, samples.tsv,
# with every sync's log line (syncs.log).
#
# Bounds (checked): the churn rate at least 95 % of SOAK_RATE, measured; fd
# slope at most SOAK_FD_SLOPE_MAX (0.1 fd/min) and the last sample no more
# than 2 above the first after warm-up; RSS slope at most SOAK_RSS_SLOPE_MAX
# (128 KiB/min; see tests/vm/soak.sh's report for why) beyond twice its
# standard error (RSS moves by megabytes between samples; the agent's live
# bytes under churn are checked exactly by ipvs-agent/tests/heap_under_churn.rs).
# With SOAK_RSS_GROWTH_MAX (KiB; the short run) the RSS check is instead
# that VmHWM, the peak, rose by at most that much after warm-up: a minute's
# samples cannot tell a slope from the agent's own swing, a peak can only
# rise, and a leak of a few KiB per change still rises past the bound.
# shellcheck disable=SC2317,SC2153 # scenario functions are called through vm_scenario; facts files set variables
# shellcheck source=tests/vm/lib.sh
VM_NODE_IP4=192.168.0.10
. /vm/lib.sh

SECONDS_CHURN="${SOAK_SECONDS:-900}"
RATE="${SOAK_RATE:-100}"
SEED="${SOAK_SEED:-1}"
SERVICES="${SOAK_SERVICES:-1000}"
SAMPLE_S="${SOAK_SAMPLE_S:-10}"
WARMUP_S="${SOAK_WARMUP_S:-60}"
LOOP_MS="${SOAK_LOOP_MS:-100}"
FD_SLOPE_MAX="${SOAK_FD_SLOPE_MAX:-0.1}"
RSS_SLOPE_MAX="${SOAK_RSS_SLOPE_MAX:-128}"
RSS_GROWTH_MAX="${SOAK_RSS_GROWTH_MAX:-}"
MIN_RATE="$(awk -v r="$RATE" 'BEGIN { print r * 0.95 }')"

S=/tmp/soak
M=$S/manifests
STOP=$S/stop
LOG=$S/agent.log
CLUSTER_CIDR=10.244.0.0/16
COMMON=(--manifests "$M" --state-file "$S/state.json" --node-name node-a --node-ip "$VM_NODE_IP4")
NFT=(--cluster-cidr "$CLUSTER_CIDR")
CLIENT=client
STABLE=(10.96.0.101:80 10.96.0.102:80 10.96.0.103:80 10.96.0.104:80 "$VM_NODE_IP4:30080")
mkdir -p "$M"

agent() { NO_COLOR=1 ipvs-agent "$@"; }
fact() { printf '%s=%q\n' "$1" "$2" >>"$S/facts"; }

# The stable Services and their backends.
stable_manifest() {
    local n type node_port
    for n in 1 2 3 4; do
        type="" node_port=""
        if ((n == 4)); then
            type="  type: NodePort"
            node_port=", nodePort: 30080"
        fi
        cat <<EOF
apiVersion: v1
kind: Service
metadata: {name: stable-$n}
spec:
  clusterIP: 10.96.0.10$n
$type
  ports: [{name: http, port: 80, targetPort: 8080, protocol: TCP$node_port}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: stable-$n-soak, labels: {kubernetes.io/service-name: stable-$n}}
addressType: IPv4
ports: [{name: http, port: 8080, protocol: TCP}]
endpoints:
- {addresses: [10.244.1.${n}1], conditions: {ready: true}}
- {addresses: [10.244.1.${n}2], conditions: {ready: true}}
---
EOF
    done
}

setup() {
    local n side
    vm_load_netfilter
    vm_node_init
    for n in 1 2 3 4; do
        for side in a b; do
            vm_netns_add "s$n-$side" "10.244.1.$n$([[ $side == a ]] && echo 1 || echo 2)"
            vm_bg "s$n-$side" traffic serve "stable-$n-$side" 8080 >/dev/null
        done
    done
    vm_netns_add "$CLIENT" 10.244.2.20
    stable_manifest | sed '$d' >"$M/00-stable.yaml"
    churn init "$M" "$SEED" "$SERVICES"
    vm_info "manifests: $(find "$M" -name '*.yaml' | wc -l) files, $(du -sh "$M" | cut -f1)"
    # Changes within 1 s (--min-sync-period), a full re-check every 30 s
    # (--sync-period): the defaults, as deployed.
    VM_AGENT_START_TIMEOUT=600 vm_agent_start "$LOG" "${COMMON[@]}" --nftables "${NFT[@]}"
    vm_info "first sync: $(vm_agent_sync_field "$LOG" duration_ms) ms, $(vm_agent_sync_field "$LOG" operations) operations; $(ipvsadm-save -n | grep -c '^-A') virtual servers, $(ipvsadm-save -n | grep -c '^-a') real servers"
    fact AGENT_PID "$VM_AGENT_PID"
    fact START_VS "$(ipvsadm-save -n | grep -c '^-A')"
    fact START_RS "$(ipvsadm-save -n | grep -c '^-a')"
    # Every stable frontend answers before the churn starts.
    local target
    for target in "${STABLE[@]}"; do
        vm_wait_until 30 vm_in "$CLIENT" traffic loop count=1 0 2000 "$target" ||
            vm_fail "stable frontend $target answers before the churn" || return 1
    done
    vm_pass stable-frontends-answer "${#STABLE[@]} frontends"
}

# sample PID T0: one line "SECONDS_SINCE_T0 RSS_KIB FDS VMHWM_KIB" to samples.tsv.
# FDS is the fewest of five counts 50 ms apart: the agent opens each
# manifest file for a moment on every poll, and one caught open at the
# instant of a single count is not a leak (a leaked fd is in all five).
sample() {
    local pid="$1" t0="$2" rss hwm fds n
    rss="$(awk '/^VmRSS:/ { print $2 }' "/proc/$pid/status" 2>/dev/null)" || return 1
    hwm="$(awk '/^VmHWM:/ { print $2 }' "/proc/$pid/status" 2>/dev/null)" || return 1
    fds="$(ls "/proc/$pid/fd" 2>/dev/null | wc -l)"
    for _ in 2 3 4 5; do
        sleep 0.05
        n="$(ls "/proc/$pid/fd" 2>/dev/null | wc -l)"
        if ((n < fds)); then fds="$n"; fi
    done
    [[ -n $rss ]] || return 1
    printf '%s\t%s\t%s\t%s\n' "$(awk -v a="$t0" -v b="$(vm_uptime)" 'BEGIN { printf "%.1f", b - a }')" "$rss" "$fds" "$hwm" >>"$S/samples.tsv"
}

sampler() {
    local pid="$1" t0="$2" next="$2"
    while [[ ! -e $STOP ]]; do
        sample "$pid" "$t0" || return 0
        next="$(awk -v n="$next" -v s="$SAMPLE_S" 'BEGIN { print n + s }')"
        sleep "$(awk -v n="$next" -v u="$(vm_uptime)" 'BEGIN { d = n - u; print (d > 0 ? d : 0) }')"
    done
}

soak() {
    local t0 churn_status=0 hold_pid loop_pid sampler_pid syncs0
    rm -f "$STOP"
    printf 'seconds\trss_kib\tfds\tvmhwm_kib\n' >"$S/samples.tsv"
    syncs0="$(vm_agent_syncs "$LOG")"
    ip netns exec "$CLIENT" traffic hold "$STOP" 1000 "${STABLE[@]}" >"$S/hold.out" 2>&1 &
    hold_pid=$!
    ip netns exec "$CLIENT" traffic loop "until=$STOP" "$LOOP_MS" 5000 "${STABLE[@]}" >"$S/loop.out" 2>&1 &
    loop_pid=$!
    t0="$(vm_uptime)"
    sampler "$AGENT_PID" "$t0" &
    sampler_pid=$!
    vm_info "churn: $RATE changes a second for $SECONDS_CHURN s, seed $SEED; clients and sampler running"
    churn run "$M" "$SEED" "$SERVICES" "$RATE" "seconds=$SECONDS_CHURN" >"$S/churn.out" 2>&1 || churn_status=$?
    fact CHURN_WALL "$(awk -v a="$t0" -v b="$(vm_uptime)" 'BEGIN { printf "%.1f", b - a }')"
    sample "$AGENT_PID" "$t0" || true
    touch "$STOP"
    local hold_status=0 loop_status=0
    wait "$hold_pid" || hold_status=$?
    wait "$loop_pid" || loop_status=$?
    wait "$sampler_pid" || true
    fact SYNCS_DURING "$(($(vm_agent_syncs "$LOG") - syncs0))"
    cat "$S/churn.out"
    ((churn_status == 0)) || vm_fail churn-ran "exit status $churn_status" || true
    tail -n 20 "$S/hold.out"
    tail -n 20 "$S/loop.out"
    fact HOLD_STATUS "$hold_status"
    fact LOOP_STATUS "$loop_status"
    kill -0 "$AGENT_PID" 2>/dev/null || vm_fail agent-alive "the agent exited during the churn" || true
}

# The kernel against the plan, once churn has stopped: two syncs later (the
# second started after the last change was seen), within 60 s.
_table_equals_plan() {
    agent plan "${COMMON[@]}" --format ipvsadm-save | sort >"$S/plan.txt"
    ipvsadm-save -n | sort >"$S/kernel.txt"
    cmp -s "$S/plan.txt" "$S/kernel.txt"
}
_addresses() {
    agent plan "${COMMON[@]}" | sed -n '/^Addresses on kube-ipvs0:/,$p' | awk 'NR > 1 && NF { print $1 }' | sort >"$S/plan-addresses.txt"
    ip -o addr show dev kube-ipvs0 | awk '$3 == "inet" || $3 == "inet6" { sub("/.*", "", $4); print $4 }' | grep -v '^fe80' |
        sort >"$S/kernel-addresses.txt"
    cmp -s "$S/plan-addresses.txt" "$S/kernel-addresses.txt"
}
nft_addresses() {
    grep -oE '([0-9]{1,3}\.){3}[0-9]{1,3}(/[0-9]+)?' | LC_ALL=C sort -u
}
_nft_equals_plan() {
    agent plan "${COMMON[@]}" --format nft "${NFT[@]}" | nft_addresses >"$S/plan-nft.txt"
    nft list table inet svcnet | nft_addresses >"$S/kernel-nft.txt"
    cmp -s "$S/plan-nft.txt" "$S/kernel-nft.txt"
}
settle() {
    # Two syncs: the second began after the first, which began after the
    # last change at the latest (a change is seen within --min-sync-period).
    vm_agent_wait_syncs "$LOG" 2 90 || vm_info "fewer than two syncs in 90 s after the churn"
    if vm_wait_until 60 _table_equals_plan; then
        vm_pass table-equals-plan "$(grep -c '^-A' "$S/kernel.txt") virtual servers, $(grep -c '^-a' "$S/kernel.txt") real servers"
    else
        echo "--- table-equals-plan: plan (<) and ipvsadm-save -n (>), sorted"
        diff "$S/plan.txt" "$S/kernel.txt" | head -n 20
        vm_fail table-equals-plan "$(diff "$S/plan.txt" "$S/kernel.txt" | grep -c '^[<>]') lines differ" || true
    fi
    if vm_wait_until 20 _addresses; then
        vm_pass kube-ipvs0-equals-plan "$(wc -l <"$S/kernel-addresses.txt") addresses"
    else
        diff "$S/plan-addresses.txt" "$S/kernel-addresses.txt" | head -n 20
        vm_fail kube-ipvs0-equals-plan "$(diff "$S/plan-addresses.txt" "$S/kernel-addresses.txt" | grep -c '^[<>]') addresses differ" || true
    fi
    if vm_wait_until 20 _nft_equals_plan; then
        vm_pass nftables-equals-plan "$(wc -l <"$S/kernel-nft.txt") addresses in table inet svcnet"
    else
        diff "$S/plan-nft.txt" "$S/kernel-nft.txt" | head -n 20
        vm_fail nftables-equals-plan "$(diff "$S/plan-nft.txt" "$S/kernel-nft.txt" | grep -c '^[<>]') addresses differ" || true
    fi
    fact END_VS "$(grep -c '^-A' "$S/kernel.txt")"
    fact END_RS "$(grep -c '^-a' "$S/kernel.txt")"
}

# histogram_quantile Q METRIC FILE: Prometheus' histogram_quantile over the
# buckets of METRIC (summed over label sets other than le), linear within
# the bucket; in seconds.
histogram_quantile() {
    local q="$1" metric="$2" file="$3"
    awk -v q="$q" -v m="${metric}_bucket" '
        index($1, m "{") == 1 {
            le = $1; sub(/.*le="/, "", le); sub(/".*/, "", le)
            count[le] += $2; if (!(le in seen)) { seen[le] = 1; order[n++] = le }
        }
        END {
            total = count["+Inf"]
            if (total == 0) { print "null"; exit }
            rank = q * total; prev_le = 0; prev_c = 0
            for (i = 0; i < n; i++) {
                le = order[i]
                if (count[le] >= rank) {
                    if (le == "+Inf") { print prev_le; exit }
                    printf "%.4f\n", prev_le + (le - prev_le) * (rank - prev_c) / (count[le] - prev_c); exit
                }
                prev_le = le; prev_c = count[le]
            }
        }' "$file"
}

# slope FILE COLUMN FROM: least-squares slope of COLUMN against the first
# column (seconds), over rows with seconds >= FROM, per minute, and its
# standard error: "SLOPE SE" ("null null" with fewer than 3 rows). The
# VM's busybox awk has no sqrt: Newton's method.
slope() {
    awk -v c="$2" -v from="$3" 'function root(v, r, i) { if (v <= 0) return 0; r = v > 1 ? v : 1; for (i = 0; i < 100; i++) r = (r + v / r) / 2; return r }
        NR > 1 && $1 >= from { n++; x = $1 / 60; y = $c; sx += x; sy += y; sxx += x * x; sxy += x * y; syy += y * y }
        END {
            if (n < 3) { print "null null"; exit }
            xx = sxx - sx * sx / n; xy = sxy - sx * sy / n; yy = syy - sy * sy / n
            if (xx <= 0) { print "null null"; exit }
            b = xy / xx; e = (yy - b * xy) / (n - 2); if (e < 0) e = 0
            printf "%.3f %.3f\n", b + 0, root(e / xx)
        }' "$1"
}

figures() {
    # shellcheck source=/dev/null
    . "$S/facts"
    local line changes rate sync_p99 sync_count log_p99 log_max failed_ops
    vm_http_get 127.0.0.1:10249 /metrics >"$S/metrics.txt"
    line="$(grep '^changes=' "$S/churn.out" | tail -n 1)"
    [[ -n $line ]] || { vm_fail churn-summary "churn printed no counts"; return 1; }
    # changes= seconds= rate= added= removed= scaled_up= scaled_down= set_terminating= services= max_lag_ms=
    local k v
    for k in $line; do
        v="${k#*=}"
        k="${k%%=*}"
        fact "CHURN_${k^^}" "$v"
    done
    # shellcheck source=/dev/null
    . "$S/facts"
    changes="$CHURN_CHANGES"
    # The rate by this script's clock: from the start to churn's exit.
    rate="$(awk -v c="$changes" -v s="$CHURN_WALL" 'BEGIN { printf "%.1f", c / s }')"
    fact RATE_MEASURED "$rate"
    if awk -v r="$rate" -v m="$MIN_RATE" 'BEGIN { exit !(r >= m) }'; then
        vm_pass churn-rate "$changes changes in $CHURN_WALL s: $rate a second (at least $MIN_RATE)"
    else
        vm_fail churn-rate "$changes changes in $CHURN_WALL s: $rate a second, under $MIN_RATE" || true
    fi

    # Clients.
    local held broken ok failed
    held="$(sed -n 's/^hold: \([0-9]*\) held, \([0-9]*\) broken$/\1/p' "$S/hold.out")"
    broken="$(sed -n 's/^hold: \([0-9]*\) held, \([0-9]*\) broken$/\2/p' "$S/hold.out")"
    ok="$(sed -n 's/^loop: \([0-9]*\) ok, \([0-9]*\) failed$/\1/p' "$S/loop.out")"
    failed="$(sed -n 's/^loop: \([0-9]*\) ok, \([0-9]*\) failed$/\2/p' "$S/loop.out")"
    fact HELD "${held:-0}"
    fact BROKEN "${broken:-null}"
    fact LOOP_OK "${ok:-0}"
    fact LOOP_FAILED "${failed:-null}"
    if [[ $broken == 0 && $held == "${#STABLE[@]}" ]]; then
        vm_pass held-connections-unbroken "$held of ${#STABLE[@]} held through the churn"
    else
        vm_fail held-connections-unbroken "${broken:-?} broken, ${held:-?} held of ${#STABLE[@]} (hold exit $HOLD_STATUS)" || true
    fi
    if [[ $failed == 0 && ${ok:-0} -gt 0 ]]; then
        vm_pass new-connections-all-succeed "$ok new connections to the stable frontends, 0 failed"
    else
        vm_fail new-connections-all-succeed "${failed:-?} of $((${ok:-0} + ${failed:-0})) failed (loop exit $LOOP_STATUS)" || true
    fi

    # Syncs: kube-proxy's histogram (1 ms doubling to 16 s) for p99 over
    # the agent's life, and the exact durations of the syncs logged during
    # the churn.
    sync_p99="$(histogram_quantile 0.99 kubeproxy_sync_proxy_rules_duration_seconds "$S/metrics.txt")"
    sync_count="$(awk '$1 ~ /^kubeproxy_sync_proxy_rules_duration_seconds_count/ { s += $2 } END { print s + 0 }' "$S/metrics.txt")"
    fact SYNC_FULL_P99_S "$(histogram_quantile 0.99 kubeproxy_sync_full_proxy_rules_duration_seconds "$S/metrics.txt")"
    fact SYNC_PARTIAL_P99_S "$(histogram_quantile 0.99 kubeproxy_sync_partial_proxy_rules_duration_seconds "$S/metrics.txt")"
    fact SYNC_P50_S "$(histogram_quantile 0.5 kubeproxy_sync_proxy_rules_duration_seconds "$S/metrics.txt")"
    vm_agent_log "$LOG" | grep 'sync complete' | sed -n "2,\$s/.*duration_ms=\([0-9.]*\).*/\1/p" | sort -g >"$S/durations.txt"
    log_p99="$(awk '{ v[NR] = $1 } END { if (NR == 0) print "null"; else { i = int(NR * 0.99); if (i < NR * 0.99) i++; print v[i] } }' "$S/durations.txt")"
    log_max="$(tail -n 1 "$S/durations.txt")"
    failed_ops="$(vm_agent_log "$LOG" | grep 'sync complete' | sed -n 's/.*[[:space:]]failed=\([0-9]*\).*/\1/p' | awk '{ s += $1 } END { print s + 0 }')"
    fact SYNC_P99_S "$sync_p99"
    fact SYNC_COUNT "$sync_count"
    # Polls whose manifests were refused (the previous state kept): the
    # agent's counter (consecutive identical errors count once) and the
    # exact number from its log; and the polls applied.
    fact MANIFEST_ERRORS "$(awk '$1 == "ipvs_agent_manifest_errors_total" { print $2 }' "$S/metrics.txt")"
    fact MANIFEST_REFUSED "$(vm_agent_log "$LOG" | grep -c 'manifests not applied' || true)"
    fact MANIFEST_APPLIED "$(vm_agent_log "$LOG" | grep -c 'manifests applied' || true)"
    fact SYNC_LOG_P99_MS "$log_p99"
    fact SYNC_LOG_MAX_MS "$log_max"
    fact SYNC_LOG_COUNT "$(wc -l <"$S/durations.txt")"
    fact FAILED_OPS "$failed_ops"
    # shellcheck source=/dev/null
    . "$S/facts"
    vm_info "syncs: $sync_count, p99 ${sync_p99} s (kubeproxy_sync_proxy_rules_duration_seconds), p99 ${log_p99} ms and max ${log_max} ms (logged, after the first)"
    vm_info "manifest polls: $MANIFEST_APPLIED applied, $MANIFEST_REFUSED refused (the previous state kept; ipvs_agent_manifest_errors_total $MANIFEST_ERRORS)"
    vm_check_eq sync-operations-all-succeeded 0 "$failed_ops" || true

    # Memory and fds.
    local rss_slope rss_se fd_slope fd_se hwm_slope hwm_warm hwm_last from first_fd last_fd
    from="$WARMUP_S"
    local fit
    fit="$(slope "$S/samples.tsv" 2 "$from")"
    rss_slope="${fit% *}" rss_se="${fit#* }"
    fit="$(slope "$S/samples.tsv" 3 "$from")"
    fd_slope="${fit% *}" fd_se="${fit#* }"
    fit="$(slope "$S/samples.tsv" 4 "$from")"
    hwm_slope="${fit% *}"
    first_fd="$(awk -v f="$from" 'NR > 1 && $1 >= f { print $3; exit }' "$S/samples.tsv")"
    last_fd="$(tail -n 1 "$S/samples.tsv" | cut -f3)"
    fact RSS_SLOPE "$rss_slope"
    fact FD_SLOPE "$fd_slope"
    fact RSS_SLOPE_SE "$rss_se"
    fact FD_SLOPE_SE "$fd_se"
    fact HWM_SLOPE "$hwm_slope"
    hwm_warm="$(awk -v f="$from" 'NR > 1 && $1 >= f { print $4; exit }' "$S/samples.tsv")"
    hwm_last="$(tail -n 1 "$S/samples.tsv" | cut -f4)"
    fact HWM_WARM "$hwm_warm"
    fact HWM_LAST "$hwm_last"
    fact SAMPLES "$(($(wc -l <"$S/samples.tsv") - 1))"
    fact RSS_FIRST "$(awk 'NR == 2 { print $2 }' "$S/samples.tsv")"
    fact RSS_LAST "$(tail -n 1 "$S/samples.tsv" | cut -f2)"
    fact RSS_MAX "$(awk 'NR > 1 && $2 > m { m = $2 } END { print m }' "$S/samples.tsv")"
    fact FD_FIRST "$first_fd"
    fact FD_LAST "$last_fd"
    fact FD_MAX "$(awk 'NR > 1 && $3 > m { m = $3 } END { print m }' "$S/samples.tsv")"
    fact VMHWM "$(awk '/^VmHWM:/ { print $2 }' "/proc/$AGENT_PID/status")"
    # RSS moves by megabytes from one sample to the next (the allocator
    # keeps and returns pages as it likes), so the slope fails only when it
    # is above the bound by more than twice its standard error. A short run
    # bounds the peak's rise instead (see the header).
    fact RSS_GROWTH_MAX "${RSS_GROWTH_MAX:-null}"
    if [[ -n $RSS_GROWTH_MAX ]]; then
        if [[ $hwm_warm =~ ^[0-9]+$ && $hwm_last =~ ^[0-9]+$ ]] && ((hwm_last - hwm_warm <= RSS_GROWTH_MAX)); then
            vm_pass rss-peak-bounded "VmHWM $hwm_warm -> $hwm_last KiB after ${from} s: $((hwm_last - hwm_warm)) KiB more (at most $RSS_GROWTH_MAX)"
        else
            vm_fail rss-peak-bounded "VmHWM ${hwm_warm:-?} -> ${hwm_last:-?} KiB after ${from} s (at most $RSS_GROWTH_MAX KiB more)" || true
        fi
    elif [[ $rss_slope != null ]] && awk -v s="$rss_slope" -v e="$rss_se" -v m="$RSS_SLOPE_MAX" 'BEGIN { exit !(s - 2 * e <= m) }'; then
        vm_pass rss-flat "slope $rss_slope +- $rss_se KiB/min after ${from} s (at most $RSS_SLOPE_MAX beyond twice its error)"
    else
        vm_fail rss-flat "slope $rss_slope +- $rss_se KiB/min after ${from} s (at most $RSS_SLOPE_MAX beyond twice its error)" || true
    fi
    if [[ $fd_slope != null ]] && awk -v s="$fd_slope" -v m="$FD_SLOPE_MAX" -v a="$first_fd" -v b="$last_fd" \
        'BEGIN { exit !(s <= m && b <= a + 2) }'; then
        vm_pass fds-flat "slope $fd_slope fds/min after ${from} s (at most $FD_SLOPE_MAX); $first_fd then $last_fd"
    else
        vm_fail fds-flat "slope $fd_slope fds/min after ${from} s (at most $FD_SLOPE_MAX); $first_fd then $last_fd (at most 2 more)" || true
    fi
    fact KERNEL "$(uname -r)"
    fact VM_CPUS "$(nproc)"
    fact VM_MEM_MIB "$(awk '/MemTotal/ { print int($2 / 1024) }' /proc/meminfo)"
    fact SOAK_SECONDS "$SECONDS_CHURN"
    fact SOAK_RATE "$RATE"
    fact SOAK_SEED "$SEED"
    fact SOAK_SERVICES "$SERVICES"
    fact WARMUP_S "$WARMUP_S"
    fact SAMPLE_S "$SAMPLE_S"
    fact LOOP_MS "$LOOP_MS"
    fact RSS_SLOPE_MAX "$RSS_SLOPE_MAX"
    fact FD_SLOPE_MAX "$FD_SLOPE_MAX"
    # shellcheck source=/dev/null
    . "$S/facts"
    vm_info "RSS $RSS_FIRST -> $RSS_LAST KiB (max $RSS_MAX), slope $rss_slope +- $rss_se KiB/min; VmHWM $HWM_WARM -> $HWM_LAST KiB after warm-up, slope $hwm_slope KiB/min; fds $FD_FIRST -> $FD_LAST, slope $fd_slope +- $fd_se /min"
}

report() {
    vm_export results.env "$S/facts"
    vm_export samples.tsv "$S/samples.tsv"
    vm_export churn.out "$S/churn.out"
    vm_export metrics.txt "$S/metrics.txt"
    { grep -v '^held \|^failed ' "$S/hold.out"; grep '^broken ' "$S/hold.out"; } >"$S/clients.txt" || true
    head -n 50 "$S/loop.out" >>"$S/clients.txt"
    vm_export clients.txt "$S/clients.txt"
    vm_agent_log "$LOG" | grep -v 'sync complete' | tail -n 100 >"$S/agent-tail.log"
    vm_export agent-tail.log "$S/agent-tail.log"
    # Every sync's log line (time, duration, operations), to set beside
    # the RSS samples.
    vm_agent_log "$LOG" | grep 'sync complete' >"$S/syncs.log" || true
    vm_export syncs.log "$S/syncs.log"
}

: >"$S/facts"
vm_scenario setup setup
# shellcheck source=/dev/null # written by setup
. "$S/facts"
vm_scenario soak soak
vm_scenario settle settle
vm_scenario figures figures
vm_scenario report report
vm_finish
