#!/usr/bin/env bash
# Smoke test of the VM harness: real IPVS, programmed with the real ipvsadm,
# carrying TCP and UDP, IPv4 and IPv6, from a client namespace to two
# backend namespaces. Run it with `make vm-smoke` or
#   tests/vm/run.sh tests/vm/smoke.sh
# The scenario functions are called through vm_scenario.
# shellcheck disable=SC2317
# shellcheck source=tests/vm/lib.sh
. /vm/lib.sh

# Addresses: ClusterIPs in 10.96.0.0/12 and fd00:10:96::/112, pods in
# 10.244.0.0/16 and fd00:10:244::/56, as a kubeadm cluster would have them.
VIP4=10.96.0.50
VIP4_DNS=10.96.0.10
VIP6=fd00:10:96::50
POD_A4=10.244.1.11 POD_A6=fd00:10:244:1::11
POD_B4=10.244.1.12 POD_B6=fd00:10:244:1::12
CLIENT4=10.244.2.20 CLIENT6=fd00:10:244:2::20
NODEPORT=30080

topology() {
    vm_node_init
    vm_kube_ipvs0
    vm_netns_add pod-a "$POD_A4" "$POD_A6"
    vm_netns_add pod-b "$POD_B4" "$POD_B6"
    vm_netns_add client "$CLIENT4" "$CLIENT6"
    for pod in pod-a pod-b; do
        vm_tcp_backend "$pod" 8080
        vm_udp_backend "$pod" 5353
    done
    # Without IPVS: the client reaches a pod directly, over both families.
    [[ "$(vm_tcp_request client "$POD_A4" 8080)" == pod-a ]]
    [[ "$(vm_tcp_request client "$POD_B6" 8080)" == pod-b ]]
    [[ "$(vm_udp_request client "$POD_B4" 5353)" == pod-b ]]
    [[ "$(vm_udp_request client "$POD_A6" 5353)" == pod-a ]]
}

tcp_ipv4() {
    vm_vip_add "$VIP4"
    ipvsadm -A -t "$VIP4:80" -s rr
    ipvsadm -a -t "$VIP4:80" -r "$POD_A4:8080" -m -w 1
    ipvsadm -a -t "$VIP4:80" -r "$POD_B4:8080" -m -w 1
    vm_expect_backends tcp-ipv4-from-client tcp client "$VIP4" 80 6 pod-a pod-b
    vm_expect_backends tcp-ipv4-from-node tcp root "$VIP4" 80 4 pod-a pod-b
}

udp_ipv4() {
    vm_vip_add "$VIP4_DNS"
    ipvsadm -A -u "$VIP4_DNS:53" -s rr
    ipvsadm -a -u "$VIP4_DNS:53" -r "$POD_A4:5353" -m -w 1
    ipvsadm -a -u "$VIP4_DNS:53" -r "$POD_B4:5353" -m -w 1
    vm_expect_backends udp-ipv4-from-client udp client "$VIP4_DNS" 53 6 pod-a pod-b
}

ipv6() {
    vm_vip_add "$VIP6"
    ipvsadm -A -t "[$VIP6]:80" -s rr
    ipvsadm -a -t "[$VIP6]:80" -r "[$POD_A6]:8080" -m -w 1
    ipvsadm -a -t "[$VIP6]:80" -r "[$POD_B6]:8080" -m -w 1
    ipvsadm -A -u "[$VIP6]:53" -s rr
    ipvsadm -a -u "[$VIP6]:53" -r "[$POD_A6]:5353" -m -w 1
    ipvsadm -a -u "[$VIP6]:53" -r "[$POD_B6]:5353" -m -w 1
    vm_expect_backends tcp-ipv6-from-client tcp client "$VIP6" 80 6 pod-a pod-b
    vm_expect_backends udp-ipv6-from-client udp client "$VIP6" 53 6 pod-a pod-b
}

nodeport() {
    # A NodePort: a virtual server on the node's own address, no kube-ipvs0.
    ipvsadm -A -t "$VM_NODE_IP4:$NODEPORT" -s rr
    ipvsadm -a -t "$VM_NODE_IP4:$NODEPORT" -r "$POD_A4:8080" -m -w 1
    ipvsadm -a -t "$VM_NODE_IP4:$NODEPORT" -r "$POD_B4:8080" -m -w 1
    vm_expect_backends nodeport-ipv4-from-client tcp client "$VM_NODE_IP4" "$NODEPORT" 4 pod-a pod-b
}

# The mechanics a draining test needs: a connection held open through the
# VIP is counted as active on its real server, survives that real server's
# weight going to 0 while new connections go elsewhere, and ends on close.
held_connection() {
    local first other rs active
    vm_conn_open c1 client "$VIP4" 80 >/dev/null
    first="$VM_CONN_BACKEND"
    vm_info "held connection c1 landed on $first"
    if [[ $first == pod-a ]]; then rs=$POD_A4 other=pod-b; else rs=$POD_B4 other=pod-a; fi
    active="$(ipvsadm -Ln -t "$VIP4:80" | awk -v rs="$rs:8080" '$2 == rs { print $5 }')"
    vm_check_eq held-connection-active "1" "$active"
    ipvsadm -e -t "$VIP4:80" -r "$rs:8080" -m -w 0
    vm_expect_backends weight-0-gets-no-new-connections tcp client "$VIP4" 80 4 "$other"
    vm_check held-connection-survives-weight-0 vm_conn_alive c1
    vm_conn_close c1
    vm_check held-connection-closed vm_wait_until 10 eval \
        "[[ \"\$(ipvsadm -Ln -t $VIP4:80 | awk -v rs=$rs:8080 '\$2 == rs { print \$5 }')\" == 0 ]]"
    ipvsadm -e -t "$VIP4:80" -r "$rs:8080" -m -w 1
}

# ipvsadm-save -n prints rules that ipvsadm -R restores as they were.
save_restore() {
    local before after
    before="$(vm_ipvs_save)"
    echo "--- ipvsadm-save -n"
    printf '%s\n' "$before" | tee /tmp/ipvsadm-save.txt
    echo "---"
    vm_export ipvsadm-save.txt /tmp/ipvsadm-save.txt
    ipvsadm -C
    [[ -z "$(vm_ipvs_save)" ]]
    printf '%s\n' "$before" | ipvsadm -R
    after="$(vm_ipvs_save)"
    vm_check_eq save-restore-round-trip "$before" "$after"
    vm_expect_backends tcp-ipv4-after-restore tcp client "$VIP4" 80 4 pod-a pod-b
}

reset() {
    vm_reset
    [[ -z "$(vm_ipvs_save)" ]]
    [[ -z "$(ip netns list)" ]]
    [[ ! -e /sys/class/net/kube-ipvs0 ]]
}

vm_scenario topology topology
vm_scenario tcp-ipv4 tcp_ipv4
vm_scenario udp-ipv4 udp_ipv4
vm_scenario ipv6 ipv6
vm_scenario nodeport nodeport
vm_scenario held-connection held_connection
vm_scenario save-restore save_restore
vm_scenario reset reset
vm_finish
