#!/usr/bin/env bash
# The real kube-proxy (v1.37.2, --proxy-mode=ipvs) and ipvs-agent (API mode)
# side by side in one kernel, following one real apiserver: their IPVS
# tables and kube-ipvs0 addresses must be identical, first for the
# manifests, then after each step of a churn script.
#
#   tests/vm/kube-proxy-diff.sh [MANIFEST_DIR]
#
# MANIFEST_DIR defaults to tests/vm/kube-proxy-cases. What it holds:
#   - Services, Pods and (for selector-less Services) EndpointSlices only;
#     the script creates the Nodes: node-a (192.168.56.10, fd00:56::10) is
#     the node the proxies run on, node-b (192.168.56.11, fd00:56::11) a
#     second one.
#   - Each Pod names node-a or node-b in spec.nodeName and carries its
#     status (phase, conditions, podIP, podIPs), applied through the status
#     subresource. A Pod annotated svcnet.io/test-terminating: "true" is made
#     terminating (a finalizer holds it, then it is deleted).
#   - node-a's pods are in 10.244.1.0/24 and fd00:10:244:1::/64, node-b's in
#     10.244.2.0/24 and fd00:10:244:2::/64; the service ranges are
#     10.96.0.0/12 and fd00:10:96::/108; LoadBalancer IPs come from the
#     Service's own status.loadBalancer, applied too.
#
# Steps: scripts/k8s.sh builds (or reuses) Kubernetes and starts a dual-stack
# control plane on the host's loopback; tests/vm/cluster-fixture.py loads the
# folder; the QEMU VM (tests/vm/guest/kube-proxy-diff.sh) reaches the
# apiserver through QEMU's user networking and does the comparisons. One
# line per step (PASS ... identical, or FAIL with the diff before it); the
# closing line is `kube-proxy-diff: N passed, M failed`; any difference
# exits non-zero. The tables are compared sorted (the kernel's dump order
# differs between namespaces), and the script says so.
#
# Environment: VM_TIMEOUT (default 1800 s), VM_MEM (default 2048 MiB),
# VM_SMP (default 2), as for tests/vm/run.sh.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"

# shellcheck source=tests/vm/kube-host.sh
. "$here/kube-host.sh"
kube_host_suite kube-proxy-diff
kube_host_manifests "${1:-}" "$here/kube-proxy-cases"
started=$SECONDS
kube_host_build

work="$(mktemp -d "${TMPDIR:-/tmp}/kube-proxy-diff.XXXXXX")"
kube_host_cluster "$work"

say "comparing in the VM; tables are sorted before comparing (ipvsadm-save lists virtual servers in the kernel's hash order, which differs between namespaces)"
status=0
VM_NET=user VM_MEM="${VM_MEM:-2048}" VM_SMP="${VM_SMP:-2}" VM_TIMEOUT="${VM_TIMEOUT:-1800}" \
    VM_APPEND="SVCNET_API_PORT=$API_PORT" \
    "$here/run.sh" "$here/guest/kube-proxy-diff.sh" "${KUBE_VM_EXTRAS[@]}" "$KUBE_BIN/kubectl" \
    "$work/kubeconfig:/data/kubeconfig" || status=$?
say "took $((SECONDS - started)) s"
exit "$status"
