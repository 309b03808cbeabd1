#!/usr/bin/env bash
# The traffic matrix against the real kube-proxy: every frontend of every
# Service tried from every kind of client, through kube-proxy v1.37.2
# (--proxy-mode=ipvs: IPVS, iptables and ipset), then through ipvs-agent
# (IPVS and nftables), in the same VM's kernel, and a UDP rollout under
# traffic for each. The two matrices must be identical.
#
#   tests/vm/traffic-diff.sh [MANIFEST_DIR]
#
# MANIFEST_DIR defaults to tests/vm/kube-proxy-cases and follows the
# convention of tests/vm/kube-proxy-diff.sh (see its header): Services, Pods
# (with nodeName node-a or node-b and their status) and EndpointSlices; the
# script makes the Nodes. Every Pod (and every EndpointSlice address no Pod
# has) becomes a network namespace at its addresses behind its node, answering
# on each of its ports, TCP and UDP, with its name and the source address it
# saw; the outside hosts take addresses inside and outside the Services'
# loadBalancerSourceRanges. tests/vm/traffic-plan.py writes the plan from the
# loaded cluster; tests/vm/guest/traffic-diff.sh builds the network, runs the
# matrix and the rollout (its header says how).
#
# Rows: ClusterIP:port, NodeIP:NodePort, externalIP and LoadBalancer IP of
# every Service (the `kubernetes` Service left out), and a ClusterIP on a port
# no Service has. Columns: a pod on node-a, the endpoint pod itself
# (hairpin), node-a's own processes, an outside host allowed by source ranges,
# one refused. Cells: connected (with the backend's name and the source it
# saw), refused, reset or timed out (attempts wait 2.5 s).
#
# One check per row (the two matrices agree), one per healthCheckNodePort
# (the same answer), claims the svcnet matrix must make whatever the manifests, and the rollout's counts (svcnet loses no
# datagram once the new pod has answered, and no more than kube-proxy). The
# closing line is `traffic-diff: N passed, M failed`.
#
# Environment: VM_TIMEOUT (default 1800 s), VM_MEM (default 2048 MiB),
# VM_SMP (default 2), as for tests/vm/run.sh; SVCNET_TRAFFIC_TIMEOUT_MS.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"

# shellcheck source=tests/vm/kube-host.sh
. "$here/kube-host.sh"
kube_host_suite traffic-diff
kube_host_manifests "${1:-}" "$here/kube-proxy-cases"
started=$SECONDS
kube_host_build
# kube_host_build built the traffic tool (ipvs-agent/examples/traffic.rs).
strip -o "$repo/target/vm/traffic" "$repo/target/release/examples/traffic"

work="$(mktemp -d "${TMPDIR:-/tmp}/traffic-diff.XXXXXX")"
kube_host_cluster "$work"
python3 "$here/traffic-plan.py" "$KUBE_BIN/kubectl" "$KUBECONFIG_HOST" >"$work/traffic-plan.tsv" || die "the traffic plan could not be made"
say "$(grep -c '^row' "$work/traffic-plan.tsv") rows, $(grep -c '^backend' "$work/traffic-plan.tsv") backends"

status=0
VM_NET=user VM_MEM="${VM_MEM:-2048}" VM_SMP="${VM_SMP:-2}" VM_TIMEOUT="${VM_TIMEOUT:-1800}" \
    VM_APPEND="SVCNET_API_PORT=$API_PORT${SVCNET_TRAFFIC_TIMEOUT_MS:+ SVCNET_TRAFFIC_TIMEOUT_MS=$SVCNET_TRAFFIC_TIMEOUT_MS}" \
    "$here/run.sh" "$here/guest/traffic-diff.sh" "${KUBE_VM_EXTRAS[@]}" "$KUBE_BIN/kubectl" \
    "$repo/target/vm/traffic" "$work/kubeconfig:/data/kubeconfig" \
    "$work/traffic-plan.tsv:/data/traffic-plan.tsv" || status=$?
say "took $((SECONDS - started)) s"
exit "$status"
