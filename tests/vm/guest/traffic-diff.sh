#!/usr/bin/env bash
# The VM half of tests/vm/traffic-diff.sh (which boots it: see there).
#
# Builds a small network twice, once for each proxy, and sends the same
# traffic through it: first with the real kube-proxy (--proxy-mode=ipvs: IPVS,
# iptables and ipset), then with ipvs-agent (IPVS and table inet svcnet). Each
# time, from /data/traffic-plan.tsv (tests/vm/traffic-plan.py):
#
#   lan          a bridge (192.168.56.1, fd00:56::1): the network between
#                the nodes and the outside hosts, and their router
#   node-a       the node the proxy runs on (192.168.56.10, fd00:56::10),
#                reaching the apiserver at 127.0.0.1:6443 (socat to the host)
#   node-b       the other node (192.168.56.11, fd00:56::11); pod routes
#                between the two nodes, node-b's default route to the router
#                (so an unmasqueraded reply from node-b misses node-a)
#   b<N>         one namespace per backend of the plan (every Pod, and every
#                EndpointSlice address no Pod has) at its addresses, behind
#                its node, answering on every port TCP and UDP with its name
#                and the source address it saw (`traffic serve`)
#   client-a     a pod of node-a that is no endpoint (10.244.1.250)
#   outside-*    two hosts behind the router, routed to node-a: one inside
#                the first loadBalancerSourceRanges, one outside every range
#
# The matrix: one row per frontend of the plan, one column per client (a pod
# on node-a, the endpoint pod itself, node-a's own processes, the outside
# host allowed by source ranges, the one refused); a cell is what its
# attempts saw, `traffic cells` lines sorted and made unique: "ok NAME
# SOURCE", "refused", "timeout", ... A source that is one of the Service
# addresses on kube-ipvs0 is written "kube-ipvs0-address" (the kernel's pick
# for a masquerade depends on the order they were bound in). A
# sessionAffinity row's cell says only that all attempts met one backend, and
# whether it was reached (which one depends on where round robin stood);
# its first attempt goes alone, so that the rest follow the affinity it
# made. One check per row: the two matrices
# agree on it. On any difference both matrices are printed. Then claims the
# svcnet matrix must make whatever the manifests: hairpin masqueraded,
# external traffic masqueraded under policy Cluster and its source kept under
# Local, source ranges enforced, a ClusterIP's unused port refused.
#
# Each healthCheckNodePort of the plan is asked from the allowed outside host
# at node-a's address; kube-proxy's and svcnet's answers (status and body)
# must be identical.
#
# Then the UDP rollout: a client in client-a sends to a UDP Service every
# 20 ms from one socket (1,500 datagrams, 30 s); 3 s in, its one endpoint is
# replaced (the new pod made ready, then the old deleted and gone); the
# datagrams lost after the new pod was ready are counted for each proxy. svcnet must lose none after the first answer
# from the new pod, and no more than kube-proxy in all.
#
# Environment (run.sh's VM_APPEND): SVCNET_API_PORT; SVCNET_TRAFFIC_TIMEOUT_MS
# (default 2500), the time an attempt waits. Files: /data/kubeconfig,
# /data/traffic-plan.tsv; /usr/local/bin/{kube-proxy,kubectl,ipvs-agent,traffic}.
. /vm/lib.sh
set -u

API_PORT="${SVCNET_API_PORT:?SVCNET_API_PORT is not set}"
TIMEOUT_MS="${SVCNET_TRAFFIC_TIMEOUT_MS:-2500}"
PLAN=/data/traffic-plan.tsv
CLUSTER_CIDR=10.244.0.0/16,fd00:10:244::/56
NODE_A4=192.168.56.10 NODE_A6=fd00:56::10
NODE_B4=192.168.56.11 NODE_B6=fd00:56::11
ROUTER4=192.168.56.1 ROUTER6=fd00:56::1
CLIENT4=10.244.1.250 CLIENT6=fd00:10:244:1::250
KUBECTL=(kubectl --kubeconfig /run/kubeconfig-vm --request-timeout=30s)
COLUMNS_=(local-pod hairpin node outside-allowed outside-refused)

vm_kube_prepare "$API_PORT" || vm_finish
[[ -s $PLAN ]] || { vm_fail "the plan" "$PLAN is missing or empty"; vm_finish; }

