#!/usr/bin/env python3
"""The traffic matrix's plan, read from a loaded test cluster (after
tests/vm/cluster-fixture.py): which network namespaces tests/vm/traffic-diff.sh
makes, and which frontends it tries from which clients.

    tests/vm/traffic-plan.py KUBECTL KUBECONFIG > plan.tsv

One tab-separated record per line, the kind first:

    backend NAME NODE IPV4 IPV6 PORTS
        a namespace at the Pod's addresses (or at an EndpointSlice address
        no Pod has), answering as NAME on every PORT (comma-separated;
        containerPorts, or the slice's ports), TCP and UDP; IPV4 or IPV6 "-"
        when it has none.
    outside ROLE IPV4 IPV6
        the outside hosts behind node-a: ROLE "allowed" takes an address in
        the first loadBalancerSourceRanges of each family (a default when
        none), "refused" one outside every range.
    healthcheck SERVICE PORT
        a Service's healthCheckNodePort (LoadBalancer, externalTrafficPolicy
        Local), which the proxy on node-a answers.
    row PROTOCOL ADDRESS PORT ATTEMPTS AFFINITY HAIRPIN KIND SERVICE ETP RANGES LABEL
        one frontend: KIND is ClusterIP, NodePort, ExternalIP, LoadBalancer
        or unused (a ClusterIP on a port no Service has); ATTEMPTS how many
        connections a cell makes (twice the Service's endpoints, so round
        robin shows every backend); AFFINITY 1 for sessionAffinity ClientIP;
        HAIRPIN the backend NAME of a ready endpoint on node-a ("-" if none),
        the client of the hairpin column; SERVICE namespace/name; ETP the
        externalTrafficPolicy (Cluster or Local); RANGES 1 when the Service
        has loadBalancerSourceRanges; LABEL the row's name in the matrix.

Rows are every frontend of every Service but the `kubernetes` Service (its
endpoint, the apiserver, is not in the VM) and headless and ExternalName
Services (no frontend). Node-a's addresses are the ones cluster-fixture.py
gives it. Exits non-zero, naming what is wrong, when kubectl fails.
"""

import ipaddress
import json
import subprocess
import sys

NODE_A = {4: "192.168.56.10", 6: "fd00:56::10"}
DEFAULT_OUTSIDE = {
    "allowed": {4: "203.0.113.10", 6: "2001:db8:a::10"},
    "refused": {4: "198.18.0.10", 6: "2001:db8:f::10"},
}
# Tried in order for the refused host, the first outside every range wins.
REFUSED_CANDIDATES = {
    4: ["198.18.0.10", "192.0.2.200", "100.64.0.10", "172.31.250.10"],
    6: ["2001:db8:f::10", "2001:db8:ffff::10", "fd00:dead::10"],
}
MAX_ATTEMPTS = 16


def die(message):
    print(f"traffic-plan: {message}", file=sys.stderr)
    sys.exit(1)


def get(kubectl, kubeconfig, resource):
    result = subprocess.run(
        [kubectl, "--kubeconfig", kubeconfig, "get", resource, "-A", "-o", "json"],
        capture_output=True, text=True, timeout=60)
    if result.returncode != 0:
        die(f"kubectl get {resource}: {result.stderr.strip()}")
    return json.loads(result.stdout)["items"]


def family(address):
    return ipaddress.ip_address(address).version


def key(obj):
    meta = obj["metadata"]
    return f"{meta.get('namespace', 'default')}/{meta['name']}"


def backends(pods, slices):
    """Every Pod with an address, and every slice address no Pod has."""
    found = {}
    by_ip = set()
    for pod in pods:
        status = pod.get("status", {})
        ips = [p["ip"] for p in status.get("podIPs", [])] or ([status["podIP"]] if status.get("podIP") else [])
        node = pod.get("spec", {}).get("nodeName")
        if not ips or node not in ("node-a", "node-b"):
            continue
        ports = sorted({p["containerPort"] for c in pod["spec"].get("containers", []) for p in c.get("ports", [])})
        name = key(pod)
        found[name] = {"node": node, "ips": {family(ip): ip for ip in ips}, "ports": ports}
        by_ip.update(ips)
    for sl in slices:
        if sl["metadata"].get("labels", {}).get("kubernetes.io/service-name") == "kubernetes" \
                and sl["metadata"].get("namespace") == "default":
            continue
        for endpoint in sl.get("endpoints") or []:
            for address in endpoint.get("addresses", []):
                if address in by_ip:
                    continue
                name = f"{key(sl)}@{address}"
                ports = sorted({p["port"] for p in sl.get("ports") or [] if p.get("port")})
                found[name] = {"node": endpoint.get("nodeName", "node-b"), "ips": {family(address): address},
                               "ports": ports}
                by_ip.add(address)
    return found


