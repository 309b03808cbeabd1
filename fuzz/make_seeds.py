#!/usr/bin/env python3
"""Writes the seed corpora in fuzz/corpus/<target>/ from the repository's
own inputs: ipvs-agent/tests/ipvsadm-captures/*.nl, nft-captures/*.nl and
conntrack-captures/*.nl (netlink bytes), tests/vectors/*.yaml and
examples/*.yaml (manifests, commands, CIDRs).
The state_file seeds (snapshots written by the core) are committed as
they are and not rewritten here. Run from the repository root:
python3 fuzz/make_seeds.py"""

import hashlib
import json
import pathlib
import random
import struct

import yaml

ROOT = pathlib.Path(__file__).resolve().parent.parent
CORPUS = ROOT / "fuzz" / "corpus"


def write(target, data):
    if isinstance(data, str):
        data = data.encode()
    directory = CORPUS / target
    directory.mkdir(parents=True, exist_ok=True)
    (directory / hashlib.sha1(data).hexdigest()).write_bytes(data)


def captures(directory="ipvsadm-captures"):
    """(direction, bytes) of every buffer of the captures in
    ipvs-agent/tests/DIRECTORY/: ">" sent, "<" received."""
    out = []
    for path in sorted((ROOT / "ipvs-agent/tests" / directory).glob("*.nl")):
        for line in path.read_text().splitlines():
            if line.startswith(("> ", "< ")):
                out.append((line[0], bytes.fromhex(line[2:].strip())))
    return out


def nlmsg_error(seq, errno, text=None):
    """An NLMSG_ERROR answering seq (capped: a zeroed header echoed), with
    the text as NLMSGERR_ATTR_MSG; little-endian, as the captures are."""
    tlvs = b""
    flags = 0x100  # NLM_F_CAPPED
    if text is not None:
        value = text.encode() + b"\0"
        tlvs = struct.pack("<HH", 4 + len(value), 1) + value
        tlvs += b"\0" * (-len(tlvs) % 4)
        flags |= 0x200  # NLM_F_ACK_TLVS
    length = 16 + 4 + 16 + len(tlvs)
    return struct.pack("<IHHIIi", length, 2, flags, seq, 0, -errno) + bytes(16) + tlvs


def vectors():
    for path in sorted((ROOT / "tests/vectors").glob("*.yaml")):
        yield path.stem, yaml.safe_load(path.read_text())


def manifests():
    """Manifest texts: examples, and every `apply` of the vectors."""
    texts = [p.read_text() for p in sorted((ROOT / "examples").glob("*.yaml"))]
    for _, vector in vectors():
        for step in vector.get("steps", []) or []:
            if isinstance(step, dict) and isinstance(step.get("apply"), str):
                texts.append(step["apply"])
    return texts


def apiserver_objects():
    """(kind byte, object) as kube-apiserver v1.37 lists them."""
    time = "2026-11-26T07:42:17Z"
    svc_uid = "7c533a67-d600-4061-8aa7-a9516a57c34f"
    service = {
        "metadata": {"name": "svc-0", "namespace": "bench", "uid": svc_uid, "resourceVersion": "219",
                     "creationTimestamp": time,
                     "managedFields": [{"manager": "kubectl-create", "operation": "Update", "apiVersion": "v1",
                                        "time": time, "fieldsType": "FieldsV1",
                                        "fieldsV1": {"f:spec": {"f:internalTrafficPolicy": {}, "f:ports": {
                                            ".": {}, 'k:{"port":80,"protocol":"TCP"}': {
                                                ".": {}, "f:port": {}, "f:protocol": {}, "f:targetPort": {}}},
                                            "f:selector": {}, "f:sessionAffinity": {}, "f:type": {}}}}]},
        "spec": {"ports": [{"protocol": "TCP", "port": 80, "targetPort": 8080}], "selector": {"app": "svc-0"},
                 "clusterIP": "10.99.219.1", "clusterIPs": ["10.99.219.1"], "type": "ClusterIP",
                 "sessionAffinity": "None", "ipFamilies": ["IPv4"], "ipFamilyPolicy": "SingleStack",
                 "internalTrafficPolicy": "Cluster"},
        "status": {"loadBalancer": {}}}

    def slice_of(name, endpoints):
        fields = {"f:addressType": {}, "f:metadata": {
            "f:generateName": {},
            "f:labels": {".": {}, "f:endpointslice.kubernetes.io/managed-by": {}, "f:kubernetes.io/service-name": {}},
            "f:ownerReferences": {".": {}, 'k:{"uid":"%s"}' % svc_uid: {}}}}
        if endpoints:
            fields.update({"f:endpoints": {}, "f:ports": {}})
        return {
            "metadata": {"name": name + "-6g2ph", "generateName": name + "-", "namespace": "bench",
                         "uid": "9cfe7270-bfab-4a54-8b7f-07dd4deea36f", "resourceVersion": "234", "generation": 3,
                         "creationTimestamp": time,
                         "labels": {"endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io",
                                    "kubernetes.io/service-name": name},
                         "ownerReferences": [{"apiVersion": "v1", "kind": "Service", "name": name, "uid": svc_uid,
                                              "controller": True, "blockOwnerDeletion": True}],
                         "managedFields": [{"manager": "kube-controller-manager", "operation": "Update",
                                            "apiVersion": "discovery.k8s.io/v1", "time": time,
                                            "fieldsType": "FieldsV1", "fieldsV1": fields}]},
            "addressType": "IPv4",
            "endpoints": [{"addresses": [f"10.128.0.{i + 1}"],
                           "conditions": {"ready": True, "serving": True, "terminating": False},
                           "targetRef": {"kind": "Pod", "namespace": "bench", "name": f"{name}-pod-{i}",
                                         "uid": f"831ecf78-ea21-457a-9ebf-41b5201dac{i:02x}"},
                           "nodeName": "node-a"} for i in range(endpoints)] or None,
            "ports": [{"name": "", "protocol": "TCP", "port": 8080}] if endpoints else None}

    return [(0, service), (1, slice_of("svc-0", 2)), (1, slice_of("svc-empty", 0))]