# The world's namespaces and background processes, for world_down.
WORLD_PIDS=/run/world.pids
: >"$WORLD_PIDS"
bg_in() { # bg_in NS LOG COMMAND...: COMMAND in NS, in the background
    local ns="$1" log="$2"
    shift 2
    ip netns exec "$ns" "$@" >"$log" 2>&1 &
    echo $! >>"$WORLD_PIDS"
    disown $!
}
# The network is made with as few processes as it takes: a process costs
# about a tenth of a second in the emulated VM, and one command each made
# the network in 34 s. ipb NS: the `ip` commands on stdin, one a line, run
# in NS by one `ip -batch` (one failing does not stop the rest, as when they
# ran one by one).
ipb() { ip -force -n "$1" -batch -; }
# ns_new NS [SH]: a namespace with no duplicate address detection, then SH,
# in one shell inside it. ns_sh NS SH: the same for a namespace already
# made (for `all`, `default`, and eth0 when it is there).
ns_new() {
    ip netns add "$1"
    ns_sh "$1" "${2:-}"
}
ns_sh() {
    ip netns exec "$1" sh -c 'for f in all default eth0; do
        [ -d /proc/sys/net/ipv6/conf/$f ] && echo 0 >/proc/sys/net/ipv6/conf/$f/accept_dad; done; '"$2"
}
FORWARDING='echo 1 >/proc/sys/net/ipv4/ip_forward; echo 1 >/proc/sys/net/ipv6/conf/all/forwarding'
# lan_attach NS SHORT: NS's eth0 (made there, down) on the lan bridge (port l-SHORT).
lan_attach() {
    ipb lan <<EOF
link add l-$2 type veth peer name eth0 netns $1
link set l-$2 master br0 up
EOF
}
# node_ns NS IP4 IP6: a node on the lan, routing to the router by default.
# Every interface made in it from then on answers ARP for what it routes
# elsewhere (proxy ARP: its pods reach 169.254.1.1 that way).
node_ns() {
    ip netns add "$1"
    lan_attach "$1" "$1"
    ns_sh "$1" "$FORWARDING; echo 1 >/proc/sys/net/ipv4/conf/default/proxy_arp"
    ipb "$1" <<EOF
link set lo up
link set eth0 up
addr add $2/24 dev eth0
addr add $3/64 dev eth0 nodad
route add default via $ROUTER4
route add ::/0 via $ROUTER6
EOF
}
# pod_ns NODE NS IP4 IP6: a pod namespace behind NODE (a veth, proxy ARP for
# 169.254.1.1 and fe80::1 on the node's end, /32 and /128 routes to it).
pod_ns() {
    local node="$1" ns="$2" ip4="$3" ip6="$4" port="v-$2"
    ns_new "$ns"
    {
        echo "link add $port type veth peer name eth0 netns $ns"
        echo "link set $port up"
        [[ $ip4 != - ]] && echo "route add $ip4/32 dev $port"
        [[ $ip6 != - ]] && printf '%s\n' "addr add fe80::1/64 dev $port nodad" "route add $ip6/128 dev $port"
    } | ipb "$node"
    {
        printf '%s\n' "link set lo up" "link set eth0 up"
        [[ $ip4 != - ]] && printf '%s\n' "addr add $ip4/32 dev eth0" "route add 169.254.1.1 dev eth0 scope link" \
            "route add default via 169.254.1.1 dev eth0"
        [[ $ip6 != - ]] && printf '%s\n' "addr add $ip6/128 dev eth0 nodad" "route add ::/0 via fe80::1 dev eth0"
    } | ipb "$ns"
}
# outside_ns ROLE IP4 IP6: the host outside-ROLE behind the router, its
# traffic to Services routed through node-a (as a load balancer or a route to
# externalIPs would).
outside_ns() {
    local ns="outside-$1" ip4="$2" ip6="$3"
    ip netns add "$ns"
    lan_attach "$ns" "$1"
    ns_sh "$ns" ''
    ipb "$ns" <<EOF
link set lo up
link set eth0 up
addr add $ip4/32 dev eth0
addr add $ip6/128 dev eth0 nodad
route add 192.168.56.0/24 dev eth0
route add default via $NODE_A4
route add fd00:56::/64 dev eth0
route add ::/0 via $NODE_A6
EOF
    printf '%s\n' "route add $ip4/32 dev br0" "route add $ip6/128 dev br0" | ipb lan
    printf '%s\n' "route add $ip4/32 dev eth0" "route add $ip6/128 dev eth0" | ipb node-a
}

# Backend NAME -> namespace, and the outside hosts' addresses.
declare -A BACKEND_NS=() BACKEND_IPS=()
OUTSIDE_ALLOWED4='' OUTSIDE_ALLOWED6='' OUTSIDE_REFUSED4='' OUTSIDE_REFUSED6=''

