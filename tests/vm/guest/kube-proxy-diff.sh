#!/usr/bin/env bash
# The VM half of tests/vm/kube-proxy-diff.sh (which boots it: see there).
#
# Two network namespaces of this one kernel each play node-a: "kube-proxy"
# runs the real kube-proxy --proxy-mode=ipvs, "svcnet" runs ipvs-agent in API
# mode. Both follow the same apiserver (the host's, reached through QEMU's
# user networking: 10.0.2.2 is the host's loopback) and have the same
# interfaces and addresses (a dummy eth0 with node-a's InternalIPs), so they
# must program the same IPVS table and bind the same kube-ipvs0 addresses.
#
# Each comparison waits until kube-proxy's table has changed from the one
# before the step and the agent's has been equal to it on three reads 1 s
# apart (90 s at most), and prints one PASS line with how long the step's
# changes and comparison took, or a FAIL line after the diff. The tables
# are compared sorted: `ipvsadm-save -n` lists virtual servers in the
# kernel's hash order, which differs between namespaces, so each side's
# lines (every -a line names its virtual server) are sorted.
#
# Then a churn script changes the cluster step by step (namespace "churn":
# scale up and down, a terminating endpoint, a port added, sessionAffinity,
# NodePort, LoadBalancer with a status IP, externalIPs, ETP Local, an IPv6
# Service, a deletion), comparing after each. Last, `kube-proxy --cleanup`
# runs in its namespace, and a second agent started there (the same node,
# from what kube-proxy left) must program the same table again. Last of all,
# neither agent's log may hold the kubeconfig's credentials.
#
# Environment (from run.sh's VM_APPEND): SVCNET_API_PORT, the apiserver's
# port on the host's loopback. Files: /data/kubeconfig (server __SERVER__,
# certificates inline), /usr/local/bin/{kube-proxy,kubectl,ipvs-agent}.
. /vm/lib.sh
set -u

API_PORT="${SVCNET_API_PORT:?SVCNET_API_PORT is not set}"
NODE_IP4=192.168.56.10
NODE_IP6=fd00:56::10
CLUSTER_CIDR=10.244.0.0/16,fd00:10:244::/56
KUBECTL=(kubectl --kubeconfig /run/kubeconfig-vm --request-timeout=30s)
# kubectl's warnings (externalIPs are deprecated) go here, not to the console.
KUBECTL_LOG=/run/kubectl.log
# How long a step may take to reach both sides.
SETTLE_TIMEOUT=90

vm_kube_prepare "$API_PORT" || vm_finish

