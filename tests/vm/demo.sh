#!/usr/bin/env bash
# The demo (make demo-vm): ipvs-agent programs the example cluster
# (examples/services.yaml, examples/pods.yaml) into a real Linux kernel's
# IPVS, and requests go through it. It narrates each step for someone new
# to Kubernetes Services. Runs in the QEMU VM:
#   VM_QUIET=1 tests/vm/run.sh tests/vm/demo.sh target/release/ipvs-agent examples:/examples
# (VM_QUIET=1, as make demo sets it: the console shows the narration only;
# the firmware, the kernel and the SVCNET-VM: check lines stay in the log,
# and run.sh closes with their count.)
# shellcheck disable=SC2317 # step functions are called through vm_scenario
# shellcheck source=tests/vm/lib.sh
VM_NODE_IP4=192.168.0.10
. /vm/lib.sh
# Requests end with a reset: nothing lingers in TIME_WAIT (see vm_tcp_request).
VM_TCP_CLOSE=reset

M=/tmp/manifests
LOG=/tmp/agent.log
# node-a also runs the control plane (a one-node cluster, as kubeadm or kind
# make): the API server listens on its address, port 6443, and that is the
# endpoint of the Service `kubernetes` (make tour uses the same address).
APISERVER_PORT=6443
COMMON=(--manifests "$M" --state-file /tmp/agent-state.json --node-name node-a --node-ip "$VM_NODE_IP4"
    --apiserver-endpoint "$VM_NODE_IP4:$APISERVER_PORT")
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
    say "Which pods are behind a Service at this moment is written down in EndpointSlices:"
    say "objects the EndpointSlice controller keeps up to date, listing the address and"
    say "port of each pod that matches the Service's selector, and whether it is ready."
    say ""
    say "On every node, a proxy turns 'ClusterIP:port' into 'some ready pod:port'."
    say "kube-proxy can do it with IPVS (IP Virtual Server), a load balancer that is part"
    say "of the Linux kernel. IPVS keeps a table of virtual servers (an address, port and"
    say "protocol that clients connect to), each with its real servers (where connections"
    say "really go) and a scheduler that picks one real server per new connection."
    say "It rewrites each connection's destination to that real server and remembers the"
    say "choice, so every packet of the connection goes to the same pod."
    say ""
    say "ipvs-agent does kube-proxy's job: it reads Services and Pods (here from files),"
    say "allocates ClusterIPs, builds the EndpointSlices, and programs IPVS from them."
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
    # The API server's stand-in: a server on the node itself, port 6443.
    vm_tcp_backend root "$APISERVER_PORT" kube-apiserver
    say "    web-1      $WEB1:8080  (label app=web)"
    say "    web-2      $WEB2:8080  (label app=web)"
    say "    coredns-1  $COREDNS:53    (label k8s-app=kube-dns, UDP)"
    say "    client     $CLIENT     (sends the requests)"
    say "node-a also runs the control plane, so the API server listens on"
    say "$VM_NODE_IP4:$APISERVER_PORT (here a stand-in that answers 'kube-apiserver')."
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
    say ""
    say "Reading it from the top:"
    say "  - Services: kube-dns asked for 10.96.0.10; web and api got a free address at"
    say "    random (the seed is 0, as in make tour and the playground, so they get the"
    say "    same ones there). db is headless (ClusterIP None) and payments is a DNS alias"
    say "    (ExternalName): neither has a ClusterIP, so IPVS gets nothing for them."
    say "  - EndpointSlices: one per Service with a selector, plus kubernetes's. web's lists"
    say "    its two pods; api and db select pods (app=api, app=db) that examples/pods.yaml"
    say "    does not have, so their slices are empty: kubectl prints an empty list as"
    say "    <unset>. api still gets a virtual server, with no real server behind it."
    say "  - kubernetes is how pods reach the API server. Its endpoints are not pods but the"
    say "    API servers themselves (--apiserver-endpoint): here node-a's $VM_NODE_IP4:$APISERVER_PORT."
    say "  - IPVS: one virtual server per ClusterIP and port, and per NodePort on the node's"
    say "    address; its real servers are the endpoints of the Service's slices."
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
    vm_expect_backends demo-clusterip-both-pods tcp client "$WEB_IP" 80 4 web-1 web-2
    say "The DNS Service kube-dns has the fixed ClusterIP $DNS_IP; UDP works the same way:"
    printf '    client -> %s:53/udp answered by %s\n' "$DNS_IP" "$(vm_udp_request client "$DNS_IP" 53)"
    say "A pod talks to the API server through the ClusterIP of kubernetes, 10.96.0.1:443;"
    say "IPVS sends it to the API server's real address, here on the node itself:"
    ask client 10.96.0.1 443
    vm_expect_backends demo-kubernetes-apiserver tcp client 10.96.0.1 443 1 kube-apiserver
    vm_pass demo-clusterip
}

nodeport() {
    title "A NodePort"
    say "web is of type NodePort: it is also reachable on port $NODEPORT of every node's own"
    say "address, which is how traffic from outside the cluster gets in:"
    for _ in 1 2; do ask client "$VM_NODE_IP4" "$NODEPORT"; done
    vm_expect_backends demo-nodeport tcp client "$VM_NODE_IP4" "$NODEPORT" 2 web-1 web-2
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
    vm_expect_backends demo-weight-0-no-new-connections tcp client "$WEB_IP" 80 2 "$other"
    say "The client closes its connection (with a reset, so the kernel forgets it in 10 s;"
    say "a normal close lingers 2 minutes in TIME_WAIT, and the agent would wait for that)."
    vm_conn_abort c1
    say "Waiting for the kernel to forget the connection (about 10 s)..."
    vm_wait_until 40 eval "[[ -z \"\$(vm_rs_weight '-t $WEB_IP:80' $ip:8080)\" ]]"
    say "Once the kernel counts no connection on it, the agent deletes the real server:"
    show ipvsadm -Ln -t "$WEB_IP:80"
    vm_pass demo-drain "$pod drained and deleted"
}

finish() {
    title "The end"
    say "You saw: ClusterIPs bound on kube-ipvs0, the IPVS table the agent programmed,"
    say "requests spread over pods, a NodePort, and a pod drained without breaking its"
    say "connection. Try: ipvs-agent plan --manifests examples --format ipvsadm-save,"
    say "or make tour for the same cluster without a kernel."
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
