#!/usr/bin/env bash
# End-to-end suite of ipvs-agent in a real kernel (issue 4, "How it is
# tested"): the agent programs IPVS for examples/ and real traffic goes
# through it. Run it with `make vm-agent`, or
#   tests/vm/run.sh tests/vm/agent.sh target/release/ipvs-agent \
#       examples:/examples tests/vm/manifests:/vm-manifests
#
# The VM's root namespace is node-a (192.168.0.10, as in examples/pods.yaml);
# each pod of the examples is a namespace with its IP, answering with its
# name: web-1 10.244.1.11 and web-2 10.244.1.12 (TCP 8080), coredns-1
# 10.244.1.5 (UDP and TCP 53). A client namespace sends the requests.
#
# Scenarios (one PASS/FAIL line each, plus their checks):
#   a  run --once: ipvsadm-save -n equals plan --format ipvsadm-save, and
#      the addresses on kube-ipvs0 equal the plan's
#   b  rules loaded with ipvsadm -R are adopted: the next sync does nothing
#   c  traffic: a ClusterIP reaches every backend (TCP and UDP); a NodePort
#   d  a pod removed during an open connection: weight 0, the connection
#      lives on, the real server goes once the connection is closed
#   e  the agent restarted during an open connection: it lives on, no changes
#   f  a virtual server deleted by hand comes back within the sync period
#   h  a bad manifest: reported with file and field, the rules stay
#   http  /healthz, /livez and /metrics (svcnet's and kube-proxy's names);
#         svcnet_nftables_available, and without nf_tables one warning
#   g  a foreign virtual server is left alone, by run and by cleanup
#   dual-stack  IPv6 and IPv4, TCP and UDP, ClusterIPs and NodePorts
#              (tests/vm/manifests/dual-stack.yaml)
# shellcheck disable=SC2317,SC2153 # scenario functions are called through vm_scenario; facts files set variables
# shellcheck source=tests/vm/lib.sh
VM_NODE_IP4=192.168.0.10
VM_NODE_IP6=2001:db8::10
. /vm/lib.sh
# Requests end with a reset: nothing lingers in TIME_WAIT (see vm_tcp_request).
VM_TCP_CLOSE=reset

M=/tmp/manifests     # a copy of examples/, edited by the scenarios
STATE=/tmp/agent/state.json
LOGS=/tmp/agent
mkdir -p "$LOGS"
COMMON=(--manifests "$M" --state-file "$STATE" --node-name node-a --node-ip "$VM_NODE_IP4")
# The background agent: changes picked up within 200 ms, full re-check every 2 s.
SYNC_PERIOD_S=2
RUN_FLAGS=(--min-sync-period 200ms --sync-period "${SYNC_PERIOD_S}s")
RUN_LOG=$LOGS/run.log

DNS_IP=10.96.0.10
WEB1=10.244.1.11 WEB2=10.244.1.12 COREDNS=10.244.1.5

agent() { NO_COLOR=1 ipvs-agent "$@"; }

# Facts the plan decides (the allocated ClusterIP of web, its NodePort),
# computed once, before any scenario, and kept in $LOGS/facts.
facts() {
    local dns save web_ip nodeport
    dns="$(agent plan "${COMMON[@]}" --format dns)"
    save="$(agent plan "${COMMON[@]}" --format ipvsadm-save)"
    web_ip="$(awk '$1 == "web.default.svc.cluster.local." && $4 == "A" { print $5 }' <<<"$dns")"
    nodeport="$(sed -n "s/^-A -t $VM_NODE_IP4:\([0-9]*\) .*/\1/p" <<<"$save" | head -n 1)"
    [[ -n $web_ip && -n $nodeport ]] || {
        echo "plan gave no ClusterIP for web or no NodePort; plan --format dns:"
        printf '%s\n' "$dns"
        return 1
    }
    printf 'WEB_IP=%s\nNODEPORT=%s\n' "$web_ip" "$nodeport" >"$LOGS/facts"
    vm_info "plan: web has ClusterIP $web_ip and NodePort $nodeport; kube-dns has $DNS_IP"
}