def main():
    # Netlink: every received buffer, and every sent one (requests parse as
    # messages of the family too); the Arbitrary-driven targets get the same
    # bytes as raw material.
    # In capture order (a set's order changes from run to run).
    unique = list(dict.fromkeys(data for _, data in captures()))
    for data in unique:
        write("netlink_replies", data)
    rng = random.Random(15)
    for target in ("netlink_requests", "rtnetlink_addresses", "proxy_stateful"):
        for data in unique[:12]:
            write(target, data)
        for _ in range(8):
            write(target, bytes(rng.randrange(256) for _ in range(rng.randrange(16, 256))))

    # nf_tables: what the kernel answered `nft -f` (ACKs, a refusal with
    # NLMSGERR_ATTR_OFFS, the generation and listings nft asks for first), and the batches nft
    # sent (raw material for the target's structured half), up to 2 KiB;
    # plus an ACK and a refusal with an extended-ACK text, as the unit
    # tests in ipvs-agent/src/nftables/tests/replies.rs write them.
    for _, data in captures("nft-captures"):
        if len(data) <= 2048:
            write("nftables_replies", data)
    write("nftables_replies", nlmsg_error(7, 0) + nlmsg_error(8, 2, "Could not find set"))

    # ctnetlink: the dumps, ACKs and requests of `conntrack -D`, and each
    # dumped entry's attributes alone (what CtEntry::parse reads).
    for _, data in captures("conntrack-captures"):
        write("conntrack_replies", data)
        offset = 0
        while offset + 20 <= len(data):
            length, kind = struct.unpack_from("<IH", data, offset)
            if length < 16:
                break
            if kind == 0x0100:  # IPCTNL_MSG_CT_NEW
                write("conntrack_replies", data[offset + 20:offset + length])
            offset += (length + 3) & ~3

    texts = manifests()
    # Manifests: as written, and the objects as JSON.
    for text in texts:
        write("manifests", text)
        try:
            docs = [d for d in yaml.safe_load_all(text) if d]
        except yaml.YAMLError:
            continue
        if docs:
            write("manifests", json.dumps(docs[0]))
        # Watch events: first byte 0 Service, 1 EndpointSlice, 2 Node.
        for doc in docs:
            kind = {"Service": 0, "EndpointSlice": 1, "Node": 2}.get(doc.get("kind"))
            if kind is not None:
                write("watch_events", bytes([kind]) + json.dumps(doc).encode())

    # Watch events as kube-apiserver writes them (its key order, compact):
    # a Service made by kubectl create, the EndpointSlices
    # kube-controller-manager writes for it (managedFields, targetRef) and
    # for one with no endpoints (`endpoints` and `ports` null).
    for kind, doc in apiserver_objects():
        write("watch_events", bytes([kind]) + json.dumps(doc, separators=(",", ":")).encode())

    # Playground scripts: a vector's config and steps as commands.
    for name, vector in vectors():
        config = vector.get("config") or {}
        options = {k: config[k] for k in ("serviceClusterIpRange", "seed") if k in config}
        lines = ["% options", json.dumps(options)]
        for step in vector.get("steps", []) or []:
            if not isinstance(step, dict):
                continue
            if isinstance(step.get("apply"), str):
                lines += ["% apply", step["apply"].rstrip("\n")]
            elif isinstance(step.get("delete"), dict):
                d = step["delete"]
                lines.append(f"% delete {d.get('kind', 'Service')} {d.get('namespace', 'default')} {d.get('name', '')}")
            elif isinstance(step.get("advance"), (int, str)):
                lines.append(f"% advance {step['advance']}")
        lines += ["% table svc -A", "% table endpointslices -A", "% ipvsadm node-a", "% snapshot"]
        write("playground_commands", "\n".join(lines) + "\n")

    # CIDRs: every vector's range, and the shapes the parser must refuse.
    ranges = {str((v.get("config") or {}).get("serviceClusterIpRange", "")) for _, v in vectors()}
    ranges |= {
        "10.96.0.0/12",
        "fd00:10:96::/108",
        "10.96.0.0/12,fd00:10:96::/112",
        "fd00:10:96::/112,10.96.0.0/16",
        "10.96.0.5/12|30000-32767",
        "10.0.0.0/29|80-80",
        "::ffff:10.0.0.0/120",
        "0.0.0.0/0",
        "127.0.0.0/24",
        "10.96.0.0/12,10.97.0.0/16",
        "10.96.0.0/012",
        "fd00::/64|1-65535",
    }
    for text in sorted(ranges):
        write("cidr", text)


if __name__ == "__main__":
    main()
