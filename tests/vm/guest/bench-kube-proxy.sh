#!/usr/bin/env bash
# The VM half of tests/vm/bench-kube-proxy.sh (see there): the real
# kube-proxy (IPVS mode) and ipvs-agent (API mode), one after the other, each
# in a fresh network namespace shaped like node-a, against the same apiserver
# holding N Services x 10 endpoints. For each it measures:
#   - start to the default/kubernetes virtual server (polled every 0.1 s),
#     and to the complete table (every virtual server and real server,
#     counted in /proc/net/ip_vs; read only once a sample of eight Services
#     has its real servers, then every 0.2 s after each reading: see
#     sample_complete);
#   - one periodic sync with nothing changed (kubeproxy_sync_proxy_rules_
#     duration_seconds, which both serve under that name: the growth of its
#     sum over the growth of its count);
#   - network programming latency of UPDATES EndpointSlice updates, one
#     PATCH a second (plain HTTP through `kubectl proxy` on the host), each
#     timed from just before its PATCH until `ipvsadm` shows its new real
#     server (updates_timed);
#   - CPU seconds (user + system) and maximum RSS of the process;
#   - the rules beside IPVS: kube-proxy's ipsets and iptables rules for the
#     complete table, saved and restored from empty into a fresh namespace
#     (`ipset restore`, `iptables-restore`, `ip6tables-restore`), timed; the
#     agent's table inet svcnet from its log: the nf_tables transaction
#     after the first full sync (from empty) and those after the updates,
#     beside the durations of its IPVS syncs.
# Results go out as /run/bench.json (vm_export bench-N.json).
#
# Environment (run.sh's VM_APPEND): SVCNET_API_PORT, SVCNET_PROXY_PORT (the
# host's `kubectl proxy`), SVCNET_BENCH_N, SVCNET_BENCH_UPDATES,
# SVCNET_BENCH_TOOLS ("kube-proxy,svcnet" unless set: which tools to run),
# SVCNET_BENCH_UPDATE_INTERVAL_MS (1000).
# Each tool's log goes out too (vm_export TOOL-N.log).
# Files: /data/kubeconfig, /data/bench-vips (service name and ClusterIP per
# line, the Services the updates change), /data/bench-gate (the same for
# the sample sample_complete looks at).
. /vm/lib.sh
set -u

API_PORT="${SVCNET_API_PORT:?}"
PROXY_PORT="${SVCNET_PROXY_PORT:?}"
N="${SVCNET_BENCH_N:?}"
UPDATES="${SVCNET_BENCH_UPDATES:-200}"
TOOLS=",${SVCNET_BENCH_TOOLS:-kube-proxy,svcnet},"
NODE_IP4=192.168.56.10
FULL_TIMEOUT="${SVCNET_BENCH_FULL_TIMEOUT:-3000}"
# How long kube-proxy's ipsets and iptables rules may take after its IPVS table.
RULES_TIMEOUT="${SVCNET_BENCH_RULES_TIMEOUT:-900}"
# How long one update may take to reach the kernel before it counts as missed.
UPDATE_TIMEOUT=60
# One EndpointSlice update every this many ms.
UPDATE_INTERVAL_MS="${SVCNET_BENCH_UPDATE_INTERVAL_MS:-1000}"

vm_kube_prepare "$API_PORT" || vm_finish

now() { cut -d' ' -f1 /proc/uptime; }
# The wall clock's second edge against the uptime, to place a log line's
# time (UTC, to the microsecond) on the uptime scale the figures use
# (busybox's date has no fractions of a second): EDGE_UP is the uptime at
# which the UTC time of day was EDGE_SOD seconds.
edge_second=$(date +%s)
while [[ $(date +%s) == "$edge_second" ]]; do :; done
read -r EDGE_UP _ </proc/uptime
EDGE_SOD=$(($(date -u +%s) % 86400))
# log_uptime LINE-TIME: a log line's time (2026-11-27T20:41:01.460889Z) on
# the uptime scale.
log_uptime() {
    awk -v t="$1" -v up="$EDGE_UP" -v sod="$EDGE_SOD" 'BEGIN {
        s = substr(t, 12, 2) * 3600 + substr(t, 15, 2) * 60 + substr(t, 18, 9)
        d = s - sod; if (d < -43200) d += 86400; if (d > 43200) d -= 86400
        printf "%.2f\n", up + d }'
}
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }

