#!/usr/bin/env python3
"""Services svc-FIRST..svc-(LAST-1) in namespace bench, each with one
EndpointSlice of 10 ready endpoints (10.128.0.0 + 10 i + k, on node-b), as
one JSON List for `kubectl create -f`: the load of
tests/vm/bench-kube-proxy.sh and tests/vm/faults.sh.

    tests/vm/bench-objects.py FIRST LAST
"""
import ipaddress
import json
import sys


def main():
    if len(sys.argv) != 3 or not all(a.isdigit() for a in sys.argv[1:]):
        sys.exit("usage: bench-objects.py FIRST LAST")
    first, last = int(sys.argv[1]), int(sys.argv[2])
    base = int(ipaddress.ip_address("10.128.0.0"))
    items = []
    for i in range(first, last):
        name = f"svc-{i}"
        items.append({"apiVersion": "v1", "kind": "Service",
                      "metadata": {"name": name, "namespace": "bench"},
                      "spec": {"ports": [{"port": 80, "targetPort": 8080, "protocol": "TCP"}]}})
        items.append({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                      "metadata": {"name": f"{name}-1", "namespace": "bench",
                                   "labels": {"kubernetes.io/service-name": name}},
                      "addressType": "IPv4",
                      "ports": [{"name": "", "port": 8080, "protocol": "TCP"}],
                      "endpoints": [{"addresses": [str(ipaddress.ip_address(base + i * 10 + k))],
                                     "conditions": {"ready": True}, "nodeName": "node-b"}
                                    for k in range(10)]})
    json.dump({"apiVersion": "v1", "kind": "List", "items": items}, sys.stdout)


main()
