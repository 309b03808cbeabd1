#!/usr/bin/env bash
# The VM half of tests/vm/faults.sh in API mode (which boots it, with the
# real kube-apiserver on the host holding the stable Services and
# $SVCNET_FAULTS_SERVICES others: see there).
#
# The agent runs as `ipvs-agent run --kubeconfig` in the VM's root namespace
# (the node, 192.0.2.10), the pods and the client as in faults.sh. Once its
# table equals `plan --kubeconfig`, the client holds its connections and
# this script asks the host for the outage (the line FAULT-API-STOP): the
# host stops kube-apiserver for $SVCNET_FAULTS_OUTAGE s, compacts etcd past
# every resourceVersion the agent saw, starts it again and deletes and
# creates Services. Checks: the apiserver became unreachable; the kernel's
# table stayed exactly as it was once the apiserver's own last change (its
# endpoint out of `kubernetes`) was synced, at every sample while it was
# away (every 10 s);
# it came back; the agent listed again (its log's "list complete" lines)
# and its table equals the plan from the restarted apiserver; no held
# connection broke and no new connection failed after recovery.
#
# Data: /data/kubeconfig; /vm/faults-lib.sh; /usr/local/bin/ipvs-agent,
# traffic.
# shellcheck disable=SC2317 # scenario functions are called through vm_scenario
# shellcheck source=tests/vm/lib.sh
VM_NODE_IP4=192.0.2.10
. /vm/lib.sh

F=/tmp/faults
mkdir -p "$F"
LOG=$F/agent.log
PORT="${SVCNET_API_PORT:?the host passes SVCNET_API_PORT}"
SERVICES=${SVCNET_FAULTS_SERVICES:-5000}
OUTAGE=${SVCNET_FAULTS_OUTAGE:-60}
COMMON=(--kubeconfig /run/kubeconfig-vm --node-name node-a --node-ip "$VM_NODE_IP4")
RUN_FLAGS=(--min-sync-period 1s --sync-period 10s --nftables=false
    --healthz-bind-address 127.0.0.1:10256 --metrics-bind-address 127.0.0.1:10249)

# shellcheck source=tests/vm/guest/faults-lib.sh
. /vm/faults-lib.sh

api_reachable() { timeout 3 socat -u /dev/null "TCP:10.0.2.2:$PORT" 2>/dev/null; }
api_unreachable() { ! api_reachable; }
# (Not `plan | grep -q`: grep leaves at the first match, plan dies of
# SIGPIPE writing the rest, and under pipefail the pipeline fails.)
fresh_listed() {
    local dns
    dns="$(timeout 180 ipvs-agent plan "${COMMON[@]}" --format dns)" && grep -q '^fresh-9\.bench\.' <<<"$dns"
}
# The kubernetes Service, the 4 stable ones and the others, all programmed.
complete() { (($(virtual_servers) >= SERVICES + 5)); }

# The node's address on node0, without vm_node_init's default routes: QEMU's
# user network (vm_kube_prepare) has the default route, through which the
# kernel routes the real servers of the Services with no pod here.
node_without_default_route() {
    vm_sysctl net.ipv4.ip_forward 1
    vm_sysctl net.ipv4.vs.conntrack 1
    ip link add "$VM_NODE_IF" type dummy
    ip link set "$VM_NODE_IF" up
    ip addr add "$VM_NODE_IP4/24" dev "$VM_NODE_IF"
    touch "$VM_STATE/node-init"
}

setup() {
    vm_kube_prepare "$PORT"
    node_without_default_route
    pods_and_client
    VM_AGENT_START_TIMEOUT=300 vm_agent_start "$LOG" "${COMMON[@]}" "${RUN_FLAGS[@]}"
    vm_wait_until 600 complete || { echo "the table has $(virtual_servers) virtual servers after 600 s"; return 1; }
    vm_info "the agent programmed $(virtual_servers) virtual servers"
    check_table api-start 300
    stable_targets
}

api_loss() {
    local snapshot samples=0 differed=0 lists_before lists_after waited=0
    traffic_start api-loss
    lists_before="$(vm_agent_log "$LOG" | grep -c 'list complete' || true)"
    vm_info "FAULT-API-STOP: the host stops kube-apiserver now, for $OUTAGE s"
    vm_wait_until 60 api_unreachable &&
        vm_pass api-loss-apiserver-unreachable ||
        vm_fail api-loss-apiserver-unreachable "still reachable 60 s after asking" || true
    # A kube-apiserver that stops gracefully takes itself out of the
    # `kubernetes` Service's endpoints first, and the agent follows that
    # last change (within its 1 s minimum sync period): the table is taken
    # once that is done, then sampled every 10 s while it is away.
    sleep 3
    snapshot="$(save_sorted)"
    while api_unreachable && ((waited < OUTAGE + 240)); do
        samples=$((samples + 1))
        if [[ "$(save_sorted)" != "$snapshot" ]]; then
            differed=$((differed + 1))
            ((differed > 1)) || diff <(printf '%s\n' "$snapshot") <(save_sorted) | head -n 10 || true
        fi
        sleep 10
        waited=$((waited + 10))
    done
    vm_info "api-loss: the table sampled $samples times while kube-apiserver was away; $differed differed from before"
    api_reachable && vm_pass api-loss-apiserver-back "after about $waited s" ||
        vm_fail api-loss-apiserver-back "not back after $waited s" || true
    ((samples >= 2 && differed == 0)) &&
        vm_pass api-loss-rules-stayed-programmed "$samples samples" ||
        vm_fail api-loss-rules-stayed-programmed "$differed of $samples samples differed" || true
    # The host's changes after the restart are in (plan reads the apiserver).
    vm_wait_until 300 fresh_listed ||
        vm_fail api-loss-changes-made "plan --format dns never showed fresh-9" || true
    check_table api-loss 300
    lists_after="$(vm_agent_log "$LOG" | grep -c 'list complete' || true)"
    vm_agent_log "$LOG" | grep -i 'watch failed' | sed -n '1p;$p' || true
    vm_agent_log "$LOG" | grep -i '410\|too old\|expired' | tail -n 2 || true
    ((lists_after > lists_before)) &&
        vm_pass api-loss-relisted "$((lists_after - lists_before)) lists after the outage" ||
        vm_fail api-loss-relisted "no list after the outage" || true
    traffic_end api-loss
}

vm_scenario setup setup
mapfile -t TARGETS <"$F/targets"
vm_scenario api-loss api_loss
vm_agent_stop
vm_finish
