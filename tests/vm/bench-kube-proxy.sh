#!/usr/bin/env bash
# Benchmark: the real kube-proxy (v1.37.2, IPVS mode) against ipvs-agent (API
# mode) in the same QEMU kernel, following the same real apiserver, at N
# Services x 10 endpoints for each N given (default: 1000 5000 10000).
#
#   tests/vm/bench-kube-proxy.sh [N ...]
#
# For each tool (tests/vm/guest/bench-kube-proxy.sh says how each is
# measured): start to the default/kubernetes virtual server; start to the
# complete table; one sync with nothing changed; network programming latency
# p50 and p99 over SVCNET_BENCH_UPDATES (default 200) EndpointSlice updates,
# one PATCH a second, each timed on its own; CPU seconds and maximum RSS. Writes
# benchmarks/kube-proxy.md and benchmarks/kube-proxy.json, with the ratios of
# each run (both tools measured in the same VM, one after the other).
#
# The Services have no selector and one hand-written EndpointSlice each (10
# ready endpoints on node-b), so the apiserver holds 2N objects and no
# controller rewrites them; ClusterIPs come from 10.96.0.0/12.
#
# Environment: VM_MEM (default 3072 MiB), VM_SMP (default 2), VM_TIMEOUT
# (default 7200 s per N), SVCNET_BENCH_UPDATES, SVCNET_BENCH_TOOLS (default
# "kube-proxy,svcnet"; one of them alone is for profiling, and then the
# report, benchmarks/kube-proxy-TOOL-alone.md and .json, has no ratios),
# SVCNET_BENCH_FULL_TIMEOUT (default 3000 s: how long
# a tool may take to program the complete table). Each tool's log is kept in
# target/vm/out/bench-kube-proxy/TOOL-N.log.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
sizes=("$@")
((${#sizes[@]})) || sizes=(1000 5000 10000)
updates="${SVCNET_BENCH_UPDATES:-200}"

say() { printf 'bench-kube-proxy: %s\n' "$*"; }
die() { printf 'bench-kube-proxy: error: %s\n' "$*" >&2; exit 1; }
for n in "${sizes[@]}"; do
    [[ $n =~ ^[1-9][0-9]*$ ]] || die "N must be a positive number, not $n"
done

# shellcheck source=tests/vm/kube-host.sh
. "$here/kube-host.sh"
kube_host_build
bin="$KUBE_BIN"

work="$(mktemp -d "${TMPDIR:-/tmp}/bench-kube-proxy.XXXXXX")"
proxy_pid=""
cleanup() {
    [[ -n $proxy_pid ]] && kill "$proxy_pid" 2>/dev/null
    "$repo/scripts/k8s.sh" down >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT

kube_host_up 10.96.0.0/12 "$work/up.log" || die "scripts/k8s.sh up failed"
kubectl=("$bin/kubectl" --kubeconfig "$KUBECONFIG_HOST")
kube_host_bench_node 192.168.56.10

# Plain HTTP to the apiserver for the VM's updates (no TLS handshake per
# update inside an emulated CPU): kubectl proxy on the host's loopback.
proxy_port=$((30000 + RANDOM % 5000))
"${kubectl[@]}" proxy --address 127.0.0.1 --port "$proxy_port" --accept-hosts '.*' >"$work/proxy.log" 2>&1 &
proxy_pid=$!

kube_host_kubeconfig "$work/kubeconfig"

results="$work/results.json"
: >"$results"
loaded=0
for n in $(printf '%s\n' "${sizes[@]}" | sort -n); do
    if ((n > loaded)); then
        say "creating Services $loaded..$((n - 1)) with their EndpointSlices"
        t0=$SECONDS
        "$here/bench-objects.py" "$loaded" "$n" >"$work/objects.json"
        "${kubectl[@]}" create -f "$work/objects.json" >/dev/null
        say "  $((2 * (n - loaded))) objects in $((SECONDS - t0)) s"
        loaded=$n
    fi
    # awk, not head: head would stop reading early and, under pipefail, the
    # SIGPIPE of the commands before it would end the script.
    "${kubectl[@]}" get services -n bench -o jsonpath='{range .items[*]}{.metadata.name} {.spec.clusterIP}{"\n"}{end}' \
        >"$work/all-vips"
    sort -t- -k2 -n "$work/all-vips" | awk -v n="$updates" 'NR <= n' >"$work/bench-vips"
    # The sample the guest looks at before it reads the whole table: the
    # last four Services in the apiserver's (byte) order of names, which a
    # proxy programming its lists as they come programs last, and four
    # spread over that order.
    LC_ALL=C sort -k1,1 "$work/all-vips" |
        awk -v n="$n" -v step=$((n / 4 > 0 ? n / 4 : 1)) 'NR > n - 4 || NR % step == 0' >"$work/bench-gate"
    say "N=$n: booting the VM (kube-proxy, then ipvs-agent)"
    VM_NET=user VM_MEM="${VM_MEM:-3072}" VM_SMP="${VM_SMP:-2}" VM_TIMEOUT="${VM_TIMEOUT:-7200}" \
        VM_APPEND="SVCNET_API_PORT=$API_PORT SVCNET_PROXY_PORT=$proxy_port SVCNET_BENCH_N=$n SVCNET_BENCH_UPDATES=$updates SVCNET_BENCH_TOOLS=${SVCNET_BENCH_TOOLS:-kube-proxy,svcnet} SVCNET_BENCH_FULL_TIMEOUT=${SVCNET_BENCH_FULL_TIMEOUT:-3000}" \
        "$here/run.sh" "$here/guest/bench-kube-proxy.sh" "${KUBE_VM_EXTRAS[@]}" \
        "$work/kubeconfig:/data/kubeconfig" "$work/bench-vips:/data/bench-vips" "$work/bench-gate:/data/bench-gate" ||
        say "N=$n: the VM reported failures (above: a tool too slow for a figure counts as one); its figures are kept"
    [[ -s $repo/target/vm/out/bench-kube-proxy/bench-$n.json ]] || die "the VM run for N=$n gave no figures"
    cat "$repo/target/vm/out/bench-kube-proxy/bench-$n.json" >>"$results"
    cp "$results" "$repo/target/vm/out/bench-kube-proxy-results.json"
done

# A run of one tool alone has no ratios: its report goes beside the
# comparison's, named for the tool (benchmarks/kube-proxy-svcnet-alone).
report="benchmarks/kube-proxy"
[[ ${SVCNET_BENCH_TOOLS:-kube-proxy,svcnet} == kube-proxy,svcnet ]] || report="benchmarks/kube-proxy-${SVCNET_BENCH_TOOLS}-alone"
python3 "$here/bench-kube-proxy-report.py" "$results" "$repo/$report" "$(nproc)"
say "wrote $report.md and $report.json"