# counts NS: "virtual-servers real-servers", from /proc/net/ip_vs (one read
# of the kernel's table: ipvsadm-save asks for each virtual server's real
# servers in turn, which at 5,000 Services takes seconds of the emulated CPU
# the tool under test needs, and delays every reading by as much). Only
# while no other namespace holds virtual servers: on 6.1 the file then
# lists a namespace's table in part (511 of 1,001), so each phase clears its
# table when done, and a complete count is confirmed by counts_exact.
# The file is copied by dd and its lines counted by grep: awk's regular
# expressions cost the emulated CPU more than grep's; measured in the VM at
# 5,000 Services, `cat | awk` took 1.4 s of CPU a reading, this takes 0.4
# s. Whatever the reader's buffer, the kernel hands the file out about a
# page per read() and, for each, walks its table again from the start to
# where it left off, so a reading costs more than the table's size: it is
# made only once a sample of the table is complete (sample_complete).
# The polling loop reads (read_table) and takes the time before it counts
# (counted), so a complete table's time is that of the read that saw it.
counts() {
    read_table "$1"
    counted
}
read_table() { in_ns "$1" dd if=/proc/net/ip_vs bs=64M status=none >/run/ip_vs.txt; }
counted() { echo "$(grep -cE '^(TCP|UDP|SCTP) ' /run/ip_vs.txt) $(grep -c '^  -> [0-9A-F[]' /run/ip_vs.txt)"; }

