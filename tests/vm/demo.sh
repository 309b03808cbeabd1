#!/usr/bin/env bash
# The demo (make demo-vm): ipvs-agent programs the example cluster
# (examples/services.yaml, examples/pods.yaml) into a real Linux kernel's
# IPVS, and requests go through it. It narrates each step for someone new
# to Kubernetes Services. Runs in the QEMU VM:
#   tests/vm/run.sh tests/vm/demo.sh target/release/ipvs-agent examples:/examples
# shellcheck disable=SC2317 # step functions are called through vm_scenario
# shellcheck source=tests/vm/lib.sh
VM_NODE_IP4=192.168.0.10
. /vm/lib.sh
# Requests end with a reset: nothing lingers in TIME_WAIT (see vm_tcp_request).
VM_TCP_CLOSE=reset

M=/tmp/manifests
LOG=/tmp/agent.log
COMMON=(--manifests "$M" --state-file /tmp/agent-state.json --node-name node-a --node-ip "$VM_NODE_IP4")
WEB1=10.244.1.11 WEB2=10.244.1.12 COREDNS=10.244.1.5 CLIENT=10.244.2.20
DNS_IP=10.96.0.10

# Narration: a blank line and a title, or plain lines.
title() { printf '\n=== %s\n' "$*"; }
say() { printf '%s\n' "$*"; }
# show CMD...: print the command, then its output, indented.
show() {
    local shown="$*"
    printf '  $ %s\n' "${shown/#agent /ipvs-agent }"
    "$@" 2>&1 | sed 's/^/    /'
}
# ask NS ADDR PORT: one request, narrated.
ask() {
    local ns="$1" addr="$2" port="$3" answer
    answer="$(vm_tcp_request "$ns" "$addr" "$port")" || answer="(no answer)"
    printf '    %s -> %s:%s answered by %s\n' "$ns" "$addr" "$port" "$answer"
}
agent() { NO_COLOR=1 ipvs-agent "$@"; }

intro() {
    title "What this demo shows"
    say "A Kubernetes Service gives a group of pods one stable address, its ClusterIP."
    say "Pods come and go and change addresses; clients only ever talk to the ClusterIP."
    say "On every node, a proxy turns 'ClusterIP:port' into 'some ready pod:port'."
    say "kube-proxy can do it with Linux IPVS, a load balancer inside the kernel."
    say "ipvs-agent does the same job: it reads Services and Pods, and programs IPVS."
    say "Everything below runs in a real Linux kernel (Debian's, booted under QEMU)."
}

cluster() {
    title "The example cluster"
    say "This VM plays the node node-a, address $VM_NODE_IP4."
    say "Each pod of examples/pods.yaml is a network namespace with the pod's IP,"
    say "running a tiny server that answers every request with the pod's name:"
    vm_netns_add web-1 "$WEB1"
    vm_netns_add web-2 "$WEB2"
    vm_netns_add coredns-1 "$COREDNS"
    vm_netns_add client "$CLIENT"
    vm_tcp_backend web-1 8080
    vm_tcp_backend web-2 8080
    vm_udp_backend coredns-1 53
    say "    web-1      $WEB1:8080  (label app=web)"
    say "    web-2      $WEB2:8080  (label app=web)"
    say "    coredns-1  $COREDNS:53    (label k8s-app=kube-dns, UDP)"
    say "    client     $CLIENT     (sends the requests)"
    mkdir -p "$M" && cp /examples/*.yaml "$M/"
    say "examples/services.yaml declares, among others, the Service 'web':"
    sed -n '/^  name: web$/,/^---/p' "$M/services.yaml" | grep -v '^---' | sed 's/^/    /'
    say "It selects the pods labelled app=web, and forwards its port 80 to their port 8080."
}

plan() {
    title "What the agent will program (ipvs-agent plan, no privileges needed)"
    say "The agent allocates a ClusterIP for each Service (10.96.0.0/12 by default),"
    say "matches the pods to the Services, and derives the IPVS table:"
    show agent plan "${COMMON[@]}" --format table
    WEB_IP="$(agent plan "${COMMON[@]}" --format dns | awk '$1 == "web.default.svc.cluster.local." && $4 == "A" { print $5 }')"
    NODEPORT="$(agent plan "${COMMON[@]}" --format ipvsadm-save | sed -n "s/^-A -t $VM_NODE_IP4:\([0-9]*\) .*/\1/p" | head -n 1)"
    [[ -n $WEB_IP && -n $NODEPORT ]]
    printf 'WEB_IP=%s\nNODEPORT=%s\n' "$WEB_IP" "$NODEPORT" >/tmp/facts
    say "The Service web got the ClusterIP $WEB_IP and the NodePort $NODEPORT."
}

