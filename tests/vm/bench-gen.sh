#!/usr/bin/env bash
# Generate the manifests of the IPVS benchmark (tests/vm/bench.sh).
#
#   tests/vm/bench-gen.sh OUT-DIR [SERVICES] [ENDPOINTS] [SLICE-FILES]
#
# SERVICES (5000) ClusterIP Services svc-N, each with one TCP port 80 and a
# fixed ClusterIP (10.100.0.1 on: 250 per /24), and no selector: their
# endpoints come from one EndpointSlice each, as kube-proxy receives them,
# with ENDPOINTS (10) ready endpoints on port 8080, all distinct
# (10.244.0.1 on: 250 per /24). Written as
#   OUT-DIR/services.yaml          the Services
#   OUT-DIR/slices-NN.yaml         the EndpointSlices, in SLICE-FILES (50) files
# so that changing one endpoint rewrites one small file.
set -euo pipefail

out="${1:?usage: bench-gen.sh OUT-DIR [SERVICES] [ENDPOINTS] [SLICE-FILES]}"
services="${2:-5000}"
endpoints="${3:-10}"
files="${4:-50}"
((services * endpoints <= 250 * 250 && services <= 250 * 250)) || {
    echo "bench-gen: at most 62500 endpoints and Services" >&2
    exit 2
}
mkdir -p "$out"
rm -f "$out"/services.yaml "$out"/slices-*.yaml

awk -v n="$services" -v e="$endpoints" -v files="$files" -v out="$out" '
function ip(prefix, k) { return prefix "." int(k / 250) "." (k % 250 + 1) }
BEGIN {
    svc = out "/services.yaml"
    printf "# %d Services for the IPVS benchmark (tests/vm/bench-gen.sh)\n", n > svc
    per = int((n + files - 1) / files)
    for (i = 0; i < n; i++) {
        if (i > 0) print "---" > svc
        printf "apiVersion: v1\nkind: Service\nmetadata: {name: svc-%d}\nspec:\n  clusterIP: %s\n  ports: [{name: http, port: 80, targetPort: 8080, protocol: TCP}]\n", i, ip("10.100", i) > svc
        f = sprintf("%s/slices-%02d.yaml", out, int(i / per))
        if (f != last) { if (last != "") close(last); last = f; first = 1 }
        if (!first) print "---" > f
        first = 0
        printf "apiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata: {name: svc-%d-bench, labels: {kubernetes.io/service-name: svc-%d}}\naddressType: IPv4\nports: [{name: http, port: 8080, protocol: TCP}]\nendpoints:\n", i, i > f
        for (j = 0; j < e; j++)
            printf "- {addresses: [%s], conditions: {ready: true}}\n", ip("10.244", i * e + j) > f
    }
}'
echo "bench-gen: $services Services x $endpoints endpoints in $out ($(du -sh "$out" | cut -f1))"