# sample_complete NS: whether every Service of the sample (/data/bench-gate:
# the last four in the apiserver's order of names and four spread over it)
# has its 10 real servers in NS, asking `ipvsadm -Ln -t` for one at a time
# and stopping at the first that has not; one that has is not asked again
# (the table only grows while a tool starts). Reading the whole table costs
# the emulated CPU 0.2 to 0.4 s at 5,000 Services (the kernel walks its
# table again for each page of the file), taken from the tool under test,
# and a reading that began just before the table was complete sees it only
# at the next one: measured at 5,000 Services before this sample, the agent
# alone had its table complete 4.1 s before the polling saw it. The sample
# costs one process most times, and the whole table is read only once it
# is complete, so near the end; the time is still that of the reading that
# saw the whole table.
sample_pending=()
sample_complete() {
    while ((${#sample_pending[@]})); do
        [[ $(real_servers "$1" "${sample_pending[0]}:80") == 10 ]] || return 1
        sample_pending=("${sample_pending[@]:1}")
    done
}

# in_ns NS COMMAND...: COMMAND in the network namespace NS. The probes
# run dozens of times a second while a tool starts, so they enter the
# namespace with busybox's nsenter, not `ip netns exec`: measured with perf
# in the VM at 5,000 Services, `ip` (dynamically linked, and remounting
# /sys for each command) took 6 % of both vCPUs while the agent started.
# `ip netns add` makes /run/netns/NS (/var/run is /run here).
in_ns() {
    local ns="$1"
    shift
    nsenter --net="/run/netns/$ns" "$@"
}

# real_servers NS VIP:PORT: how many real servers `ipvsadm -Ln -t` lists
# for the virtual server (0 when it has none or is missing), counted by bash
# rather than by another process.
real_servers() {
    local line n=0
    while IFS= read -r line; do
        [[ $line == "  -> "[0-9A-F[]* ]] && n=$((n + 1))
    done < <(in_ns "$1" ipvsadm -Ln -t "$2" 2>/dev/null)
    echo "$n"
}

# counts_exact NS: the same from ipvsadm-save (slow, exact).
counts_exact() {
    ip netns exec "$1" ipvsadm-save -n | awk '/^-A/ { a++ } /^-a/ { r++ } END { print a + 0, r + 0 }'
}

# sync_totals NS PORT: "sum count" of kubeproxy_sync_proxy_rules_duration_
# seconds (IPv4) from one scrape of /metrics; nothing when unreadable. A
# process busy syncing in the emulated CPU can take longer than vm_http_get's
# 5 s to answer, so this one waits up to 30 s.
sync_totals() {
    printf 'GET /metrics HTTP/1.0\r\nHost: 127.0.0.1:%s\r\n\r\n' "$2" |
        ip netns exec "$1" timeout 30 socat -t 30 - "TCP:127.0.0.1:$2,shut-none" 2>/dev/null | tr -d '\r' |
        awk '$1 == "kubeproxy_sync_proxy_rules_duration_seconds_sum{ip_family=\"IPv4\"}" { s = $2 }
             $1 == "kubeproxy_sync_proxy_rules_duration_seconds_count{ip_family=\"IPv4\"}" { c = $2 }
             END { if (c != "" && s != "") print s, c }'
}

# cpu_rss PID: "cpu-seconds max-rss-kib".
cpu_rss() {
    local ticks rss
    ticks="$(awk '{ print $14 + $15 }' "/proc/$1/stat")"
    rss="$(awk '/^VmHWM:/ { print $2 }' "/proc/$1/status")"
    echo "$(awk -v t="$ticks" 'BEGIN { printf "%.2f", t / 100 }') $rss"
}

# kube_proxy_rules NS START: kube-proxy's ipsets and iptables rules in NS,
# once its KUBE-CLUSTER-IP set holds every ClusterIP and KUBE-SERVICES
# matches it (kube-proxy writes them after the IPVS table, its ipset
# entries one `ipset add` at a time; RULES_TIMEOUT s at most), saved, then
# restored into a fresh namespace, timed: "complete-seconds restore-seconds
# ipset-entries iptables-rules", the first two null when the rules were not
# complete in time (or a restore failed).
kube_proxy_rules() {
    local deadline=$((SECONDS + RULES_TIMEOUT)) entries complete=null took=null t0 t1
    while ((SECONDS < deadline)); do
        entries="$(ip netns exec "$1" ipset list -t KUBE-CLUSTER-IP 2>/dev/null | awk '/^Number of entries:/ { print $4 }')"
        if ((${entries:-0} >= N + 1)) &&
            ip netns exec "$1" iptables -t nat -S KUBE-SERVICES 2>/dev/null | grep -q 'KUBE-CLUSTER-IP'; then
            complete="$(elapsed "$2" "$(now)")"
            break
        fi
        sleep 1
    done
    ip netns exec "$1" ipset save >/run/kp.ipset
    ip netns exec "$1" iptables-save >/run/kp.iptables
    ip netns exec "$1" ip6tables-save >/run/kp.ip6tables
    if [[ $complete != null ]]; then
        ip netns add kp-restore
        t0="$(now)"
        if ip netns exec kp-restore ipset restore </run/kp.ipset &&
            ip netns exec kp-restore iptables-restore </run/kp.iptables &&
            ip netns exec kp-restore ip6tables-restore </run/kp.ip6tables; then
            t1="$(now)"
            took="$(elapsed "$t0" "$t1")"
        fi
        ip netns exec kp-restore sh -c 'for t in iptables ip6tables; do $t -t nat -F; $t -t nat -X; $t -F; $t -X; done; ipset destroy' 2>/dev/null
        ip netns del kp-restore
    fi
    echo "$complete $took $(grep -c '^add ' /run/kp.ipset) $(cat /run/kp.iptables /run/kp.ip6tables | grep -c '^-A')"
}

# svcnet_log_figures LOG: from the agent's log, "first-nft-ms syncs-ms
# update-nft-ms-list update-sync-ms-list first-nft-at k8s-after-list":
# the first nf_tables transaction (after the first full sync, from empty),
# the IPVS syncs before it summed, the transactions and syncs after it
# (comma-separated, "-" when none), the seconds from the log's first line
# to the first transaction's, and the seconds from the agent's first list
# request (its read of default/kubernetes on its own, the log line that
# says so) to the end of the sync that programmed it (the first "sync
# complete" after "read on its own"): issue 13's "within one second of the
# first list". "null" for a figure the log has not.
svcnet_log_figures() {
    sed -e 's/\x1b\[[0-9;]*m//g' "$1" | awk '
        function ms(   m) { match($0, /duration_ms=[0-9]+/); return substr($0, RSTART + 12, RLENGTH - 12) + 0 }
        function at(   t) { t = substr($1, 12, 15); return substr(t, 1, 2) * 3600 + substr(t, 4, 2) * 60 + substr(t, 7) }
        NR == 1 { start = at() }
        /reading default\/kubernetes and its EndpointSlices on their own/ && began == "" { began = at() }
        /default\/kubernetes read on its own/ { read = 1 }
        /sync complete/ && read && began != "" && done == "" { done = at() }
        /nftables table inet svcnet synced/ { if (first == "") { first = ms(); first_at = at() - start } else nft = nft (nft == "" ? "" : ",") ms(); next }
        /sync complete/ { if (first == "") syncs += ms(); else upd = upd (upd == "" ? "" : ",") ms() }
        END { printf "%s %d %s %s %s %s\n", (first == "" ? "null" : first), syncs, (nft == "" ? "-" : nft), (upd == "" ? "-" : upd),
              (first == "" ? "null" : sprintf("%.2f", first_at)), (began == "" || done == "" ? "null" : sprintf("%.2f", done - began)) }'
}

# patch_slice SERVICE FIRST-IP: the slice's first endpoint becomes FIRST-IP
# (the other nine stay); 0 when the apiserver said 200.
patch_slice() {
    local svc="$1" ip="$2" body eps k base
    local i="${svc#svc-}"
    base=$(( (10 << 24) | (128 << 16) ))
    eps="{\"addresses\":[\"$ip\"],\"conditions\":{\"ready\":true},\"nodeName\":\"node-b\"}"
    for ((k = 1; k < 10; k++)); do
        local a=$((base + i * 10 + k))
        eps+=",{\"addresses\":[\"$((a >> 24 & 255)).$((a >> 16 & 255)).$((a >> 8 & 255)).$((a & 255))\"],\"conditions\":{\"ready\":true},\"nodeName\":\"node-b\"}"
    done
    body="{\"endpoints\":[$eps]}"
    printf 'PATCH /apis/discovery.k8s.io/v1/namespaces/bench/endpointslices/%s-1 HTTP/1.0\r\nHost: localhost\r\nContent-Type: application/merge-patch+json\r\nContent-Length: %d\r\n\r\n%s' \
        "$svc" "${#body}" "$body" | timeout 30 socat -t 30 - "TCP:10.0.2.2:$PROXY_PORT,shut-none" >/run/patch.out 2>&1
    head -n 1 /run/patch.out | grep -q ' 200 '
}

# uptime_ms: the VM's uptime in ms, without starting a process (the
# probes below run every 20 ms beside the tool under test).
uptime_ms() {
    local up
    read -r up _ </proc/uptime
    echo $((10#${up/./} * 10))
}

# updates_timed TOOL NS OCTET: the network programming latency of UPDATES
# EndpointSlice updates, one PATCH every UPDATE_INTERVAL_MS: each is timed
# on its own, from just before its PATCH until `ipvsadm -Ln -t VIP` in NS
# shows its new real server (10.OCTET.x.y), checked every 20 ms for every
# update not yet seen. Updates keep coming at that pace whether or not the
# earlier ones are in, as changes reach a proxy in a cluster. Seconds go to
# /run/TOOL.latencies, one per line; sets j (PATCHes sent) and missed
# (not seen within UPDATE_TIMEOUT s).
updates_timed() {
    local tool="$1" ns="$2" octet="$3" svc vip ip k t next
    local -a lines=() sent=() vips=() ips=() pending=() still=()
    mapfile -t lines < <(head -n "$UPDATES" /data/bench-vips)
    : >"/run/$tool.latencies"
    j=0 missed=0
    next="$(uptime_ms)"
    while ((j < ${#lines[@]} || ${#pending[@]} > 0)); do
        t="$(uptime_ms)"
        if ((j < ${#lines[@]} && t >= next)); then
            read -r svc vip <<<"${lines[j]}"
            j=$((j + 1))
            next=$((next + UPDATE_INTERVAL_MS))
            ip="10.$octet.$((j / 256)).$((j % 256))"
            if patch_slice "$svc" "$ip"; then
                sent[j]=$t vips[j]=$vip ips[j]=$ip
                pending+=("$j")
            else
                vm_fail "$tool: update $svc" "the PATCH got: $(head -n 1 /run/patch.out | tr -d '\r')" || true
            fi
        fi
        still=()
        for k in "${pending[@]}"; do
            if in_ns "$ns" ipvsadm -Ln -t "${vips[k]}:80" 2>/dev/null | grep -q " ${ips[k]}:8080 "; then
                t="$(uptime_ms)"
                awk -v ms=$((t - sent[k])) 'BEGIN { printf "%.2f\n", ms / 1000 }' >>"/run/$tool.latencies"
                ((k % 20 == 0)) && vm_info "$tool: update $k of $UPDATES in the kernel $(tail -n 1 "/run/$tool.latencies") s after its PATCH"
            elif (($(uptime_ms) - sent[k] > UPDATE_TIMEOUT * 1000)); then
                missed=$((missed + 1))
            else
                still+=("$k")
            fi
        done
        pending=("${still[@]}")
        sleep 0.02
    done
    if ((missed)); then
        vm_fail "$tool: every update programmed" "$missed updates not seen in the kernel within ${UPDATE_TIMEOUT} s" || true
    fi
}

# phase TOOL SECOND-OCTET METRICS-PORT CMD...: one tool from start to stop;
# appends its JSON object to /run/bench.json.
phase() {
    local tool="$1" octet="$2" mport="$3"
    local ns="bench-$tool"
    shift 3
    vm_kube_node "$ns" "$NODE_IP4"
    local start t_k8s="" t_full="" t_read c pid
    start="$(now)"
    ip netns exec "$ns" "$@" >"/run/$tool.log" 2>&1 &
    pid=$!
    echo "$pid" >>"$VM_STATE/pids"
    local deadline=$((SECONDS + FULL_TIMEOUT))
    mapfile -t sample_pending < <(awk '{ print $2 }' /data/bench-gate)
    while ((SECONDS < deadline)); do
        # Until `kubernetes` is there (the table cannot be complete without
        # it), only it is looked for, every 0.1 s.
        if [[ -z $t_k8s ]]; then
            if in_ns "$ns" ipvsadm -Ln -t 10.96.0.1:443 >/dev/null 2>&1; then
                t_k8s="$(elapsed "$start" "$(now)")"
            else
                kill -0 "$pid" 2>/dev/null || break
                sleep 0.1
                continue
            fi
        fi
        if ! sample_complete "$ns"; then
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.2
            continue
        fi
        read_table "$ns"
        t_read="$(elapsed "$start" "$(now)")"
        # Fewer lines than a complete table has (three headings, then one
        # per virtual and per real server): not complete, and not worth
        # the two greps over it.
        if (($(wc -l </run/ip_vs.txt) < 3 + (N + 1) + (10 * N + 1))); then
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.2
            continue
        fi
        c="$(counted)"
        if [[ $c == "$((N + 1)) $((10 * N + 1))" ]]; then
            t_full="$t_read"
            c="$(counts_exact "$ns")"
            if [[ $c != "$((N + 1)) $((10 * N + 1))" ]]; then
                vm_info "$tool: /proc/net/ip_vs counted a complete table, ipvsadm-save $c; polling on"
                t_full=""
                continue
            fi
            break
        fi
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.2
    done
    if [[ -z $t_full ]]; then
        vm_fail "$tool: complete table" "after ${FULL_TIMEOUT} s: $(counts "$ns") of $((N + 1)) $((10 * N + 1)); log: $(tail -n 3 "/run/$tool.log")" || true
        kill "$pid" 2>/dev/null
        wait "$pid" 2>/dev/null
        ip netns exec "$ns" ipvsadm -C
        ip -n "$ns" link del kube-ipvs0 2>/dev/null || true
        vm_export "$tool-$N.log" "/run/$tool.log"
        return 1
    fi
    vm_pass "$tool: complete table" "$t_full s; default/kubernetes at $t_k8s s"
    local rules=""
    if [[ $tool == kube-proxy ]]; then
        local complete restore entries nrules
        read -r complete restore entries nrules < <(kube_proxy_rules "$ns" "$start")
        rules=",\"rulesCompleteSeconds\":$complete,\"rulesRestoreSeconds\":$restore,\"ipsetEntries\":$entries,\"iptablesRules\":$nrules"
        cat /run/kp.ipset /run/kp.iptables /run/kp.ip6tables >/run/kp.rules
        vm_export "kube-proxy-rules-$N.txt" /run/kp.rules
        if [[ $complete == null ]]; then
            vm_info "kube-proxy: its rules were not complete ${RULES_TIMEOUT} s after its IPVS table ($entries ipset entries, $nrules iptables rules): not restored"
        else
            vm_info "kube-proxy: its rules complete at $complete s; their $entries ipset entries and $nrules iptables rules restored from empty in ${restore} s"
        fi
    fi

    # One periodic sync with nothing changed: the first readable totals,
    # then the next ones with a higher count.
    local totals sum count sum0="" count0="" idle=""
    deadline=$((SECONDS + 150))
    while ((SECONDS < deadline)); do
        totals="$(sync_totals "$ns" "$mport")"
        if [[ -n $totals ]]; then
            read -r sum count <<<"$totals"
            if [[ -z $count0 ]]; then
                sum0=$sum count0=$count
            elif awk -v a="$count" -v b="$count0" 'BEGIN { exit !(a > b) }'; then
                idle="$(awk -v a="$sum0" -v b="$sum" -v c="$count0" -v d="$count" 'BEGIN { printf "%.4f", (b - a) / (d - c) }')"
                break
            fi
        fi
        sleep 2
    done
    [[ -n $idle ]] || vm_fail "$tool: a sync with no change" \
        "no sync counted in 150 s (${count0:+the count stayed at $count0}${count0:-its /metrics never answered})" || true

    # Network programming latency.
    updates_timed "$tool" "$ns" "$octet"
    local p50 p99
    read -r p50 p99 < <(sort -n "/run/$tool.latencies" | awk '{ v[NR] = $1 } END {
        i50 = int(NR * 0.50 + 0.999); i99 = int(NR * 0.99 + 0.999); print v[i50], v[i99] }')
    vm_pass "$tool: $UPDATES updates" "p50 $p50 s, p99 $p99 s"

    if [[ $tool == svcnet ]]; then
        local first syncs nft upd first_at after_list
        read -r first syncs nft upd first_at after_list < <(svcnet_log_figures "/run/$tool.log")
        # The log's first line placed on the uptime scale: the process's
        # own start (before it logs anything), and the nftables table's
        # time from the start rather than from that line.
        local first_line startup
        first_line="$(log_uptime "$(sed -e 's/\x1b\[[0-9;]*m//g' "/run/$tool.log" | awk 'NR == 1 { print $1 }')")"
        startup="$(elapsed "$start" "$first_line")"
        [[ $first_at == null ]] || first_at="$(awk -v a="$startup" -v b="$first_at" 'BEGIN { printf "%.2f", a + b }')"
        rules=",\"startToFirstLogLineSeconds\":$startup,\"kubernetesAfterFirstListSeconds\":$after_list,\"nftFromEmptyMs\":$first,\"syncsFromEmptyMs\":$syncs,\"nftAfterUpdatesMs\":[${nft//-/}],\"syncsAfterUpdatesMs\":[${upd//-/}],\"rulesCompleteSeconds\":$first_at"
        vm_info "svcnet: its first log line $startup s after its start; default/kubernetes programmed $after_list s after its first list request"
        vm_info "svcnet: table inet svcnet from empty in $first ms, $first_at s after its start (its IPVS syncs until then: $syncs ms)"
    fi
    local cpu rss
    read -r cpu rss < <(cpu_rss "$pid")
    kill "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    ip netns exec "$ns" ipvsadm -C
    # Its addresses go too, so the next tool starts on a kernel as clean as
    # the first did: this kernel keeps every namespace's IPv4 addresses in
    # one table, and its address-lifetime check, run by a kernel worker
    # after each address bound, walks all of them, the N left behind too.
    ip -n "$ns" link del kube-ipvs0 2>/dev/null || true
    vm_export "$tool-$N.log" "/run/$tool.log"
    printf '{"tool":"%s","services":%d,"kubernetesSeconds":%s,"completeSeconds":%s,"idleSyncSeconds":%s,"updates":%d,"updatesTried":%d,"updateTimeoutSeconds":%d,"latenciesSeconds":[%s],"latencyP50Seconds":%s,"latencyP99Seconds":%s,"cpuSeconds":%s,"maxRssKiB":%s%s}\n' \
        "$tool" "$N" "$t_k8s" "$t_full" "${idle:-null}" "$(wc -l <"/run/$tool.latencies")" "$j" "$UPDATE_TIMEOUT" \
        "$(paste -sd, "/run/$tool.latencies")" "${p50:-null}" "${p99:-null}" "$cpu" "$rss" "$rules" >>/run/bench.json
    vm_info "$tool: cpu ${cpu} s, max RSS ${rss} KiB"
}

: >/run/bench.json
# The kernel's random pool is not ready this early in the VM's life (the
# emulated CPU has no RDRAND, the VM no virtio-rng), and the first process
# that asks for random bytes waits for it: a read of /dev/random 4 s after
# boot took 1,044 ms, the next one 15 ms. Both tools ask (TLS), so the wait
# happens here, before either is timed; it made the agent's first log line
# come 1.5 s after its start in runs of it alone, against 0.4 to 0.5 s for
# a later start in the same VM.
t0="$(now)"
head -c 1 /dev/random >/dev/null
vm_info "the kernel's random pool ready after $(elapsed "$t0" "$(now)") s"
vm_info "N=$N Services x 10 endpoints; kube-proxy $(kube-proxy --version 2>&1)"
[[ $TOOLS != *,kube-proxy,* ]] ||
phase kube-proxy 245 10249 kube-proxy --proxy-mode=ipvs --kubeconfig /run/kubeconfig-node \
    --hostname-override node-a --cluster-cidr 10.244.0.0/16 --conntrack-max-per-core=0 \
    --metrics-bind-address 127.0.0.1:10249 --healthz-bind-address 127.0.0.1:10256
# svcnet keeps its nftables table (the default), as kube-proxy's sync
# programs its iptables and ipset rules with the IPVS table.
[[ $TOOLS != *,svcnet,* ]] ||
phase svcnet 246 10249 env NO_COLOR=1 ipvs-agent run --kubeconfig /run/kubeconfig-node \
    --hostname-override node-a --metrics-bind-address 127.0.0.1:10249 --healthz-bind-address 127.0.0.1:10256 \
    --nftables --cluster-cidr 10.244.0.0/16
vm_export "bench-$N.json" /run/bench.json
vm_finish
