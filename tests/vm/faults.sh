#!/usr/bin/env bash
# Fault injection (issue 15): faults against ipvs-agent programming 5,000
# Services in the VM's kernel, under traffic. Each fault ends with the
# kernel's table equal to the plan, no held connection broken and no new
# connection failed after recovery, and prints those counts.
#
#   tests/vm/faults.sh [manifests|api|all]     (default all)
#
# manifests: one VM, the agent in manifest mode: killed mid-sync, a torn
#   state file, netlink receive-buffer overflow, concurrent edits of the
#   table, a full disk, too few file descriptors
#   (tests/vm/guest/faults.sh says how each is made and judged).
# api: the real kube-apiserver (scripts/k8s.sh) on the host with the 5,000
#   Services, the agent in API mode in the VM (tests/vm/guest/faults-api.sh):
#   the apiserver stopped for 60 s, etcd's history compacted past what the
#   agent saw, the apiserver started again and Services changed: the rules
#   stay programmed throughout, the agent relists (410 Gone) and converges.
#
# Each VM's run ends with run.sh's `faults: N passed, M failed` (manifest
# mode) or `faults-api: N passed, M failed`; the closing line adds them up,
# `faults: N passed, M failed in all`.
#
# Environment: SVCNET_FAULTS_SERVICES (5000), SVCNET_FAULTS_OUTAGE (60 s),
# SVCNET_FAULTS_ONLY (manifest mode's faults to run, as NAME,NAME: all
# by default), VM_TIMEOUT (1800 s), VM_MEM (2048 MiB), VM_SMP (2).
# A fault that breaks a held connection sends the agent's log out of the
# VM, to target/vm/out/faults/<fault>-agent.log.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
name=faults
which="${1:-all}"
services="${SVCNET_FAULTS_SERVICES:-5000}"
outage="${SVCNET_FAULTS_OUTAGE:-60}"

say() { printf 'faults: %s\n' "$*"; }
die() {
    printf 'faults: error: %s\n' "$*" >&2
    echo "$name: 0 passed, 1 failed"
    exit 1
}
case $which in
    manifests | api | all) ;;
    -h | --help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
    *) die "unknown part $which: expected manifests, api or all" ;;
esac
[[ $services =~ ^[1-9][0-9]*$ ]] || die "SVCNET_FAULTS_SERVICES must be a positive number, not $services"

started=$SECONDS
work="$(mktemp -d "${TMPDIR:-/tmp}/faults.XXXXXX")"
trap 'rm -rf "$work"' EXIT

# The four stable Services: two of the backend pods b1..b4 (10.245.0.1-4) each.
stable_manifests() {
    local ns="$1" i a b
    for i in 1 2 3 4; do
        a=$i b=$((i % 4 + 1))
        cat <<EOF
---
apiVersion: v1
kind: Service
metadata: {name: stable-$i, namespace: $ns}
spec:
  ports: [{name: http, port: 80, targetPort: 8080, protocol: TCP}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: stable-$i-a, namespace: $ns, labels: {kubernetes.io/service-name: stable-$i}}
addressType: IPv4
ports: [{name: http, port: 8080, protocol: TCP}]
endpoints:
- {addresses: [10.245.0.$a], conditions: {ready: true}, nodeName: node-a}
- {addresses: [10.245.0.$b], conditions: {ready: true}, nodeName: node-a}
EOF
    done
}

"$here/setup.sh"
say "building ipvs-agent and the fault tools (release)"
(cd "$repo" && cargo build -q --release -p ipvs-agent --bin ipvs-agent --example traffic --example netlink_shrink)
mkdir -p "$repo/target/vm"
for b in ipvs-agent examples/traffic examples/netlink_shrink; do
    strip -o "$repo/target/vm/${b##*/}" "$repo/target/release/$b"
done
TOOLS=("$repo/target/vm/ipvs-agent" "$repo/target/vm/traffic" "$repo/target/vm/netlink_shrink" /usr/bin/prlimit
    "$here/guest/faults-lib.sh:/vm/faults-lib.sh")

status=0
vm_status() { status=1; }

if [[ $which != api ]]; then
    mkdir -p "$work/faults/manifests"
    "$here/bench-gen.sh" "$work/faults/manifests" "$services" 10 >/dev/null
    stable_manifests default >"$work/faults/stable.yaml"
    say "manifest mode: $services Services + 4 stable ones; booting the VM"
    VM_MEM="${VM_MEM:-2048}" VM_SMP="${VM_SMP:-2}" VM_TIMEOUT="${VM_TIMEOUT:-1800}" \
        VM_APPEND="SVCNET_FAULTS_SERVICES=$services${SVCNET_FAULTS_ONLY:+ SVCNET_FAULTS_ONLY=$SVCNET_FAULTS_ONLY}" \
        "$here/run.sh" "$here/guest/faults.sh" "${TOOLS[@]}" "$work/faults:/data/faults" || vm_status
    log_manifests="$repo/target/vm/logs/faults.log"