# The pods of examples/pods.yaml as namespaces, and a client.
topology() {
    vm_node_init
    vm_netns_add web-1 "$WEB1"
    vm_netns_add web-2 "$WEB2"
    vm_netns_add coredns-1 "$COREDNS"
    vm_netns_add client 10.244.2.20 fd00:10:244:2::20
    vm_tcp_backend web-1 8080
    vm_tcp_backend web-2 8080
    vm_udp_backend coredns-1 53
    vm_tcp_backend coredns-1 53
    rm -rf "$M" && mkdir -p "$M" && cp /examples/*.yaml "$M/"
    [[ "$(vm_tcp_request client "$WEB1" 8080)" == web-1 ]]
    [[ "$(vm_udp_request client "$COREDNS" 53)" == coredns-1 ]]
    facts
}

# a) run --once, then the kernel holds exactly what plan prints.
once_equals_plan() {
    local status=0 save plan
    agent run --once "${COMMON[@]}" >"$LOGS/once.log" 2>&1 || status=$?
    vm_agent_log "$LOGS/once.log" | tail -n 5
    vm_check_eq a-run-once-exit-0 0 "$status"
    save="$(vm_ipvs_save)"
    plan="$(agent plan "${COMMON[@]}" --format ipvsadm-save)"
    echo "--- ipvsadm-save -n after run --once"
    printf '%s\n' "$save"
    # Byte for byte: plan lists virtual and real servers in ipvsadm's own
    # (wrapping) order, so the node IP's NodePort comes before 10.96.0.1.
    vm_check_eq a-save-equals-plan "$plan" "$save"
    # Every ClusterIP is bound on kube-ipvs0.
    local bound ip
    bound="$(ip -o addr show dev kube-ipvs0)"
    for ip in 10.96.0.1 "$DNS_IP" "$WEB_IP"; do
        grep -q " $ip/32 " <<<"$bound" || vm_fail a-addresses-bound "$ip not on kube-ipvs0"
    done
    vm_pass a-addresses-bound "$(grep -c ' inet ' <<<"$bound") IPv4 addresses on kube-ipvs0"
    # Exactly the plan's addresses (bound in one batch), nothing more.
    vm_check_eq a-addresses-equal-plan \
        "$(agent plan "${COMMON[@]}" | sed -n '/^Addresses on kube-ipvs0:/,$p' | awk 'NR > 1 && NF { print $1 }' | sort)" \
        "$(awk '$3 == "inet" || $3 == "inet6" { sub("/.*", "", $4); print $4 }' <<<"$bound" | grep -v '^fe80' | sort)"
}

# b) Rules restored by ipvsadm -R are adopted as they are: no operation.
adopt_restored() {
    local rules status=0 ops
    rules="$(vm_ipvs_save)"
    ipvsadm -C
    [[ -z "$(vm_ipvs_save)" ]]
    printf '%s\n' "$rules" | ipvsadm -R
    agent run --once "${COMMON[@]}" >"$LOGS/adopt.log" 2>&1 || status=$?
    vm_agent_log "$LOGS/adopt.log" | grep 'sync complete' || true
    vm_check_eq b-run-once-exit-0 0 "$status"
    ops="$(vm_agent_sync_field "$LOGS/adopt.log" operations || true)"
    vm_check_eq b-adopted-operations-0 0 "$ops"
    vm_check_eq b-table-unchanged "$rules" "$(vm_ipvs_save)"
}

# c) Traffic: ClusterIP (TCP from a client, UDP DNS), NodePort on the node IP.
traffic() {
    vm_expect_backends c-clusterip-tcp tcp client "$WEB_IP" 80 6 web-1 web-2
    vm_expect_backends c-clusterip-from-node tcp root "$WEB_IP" 80 4 web-1 web-2
    vm_expect_backends c-dns-udp udp client "$DNS_IP" 53 3 coredns-1
    vm_expect_backends c-dns-tcp tcp client "$DNS_IP" 53 2 coredns-1
    vm_expect_backends c-nodeport tcp client "$VM_NODE_IP4" "$NODEPORT" 6 web-1 web-2
}

# The background agent the next scenarios share.
start_agent() {
    vm_agent_start "$RUN_LOG" "${COMMON[@]}" "${RUN_FLAGS[@]}"
    vm_agent_log "$RUN_LOG" | grep 'sync complete' | head -n 2
    vm_check_eq run-first-sync-failed-0 0 "$(vm_agent_sync_field "$RUN_LOG" failed)"
}

# pods.yaml without the document of pod NAME (written beside, then renamed).
remove_pod() {
    local name="$1" file="$M/pods.yaml"
    awk -v name="$name" '
        function flush() { if (doc != "" && doc !~ ("name: " name "[,}]")) out = out sep doc; doc = ""; sep = "---\n" }
        /^---/ { flush(); next }
        { doc = doc $0 "\n" }
        END { flush(); printf "%s", out }' "$file" >/tmp/pods.yaml.new
    grep -q "name: ${name}[,}]" /tmp/pods.yaml.new && return 1
    mv /tmp/pods.yaml.new "$file"
}

restore_pods() {
    cp /examples/pods.yaml /tmp/pods.yaml.new
    mv /tmp/pods.yaml.new "$M/pods.yaml"
}

# d) Graceful termination of a removed pod's real server.
drain() {
    local pod ip other vs="-t $WEB_IP:80" t0 took
    vm_conn_open_abortable d1 client "$WEB_IP" 80 >/dev/null
    pod="$VM_CONN_BACKEND"
    if [[ $pod == web-1 ]]; then ip=$WEB1 other=web-2; else ip=$WEB2 other=web-1; fi
    vm_info "d: connection d1 landed on $pod; removing pod $pod from pods.yaml"
    t0="$(vm_uptime)"
    remove_pod "$pod"
    vm_check d-weight-0 vm_wait_until 10 eval "[[ \"\$(vm_rs_weight '$vs' $ip:8080)\" == 0 ]]"
    took="$(awk -v a="$t0" -v b="$(vm_uptime)" 'BEGIN { printf "%.1f", b - a }')"
    vm_info "d: $pod at weight 0 ${took} s after the manifest changed"
    ipvsadm -Ln -t "$WEB_IP:80"
    # The drain start is saved beside the state file, so a restarted agent
    # keeps counting --drain-timeout from it.
    vm_check d-drain-start-saved vm_wait_until 5 grep -q "\"$ip:8080\"" "$STATE.plan.json"
    vm_info "d: $STATE.plan.json: $(cat "$STATE.plan.json" 2>/dev/null | tr -d ' \n')"
    vm_check d-connection-alive vm_conn_alive d1
    vm_expect_backends d-new-connections-elsewhere tcp client "$WEB_IP" 80 4 "$other"
    vm_check_eq d-still-draining "1" "$(vm_rs_conns "$vs" "$ip:8080" | cut -d' ' -f1)"
    # Ended with a reset: the kernel forgets it in 10 s (CLOSE), not in the
    # 2 min of TIME_WAIT a normal close costs.
    vm_conn_abort d1
    t0="$(vm_uptime)"
    vm_check d-deleted-after-close vm_wait_until 40 eval "[[ -z \"\$(vm_rs_weight '$vs' $ip:8080)\" ]]"
    took="$(awk -v a="$t0" -v b="$(vm_uptime)" 'BEGIN { printf "%.1f", b - a }')"
    vm_info "d: $pod's real server deleted ${took} s after the connection was reset"
    vm_check d-drain-start-cleared vm_wait_until 5 eval "! grep -q '\"$ip:8080\"' '$STATE.plan.json'"
    ipvsadm -Ln -t "$WEB_IP:80"
    restore_pods
    vm_check d-back-with-weight-1 vm_wait_until 10 eval "[[ \"\$(vm_rs_weight '$vs' $ip:8080)\" == 1 ]]"
    vm_expect_backends d-both-again tcp client "$WEB_IP" 80 6 web-1 web-2
}

# e) Restart during an open connection.
restart() {
    local before after status ops
    vm_conn_open e1 client "$WEB_IP" 80 >/dev/null
    before="$(vm_ipvs_save)"
    vm_agent_stop TERM
    vm_check_eq e-table-kept-after-exit "$before" "$(vm_ipvs_save)"
    vm_check e-connection-alive-agent-down vm_conn_alive e1
    vm_agent_start "$LOGS/restart.log" "${COMMON[@]}" "${RUN_FLAGS[@]}"
    vm_agent_log "$LOGS/restart.log" | grep 'sync complete' | head -n 1
    ops="$(vm_agent_sync_field "$LOGS/restart.log" operations 1)"
    vm_check_eq e-first-sync-operations-0 0 "$ops"
    after="$(vm_ipvs_save)"
    vm_check_eq e-table-unchanged "$before" "$after"
    vm_check e-connection-alive-after-restart vm_conn_alive e1
    vm_conn_close e1
    RUN_LOG=$LOGS/restart.log
    echo "RUN_LOG=$RUN_LOG" >>"$LOGS/facts"
}

# f) Drift repaired: a virtual server deleted by hand comes back.
repair() {
    local before t0 took
    before="$(vm_ipvs_save)"
    ipvsadm -D -t "$WEB_IP:80"
    t0="$(vm_uptime)"
    vm_check f-restored vm_wait_until $((3 * SYNC_PERIOD_S + 5)) eval "[[ -n \"\$(vm_rs_weight '-t $WEB_IP:80' $WEB1:8080)\" && -n \"\$(vm_rs_weight '-t $WEB_IP:80' $WEB2:8080)\" ]]"
    took="$(awk -v a="$t0" -v b="$(vm_uptime)" 'BEGIN { printf "%.1f", b - a }')"
    vm_info "f: virtual server $WEB_IP:80 back ${took} s after ipvsadm -D (sync period ${SYNC_PERIOD_S} s)"
    vm_check_eq f-table-as-before "$before" "$(vm_ipvs_save)"
    vm_expect_backends f-traffic tcp client "$WEB_IP" 80 4 web-1 web-2
}

# h) A bad manifest: the error names file and field; the rules stay.
bad_manifest() {
    local before status=0 err
    before="$(vm_ipvs_save)"
    sed 's/{name: http, port: 80, targetPort: 8080}/{name: http, port: 99999, targetPort: 8080}/' \
        /examples/services.yaml >/tmp/services.yaml.new
    if cmp -s /examples/services.yaml /tmp/services.yaml.new; then
        echo "the edit did not apply: examples/services.yaml changed?"
        return 1
    fi
    mv /tmp/services.yaml.new "$M/services.yaml"
    # plan refuses it: status 3 (bad input), one error line naming the file and the field.
    err="$(agent plan "${COMMON[@]}" --format ipvsadm-save 2>&1 >/dev/null)" || status=$?
    printf 'plan: %s\n' "$err"
    vm_check_eq h-plan-exit-3 3 "$status"
    vm_check h-plan-names-file-and-field eval "grep -q '^error: .*services.yaml.*port' <<<\"\$err\""
    # run logs it and keeps the last good state: several syncs later, the
    # same rules, even after a drift repair.
    vm_check h-run-logs-file-and-field vm_wait_until 10 eval "vm_agent_log '$RUN_LOG' | grep 'services.yaml.*port' >/dev/null"
    vm_agent_log "$RUN_LOG" | grep 'services.yaml' | tail -n 1
    vm_agent_wait_syncs "$RUN_LOG" 2 20 || vm_info "h: no sync logged in 20 s with the bad manifest"
    vm_check_eq h-rules-kept "$before" "$(vm_ipvs_save)"
    ipvsadm -D -t "$WEB_IP:80"
    vm_check h-repair-still-works vm_wait_until $((3 * SYNC_PERIOD_S + 5)) eval "[[ -n \"\$(vm_rs_weight '-t $WEB_IP:80' $WEB1:8080)\" ]]"
    vm_expect_backends h-traffic tcp client "$WEB_IP" 80 4 web-1 web-2
    cp /examples/services.yaml /tmp/services.yaml.new
    mv /tmp/services.yaml.new "$M/services.yaml"
    vm_agent_wait_syncs "$RUN_LOG" 2 20 || vm_info "h: no sync logged in 20 s after the fix"
    vm_check_eq h-fixed-same-rules "$before" "$(vm_ipvs_save)"
}

# /healthz and /livez (127.0.0.1:10256) and /metrics (127.0.0.1:10249) of the running agent.
http() {
    local health metrics
    health="$(vm_http_get 127.0.0.1:10256 /healthz)"
    printf '%s\n' "$health" | head -n 12
    vm_check_eq http-healthz-200 200 "$(head -n 1 <<<"$health" | awk '{ print $2 }')"
    metrics="$(vm_http_get 127.0.0.1:10249 /metrics)"
    vm_check_eq http-metrics-200 200 "$(head -n 1 <<<"$metrics" | awk '{ print $2 }')"
    # sed, not head: it reads to the end, so nothing upstream dies of SIGPIPE.
    grep -v '^#' <<<"$metrics" | grep . | sed -n '2,21p'
    vm_check http-metrics-prometheus-text grep -q '^# TYPE ' <<<"$metrics"
    vm_check http-metrics-kube-proxy-names grep -q '^kubeproxy_sync_proxy_rules_last_timestamp_seconds{ip_family="IPv4"} ' <<<"$metrics"
    # Table inet svcnet is kept by default. This VM loads no netfilter
    # module unless a test asks (vm_load_netfilter), so the agent likely
    # finds no nf_tables here: then it must have said so once, with the
    # gauge at 0, and programmed IPVS all the same (the checks above). If
    # the kernel loaded nf_tables for it after all, the gauge must say 1.
    local available warned
    available="$(sed -n 's/^svcnet_nftables_available \([01]\)$/\1/p' <<<"$metrics")"
    warned="$(vm_agent_log "$RUN_LOG" | grep -c 'nftables: this kernel has' || true)"
    vm_info "svcnet_nftables_available ${available:-missing}; warnings about nf_tables in $RUN_LOG: $warned"
    if [[ $available == 0 ]]; then
        vm_check_eq http-no-nf-tables-warned-once 1 "$warned"
    else
        vm_check_eq http-nftables-available 1 "$available"
    fi
    local livez
    livez="$(vm_http_get 127.0.0.1:10256 /livez)"
    vm_check_eq http-livez-200 200 "$(head -n 1 <<<"$livez" | awk '{ print $2 }')"
    vm_check http-livez-kube-proxy-body grep -q '"healthy":true' <<<"$livez"
}

# g) Foreign virtual servers: never touched by run, left by cleanup.
foreign() {
    local foreign_rules status=0 left
    vm_vip_add 10.200.0.1 "$VM_NODE_IF"
    ipvsadm -A -t 10.200.0.1:8080 -s wrr
    ipvsadm -a -t 10.200.0.1:8080 -r "$WEB1:8080" -m -w 3
    # On the node IP, outside the NodePort range.
    ipvsadm -A -u "$VM_NODE_IP4:5353" -s lc
    ipvsadm -a -u "$VM_NODE_IP4:5353" -r "$COREDNS:53" -m -w 2
    foreign_rules="$(vm_ipvs_save | grep -E '10\.200\.0\.1:8080|'"$VM_NODE_IP4"':5353')"
    vm_agent_wait_syncs "$RUN_LOG" 3 20
    vm_check_eq g-foreign-untouched-by-run "$foreign_rules" \
        "$(vm_ipvs_save | grep -E '10\.200\.0\.1:8080|'"$VM_NODE_IP4"':5353')"
    vm_expect_backends g-foreign-works tcp client 10.200.0.1 8080 2 web-1
    vm_agent_stop TERM
    agent cleanup "${COMMON[@]}" >"$LOGS/cleanup.log" 2>&1 || status=$?
    vm_agent_log "$LOGS/cleanup.log" | tail -n 3
    vm_check_eq g-cleanup-exit-0 0 "$status"
    left="$(vm_ipvs_save)"
    vm_check_eq g-cleanup-leaves-only-foreign "$foreign_rules" "$left"
    vm_check g-cleanup-removes-kube-ipvs0 eval '! ip link show kube-ipvs0 2>/dev/null'
    ipvsadm -D -t 10.200.0.1:8080
    ipvsadm -D -u "$VM_NODE_IP4:5353"
}

# IPv6 and UDP: a dual-stack Service with TCP and UDP ports.
dual_stack() {
    # shellcheck disable=SC2054 # the commas are in a flag value
    local ds=(--manifests /vm-manifests/dual-stack.yaml --state-file /tmp/agent/ds-state.json
        --node-name node-a --node-ip "$VM_NODE_IP4" --node-ip "$VM_NODE_IP6"
        --service-cluster-ip-range 10.96.0.0/12,fd00:10:96::/112)
    local status=0 dns save plan ip4 ip6 np np_udp
    vm_netns_add echo-1 10.244.1.21 fd00:10:244:1::21
    vm_netns_add echo-2 10.244.1.22 fd00:10:244:1::22
    for pod in echo-1 echo-2; do
        vm_tcp_backend "$pod" 8080
        vm_udp_backend "$pod" 5353
    done
    agent run --once "${ds[@]}" >"$LOGS/ds.log" 2>&1 || status=$?
    vm_agent_log "$LOGS/ds.log" | tail -n 3
    vm_check_eq ds-run-once-exit-0 0 "$status"
    save="$(vm_ipvs_save)"
    plan="$(agent plan "${ds[@]}" --format ipvsadm-save)"
    printf '%s\n' "$save"
    # Byte for byte, IPv6 too (fd00:10:96:: before 2001:db8::10 in ipvsadm's
    # word-by-word wrapping order).
    vm_check_eq ds-save-equals-plan "$plan" "$save"
    dns="$(agent plan "${ds[@]}" --format dns)"
    ip4="$(awk '$1 == "echo.default.svc.cluster.local." && $4 == "A" { print $5 }' <<<"$dns")"
    ip6="$(awk '$1 == "echo.default.svc.cluster.local." && $4 == "AAAA" { print $5 }' <<<"$dns")"
    np="$(sed -n "s/^-A -t \[$VM_NODE_IP6\]:\([0-9]*\) .*/\1/p" <<<"$save" | head -n 1)"
    np_udp="$(sed -n "s/^-A -u \[$VM_NODE_IP6\]:\([0-9]*\) .*/\1/p" <<<"$save" | head -n 1)"
    vm_info "dual-stack: echo has ClusterIPs $ip4 and $ip6, NodePorts ${np:-none}/TCP ${np_udp:-none}/UDP"
    [[ -n $ip4 && -n $ip6 && -n $np && -n $np_udp ]]
    vm_check ds-ipv6-bound eval "ip -o -6 addr show dev kube-ipvs0 | grep ' $ip6/128 ' >/dev/null"
    vm_expect_backends ds-tcp-ipv6 tcp client "$ip6" 80 6 echo-1 echo-2
    vm_expect_backends ds-udp-ipv6 udp client "$ip6" 53 6 echo-1 echo-2
    vm_expect_backends ds-tcp-ipv4 tcp client "$ip4" 80 4 echo-1 echo-2
    vm_expect_backends ds-udp-ipv4 udp client "$ip4" 53 4 echo-1 echo-2
    vm_expect_backends ds-nodeport-ipv6 tcp client "$VM_NODE_IP6" "$np" 4 echo-1 echo-2
    vm_expect_backends ds-nodeport-udp-ipv6 udp client "$VM_NODE_IP6" "$np_udp" 4 echo-1 echo-2
    agent cleanup "${ds[@]}" >/dev/null 2>&1
    vm_check_eq ds-cleanup-empty "" "$(vm_ipvs_save)"
}

# Nothing in the agent's logs says it panicked.
no_panic() {
    local hits
    hits="$(cat "$LOGS"/*.log | grep -c -i 'panicked' || true)"
    vm_check_eq no-panic-in-logs 0 "$hits"
}

vm_scenario topology topology
# shellcheck source=/dev/null # written by topology
[[ -f $LOGS/facts ]] && . "$LOGS/facts"
vm_scenario a-once-equals-plan once_equals_plan
vm_scenario b-adopt-restored-rules adopt_restored
vm_scenario c-traffic traffic
vm_scenario run-in-background start_agent
vm_scenario d-drain-removed-pod drain
restore_pods # in case d stopped half-way
vm_scenario e-restart-keeps-connections restart
# shellcheck source=/dev/null # e switches to the restarted agent's log
. "$LOGS/facts"
vm_scenario f-repair-deleted-virtual-server repair
vm_scenario h-bad-manifest-keeps-rules bad_manifest
cp /examples/services.yaml "$M/services.yaml" # in case h stopped half-way
vm_scenario http-healthz-metrics http
vm_scenario g-foreign-and-cleanup foreign
vm_scenario dual-stack-ipv6-udp dual_stack
vm_scenario no-panic no_panic
vm_reset
vm_finish
