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
manifests="${1:-$here/kube-proxy-cases}"
name=kube-proxy-diff

say() { printf 'kube-proxy-diff: %s\n' "$*"; }
# A failure before the VM ran: one failed check, so the closing line counts it.
die() {
    printf 'kube-proxy-diff: error: %s\n' "$*" >&2
    echo "$name: 0 passed, 1 failed"
    exit 1
}

case ${1:-} in
    -h | --help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
esac
[[ -d $manifests ]] || die "no manifest folder $manifests"
manifests="$(cd "$manifests" && pwd)"

started=$SECONDS
"$here/setup.sh"
"$repo/scripts/k8s.sh" build
bin="$("$repo/scripts/k8s.sh" bin)"
say "building ipvs-agent (release)"
(cd "$repo" && cargo build -q --release -p ipvs-agent)
mkdir -p "$repo/target/vm"
strip -o "$repo/target/vm/ipvs-agent" "$repo/target/release/ipvs-agent"

work="$(mktemp -d "${TMPDIR:-/tmp}/kube-proxy-diff.XXXXXX")"
cleanup() {
    "$repo/scripts/k8s.sh" down >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT

say "starting a dual-stack control plane (10.96.0.0/12, fd00:10:96::/108)"
SVCNET_K8S_SERVICE_CIDR=10.96.0.0/12,fd00:10:96::/108 "$repo/scripts/k8s.sh" up >"$work/up.log" 2>&1 ||
    { cat "$work/up.log" >&2; die "scripts/k8s.sh up failed"; }
env_file="$repo/target/k8s/env"
kubeconfig="$(sed -n 's/^KUBECONFIG=//p' "$env_file")"
server="$(sed -n 's/^SVCNET_K8S_SERVER=//p' "$env_file")"
api_port="${server##*:}"

say "loading $manifests"
python3 "$here/cluster-fixture.py" "$bin/kubectl" "$kubeconfig" "$manifests" || die "the manifests could not be loaded"

# The VM's kubeconfig: certificates inline, the server filled in inside.
pki="$repo/target/k8s/pki"
b64() { base64 -w0 <"$1"; }
cat >"$work/kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: svcnet-test
  cluster:
    server: __SERVER__
    certificate-authority-data: $(b64 "$pki/ca.crt")
users:
- name: admin
  user:
    client-certificate-data: $(b64 "$pki/admin.crt")
    client-key-data: $(b64 "$pki/admin.key")
contexts:
- name: svcnet-test
  context: {cluster: svcnet-test, user: admin}
current-context: svcnet-test
EOF

say "comparing in the VM; tables are sorted before comparing (ipvsadm-save lists virtual servers in the kernel's hash order, which differs between namespaces)"
status=0
VM_NET=user VM_MEM="${VM_MEM:-2048}" VM_SMP="${VM_SMP:-2}" VM_TIMEOUT="${VM_TIMEOUT:-1800}" \
    VM_APPEND="SVCNET_API_PORT=$api_port" \
    "$here/run.sh" "$here/guest/kube-proxy-diff.sh" \
    "$bin/kube-proxy" "$bin/kubectl" "$repo/target/vm/ipvs-agent" \
    /usr/sbin/xtables-nft-multi:/usr/sbin/xtables-nft-multi \
    /usr/lib/x86_64-linux-gnu/xtables:/usr/lib/x86_64-linux-gnu/xtables \
    "$(readlink -f /usr/sbin/ipset)":/usr/sbin/ipset \
    "$work/kubeconfig:/data/kubeconfig" || status=$?
say "took $((SECONDS - started)) s"
exit "$status"