fi

if [[ $which != manifests ]]; then
    # shellcheck source=tests/vm/kube-host.sh
    . "$here/kube-host.sh"
    "$repo/scripts/k8s.sh" build
    KUBE_BIN="$("$repo/scripts/k8s.sh" bin)"
    # Stopped at exit only once started here: a failed `up` (another
    # control plane running) must not stop someone else's.
    kube_host_up 10.96.0.0/12 "$work/up.log" || die "scripts/k8s.sh up failed"
    trap '"$repo/scripts/k8s.sh" down >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
    kubectl=("$KUBE_BIN/kubectl" --kubeconfig "$KUBECONFIG_HOST")
    kube_host_bench_node
    stable_manifests default | "${kubectl[@]}" create -f - >/dev/null
    say "creating $services Services with their EndpointSlices"
    "$here/bench-objects.py" 0 "$services" >"$work/objects.json"
    "${kubectl[@]}" create -f "$work/objects.json" >/dev/null
    kube_host_kubeconfig "$work/kubeconfig"

    # The outage, when the guest asks for it (a line on its console).
    run_dir="$repo/target/k8s"
    etcd_url="$(tr '\0' '\n' <"/proc/$(cat "$run_dir/etcd.pid")/cmdline" | sed -n 's/^--listen-client-urls=//p;/^--listen-client-urls$/{n;p}' | head -n 1)"
    [[ -n $etcd_url ]] || die "cannot find etcd's client URL"
    api_log="$repo/target/vm/logs/faults-api.log"
    rm -f "$api_log"
    outage_driver() {
        local pid cmd rev
        until grep -q 'SVCNET-VM: INFO FAULT-API-STOP' "$api_log" 2>/dev/null; do
            grep -q 'SVCNET-VM: EXIT' "$api_log" 2>/dev/null && return 0
            sleep 1
        done
        pid="$(cat "$run_dir/kube-apiserver.pid")"
        mapfile -d '' -t cmd <"/proc/$pid/cmdline"
        kill "$pid"
        while kill -0 "$pid" 2>/dev/null; do sleep 0.2; done
        say "kube-apiserver stopped for $outage s"
        sleep "$outage"
        # Writes the agent never sees, then a compaction past them: any
        # resourceVersion it holds is gone from etcd's history.
        for k in 1 2 3; do
            curl -sf -X POST "$etcd_url/v3/kv/put" -d "{\"key\": \"$(printf 'svcnet-fault-%s' "$k" | base64 -w0)\", \"value\": \"eA==\"}" >/dev/null
        done
        rev="$(curl -sf -X POST "$etcd_url/v3/kv/range" -d '{"key": "eA=="}' | python3 -c 'import json, sys; print(json.load(sys.stdin)["header"]["revision"])')"
        curl -sf -X POST "$etcd_url/v3/kv/compaction" -d "{\"revision\": \"$rev\", \"physical\": true}" >/dev/null
        say "etcd compacted at revision $rev; starting kube-apiserver again"
        setsid "${cmd[@]}" >>"$run_dir/kube-apiserver.log" 2>&1 </dev/null &
        echo $! >"$run_dir/kube-apiserver.pid"
        until "${kubectl[@]}" get --raw /readyz >/dev/null 2>&1; do sleep 0.5; done
        # Changes the agent learns of only by relisting: 10 Services gone, 10 new.
        for k in 0 1 2 3 4 5 6 7 8 9; do
            "${kubectl[@]}" delete service -n bench "svc-$k" --wait=false >/dev/null
            "${kubectl[@]}" create service clusterip -n bench "fresh-$k" --tcp=80:8080 >/dev/null
        done
        say "kube-apiserver ready again; 10 Services deleted and 10 created"
    }
    outage_driver &
    driver=$!
    say "API mode: booting the VM"
    VM_NET=user VM_LOG="$api_log" VM_MEM="${VM_MEM:-2048}" VM_SMP="${VM_SMP:-2}" VM_TIMEOUT="${VM_TIMEOUT:-1800}" \
        VM_APPEND="SVCNET_API_PORT=$API_PORT SVCNET_FAULTS_SERVICES=$services SVCNET_FAULTS_OUTAGE=$outage" \
        "$here/run.sh" "$here/guest/faults-api.sh" "${TOOLS[@]}" "$work/kubeconfig:/data/kubeconfig" || vm_status
    wait "$driver" || vm_status
fi

# The tally of both VMs.
passed=0 failed=0
for log in ${log_manifests:+"$log_manifests"} ${api_log:+"$api_log"}; do
    passed=$((passed + $(grep -c '^SVCNET-VM: PASS ' "$log" || true)))
    failed=$((failed + $(grep -c '^SVCNET-VM: FAIL ' "$log" || true)))
done
((status == 0 || failed > 0)) || failed=$((failed + 1))
say "took $((SECONDS - started)) s"
echo "$name: $passed passed, $failed failed in all"
((failed == 0))