# table NS: the namespace's IPVS table (`ipvsadm-save -n`), kube-ipvs0's
# state (up, down or missing) and its addresses, sorted. A process costs
# about a tenth of a second in the emulated VM, and each comparison reads
# both tables three times or more, so a read spawns as few as it can:
# `ipvsadm -S -n` is what the ipvsadm-save script runs, entered into the
# namespace with busybox's nsenter (`ip netns exec` remounts /sys for each
# command); kube-ipvs0's link and addresses come from one `ip addr show`
# (its first line is the link's), sorted in bash.
table() {
    local ns="$1" link=missing
    local -a w addresses=()
    nsenter --net="/run/netns/$ns" ipvsadm -S -n | LC_ALL=C sort
    while read -r -a w; do
        if [[ ${w[1]:-} == kube-ipvs0: ]]; then
            # "N: kube-ipvs0: <FLAGS> ...", the link
            if [[ ${w[2]:-} =~ ^\<([A-Z_]+,)*UP[,\>] ]]; then link=up; else link=down; fi
        elif [[ ${w[0]:-} == inet || ${w[0]:-} == inet6 ]]; then
            # "inet ADDRESS/LEN ...", sorted in as it comes
            vm_insert_sorted addresses "${w[1]}"
        fi
    done < <(ip -n "$ns" addr show dev kube-ipvs0 2>/dev/null)
    echo "kube-ipvs0 link: $link"
    echo "kube-ipvs0:"
    ((${#addresses[@]} == 0)) || printf '%s\n' "${addresses[@]}"
}

# compare STEP [REFERENCE OTHER]: wait until REFERENCE's table (default
# kube-proxy's) has changed from the one before the step, and OTHER's
# (default the agent's) has been equal to it on three reads of both, each
# begun 1 s after the one before (or as soon as it ended); PASS then,
# else FAIL with the diff of the last reads after SETTLE_TIMEOUT seconds.
# The change check keeps a step that reached neither side from passing as
# "identical". BEFORE holds the reference's table between steps.
BEFORE="$(table kube-proxy 2>/dev/null || true)"
# When the last comparison ended: a step's time is its changes (kubectl)
# from then, and its comparison's wait.
STEP_MARK="$(vm_uptime)"
compare() {
    local step="$1" ref="${2:-kube-proxy}" other="${3:-svcnet}" a b changed=0 streak=0 began left
    local deadline=$((SECONDS + SETTLE_TIMEOUT)) t0 now timing
    t0="$(vm_uptime)"
    while ((SECONDS < deadline)); do
        began="${EPOCHREALTIME/./}"
        a="$(table "$ref")"
        b="$(table "$other")"
        [[ $a != "$BEFORE" ]] && changed=1
        if ((changed)) && [[ $a == "$b" ]]; then
            streak=$((streak + 1))
            ((streak >= 3)) && break
        else
            streak=0
        fi
        left=$((began + 1000000 - ${EPOCHREALTIME/./}))
        ((left <= 0)) || sleep "0.$(printf '%06d' "$left")"
    done
    BEFORE="$a"
    now="$(vm_uptime)"
    timing="$(awk -v m="$STEP_MARK" -v t="$t0" -v u="$now" 'BEGIN { printf "changes %.1f s, comparison %.1f s", t - m, u - t }')"
    STEP_MARK="$now"
    if ((!changed)); then
        echo "--- $step: the $ref namespace's table did not change within ${SETTLE_TIMEOUT} s; kube-proxy's log ends:"
        tail -n 15 /run/kube-proxy.log
        vm_fail "$step" "the $ref namespace's table did not change" || true
    elif ((streak >= 3)); then
        vm_pass "$step" "identical: $(grep -c '^-A' <<<"$a") virtual servers, $(grep -c '^-a' <<<"$a") real servers, $(sed -n '/^kube-ipvs0:$/,$p' <<<"$a" | grep -vc '^kube-ipvs0:') addresses, $(sed -n 's/^kube-ipvs0 link: //p' <<<"$a") link; $timing"
    else
        echo "--- $step: the tables (sorted) differ: diff -u $ref $other"
        diff -u <(printf '%s\n' "$a") <(printf '%s\n' "$b") | tail -n +3 || true
        vm_fail "$step" "differs" || true
    fi
}

kc() { "${KUBECTL[@]}" "$@" 2>>"$KUBECTL_LOG" || { tail -n 3 "$KUBECTL_LOG"; return 1; }; }

# pods [OBJECTS] NAME,NODE,IP4[,IP6]...: ready Pods of app=churn in
# namespace churn, created with OBJECTS (YAML documents, told from a Pod
# by their lines; created first) by one kubectl (a kubectl costs 1 to 3 s
# of the emulated CPU), then each given the status a kubelet would write.
pods() {
    local objects="" spec name node ip4 ip6 ips
    [[ $1 == *$'\n'* ]] && { objects="$1"; shift; }
    for spec in "$@"; do
        IFS=, read -r name node ip4 ip6 <<<"$spec"
        objects+="
---
apiVersion: v1
kind: Pod
metadata: {name: $name, namespace: churn, labels: {app: churn}}
spec:
  nodeName: $node
  containers: [{name: main, image: registry.k8s.io/pause:3.10, ports: [{containerPort: 8080}]}]"
    done
    kc create -f - >/dev/null <<<"$objects" || return 1
    for spec in "$@"; do
        IFS=, read -r name node ip4 ip6 <<<"$spec"
        ips="{\"ip\":\"$ip4\"}"
        [[ -n $ip6 ]] && ips+=",{\"ip\":\"$ip6\"}"
        kc patch pod "$name" -n churn --subresource=status --type=merge -p \
            "{\"status\":{\"phase\":\"Running\",\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}],\"podIP\":\"$ip4\",\"podIPs\":[$ips]}}" >/dev/null
    done
}

svc_patch() { kc patch service churn-web -n churn --type=merge -p "$1" >/dev/null; }

# --- the two nodes -----------------------------------------------------------
vm_kube_node kube-proxy "$NODE_IP4" "$NODE_IP6"
vm_kube_node svcnet "$NODE_IP4" "$NODE_IP6"
vm_info "kube-proxy $(kube-proxy --version 2>&1) and ipvs-agent $(ipvs-agent --version 2>&1 | awk '{print $2}') in namespaces of one kernel"

ip netns exec kube-proxy kube-proxy --proxy-mode=ipvs --kubeconfig /run/kubeconfig-node \
    --hostname-override node-a --cluster-cidr "$CLUSTER_CIDR" --conntrack-max-per-core=0 \
    --metrics-bind-address 127.0.0.1:10249 --healthz-bind-address 127.0.0.1:10256 >/run/kube-proxy.log 2>&1 &
KUBE_PROXY_PID=$!
echo "$KUBE_PROXY_PID" >>"$VM_STATE/pids"
# ipvs-agent starts once kube-proxy has programmed `kubernetes` (at most
# 120 s): the two then never set up their IPVS and netfilter state at the
# same moment. Both starting together hung the emulated kernel once (both
# vCPUs in soft lockup from the first seconds, in a CI run on 2026-11-25);
# the comparison does not depend on the order.
for _ in $(seq 1200); do
    ip netns exec kube-proxy ipvsadm -Ln -t 10.96.0.1:443 >/dev/null 2>&1 && break
    kill -0 "$KUBE_PROXY_PID" 2>/dev/null || break
    sleep 0.1
done
# --nftables explicitly (the table is kept by default anyway): the checks of
# table inet svcnet below need it, and with the flag given a kernel without
# nf_tables stops the agent with an error instead of a warning.
ip netns exec svcnet env NO_COLOR=1 ipvs-agent run --kubeconfig /run/kubeconfig-node \
    --hostname-override node-a --state-file /run/svcnet-state.json \
    --nftables --cluster-cidr "$CLUSTER_CIDR" >/run/svcnet.log 2>&1 &
echo $! >>"$VM_STATE/pids"

# nft_compare STEP: svcnet's table inet svcnet (run --nftables, kept from
# the API) holds the addresses of the ruleset `ipvs-agent plan --format nft`
# computes from the same apiserver, within 20 s. The kernel prints a table
# in its own layout, so the addresses in the two texts are compared, not
# the texts.
nft_addresses() {
    grep -oE '([0-9]{1,3}\.){3}[0-9]{1,3}(/[0-9]+)?|[0-9a-f]{1,4}(:[0-9a-f]{0,4}){2,7}(/[0-9]+)?' | LC_ALL=C sort -u
}
nft_compare() {
    local step="$1" want got=""
    want="$(ip netns exec svcnet ipvs-agent plan --kubeconfig /run/kubeconfig-node --hostname-override node-a \
        --format nft --cluster-cidr "$CLUSTER_CIDR" 2>/run/plan-nft.err | nft_addresses)"
    for _ in $(seq 20); do
        got="$(ip netns exec svcnet nft list table inet svcnet 2>/dev/null | nft_addresses)"
        [[ -n $got && $got == "$want" ]] && break
        sleep 1
    done
    if [[ -n $got && $got == "$want" ]]; then
        vm_pass "$step" "$(wc -l <<<"$got") addresses in table inet svcnet, as plan --format nft computes them"
    else
        echo "--- $step: addresses in plan --format nft (<) and in the kernel's table inet svcnet (>)"
        diff <(echo "$want") <(echo "$got") | head -n 20
        tail -n 5 /run/plan-nft.err
        vm_fail "$step" "table inet svcnet differs from plan --format nft" || true
    fi
    STEP_MARK="$(vm_uptime)"
}

compare "the manifests"
nft_compare "the manifests: nftables from the API"
if ! grep -q '^-A -t 10.96.0.1:443 ' <<<"$BEFORE"; then
    vm_fail "the default/kubernetes Service is programmed" "kube-proxy's table has no 10.96.0.1:443" || true
fi
# The addresses are read too (a read that finds none on either side would
# compare as identical).
if ! grep -q '^10\.96\.0\.1/32$' <<<"$BEFORE"; then
    vm_fail "kube-ipvs0 holds the kubernetes ClusterIP" "no 10.96.0.1/32 among kube-proxy's kube-ipvs0 addresses" || true
fi

# --- churn ---------------------------------------------------------------------
pods 'apiVersion: v1
kind: Namespace
metadata: {name: churn}
---
apiVersion: v1
kind: Service
metadata: {name: churn-web, namespace: churn}
spec:
  selector: {app: churn}
  ports: [{name: http, port: 80, targetPort: 8080}]' c1,node-a,10.244.1.101 c2,node-b,10.244.2.101
compare "churn: a Service with two endpoints"

pods c3,node-a,10.244.1.102 c4,node-b,10.244.2.102
compare "churn: scaled up to four"

kc delete pod c4 -n churn --grace-period=0 --force >/dev/null 2>&1
compare "churn: scaled down to three"

kc patch pod c3 -n churn --type=merge -p '{"metadata":{"finalizers":["svcnet.io/test-hold"]}}' >/dev/null
kc delete pod c3 -n churn --wait=false >/dev/null
compare "churn: an endpoint terminating"

svc_patch '{"spec":{"ports":[{"name":"http","port":80,"targetPort":8080},{"name":"https","port":443,"targetPort":8443}]}}'
compare "churn: a port added"

svc_patch '{"spec":{"sessionAffinity":"ClientIP"}}'
compare "churn: sessionAffinity ClientIP"

svc_patch '{"spec":{"type":"NodePort"}}'
compare "churn: type NodePort"

svc_patch '{"spec":{"type":"LoadBalancer"}}'
kc patch service churn-web -n churn --subresource=status --type=merge \
    -p '{"status":{"loadBalancer":{"ingress":[{"ip":"198.51.100.40"}]}}}' >/dev/null
compare "churn: type LoadBalancer with a status IP"

svc_patch '{"spec":{"externalIPs":["198.51.100.41"]}}'
compare "churn: externalIPs"

svc_patch '{"spec":{"externalTrafficPolicy":"Local"}}'
compare "churn: externalTrafficPolicy Local"

pods 'apiVersion: v1
kind: Service
metadata: {name: churn-v6, namespace: churn}
spec:
  ipFamilies: [IPv6]
  selector: {app: churn}
  ports: [{port: 8080, targetPort: 8080}]' c5,node-a,10.244.1.103,fd00:10:244:1::103
compare "churn: an IPv6 Service"

nft_compare "churn: nftables after the IPv6 Service"

kc delete service churn-web -n churn >/dev/null
compare "churn: a Service deleted"
nft_compare "churn: nftables after a Service deleted"

# --- the same node after kube-proxy --cleanup ------------------------------------
kill "$KUBE_PROXY_PID" 2>/dev/null || true
wait "$KUBE_PROXY_PID" 2>/dev/null || true
ip netns exec kube-proxy kube-proxy --cleanup --proxy-mode=ipvs >/run/kube-proxy-cleanup.log 2>&1 || true
left="$(ip netns exec kube-proxy ipvsadm-save -n | grep -c '^-A' || true)"
if [[ $left == 0 ]]; then
    vm_pass "kube-proxy --cleanup empties its IPVS table"
else
    vm_fail "kube-proxy --cleanup empties its IPVS table" "$left virtual servers left" || true
fi
ip netns exec kube-proxy env NO_COLOR=1 ipvs-agent run --kubeconfig /run/kubeconfig-node \
    --hostname-override node-a --state-file /run/svcnet-state-2.json >/run/svcnet-2.log 2>&1 &
echo $! >>"$VM_STATE/pids"
BEFORE="$(table kube-proxy)"
compare "ipvs-agent where kube-proxy ran, after kube-proxy --cleanup" svcnet kube-proxy
# The agents' logs hold none of the kubeconfig's credentials (client key).
vm_no_secrets_in_logs "no kubeconfig credential in the agents' logs" /run/kubeconfig-node \
    /run/svcnet.log /run/svcnet-2.log || true
for f in kube-proxy svcnet svcnet-2; do
    if grep -qiE 'panic|fatal' "/run/$f.log"; then
        echo "--- /run/$f.log"
        tail -n 30 "/run/$f.log"
    fi
done
vm_finish
