#!/usr/bin/env bash
# The UDP conntrack cleanup (issue 14) in the VM's kernel (Debian 6.1):
#   tests/vm/run.sh tests/vm/conntrack.sh target/vm/ipvs-agent-debug:/usr/local/bin/ipvs-agent \
#       target/vm/conntrack_list target/vm/conntrack_netns /usr/sbin/nft
# (`make vm-conntrack` builds the three binaries and runs it).
#
#   netns      the real-kernel test of ipvs-agent/tests/conntrack_netns.rs
#              (filtered UDP dump, per-entry deletes, ENOENT), on this kernel
#   replaced   the agent programs a UDP Service (ClusterIP 10.96.0.10:53,
#              one pod dns-a); a client sends from a fixed source port, so
#              its conntrack entry stays; dns-a is replaced by dns-b in the
#              manifests: after the agent's sync the entry that pointed at
#              dns-a is gone (listed with conntrack_list, the agent's own
#              ctnetlink code), the agent logged and counted the deletion,
#              and the client's next datagram from the same port reaches dns-b
#   off        the same with --conntrack-cleanup=false: the stale entry stays
# shellcheck disable=SC2317 # scenario functions are called through vm_scenario
# shellcheck source=tests/vm/lib.sh
VM_NODE_IP4=192.168.0.10
. /vm/lib.sh

M=/tmp/manifests
LOGS=/tmp/agent
mkdir -p "$LOGS"
DNS_IP=10.96.0.10 DNS_A=10.244.1.5 DNS_B=10.244.1.6 CLIENT=10.244.2.20 PORT=40053

service() {
    cat <<YAML
apiVersion: v1
kind: Node
metadata: {name: node-a}
status: {addresses: [{type: InternalIP, address: $VM_NODE_IP4}]}
---
apiVersion: v1
kind: Service
metadata: {name: dns}
spec: {clusterIP: $DNS_IP, selector: {app: dns}, ports: [{name: dns, port: 53, protocol: UDP, targetPort: 53}]}
YAML
}

pod() { # NAME IP
    cat <<YAML
---
apiVersion: v1
kind: Pod
metadata: {name: $1, labels: {app: dns}}
spec: {nodeName: node-a, containers: [{name: dns, image: coredns, ports: [{name: dns, containerPort: 53, protocol: UDP}]}]}
status: {phase: Running, podIPs: [{ip: $2}], conditions: [{type: Ready, status: "True"}]}
YAML
}

# One datagram from the client's fixed source port; prints the answer.
ask() {
    echo request | vm_in client timeout 5 socat -t 5 - "UDP4:$DNS_IP:53,sourceport=$PORT,reuseaddr,null-eof" 2>/dev/null | head -n 1
}

# The client's entry: "udp ORIG-SRC ORIG-DST REPLY-SRC", or nothing.
client_entry() { conntrack_list | grep "^udp $CLIENT:$PORT $DNS_IP:53 " || true; }

netns() {
    vm_load_netfilter
    conntrack_netns --ignored --test-threads=1
}

topology() {
    vm_load_netfilter
    vm_node_init
    # Conntrack on in the node's namespace whatever IPVS does about it.
    nft 'add table inet ct; add chain inet ct pre { type filter hook prerouting priority 0; }; add rule inet ct pre ct state new counter'
    vm_netns_add dns-a "$DNS_A"
    vm_netns_add dns-b "$DNS_B"
    vm_netns_add client "$CLIENT"
    vm_udp_backend dns-a 53
    vm_udp_backend dns-b 53
    rm -rf "$M" && mkdir -p "$M"
    { service; pod dns-a "$DNS_A"; } >"$M/dns.yaml"
}

replace() { # CHECK-PREFIX CLEANUP(true|false)
    local prefix="$1" cleanup="$2" log="$LOGS/$1.log" entry answer
    topology
    vm_agent_start "$log" --manifests "$M" --node-name node-a --node-ip "$VM_NODE_IP4" \
        --min-sync-period 200ms --sync-period 2s --conntrack-cleanup="$cleanup"
    answer="$(ask)"
    vm_check_eq "$prefix-first-answer-from-dns-a" dns-a "$answer"
    entry="$(client_entry)"
    vm_info "the client's entry: ${entry:-none}"
    vm_check_eq "$prefix-entry-points-at-dns-a" "$DNS_A:53" "$(awk '{ print $4 }' <<<"$entry")"
    { service; pod dns-b "$DNS_B"; } >"$M/dns.yaml.new" && mv "$M/dns.yaml.new" "$M/dns.yaml"
    vm_wait_until 20 bash -c "ipvsadm -Ln -u $DNS_IP:53 | grep -q '$DNS_B:53'"
    vm_agent_wait_syncs "$log" 1
    sleep 1
    entry="$(client_entry)"
    vm_info "after the sync: ${entry:-no entry}; the agent said: $(vm_agent_log "$log" | grep -i conntrack | tail -n 2 | tr '\n' ' ')"
    if [[ $cleanup == true ]]; then
        vm_check_eq "$prefix-stale-entry-deleted" "" "$entry"
        vm_check "$prefix-deletion-logged" bash -c "sed -e 's/\x1b\[[0-9;]*m//g' '$log' | grep -q 'stale UDP conntrack entries deleted'"
        local metrics
        metrics="$(vm_http_get 127.0.0.1:10249 /metrics)"
        vm_check "$prefix-metric-counts-it" grep -Eq '^svcnet_conntrack_entries_deleted_total [1-9]' <<<"$metrics"
        answer="$(ask)"
        vm_check_eq "$prefix-same-source-port-reaches-dns-b" dns-b "$answer"
    else
        vm_check_eq "$prefix-stale-entry-kept" "$DNS_A:53" "$(awk '{ print $4 }' <<<"$entry")"
        answer="$(ask || true)"
        vm_info "with the stale entry, the client's next datagram from port $PORT got: ${answer:-no answer}"
    fi
    vm_agent_stop
}

vm_scenario netns netns
vm_scenario replaced replace replaced true
vm_reset
vm_scenario off replace off false
vm_reset
vm_finish
