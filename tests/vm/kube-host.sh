# shellcheck shell=bash
# Host-side helpers shared by the scripts that run the real kube-proxy in
# the VM beside the agent (tests/vm/kube-proxy-diff.sh, traffic-diff.sh,
# bench-kube-proxy.sh);
# sourced after they set `here` (tests/vm) and `repo`, and `say` and `die`
# functions (or kube_host_suite's).
#
#   kube_host_suite NAME     `say` and `die` for a suite that ends with
#                            "NAME: N passed, M failed": a `die` before the
#                            VM ran counts as one failed check
#   kube_host_manifests ARG DEFAULT
#                            -h/--help: the calling script's header, then exit;
#                            else sets manifests to the folder ARG names (or
#                            DEFAULT), absolute; `die`s when it is not one
#   kube_host_build          setup.sh, Kubernetes (scripts/k8s.sh build) and
#                            the agent with its examples (release; the agent
#                            stripped to target/vm/ipvs-agent);
#                            sets KUBE_BIN, the folder of the real binaries
#   kube_host_up CIDRS LOG   a control plane with these service ranges; sets
#                            KUBECONFIG_HOST and API_PORT
#   kube_host_cluster WORK   a dual-stack control plane (10.96.0.0/12,
#                            fd00:10:96::/108) with $manifests loaded
#                            (cluster-fixture.py) and the VM's kubeconfig in
#                            WORK/kubeconfig; stopped, and WORK removed, when
#                            the script exits
#   kube_host_bench_node [IP]
#                            for the benchmark-style runs (bench-kube-proxy.sh,
#                            faults.sh api): the Node node-a (with IP as its
#                            InternalIP when given) and the namespace bench
#   kube_host_kubeconfig OUT the VM's kubeconfig: certificates inline, server
#                            __SERVER__ (filled in by vm_kube_prepare)
#   KUBE_VM_EXTRAS           run.sh extras: kube-proxy, iptables-nft with its
#                            extensions, ipset, nft

kube_host_suite() {
    name="$1"
    say() { printf '%s: %s\n' "$name" "$*"; }
    die() {
        printf '%s: error: %s\n' "$name" "$*" >&2
        echo "$name: 0 passed, 1 failed"
        exit 1
    }
}

kube_host_manifests() {
    case $1 in
        -h | --help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
    esac
    manifests="${1:-$2}"
    [[ -d $manifests ]] || die "no manifest folder $manifests"
    manifests="$(cd "$manifests" && pwd)"
}

kube_host_build() {
    "$here/setup.sh"
    "$repo/scripts/k8s.sh" build
    KUBE_BIN="$("$repo/scripts/k8s.sh" bin)"
    # With its examples: the features every release build in make test
    # selects, so the dependencies are compiled once (see the Makefile's
    # RELEASE_BUILD).
    say "building ipvs-agent and its examples (release)"
    (cd "$repo" && cargo build -q --release -p ipvs-agent --bins --examples)
    mkdir -p "$repo/target/vm"
    strip -o "$repo/target/vm/ipvs-agent" "$repo/target/release/ipvs-agent"
    KUBE_VM_EXTRAS=("$KUBE_BIN/kube-proxy" "$repo/target/vm/ipvs-agent"
        /usr/sbin/xtables-nft-multi:/usr/sbin/xtables-nft-multi
        /usr/lib/x86_64-linux-gnu/xtables:/usr/lib/x86_64-linux-gnu/xtables
        "$(readlink -f /usr/sbin/ipset)":/usr/sbin/ipset /usr/sbin/nft)
}

kube_host_up() {
    local cidrs="$1" log="$2" server
    SVCNET_K8S_SERVICE_CIDR="$cidrs" "$repo/scripts/k8s.sh" up >"$log" 2>&1 || {
        cat "$log" >&2
        return 1
    }
    KUBECONFIG_HOST="$(sed -n 's/^KUBECONFIG=//p' "$repo/target/k8s/env")"
    server="$(sed -n 's/^SVCNET_K8S_SERVER=//p' "$repo/target/k8s/env")"
    API_PORT="${server##*:}"
}

kube_host_cluster() {
    # shellcheck disable=SC2064 # WORK is expanded now, on purpose
    trap "\"$repo/scripts/k8s.sh\" down >/dev/null 2>&1 || true; rm -rf '$1'" EXIT
    say "starting a dual-stack control plane (10.96.0.0/12, fd00:10:96::/108)"
    kube_host_up 10.96.0.0/12,fd00:10:96::/108 "$1/up.log" || die "scripts/k8s.sh up failed"
    say "loading $manifests"
    python3 "$here/cluster-fixture.py" "$KUBE_BIN/kubectl" "$KUBECONFIG_HOST" "$manifests" ||
        die "the manifests could not be loaded"
    kube_host_kubeconfig "$1/kubeconfig"
}

kube_host_bench_node() {
    local kubectl=("$KUBE_BIN/kubectl" --kubeconfig "$KUBECONFIG_HOST")
    "${kubectl[@]}" create -f - >/dev/null <<'EOF'
apiVersion: v1
kind: Node
metadata: {name: node-a, labels: {kubernetes.io/hostname: node-a}}
EOF
    if [[ -n ${1:-} ]]; then
        "${kubectl[@]}" patch node node-a --subresource=status --type=merge \
            -p "{\"status\":{\"addresses\":[{\"type\":\"InternalIP\",\"address\":\"$1\"}]}}" >/dev/null
    fi
    "${kubectl[@]}" create namespace bench >/dev/null
}

kube_host_kubeconfig() {
    local pki="$repo/target/k8s/pki"
    b64() { base64 -w0 <"$1"; }
    cat >"$1" <<EOT
apiVersion: v1
kind: Config
clusters:
- name: svcnet-test
  cluster: {server: __SERVER__, certificate-authority-data: $(b64 "$pki/ca.crt")}
users:
- name: admin
  user: {client-certificate-data: $(b64 "$pki/admin.crt"), client-key-data: $(b64 "$pki/admin.key")}
contexts:
- name: svcnet-test
  context: {cluster: svcnet-test, user: admin}
current-context: svcnet-test
EOT
}