world_up() {
    local kind name node ip4 ip6 ports i=0
    ns_new lan "$FORWARDING"
    ipb lan <<EOF
link set lo up
link add br0 type bridge
link set br0 up
addr add $ROUTER4/24 dev br0
addr add $ROUTER6/64 dev br0 nodad
EOF
    node_ns node-a "$NODE_A4" "$NODE_A6"
    node_ns node-b "$NODE_B4" "$NODE_B6"
    printf '%s\n' "route add 10.244.2.0/24 via $NODE_B4" "route add fd00:10:244:2::/64 via $NODE_B6" | ipb node-a
    printf '%s\n' "route add 10.244.1.0/24 via $NODE_A4" "route add fd00:10:244:1::/64 via $NODE_A6" | ipb node-b
    bg_in node-a /run/socat-node-a.log socat TCP-LISTEN:6443,bind=127.0.0.1,reuseaddr,fork UNIX-CONNECT:/run/apiserver.sock
    pod_ns node-a client-a "$CLIENT4" "$CLIENT6"
    while IFS=$'\t' read -r kind name node ip4 ip6 ports; do
        case $kind in
            backend)
                i=$((i + 1))
                pod_ns "$node" "b$i" "$ip4" "$ip6"
                BACKEND_NS[$name]="b$i"
                BACKEND_IPS[$name]="$ip4 $ip6 $node"
                [[ $ports != - ]] && bg_in "b$i" "/run/b$i.log" traffic serve "$name" ${ports//,/ }
                ;;
            outside)
                # name is the role, node and ip4 the two addresses.
                outside_ns "$name" "$node" "$ip4"
                if [[ $name == allowed ]]; then OUTSIDE_ALLOWED4="$node" OUTSIDE_ALLOWED6="$ip4"; else OUTSIDE_REFUSED4="$node" OUTSIDE_REFUSED6="$ip4"; fi
                ;;
        esac
    done <"$PLAN"
}

# warm_up: every pod and outside host pings its node once per family, so
# that neighbour discovery, slow for a first packet in the emulated VM, is
# done before the matrix times anything (an IPv6 hairpin attempt once timed
# out on it).
warm_up() {
    local name ns ip4 ip6 node
    for name in "${!BACKEND_NS[@]}"; do
        ns="${BACKEND_NS[$name]}"
        read -r ip4 ip6 node <<<"${BACKEND_IPS[$name]}"
        if [[ $node == node-a ]]; then node="$NODE_A4 $NODE_A6"; else node="$NODE_B4 $NODE_B6"; fi
        [[ $ip4 != - ]] && ip netns exec "$ns" ping -c 1 -W 2 "${node% *}" >/dev/null 2>&1
        [[ $ip6 != - ]] && ip netns exec "$ns" ping6 -c 1 -W 2 "${node#* }" >/dev/null 2>&1
    done
    for ns in client-a outside-allowed outside-refused; do
        ip netns exec "$ns" ping -c 1 -W 2 "$NODE_A4" >/dev/null 2>&1
        ip netns exec "$ns" ping6 -c 1 -W 2 "$NODE_A6" >/dev/null 2>&1
    done
    return 0
}

# in_world: the processes in a network namespace other than this script's, the
# world's (bash's own tests, instead of an `ip netns pids` for each
# namespace).
in_world() {
    local p
    for p in /proc/[0-9]*; do
        [[ $p/ns/net -ef /proc/$$/ns/net ]] || echo "${p#/proc/}"
    done
}
world_down() {
    local pid
    while read -r pid; do kill "$pid" 2>/dev/null || true; done <"$WORLD_PIDS"
    : >"$WORLD_PIDS"
    for pid in $(in_world); do kill "$pid" 2>/dev/null || true; done
    sleep 1
    for pid in $(in_world); do kill -9 "$pid" 2>/dev/null || true; done
    ip -all netns delete
}

