#!/usr/bin/env bash
# The agent against a real apiserver, beside the conformance suite:
#   1. every manifest in deploy/ passes `kubectl apply --dry-run=server`
#      (schemas, RBAC objects, the DaemonSets, their ConfigMaps);
#   2. a cluster made from examples/ (Services, the Node, Pods with their
#      status set as a kubelet would) is read by `ipvs-agent plan
#      --kubeconfig` (API mode): every ClusterIP and port the apiserver
#      allocated is a virtual server of the plan, every ready Pod a real
#      server, and the JSON form parses;
#   3. the agent's log (its stderr) from those runs holds none of the
#      kubeconfig's credentials (tokens, passwords, client keys).
# Prints one line per check and `k8s-deploy-check: N passed, M failed`.
# Usage: tests/k8s/deploy-check.sh [IPVS_AGENT_BINARY]   (needs node for the JSON check)
set -euo pipefail
cd "$(dirname "$0")/../.."
AGENT=${1:-target/debug/ipvs-agent}
[[ -x $AGENT ]] || { echo "deploy-check: no agent binary at $AGENT (cargo build -p ipvs-agent)" >&2; exit 2; }

passed=0 failed=0
check() { # NAME COMMAND...: PASS when the command succeeds
    local name=$1; shift
    local out
    if out="$("$@" 2>&1)"; then
        echo "PASS $name"; passed=$((passed + 1))
    else
        echo "FAIL $name"; printf '%s\n' "$out" | sed 's/^/    /' | head -n 20; failed=$((failed + 1))
    fi
}

# kubeconfig_secrets KUBECONFIG: its credentials, one fixed string per
# line: every token, password and client-key-data value, and every body line
# (16 characters or more) of its client keys, decoded from client-key-data
# or read from a client-key file (as vm_kubeconfig_secrets in tests/vm/lib.sh).
kubeconfig_values() { # KUBECONFIG KEY_REGEX: the values of those keys
    grep -oE "$2:[[:space:]]*\"?[^\",}[:space:]]+" "$1" | sed -E 's/^[a-z-]+:[[:space:]]*"?//' || true
}
kubeconfig_secrets() {
    local value
    kubeconfig_values "$1" '(token|password|client-key-data)'
    for value in $(kubeconfig_values "$1" client-key-data); do
        base64 -d <<<"$value" 2>/dev/null | grep -v -- '-----' | awk 'length >= 16'
    done
    for value in $(kubeconfig_values "$1" client-key); do
        grep -v -- '-----' "$value" | awk 'length >= 16'
    done
}
# no_secrets_in KUBECONFIG LOG: fails naming the log's lines that hold a
# credential (never the credential), or when there is none to look for.
no_secrets_in() {
    local secrets lines
    secrets="$(kubeconfig_secrets "$1")"
    [[ -n $secrets ]] || { echo "no credentials found in $1 to look for"; return 1; }
    lines="$(grep -nF -- "$secrets" "$2" | cut -d: -f1 | tr '\n' ' ' || true)"
    [[ -z $lines ]] || { echo "credentials of $1 on lines ${lines% } of $2"; return 1; }
}

SVCNET_K8S_SERVICE_CIDR=10.96.0.0/12 scripts/k8s.sh up >/dev/null
trap 'scripts/k8s.sh down >/dev/null 2>&1 || true' EXIT
set -a; . target/k8s/env; set +a
K=("$SVCNET_K8S_BIN/kubectl" --kubeconfig "$KUBECONFIG")
# The agent's stderr (its log) from every API-mode run, for check 3.
AGENT_LOG=target/k8s/deploy-check-agent.log
: >"$AGENT_LOG"

for file in deploy/*.yaml; do
    check "dry-run=server $file" "${K[@]}" apply --dry-run=server -f "$file"
done

# The examples' cluster: the Node and Pods get their status through the
# status subresource, as a kubelet would set it.
"${K[@]}" apply -f examples/services.yaml -f examples/pods.yaml >/dev/null
statuses="$("${K[@]}" apply --dry-run=client -f examples/pods.yaml \
    -o jsonpath='{range .items[*]}{.kind}{"\t"}{.metadata.namespace}{"\t"}{.metadata.name}{"\t"}{.status}{"\n"}{end}')"
while IFS=$'\t' read -r kind namespace name status; do
    [[ -n $status ]] || continue
    ns=(); [[ -n $namespace ]] && ns=(-n "$namespace")
    "${K[@]}" "${ns[@]}" patch "${kind,,}" "$name" --subresource=status --type=merge -p "{\"status\":$status}" >/dev/null
done <<<"$statuses"

# Wait for kube-controller-manager to write the slices of the Pods' Services.
want_endpoints="$("${K[@]}" get pods -A -o jsonpath='{range .items[*]}{.status.podIP}{"\n"}{end}' | grep -c .)"
for _ in $(seq 1 60); do
    have="$("${K[@]}" get endpointslices -A -o jsonpath='{range .items[*].endpoints[*]}{.addresses[0]}{"\n"}{end}' | sort -u | grep -c '^10\.244\.' || true)"
    [[ $have -ge $want_endpoints ]] && break
    sleep 0.5
done

plan="$("$AGENT" plan --kubeconfig "$KUBECONFIG" --node-name node-a --format ipvsadm-save 2>>"$AGENT_LOG")" ||
    { cat "$AGENT_LOG" >&2; exit 1; }
printf '%s\n' "$plan" | head -n 30
while read -r ip ports; do
    [[ $ip =~ ^[0-9a-f.:]+$ ]] || continue
    for port in ${ports//,/ }; do
        check "virtual server $ip:$port" grep -q -- "^-A -[tu] $ip:$port " <<<"$plan"
    done
done < <("${K[@]}" get svc -A -o jsonpath='{range .items[*]}{.spec.clusterIP}{" "}{range .spec.ports[*]}{.port}{","}{end}{"\n"}{end}' | grep -v '^None ')
for ip in $("${K[@]}" get pods -A -o jsonpath='{range .items[?(@.status.podIP)]}{.status.podIP}{"\n"}{end}'); do
    check "real server $ip" grep -q -- "-r $ip:" <<<"$plan"
done
check "plan --format json parses" bash -c "'$AGENT' plan --kubeconfig '$KUBECONFIG' --node-name node-a --format json 2>>'$AGENT_LOG' | node -e 'JSON.parse(require(\"fs\").readFileSync(0, \"utf8\"))'"
check "no kubeconfig credential in the agent's log" no_secrets_in "$KUBECONFIG" "$AGENT_LOG"

echo "k8s-deploy-check: $passed passed, $failed failed"
[[ $failed -eq 0 ]]
