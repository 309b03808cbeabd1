#!/usr/bin/env bash
# The UDP conntrack cleanup (issue 14) in the VM's kernel (Debian 6.1):
#   tests/vm/run.sh tests/vm/conntrack.sh target/vm/ipvs-agent-debug:/usr/local/bin/ipvs-agent \
#       target/vm/conntrack_list target/vm/conntrack_netns /usr/sbin/nft
# (`make vm-conntrack` builds the three binaries and runs it).
#
#   netns      the real-kernel test of ipvs-agent/tests/conntrack_netns.rs
#              (filtered UDP dump, per-entry deletes, ENOENT), on this kernel
#   blackhole  a client sends to the DNS ClusterIP from a fixed source port
#              before anything is programmed: the node routes the datagram
#              nowhere, and its conntrack entry answers for the ClusterIP
#              itself (black-holed). The agent then programs the Service
#              with its pod dns-a: after the first sync the entry is gone
#              (listed with conntrack_list, the agent's own ctnetlink code;
#              the guest has no conntrack tool), logged and counted in
#              /metrics, and the client's next datagram from the same port
#              reaches dns-a. Then dns-a is replaced by dns-b: the entry
#              that pointed at dns-a must be gone after the sync (IPVS's
#              expire_nodest_conn, which the agent sets as kube-proxy does,
#              already drops it with the IPVS connection, so the agent's
#              delete may find it gone), and the next datagram from the same
#              port must reach dns-b
#   off        the black-holed entry with --conntrack-cleanup=false: it
#              stays after the agent's sync (the client's next datagram is
#              logged, not checked: on Debian's 6.1 it reached dns-a even
#              through the kept entry, IPVS doing its own NAT)
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
    nft 'add table inet track; add chain inet track pre { type filter hook prerouting priority 0; }; add rule inet track pre ct state new counter'
    vm_netns_add dns-a "$DNS_A"
    vm_netns_add dns-b "$DNS_B"
    vm_netns_add client "$CLIENT"
    vm_udp_backend dns-a 53
    vm_udp_backend dns-b 53
    rm -rf "$M" && mkdir -p "$M"
    { service; pod dns-a "$DNS_A"; } >"$M/dns.yaml"
}

said() { vm_agent_log "$1" | grep -i conntrack | tail -n 2 | tr '\n' ' ' || true; }

blackhole() { # CHECK-PREFIX CLEANUP(true|false)
    local prefix="$1" cleanup="$2" log="$LOGS/$1.log" entry answer
    topology
    # Nothing programmed yet: the datagram is routed out of node0 (a dummy).
    answer="$(ask || true)"
    vm_check_eq "$prefix-no-answer-before-the-agent" "" "$answer"
    entry="$(client_entry)"
    vm_info "the client's entry: ${entry:-none}"
    vm_check_eq "$prefix-entry-black-holed" "$DNS_IP:53" "$(awk '{ print $4 }' <<<"$entry")"
    vm_agent_start "$log" --manifests "$M" --node-name node-a --node-ip "$VM_NODE_IP4" \
        --min-sync-period 200ms --sync-period 2s --conntrack-cleanup="$cleanup"
    sleep 1
    entry="$(client_entry)"
    vm_info "after the first sync: ${entry:-no entry}; the agent said: $(said "$log")"
    if [[ $cleanup == false ]]; then
        vm_check_eq "$prefix-black-holed-entry-kept" "$DNS_IP:53" "$(awk '{ print $4 }' <<<"$entry")"
        answer="$(ask || true)"
        vm_info "with the black-holed entry kept, the client's next datagram from port $PORT got: ${answer:-no answer}"
        vm_agent_stop
        return 0
    fi
    vm_check_eq "$prefix-black-holed-entry-deleted" "" "$entry"
    vm_check "$prefix-deletion-logged" bash -c "sed -e 's/\x1b\[[0-9;]*m//g' '$log' | grep -q 'stale UDP conntrack entries deleted.* deleted=1'"
    vm_check "$prefix-metric-counts-it" bash -c "printf 'GET /metrics HTTP/1.0\r\n\r\n' | timeout 5 socat -t 5 - TCP:127.0.0.1:10249,shut-none | grep -Eq '^svcnet_conntrack_entries_deleted_total [1-9]'"
    answer="$(ask || true)"
    vm_check_eq "$prefix-same-source-port-reaches-dns-a" dns-a "$answer"
    entry="$(client_entry)"
    vm_check_eq "$prefix-entry-points-at-dns-a" "$DNS_A:53" "$(awk '{ print $4 }' <<<"$entry")"

    { service; pod dns-b "$DNS_B"; } >"$M/dns.yaml.new" && mv "$M/dns.yaml.new" "$M/dns.yaml"
    vm_wait_until 20 bash -c "ipvsadm -Ln -u $DNS_IP:53 | grep -q '$DNS_B:53'"
    vm_agent_wait_syncs "$log" 1
    sleep 1
    entry="$(client_entry)"
    vm_info "after dns-a was replaced: ${entry:-no entry}; the agent said: $(said "$log")"
    vm_check_eq "$prefix-entry-to-dns-a-gone" "" "$entry"
    answer="$(ask || true)"
    vm_check_eq "$prefix-same-source-port-reaches-dns-b" dns-b "$answer"
    vm_agent_stop
}

vm_scenario netns netns
vm_scenario blackhole blackhole blackhole true
vm_reset
vm_scenario off blackhole off false
vm_reset
vm_finish