# What the proxy has programmed in node-a; settled when three reads 2 s
# apart agree and `kubernetes` is there (180 s at most). Every table either
# proxy writes is read: kube-proxy writes its ipsets (one `ipset add` process
# an entry) and then its iptables rules after its IPVS table, in the same
# sync, so a settle on IPVS alone could start the matrix with its masquerade
# and loop-back sets half written (the likely cause of a CI run whose first
# and third rows differed).
# iptables-save without -c and ipset save carry no counters; nft's ruleset
# does, so only its lines are counted.
snapshot() {
    ip netns exec node-a ipvsadm-save -n | LC_ALL=C sort
    ip -n node-a -o addr show dev kube-ipvs0 2>/dev/null | awk '{print $4}' | LC_ALL=C sort
    ip netns exec node-a sh -c 'ipset save; iptables-save; ip6tables-save' 2>/dev/null | grep -v '^#' | LC_ALL=C sort
    ip netns exec node-a nft list ruleset 2>/dev/null | wc -l
}
# first_sync: the proxy's first sync is done, by its metric of the last
# sync's time (kube-proxy's name; the agent has it too, on the same port):
# settle's reads of IPVS, the ipsets, iptables and nftables then do not run
# beside kube-proxy's first writes of them. The guest kernel locked up once
# with the two going at once (both CPUs stuck, in kube-proxy and in a sort
# of snapshot's, 2026-11-29); why is not known. 120 s at most, then settle
# goes on regardless.
first_sync() {
    local deadline=$((SECONDS + 120))
    while ((SECONDS < deadline)); do
        printf 'GET /metrics HTTP/1.0\r\n\r\n' | ip netns exec node-a socat -t 2 - TCP:127.0.0.1:10249 2>/dev/null |
            grep -qaE '^kubeproxy_sync_proxy_rules_last_timestamp_seconds(\{[^}]*\})? [1-9]' && return 0
        sleep 1
    done
    vm_info "no completed sync in the proxy's metrics after 120 s"
    return 1
}
settle() {
    local last='' now streak=0 deadline=$((SECONDS + 180))
    first_sync
    while ((SECONDS < deadline)); do
        now="$(snapshot)"
        if [[ $now == "$last" ]] && grep -q '^-A -t 10.96.0.1:443 ' <<<"$now"; then
            streak=$((streak + 1))
            ((streak >= 2)) && return 0
        else
            streak=0
        fi
        last="$now"
        sleep 2
    done
    return 1
}

start_proxy() {
    case $1 in
        kube-proxy)
            bg_in node-a /run/kube-proxy.log kube-proxy --proxy-mode=ipvs --kubeconfig /run/kubeconfig-node \
                --hostname-override node-a --cluster-cidr "$CLUSTER_CIDR" --conntrack-max-per-core=0 \
                --metrics-bind-address 127.0.0.1:10249 --healthz-bind-address 127.0.0.1:10256
            ;;
        svcnet)
            bg_in node-a /run/svcnet.log env NO_COLOR=1 ipvs-agent run --kubeconfig /run/kubeconfig-node \
                --hostname-override node-a --state-file /run/svcnet-state.json \
                --nftables --cluster-cidr "$CLUSTER_CIDR"
            ;;
    esac
}

# The Service addresses bound on kube-ipvs0. When a masquerade has no
# address on the way out (a pod's veth has only fe80::1), the kernel takes one
# of node-a's by its source selection rules, which may be any of these, and
# which one depends on the order they were bound in; cells write such a
# source as "kube-ipvs0-address".
awk -F'\t' '$1 == "row" && $8 != "NodePort" {print $3}' "$PLAN" | sort -u >/run/vips.txt

declare -A VIPS=()
while read -r vip; do VIPS[$vip]=1; done </run/vips.txt