program() {
    title "The agent programs the kernel"
    say "ipvs-agent run keeps the kernel in line with the manifests: it syncs at once,"
    say "again within 200 ms of any change to the files, and re-checks everything every 2 s."
    vm_agent_start "$LOG" "${COMMON[@]}" --min-sync-period 200ms --sync-period 2s
    say "Its log line for the first sync (operations = kernel changes it made):"
    vm_agent_log "$LOG" | grep 'sync complete' | head -n 1 | sed 's/^/    /'
    say ""
    say "The ClusterIP $WEB_IP is not on any machine's network card. The agent binds it"
    say "on kube-ipvs0, a dummy interface, so the kernel accepts packets sent to it:"
    show ip -br addr show dev kube-ipvs0
    say ""
    say "And the IPVS table: one virtual server per ClusterIP and port, and per NodePort;"
    say "under each, its real servers: the ready pods, reached by NAT ('Masq'), weight 1."
    show ipvsadm -Ln
    vm_pass demo-programmed "$(vm_agent_sync_field "$LOG" operations) operations"
}

clusterip() {
    title "Requests to the ClusterIP"
    say "The client connects to $WEB_IP:80. IPVS picks a real server (round robin) and"
    say "rewrites the destination to that pod's address and port 8080:"
    for _ in 1 2 3 4; do ask client "$WEB_IP" 80; done
    vm_expect_backends demo-clusterip-both-pods tcp client "$WEB_IP" 80 4 web-1 web-2 >/dev/null
    say "The DNS Service kube-dns has the fixed ClusterIP $DNS_IP; UDP works the same way:"
    printf '    client -> %s:53/udp answered by %s\n' "$DNS_IP" "$(vm_udp_request client "$DNS_IP" 53)"
    vm_pass demo-clusterip
}

nodeport() {
    title "A NodePort"
    say "web is of type NodePort: it is also reachable on port $NODEPORT of every node's own"
    say "address, which is how traffic from outside the cluster gets in:"
    for _ in 1 2; do ask client "$VM_NODE_IP4" "$NODEPORT"; done
    vm_expect_backends demo-nodeport tcp client "$VM_NODE_IP4" "$NODEPORT" 2 web-1 web-2 >/dev/null
}

drain() {
    local pod ip other
    title "A pod goes away, gracefully"
    say "The client opens a connection and keeps it open:"
    vm_conn_open_abortable c1 client "$WEB_IP" 80 >/dev/null
    pod="$VM_CONN_BACKEND"
    if [[ $pod == web-1 ]]; then ip=$WEB1 other=web-2; else ip=$WEB2 other=web-1; fi
    say "    it landed on $pod ($ip)."
    say "Now $pod is deleted: we remove it from pods.yaml, as if Kubernetes had deleted it."
    awk -v name="$pod" '
        function flush() { if (doc != "" && doc !~ ("name: " name "[,}]")) out = out sep doc; doc = ""; sep = "---\n" }
        /^---/ { flush(); next }
        { doc = doc $0 "\n" }
        END { flush(); printf "%s", out }' "$M/pods.yaml" >/tmp/pods.yaml.new
    mv /tmp/pods.yaml.new "$M/pods.yaml"
    vm_wait_until 10 eval "[[ \"\$(vm_rs_weight '-t $WEB_IP:80' $ip:8080)\" == 0 ]]"
    say "The agent does not cut the open connection: it sets $pod's weight to 0."
    say "Weight 0 means: no new connections, but the ones open (ActiveConn) go on:"
    show ipvsadm -Ln -t "$WEB_IP:80"
    say "(InActConn: connections that ended recently, which the kernel still tracks:"
    say "10 s after a reset, as these requests end, 2 minutes after a normal close.)"
    vm_conn_alive c1
    say "    the open connection still talks to $pod."
    say "New requests all go to $other:"
    for _ in 1 2 3; do ask client "$WEB_IP" 80; done
    vm_expect_backends demo-weight-0-no-new-connections tcp client "$WEB_IP" 80 2 "$other" >/dev/null
    say "The client closes its connection (with a reset, so the kernel forgets it in 10 s;"
    say "a normal close lingers 2 minutes in TIME_WAIT, and the agent would wait for that)."
    vm_conn_abort c1
    vm_wait_until 40 eval "[[ -z \"\$(vm_rs_weight '-t $WEB_IP:80' $ip:8080)\" ]]"
    say "Once the kernel counts no connection on it, the agent deletes the real server:"
    show ipvsadm -Ln -t "$WEB_IP:80"
    vm_pass demo-drain "$pod drained and deleted"
}

finish() {
    title "The end"
    say "You saw: ClusterIPs bound on kube-ipvs0, the IPVS table the agent programmed,"
    say "requests spread over pods, a NodePort, and a pod drained without breaking its"
    say "connection. Try: ipvs-agent plan --manifests examples --format ipvsadm-save"
    vm_agent_stop TERM
    say "Demo complete."
}

vm_scenario intro intro
vm_scenario cluster cluster
vm_scenario plan plan
# shellcheck source=/dev/null # written by plan
[[ -f /tmp/facts ]] && . /tmp/facts
vm_scenario program program
vm_scenario clusterip clusterip
vm_scenario nodeport nodeport
vm_scenario drain drain
vm_scenario the-end finish
vm_reset
vm_finish
