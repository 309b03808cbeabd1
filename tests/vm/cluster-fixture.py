#!/usr/bin/env python3
"""Load a manifest folder into a running test control plane (scripts/k8s.sh up)
the way tests/vm/kube-proxy-diff.sh's convention says, playing the kubelet
and the cloud controller that are not there.

    tests/vm/cluster-fixture.py KUBECTL KUBECONFIG MANIFEST_DIR

- Creates the Node objects node-a (the VM that runs the proxy) and node-b,
  with their addresses, zones and pod CIDRs, their status as a kubelet would
  report it.
- Creates every Service, Pod and EndpointSlice of MANIFEST_DIR (*.yaml,
  *.yml, *.json, in name order), and the namespaces they name.
- Writes what a user may not: a Pod's status (phase, conditions, podIP,
  podIPs) and a Service's status.loadBalancer, through the status
  subresource.
- Makes the Pods annotated svcnet.io/test-terminating: "true" terminating:
  created with a finalizer that holds them, then deleted.
- Waits until the EndpointSlice controller has written a slice for every
  Service with a selector (but ExternalName ones, which it leaves alone).

YAML is read by kubectl itself (client-side dry run to JSON), so nothing but
Python's standard library is needed here. Exits non-zero, naming the object,
when anything is refused.
"""

import json
import os
import subprocess
import sys
import time

NODES = {
    "node-a": {
        "addresses": ["192.168.56.10", "fd00:56::10"],
        "zone": "zone-a",
        "pod_cidrs": ["10.244.1.0/24", "fd00:10:244:1::/64"],
    },
    "node-b": {
        "addresses": ["192.168.56.11", "fd00:56::11"],
        "zone": "zone-b",
        "pod_cidrs": ["10.244.2.0/24", "fd00:10:244:2::/64"],
    },
}
TERMINATING = "svcnet.io/test-terminating"
FINALIZER = "svcnet.io/test-hold"
KINDS = ("Service", "Pod", "EndpointSlice")


def die(message):
    print(f"cluster-fixture: {message}", file=sys.stderr)
    sys.exit(1)


class Kubectl:
    def __init__(self, binary, kubeconfig):
        self.base = [binary, "--kubeconfig", kubeconfig]

    def run(self, args, stdin=None, what=None):
        result = subprocess.run(
            self.base + args, input=stdin, capture_output=True, text=True, timeout=60
        )
        if result.returncode != 0:
            die(f"{what or ' '.join(args)}: {result.stderr.strip() or result.stdout.strip()}")
        return result.stdout

    def create(self, obj, what):
        self.run(["create", "-f", "-"], stdin=json.dumps(obj), what=f"creating {what}")

    def patch_status(self, resource, namespace, name, status, what):
        args = ["patch", resource, name, "--subresource=status", "--type=merge"]
        if namespace:
            args += ["-n", namespace]
        args += ["-p", json.dumps({"status": status})]
        self.run(args, what=f"setting the status of {what}")


def json_stream(text):
    """The objects of kubectl's output: one JSON document per manifest
    document, one after the other (a List's items one by one)."""
    decoder = json.JSONDecoder()
    at = 0
    while True:
        while at < len(text) and text[at].isspace():
            at += 1
        if at == len(text):
            return
        obj, at = decoder.raw_decode(text, at)
        if obj.get("kind") == "List":
            yield from obj.get("items", [])
        else:
            yield obj


def read_folder(kubectl, folder):
    """Every object of the folder's manifest files, decoded by kubectl."""
    files = sorted(
        f
        for f in os.listdir(folder)
        if f.endswith((".yaml", ".yml", ".json")) and not f.startswith(".")
    )
    if not files:
        die(f"{folder}: no *.yaml, *.yml or *.json files")
    objects = []
    for name in files:
        path = os.path.join(folder, name)
        out = kubectl.run(
            ["create", "--dry-run=client", "-o", "json", "--validate=false", "-f", path],
            what=f"reading {path}",
        )
        for obj in json_stream(out):
            kind = obj.get("kind")
            if kind not in KINDS:
                die(f"{path}: {kind} {obj.get('metadata', {}).get('name')}: only {', '.join(KINDS)} belong in a manifest folder (the script makes the Nodes)")
            objects.append(obj)
    return objects


def node_object(name, spec):
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "topology.kubernetes.io/zone": spec["zone"],
            },
        },
        "spec": {"podCIDR": spec["pod_cidrs"][0], "podCIDRs": spec["pod_cidrs"]},
    }


def node_status(spec):
    return {
        "addresses": [{"type": "InternalIP", "address": a} for a in spec["addresses"]],
        "conditions": [
            {"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "svcnet test node"}
        ],
    }


def describe(obj):
    meta = obj.get("metadata", {})
    ns = meta.get("namespace", "default")
    return f"{obj.get('kind')} {ns}/{meta.get('name')}"


def main():
    if len(sys.argv) != 4:
        print(__doc__.strip().split("\n\n")[1], file=sys.stderr)
        sys.exit(2)
    kubectl = Kubectl(sys.argv[1], sys.argv[2])
    folder = sys.argv[3]

    for name, spec in NODES.items():
        kubectl.create(node_object(name, spec), f"Node {name}")
        kubectl.patch_status("node", None, name, node_status(spec), f"Node {name}")

    objects = read_folder(kubectl, folder)
    namespaces = sorted({o["metadata"].get("namespace", "default") for o in objects})
    for ns in namespaces:
        if ns not in ("default", "kube-system", "kube-public", "kube-node-lease"):
            kubectl.run(["create", "namespace", ns], what=f"creating namespace {ns}")

    terminating = []
    selectors = []
    # Services first, so the first slices already see every Pod.
    for obj in sorted(objects, key=lambda o: KINDS.index(o["kind"])):
        meta = obj["metadata"]
        ns = meta.get("namespace", "default")
        meta["namespace"] = ns
        status = obj.pop("status", None)
        what = describe(obj)
        if obj["kind"] == "Pod":
            if meta.get("annotations", {}).get(TERMINATING) == "true":
                meta.setdefault("finalizers", []).append(FINALIZER)
                terminating.append(meta["name"] + "." + ns)
            kubectl.create(obj, what)
            if status:
                kubectl.patch_status("pod", ns, meta["name"], status, what)
        elif obj["kind"] == "Service":
            kubectl.create(obj, what)
            if status and status.get("loadBalancer"):
                kubectl.patch_status("service", ns, meta["name"], {"loadBalancer": status["loadBalancer"]}, what)
            spec = obj.get("spec", {})
            # The EndpointSlice controller leaves ExternalName Services alone.
            if spec.get("selector") and spec.get("type") != "ExternalName":
                selectors.append((ns, meta["name"]))
        else:
            kubectl.create(obj, what)

    for pod in terminating:
        name, ns = pod.split(".", 1)
        kubectl.run(["delete", "pod", name, "-n", ns, "--wait=false"], what=f"deleting Pod {ns}/{name}")

    # The EndpointSlice controller's first pass.
    deadline = time.monotonic() + 60
    for ns, name in selectors:
        while True:
            out = kubectl.run(
                ["get", "endpointslices", "-n", ns, "-l", f"kubernetes.io/service-name={name}", "-o", "name"]
            )
            if out.strip():
                break
            if time.monotonic() > deadline:
                die(f"no EndpointSlice for Service {ns}/{name} after 60 s")
            time.sleep(0.2)
    print(
        f"cluster-fixture: nodes node-a and node-b, {len(objects)} objects from {folder} "
        f"({len(terminating)} terminating Pods), {len(selectors)} Services with slices"
    )


if __name__ == "__main__":
    main()