# cell_text ATTEMPTS AFFINITY LINE...: a cell as the matrix writes it, in
# CELL, from its attempts' lines: made unique and sorted, joined by commas,
# a Service address as the source written kube-ipvs0-address. Bash's
# builtins only: a process costs about a tenth of a second in the emulated
# VM, and the two matrices make 240 cells.
cell_text() {
    local attempts="$1" affinity="$2" line
    shift 2
    local -a w lines=("$@") sorted=()
    local -A seen=()
    ((${#lines[@]})) || lines=('')
    for line in "${lines[@]}"; do
        read -r -a w <<<"$line"
        [[ ${w[0]:-} == ok && ${#w[@]} == 3 && -n ${VIPS[${w[2]}]:-} ]] && line="ok ${w[1]} kube-ipvs0-address"
        [[ -n ${seen[x$line]:-} ]] && continue
        seen[x$line]=1
        vm_insert_sorted sorted "$line"
    done
    # Under sessionAffinity every attempt must meet the same backend; which
    # one depends on where round robin stood, so only that is written, and
    # whether it was reached (answered or refused) or not.
    if [[ $affinity == 1 && ${#sorted[@]} == 1 ]]; then
        case ${sorted[0]} in
            ok* | refused*) CELL="affinity: $attempts alike, reached" ;;
            *) CELL="affinity: $attempts alike, ${sorted[0]}" ;;
        esac
    else
        local IFS=,
        CELL="${sorted[*]}"
    fi
}

# matrix MODE OUT: one line per cell, "LABEL<TAB>COLUMN<TAB>CELL". One `traffic
# cells` probes every cell, one after another, each from its namespace (a
# sessionAffinity cell's first attempt alone, so that the rest follow the
# affinity it made).
matrix() {
    local mode="$1" out="$2" kind proto addr port attempts affinity hairpin fkind service etp ranges label col ns n=0 i k rest
    local -a keys=() specs=() lines
    local -A results=()
    : >/run/cells.in
    while IFS=$'\t' read -r kind proto addr port attempts affinity hairpin fkind service etp ranges label; do
        [[ $kind == row ]] || continue
        for col in "${COLUMNS_[@]}"; do
            case $col in
                local-pod) ns=client-a ;;
                hairpin) ns="${BACKEND_NS[$hairpin]:-}" ;;
                node) ns=node-a ;;
                *) ns="$col" ;;
            esac
            keys+=("$label"$'\t'"$col")
            if [[ -z $ns ]]; then
                specs+=(n/a)
            else
                n=$((n + 1))
                echo "$ns $proto $addr $port $attempts $affinity" >>/run/cells.in
                specs+=("$n $attempts $affinity")
            fi
        done
    done <"$PLAN"
    if ! traffic cells "$TIMEOUT_MS" </run/cells.in >/run/cells.out 2>/run/cells.err; then
        vm_fail "$mode: the matrix's probes" "$(tr '\n' ' ' </run/cells.err)" || true
    fi
    while IFS=$'\t' read -r k rest; do results[$k]+="$rest"$'\n'; done </run/cells.out
    : >"$out"
    for i in "${!keys[@]}"; do
        if [[ ${specs[i]} == n/a ]]; then
            CELL=n/a
        else
            read -r k attempts affinity <<<"${specs[i]}"
            mapfile -t lines <<<"${results[$k]:-}"
            [[ -n ${results[$k]:-} ]] && unset 'lines[-1]'
            cell_text "$attempts" "$affinity" "${lines[@]}"
        fi
        printf '%s\t%s\n' "${keys[i]}" "$CELL" >>"$out"
    done
}

# The matrix as a table for people: a block per row, a line per column.
show_matrix() {
    awk -F'\t' '$1 != last { print "  " $1; last = $1 } { printf "    %-16s %s\n", $2, $3 }' "$1"
}

# rollout MODE: the UDP rollout test; sets ROLL_LOST (datagrams lost after the
# replacement) and ROLL_LOST_LATE (lost after the first answer from the new pod).
rollout() {
    local mode="$1" k8s_ns="roll-$1" cip t_replace first_new
    ROLL_LOST=-1 ROLL_LOST_LATE=-1
    # One kubectl for the namespace and the Service (a kubectl takes seconds
    # in the emulated VM); it prints the ClusterIP (the namespace has none).
    cip="$("${KUBECTL[@]}" create -o jsonpath='{.spec.clusterIP}' -f - <<EOF
apiVersion: v1
kind: Namespace
metadata: {name: $k8s_ns}
---
apiVersion: v1
kind: Service
metadata: {name: udp-roll, namespace: $k8s_ns}
spec:
  selector: {app: roll}
  ports: [{name: dns, port: 53, protocol: UDP, targetPort: 5353}]
EOF
)"
    roll_pod() { # roll_pod NAME IP: a ready pod of the Service, and its namespace
        pod_ns node-a "$1" "$2" -
        bg_in "$1" "/run/$1.log" traffic serve "$1" 5353
        "${KUBECTL[@]}" create -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata: {name: $1, namespace: $k8s_ns, labels: {app: roll}}
spec:
  nodeName: node-a
  containers: [{name: main, image: registry.k8s.io/pause:3.10, ports: [{containerPort: 5353, protocol: UDP}]}]
EOF
        "${KUBECTL[@]}" patch pod "$1" -n "$k8s_ns" --subresource=status --type=merge -p \
            "{\"status\":{\"phase\":\"Running\",\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}],\"podIP\":\"$2\",\"podIPs\":[{\"ip\":\"$2\"}]}}" >/dev/null
    }
    roll_pod roll-old 10.244.1.201
    if ! vm_wait_until 60 ip netns exec node-a sh -c "ipvsadm -Ln -u $cip:53 | grep -q 10.244.1.201:5353"; then
        vm_fail "$mode: UDP rollout" "the Service's first endpoint was not programmed within 60 s" || true
        return
    fi
    ip netns exec client-a traffic stream "$cip" 53 20 1500 >"/run/roll-$mode.txt" 2>&1 &
    local client=$!
    sleep 3
    roll_pod roll-new 10.244.1.202
    t_replace="$(traffic now)"
    "${KUBECTL[@]}" delete pod roll-old -n "$k8s_ns" --grace-period=0 --force >/dev/null 2>&1
    for pid in $(ip netns pids roll-old); do kill -9 "$pid" 2>/dev/null || true; done
    ip netns del roll-old
    wait "$client"
    ROLL_LOST="$(awk -v t="$t_replace" '$2 >= t && $3 == "lost"' "/run/roll-$mode.txt" | wc -l)"
    first_new="$(awk '$3 == "roll-new" {print $1; exit}' "/run/roll-$mode.txt")"
    if [[ -n $first_new ]]; then
        ROLL_LOST_LATE="$(awk -v s="$first_new" '$1 > s && $3 == "lost"' "/run/roll-$mode.txt" | wc -l)"
    fi
    vm_info "$mode: UDP rollout: $(grep -c . "/run/roll-$mode.txt") datagrams; after the new pod was ready:" \
        "$(awk -v t="$t_replace" '$2 >= t {n[$3]++} END {for (k in n) printf "%s %d, ", k, n[k]}' "/run/roll-$mode.txt")" \
        "$ROLL_LOST lost, $ROLL_LOST_LATE of them after the new pod's first answer (datagram ${first_new:-none})"
    # The Service and its pod go now, so the next proxy's run starts from
    # the same cluster as this one's (the namespace controller takes its
    # time over the namespace, and its Service stayed programmed).
    "${KUBECTL[@]}" delete -n "$k8s_ns" service/udp-roll pod/roll-old pod/roll-new "namespace/$k8s_ns" \
        --grace-period=0 --force --wait=false --ignore-not-found >/dev/null 2>&1
    for pid in $(ip netns pids roll-new); do kill "$pid" 2>/dev/null || true; done
}

# health_checks OUT: each healthCheckNodePort of the plan, asked from the
# allowed outside host at node-a's address: "SERVICE<TAB>STATUS<TAB>BODY"
# (the body's lines joined by spaces).
health_checks() {
    local kind service port answer
    : >"$1"
    while IFS=$'\t' read -r kind service port _; do
        [[ $kind == healthcheck ]] || continue
        answer="$(printf 'GET / HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n' "$NODE_A4" | ip netns exec outside-allowed timeout 10 socat -t 5 - "TCP:$NODE_A4:$port,connect-timeout=3" 2>&1 | tr -d '\r')"
        printf '%s\t%s\t%s\n' "$service" "$(head -n 1 <<<"$answer" | awk '{print $2}')" "$(sed '1,/^$/d' <<<"$answer" | tr -s '\n\t' '  ')" >>"$1"
    done <"$PLAN"
}

# --- the two runs ------------------------------------------------------------------
vm_info "kube-proxy $(kube-proxy --version 2>&1) and ipvs-agent $(ipvs-agent --version 2>&1 | awk '{print $2}'); $(grep -c '^row' "$PLAN") rows x ${#COLUMNS_[@]} clients, attempts wait ${TIMEOUT_MS} ms"
declare -A LOST=() LOST_LATE=()
# phase NAME: the seconds since the last phase (or since this run began)
# go to PHASES as "NAME N s", for the line that tells where a run's time went.
PHASES='' PHASE_AT=0
phase() {
    PHASES+="${PHASES:+, }$1 $((SECONDS - PHASE_AT)) s"
    PHASE_AT=$SECONDS
}
phase "preparing the VM"
vm_info "where the time went: $PHASES"
for mode in kube-proxy svcnet; do
    vm_info "--- $mode"
    PHASES=''
    world_up
    warm_up
    phase "the network"
    start_proxy "$mode"
    if ! settle; then
        vm_fail "$mode: programmed" "node-a's tables did not settle within 180 s" || true
        tail -n 20 "/run/$mode.log"
    fi
    phase "start to settled tables"
    vm_info "$mode: $(ip netns exec node-a ipvsadm-save -n | grep -c '^-A') virtual servers; matrix..."
    matrix "$mode" "/run/matrix-$mode.tsv"
    phase "the matrix"
    health_checks "/run/health-$mode.tsv"
    ip netns exec node-a sh -c 'iptables-save; ip6tables-save; ipset list; nft list table inet svcnet' >"/run/rules-$mode.txt" 2>&1
    phase "health checks and rules"
    rollout "$mode"
    LOST[$mode]=$ROLL_LOST
    LOST_LATE[$mode]=$ROLL_LOST_LATE
    phase "the UDP rollout"
    world_down
    phase "the network down"
    vm_info "$mode: where the time went: $PHASES"
done

# --- the comparison --------------------------------------------------------------
vm_info "--- the two matrices, row by row"
KP=/run/matrix-kube-proxy.tsv SV=/run/matrix-svcnet.tsv
differ=0
while IFS= read -r label; do
    a="$(awk -F'\t' -v l="$label" '$1 == l {print $2 ": " $3}' "$KP")"
    b="$(awk -F'\t' -v l="$label" '$1 == l {print $2 ": " $3}' "$SV")"
    if [[ $a == "$b" ]]; then
        vm_pass "$label" "identical: $(awk -F': ' '{print $2}' <<<"$a" | cut -c1-40 | paste -sd'|' -)"
    else
        differ=1
        echo "--- $label: the cells that differ"
        mapfile -t A <<<"$a"
        mapfile -t B <<<"$b"
        cells=()
        for i in "${!A[@]}"; do
            [[ ${A[i]} == "${B[i]:-}" ]] && continue
            printf '    kube-proxy %s\n    svcnet     %s\n' "${A[i]}" "${B[i]:-}"
            cells+=("${A[i]%%:*}: kube-proxy ${A[i]#*: } / svcnet ${B[i]#*: }")
        done
        # The FAIL line names the cells, so a log cut to its FAIL lines
        # still says what differed.
        vm_fail "$label" "the matrices differ: $(IFS=';'; echo "${cells[*]}")" || true
    fi
done < <(awk -F'\t' '$1 == "row" {print $NF}' "$PLAN")
if ((!differ)); then
    echo "--- the matrix, the same for both"
    show_matrix "$SV"
else
    echo "--- the kube-proxy matrix"
    show_matrix "$KP"
    echo "--- the svcnet matrix"
    show_matrix "$SV"
    echo "--- kube-proxy's loop-back (hairpin) sets and nat rules, and svcnet's table"
    grep -A12 -E '^Name: KUBE(-6)?-LOOP-BACK' /run/rules-kube-proxy.txt || true
    grep -E 'KUBE-(POSTROUTING|LOOP-BACK)' /run/rules-kube-proxy.txt || true
    grep -B2 -A8 'hairpin' /run/rules-svcnet.txt | head -n 40 || true
fi

# --- the healthCheckNodePorts ----------------------------------------------------
while IFS=$'\t' read -r service status body; do
    kp_line="$(awk -F'\t' -v s="$service" '$1 == s' /run/health-kube-proxy.tsv)"
    sv_line="$(printf '%s\t%s\t%s' "$service" "$status" "$body")"
    if [[ $kp_line == "$sv_line" ]]; then
        vm_pass "$service healthCheckNodePort" "identical: $status $body"
    else
        echo "--- $service healthCheckNodePort: kube-proxy (<) and svcnet (>)"
        diff <(echo "$kp_line") <(echo "$sv_line") | grep '^[<>]'
        vm_fail "$service healthCheckNodePort" "the answers differ" || true
    fi
done </run/health-svcnet.tsv
if [[ $(grep -c . /run/health-kube-proxy.tsv) != $(grep -c . /run/health-svcnet.tsv) ]]; then
    vm_fail "healthCheckNodePorts" "kube-proxy answered $(grep -c . /run/health-kube-proxy.tsv), svcnet $(grep -c . /run/health-svcnet.tsv)" || true
fi

# --- claims the svcnet matrix must make ----------------------------------------------
# claim NAME AWK-PATTERN AWK-ACTION: the svcnet cells the pattern selects
# ($1 label, $2 column, $3 cell; the plan's row fields by label: kind, etp,
# ranges, aff, hp; a backend's addresses in ips) are examined by the action,
# which prints each cell that breaks the claim. PASS with the number of cells
# examined, SKIP when the manifests give none, else FAIL with the cells.
claim() {
    local name="$1" out bad seen
    out="$(awk -F'\t' -v a4="$OUTSIDE_ALLOWED4" -v a6="$OUTSIDE_ALLOWED6" -v n4="$NODE_A4" -v n6="$NODE_A6" \
        -v client4="$CLIENT4" -v client6="$CLIENT6" '
        # sources_in(CELL, X, Y, Z): every connected attempt of CELL saw X, Y or Z.
        function sources_in(cell, x, y, z,   n, i, parts, w) {
            n = split(cell, parts, ",")
            for (i = 1; i <= n; i++) { split(parts[i], w, " "); if (w[1] == "ok" && w[3] != x && w[3] != y && w[3] != z) return 0 }
            return 1
        }
        NR == FNR { if ($1 == "row") { kind[$NF] = $8; etp[$NF] = $10; ranges[$NF] = $11; aff[$NF] = $6; hp[$NF] = $7 }
                    if ($1 == "backend") { ips[$2] = $4 " " $5 }
                    next }
        { label = $1; col = $2; cell = $3 }
        '"$2"' { seen++; '"$3"' }
        END { print "EXAMINED " seen + 0 }' "$PLAN" "$SV")"
    seen="$(sed -n 's/^EXAMINED //p' <<<"$out")"
    bad="$(grep -v '^EXAMINED ' <<<"$out" || true)"
    if ((seen == 0)); then
        vm_skip "$name" "no cell of these manifests is one it is about"
    elif [[ -z $bad ]]; then
        vm_pass "$name" "$seen cells"
    else
        echo "--- $name: these cells say otherwise"
        echo "$bad" | head -n 20
        vm_fail "$name" "$(grep -c . <<<"$bad") of $seen cells" || true
    fi
}
claim "svcnet: a pod reaching itself through its Service is masqueraded (hairpin)" \
    'col == "hairpin" && aff[label] == "0" && cell != "n/a"' '
        split(ips[hp[label]], own, " "); n = split(cell, parts, ",")
        for (i = 1; i <= n; i++) { split(parts[i], w, " ")
            if (w[1] == "ok" && w[2] == hp[label] && (w[3] == own[1] || w[3] == own[2])) print label ": " cell }'
claim "svcnet: outside traffic to a policy-Cluster NodePort, externalIP or LB IP is masqueraded" \
    'col == "outside-allowed" && etp[label] == "Cluster" && kind[label] ~ /NodePort|ExternalIP|LoadBalancer/' '
        if (!sources_in(cell, n4, n6, "kube-ipvs0-address")) print label ": " cell'
claim "svcnet: outside traffic to a policy-Local frontend keeps its source address" \
    'col == "outside-allowed" && etp[label] == "Local" && kind[label] ~ /NodePort|ExternalIP|LoadBalancer/' '
        if (!sources_in(cell, a4, a6, a4)) print label ": " cell'
claim "svcnet: loadBalancerSourceRanges refuse the outside host outside them" \
    'col == "outside-refused" && ranges[label] == "1" && kind[label] == "LoadBalancer"' '
        if (cell ~ /(^|,)ok/) print label ": " cell'
claim "svcnet: loadBalancerSourceRanges let the outside host inside them through" \
    'col == "outside-allowed" && ranges[label] == "1" && kind[label] == "LoadBalancer" && (etp[label] == "Cluster" || hp[label] != "-")' '
        if (cell !~ /(^|,)ok/) print label ": " cell'
claim "svcnet: a ClusterIP on a port no Service has refuses connections (the filter)" \
    'kind[label] == "unused" && col == "local-pod"' '
        if (cell != "refused") print label ": " cell'
claim "svcnet: ClusterIP traffic from a local pod keeps the pod's address" \
    'col == "local-pod" && kind[label] == "ClusterIP" && aff[label] == "0"' '
        if (!sources_in(cell, client4, client6, client4)) print label ": " cell'
claim "svcnet: some traffic gets through (the world works)" \
    'col == "local-pod"' '
        if (cell ~ /(^|,)ok/) any = 1 } END { if (!any) print "no cell of the local-pod column connected"'

# --- the UDP rollout -------------------------------------------------------------------
if ((LOST[svcnet] < 0 || LOST[kube-proxy] < 0)); then
    vm_fail "UDP rollout: lost datagrams counted for both proxies" "kube-proxy ${LOST[kube-proxy]}, svcnet ${LOST[svcnet]}" || true
else
    vm_check "UDP rollout: svcnet loses no datagram once the new pod has answered" [ "${LOST_LATE[svcnet]}" -eq 0 ]
    vm_check "UDP rollout: svcnet loses no more than kube-proxy (svcnet ${LOST[svcnet]}, kube-proxy ${LOST[kube-proxy]})" \
        [ "${LOST[svcnet]}" -le "${LOST[kube-proxy]}" ]
fi
PHASES=''
phase "the comparison"
vm_info "where the time went: $PHASES"
for f in kube-proxy svcnet; do
    if grep -qiE 'panic|fatal' "/run/$f.log"; then
        echo "--- /run/$f.log"
        tail -n 30 "/run/$f.log"
    fi
done
vm_finish