def outside_hosts(services):
    ranges = {4: [], 6: []}
    for svc in services:
        for cidr in svc["spec"].get("loadBalancerSourceRanges") or []:
            net = ipaddress.ip_network(cidr.strip(), strict=False)
            ranges[net.version].append(net)
    hosts = {}
    for fam in (4, 6):
        if ranges[fam]:
            net = ranges[fam][0]
            allowed = net.network_address + min(10, net.num_addresses - 1)
            hosts.setdefault("allowed", {})[fam] = str(allowed)
        else:
            hosts.setdefault("allowed", {})[fam] = DEFAULT_OUTSIDE["allowed"][fam]
        refused = next((c for c in REFUSED_CANDIDATES[fam]
                        if not any(ipaddress.ip_address(c) in n for n in ranges[fam])), None)
        if refused is None:
            die(f"every candidate IPv{fam} address of the refused outside host is inside a source range")
        hosts.setdefault("refused", {})[fam] = refused
    return hosts


def main():
    if len(sys.argv) != 3:
        die("usage: traffic-plan.py KUBECTL KUBECONFIG")
    kubectl, kubeconfig = sys.argv[1:]
    services = get(kubectl, kubeconfig, "services")
    pods = get(kubectl, kubeconfig, "pods")
    slices = get(kubectl, kubeconfig, "endpointslices")
    found = backends(pods, slices)
    names = {}
    for name, backend in sorted(found.items()):
        ips = backend["ips"]
        print("\t".join(["backend", name, backend["node"], ips.get(4, "-"), ips.get(6, "-"),
                         ",".join(map(str, backend["ports"])) or "-"]))
        for ip in ips.values():
            names[ip] = name
    for role, addresses in sorted(outside_hosts(services).items()):
        print("\t".join(["outside", role, addresses[4], addresses[6]]))

    used = set()
    rows = []
    for svc in sorted(services, key=key):
        spec = svc["spec"]
        name = key(svc)
        if name == "default/kubernetes" or spec.get("type") == "ExternalName":
            continue
        cluster_ips = [ip for ip in spec.get("clusterIPs") or [] if ip and ip != "None"]
        if not cluster_ips:
            continue
        service_slices = [s for s in slices
                          if s["metadata"].get("namespace") == svc["metadata"].get("namespace")
                          and s["metadata"].get("labels", {}).get("kubernetes.io/service-name") == svc["metadata"]["name"]]
        endpoints = [e for s in service_slices for e in s.get("endpoints") or []]
        attempts = max(2, min(MAX_ATTEMPTS, 2 * len(endpoints)))
        affinity = "1" if spec.get("sessionAffinity") == "ClientIP" else "0"
        etp = spec.get("externalTrafficPolicy") or "Cluster"
        ranges = "1" if spec.get("loadBalancerSourceRanges") else "0"
        # The hairpin client of each family: a ready endpoint on node-a.
        hairpin = {}
        for e in endpoints:
            ready = e.get("conditions", {}).get("ready", True)
            if ready and e.get("nodeName") == "node-a" and e["addresses"][0] in names:
                hairpin.setdefault(family(e["addresses"][0]), names[e["addresses"][0]])
        families = {family(ip) for ip in cluster_ips}
        for port in spec.get("ports", []):
            protocol = port.get("protocol", "TCP").lower()
            if protocol not in ("tcp", "udp"):
                continue
            pname = f":{port['name']}" if port.get("name") else ""
            frontends = [("ClusterIP", ip, port["port"]) for ip in cluster_ips]
            if port.get("nodePort"):
                frontends += [("NodePort", NODE_A[f], port["nodePort"]) for f in sorted(families)]
            frontends += [("ExternalIP", ip, port["port"]) for ip in spec.get("externalIPs") or []
                          if family(ip) in families]
            for ingress in (svc.get("status", {}).get("loadBalancer", {}).get("ingress") or []):
                if ingress.get("ip") and family(ingress["ip"]) in families:
                    frontends.append(("LoadBalancer", ingress["ip"], port["port"]))
            for kind, address, number in frontends:
                used.add((address, protocol, number))
                shown = f"[{address}]" if family(address) == 6 else address
                label = f"{name}{pname} {kind} {shown}:{number}/{protocol.upper()}"
                rows.append([protocol, address, str(number), str(attempts), affinity,
                             hairpin.get(family(address), "-"), kind, name, etp, ranges, label])
    for svc in sorted(services, key=key):
        if svc["spec"].get("healthCheckNodePort"):
            print("\t".join(["healthcheck", key(svc), str(svc["spec"]["healthCheckNodePort"])]))
    # A ClusterIP on a port no Service has, TCP and UDP.
    first = next((r for r in rows if r[6] == "ClusterIP" and family(r[1]) == 4), None)
    if first:
        port = next(p for p in range(9, 65536) if (first[1], "tcp", p) not in used and (first[1], "udp", p) not in used)
        for protocol in ("tcp", "udp"):
            label = f"{first[7]} unused {first[1]}:{port}/{protocol.upper()}"
            rows.append([protocol, first[1], str(port), "2", "0", "-", "unused", first[7], "Cluster", "0", label])
    for row in rows:
        print("\t".join(["row"] + row))


if __name__ == "__main__":
    main()
