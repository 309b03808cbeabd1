//! Golden outputs: the real kube-proxy v1.37.2's table for one cluster,
//! and small clusters for each case (two endpoints, NodePort, Local
//! policy, no endpoints, dual-stack).

use super::*;
use crate::api::{parse_manifests, Object};

/// Services, slices and the first Node of a manifest file; a Service's
/// `clusterIPs` default to its `clusterIP`.
fn cluster(text: &str) -> (Vec<Service>, Vec<EndpointSlice>, NodeInfo) {
    let (mut services, mut slices, mut node) = (Vec::new(), Vec::new(), None);
    for object in parse_manifests(text).expect("manifests parse") {
        match object {
            Object::Service(svc) => {
                let mut svc = *svc;
                if svc.metadata.namespace.is_empty() {
                    svc.metadata.namespace = "default".into();
                }
                if svc.spec.cluster_ips.is_empty() {
                    svc.spec.cluster_ips = vec![svc.spec.cluster_ip.clone()];
                }
                services.push(svc);
            }
            Object::EndpointSlice(slice) => slices.push(*slice),
            Object::Node(n) if node.is_none() => node = Some(NodeInfo::from_node(&n).expect("node")),
            _ => {}
        }
    }
    (services, slices, node.expect("a Node"))
}

fn render(text: &str, families: &[IpFamily], config: &KubeProxyNftConfig) -> String {
    let (services, slices, node) = cluster(text);
    let services: Vec<&Service> = services.iter().collect();
    let slices: Vec<&EndpointSlice> = slices.iter().collect();
    kube_proxy_ruleset(families, &services, &slices, &node, config)
}

fn config(cluster: &[&str], service: &[&str]) -> KubeProxyNftConfig {
    KubeProxyNftConfig {
        cluster_cidrs: cluster.iter().map(|c| c.parse().unwrap()).collect(),
        service_cidrs: service.iter().map(|c| c.parse().unwrap()).collect(),
    }
}

/// kube-proxy creates the per-Service chains in a Go map's order, which
/// changes from run to run: the blocks of chains whose names hold a `/`
/// are sorted by their name without the `service-`/`local-`/`external-`
/// prefix (so a port's chains stay together, in that order). Nothing else
/// is touched.
fn normalise(table: &str) -> String {
    let body = table.trim_end().trim_end_matches('}').trim_end();
    let blocks: Vec<&str> = body.split("\n\n").collect();
    let (fixed, mut per_service): (Vec<&str>, Vec<&str>) = blocks.into_iter().partition(|b| {
        let first = b.lines().find(|l| l.trim_start().starts_with("chain "));
        !first.is_some_and(|l| l.contains('/'))
    });
    let rank = |block: &str| {
        let name = block
            .trim_start()
            .trim_start_matches("chain ")
            .split(' ')
            .next()
            .unwrap_or_default();
        let (prefix, rest) = name.split_once('-').unwrap_or_default();
        let order = ["service", "local", "external"].iter().position(|p| *p == prefix);
        (rest.to_string(), order)
    };
    per_service.sort_by_key(|b| rank(b));
    let mut out = fixed.join("\n\n");
    for block in per_service {
        out.push_str("\n\n");
        out.push_str(block);
    }
    out.push_str("\n}\n");
    out
}

#[test]
fn matches_kube_proxy_v1_37_2() {
    let text = include_str!("testdata/real-cluster.yaml");
    let config = config(&["10.244.0.0/16"], &["10.96.0.0/12"]);
    let ours = render(text, &[IpFamily::IPv4], &config);
    let real = include_str!("testdata/real-v1.37.2-ip.nft");
    assert_eq!(normalise(&ours), normalise(real), "ours:\n{ours}");
    // The empty IPv6 table it wrote beside it: no IPv6 address on the node,
    // no IPv6 cluster or service CIDR.
    let ours6 = render(text, &[IpFamily::IPv6], &config);
    assert_eq!(ours6, include_str!("testdata/real-v1.37.2-ip6.nft"));
}

#[test]
fn chain_names_hash_as_kube_proxy_does() {
    // Names from kube-proxy's own tests (pkg/proxy/nftables/proxier_test.go).
    assert_eq!(sha256_base32("ns1/svc1/tcp/p80", 8), "ULMVA6XW");
    assert_eq!(sha256_base32("ns1/svc1/tcp/p80__10.180.0.1/80", 8), "5OJB2KTY");
    assert_eq!(sha256_base32("ns2/svc2/tcp/p80", 8), "42NFTM6N");
    // And from the real v1.37.2 table: default/kubernetes is always this.
    assert_eq!(sha256_base32("default/kubernetes/tcp/https", 8), "2QRHZV4L");
}

const NODE: &str = "apiVersion: v1\nkind: Node\nmetadata: {name: node-1}\nstatus: {addresses: [{type: InternalIP, address: 192.168.0.2}, {type: InternalIP, address: 'fd00::2'}]}\n";

fn slice(name: &str, service: &str, family: &str, port: u16, endpoints: &[(&str, &str)]) -> String {
    let mut out = format!(
        "---\napiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata: {{name: {name}, namespace: default, labels: {{kubernetes.io/service-name: {service}}}}}\naddressType: {family}\nports: [{{name: '', port: {port}, protocol: TCP}}]\nendpoints:\n"
    );
    for (ip, node) in endpoints {
        out.push_str(&format!(
            "- {{addresses: ['{ip}'], conditions: {{ready: true}}, nodeName: {node}}}\n"
        ));
    }
    out
}

/// The per-Service part of a table: the set and map elements and the
/// chains with a `/` in their name, each line without its indentation.
fn service_part(table: &str) -> String {
    let mut out = String::new();
    let (mut in_elements, mut in_chain) = (false, false);
    for line in table.lines() {
        in_elements |= line.trim_start().starts_with("elements = {");
        in_chain |= line.starts_with("\tchain ") && line.contains('/');
        if in_elements || in_chain {
            out.push_str(line.trim_start());
            out.push('\n');
        }
        if in_elements && line.ends_with(" }") {
            in_elements = false;
        }
        if line == "\t}" {
            in_chain = false;
        }
    }
    out
}

#[test]
fn cluster_ip_with_two_endpoints() {
    let text = format!(
        "{NODE}---\napiVersion: v1\nkind: Service\nmetadata: {{name: web}}\nspec: {{clusterIP: 10.96.0.10, ports: [{{port: 80, targetPort: 8080}}]}}\n{}",
        slice("web-1", "web", "IPv4", 8080, &[("10.244.1.9", "node-2"), ("10.244.0.10", "node-1")])
    );
    let out = render(&text, &[IpFamily::IPv4], &config(&["10.244.0.0/16"], &["10.96.0.0/16"]));
    assert_eq!(
        service_part(&out),
        "elements = { 10.244.0.10 . 10.244.0.10 . tcp . 8080 }\n\
         elements = { 10.96.0.10 }\n\
         elements = { 192.168.0.2 }\n\
         elements = { 10.96.0.10 . tcp . 80 : goto service-PFISGYVC-default/web/tcp/ }\n\
         chain service-PFISGYVC-default/web/tcp/ {\n\
         meta l4proto tcp dnat ip to numgen random mod 2 map { 0 : 10.244.0.10 . 8080, 1 : 10.244.1.9 . 8080 }\n\
         }\n"
    );
    assert!(out.contains("\t\tip daddr 10.96.0.0/16 drop comment \"Drop traffic to unallocated ClusterIPs\"\n"));
    assert!(out.contains("\t\tip daddr @cluster-ips ip saddr != 10.244.0.0/16 meta mark set meta mark | 0x00004000 comment \"masquerade clusterIP traffic from outside cluster\"\n"));
}

#[test]
fn node_port_with_external_traffic_policy_cluster_and_local() {
    let text = format!(
        "{NODE}---\napiVersion: v1\nkind: Service\nmetadata: {{name: np}}\nspec: {{type: NodePort, clusterIP: 10.96.0.11, ports: [{{port: 80, nodePort: 30080}}]}}\n{}---\napiVersion: v1\nkind: Service\nmetadata: {{name: loc}}\nspec: {{type: NodePort, externalTrafficPolicy: Local, clusterIP: 10.96.0.12, externalIPs: [203.0.113.7], ports: [{{port: 80, nodePort: 30081}}]}}\n{}",
        slice("np-1", "np", "IPv4", 8080, &[("10.244.1.5", "node-2")]),
        slice("loc-1", "loc", "IPv4", 8080, &[("10.244.0.6", "node-1"), ("10.244.1.6", "node-2")]),
    );
    let out = render(&text, &[IpFamily::IPv4], &config(&["10.244.0.0/16"], &[]));
    let expected = "elements = { 10.244.0.6 . 10.244.0.6 . tcp . 8080 }
elements = { 10.96.0.11, 10.96.0.12 }
elements = { 192.168.0.2 }
elements = { 203.0.113.7 . tcp . 80 : goto external-FXJGAQYN-default/loc/tcp/,
10.96.0.11 . tcp . 80 : goto service-L54OOY4A-default/np/tcp/,
10.96.0.12 . tcp . 80 : goto service-FXJGAQYN-default/loc/tcp/ }
elements = { tcp . 30080 : goto external-L54OOY4A-default/np/tcp/,
tcp . 30081 : goto external-FXJGAQYN-default/loc/tcp/ }
chain service-FXJGAQYN-default/loc/tcp/ {
meta l4proto tcp dnat ip to numgen random mod 2 map { 0 : 10.244.0.6 . 8080, 1 : 10.244.1.6 . 8080 }
}
chain local-FXJGAQYN-default/loc/tcp/ {
meta l4proto tcp dnat to 10.244.0.6:8080
}
chain external-FXJGAQYN-default/loc/tcp/ {
ip saddr 10.244.0.0/16 goto service-FXJGAQYN-default/loc/tcp/ comment \"short-circuit pod traffic\"
fib saddr type local meta mark set meta mark | 0x00004000 comment \"masquerade local traffic\"
fib saddr type local goto service-FXJGAQYN-default/loc/tcp/ comment \"short-circuit local traffic\"
goto local-FXJGAQYN-default/loc/tcp/
}
chain service-L54OOY4A-default/np/tcp/ {
meta l4proto tcp dnat to 10.244.1.5:8080
}
chain external-L54OOY4A-default/np/tcp/ {
meta mark set meta mark | 0x00004000 comment \"masquerade\"
goto service-L54OOY4A-default/np/tcp/
}
";
    assert_eq!(service_part(&out), expected);
    // No service CIDR given: no drop rule for unallocated ClusterIPs.
    assert!(!out.contains("Drop traffic to unallocated"), "{out}");
}

#[test]
fn service_without_endpoints_is_rejected_and_local_without_local_endpoints_dropped() {
    let text = format!(
        "{NODE}---\napiVersion: v1\nkind: Service\nmetadata: {{name: empty}}\nspec: {{type: NodePort, clusterIP: 10.96.0.13, externalIPs: [203.0.113.8], ports: [{{name: http, port: 80, nodePort: 30082}}]}}\n---\napiVersion: v1\nkind: Service\nmetadata: {{name: far}}\nspec: {{type: NodePort, externalTrafficPolicy: Local, clusterIP: 10.96.0.14, ports: [{{port: 80, nodePort: 30083}}]}}\n{}",
        slice("far-1", "far", "IPv4", 8080, &[("10.244.1.7", "node-2")]),
    );
    let out = render(&text, &[IpFamily::IPv4], &config(&[], &[]));
    let part = service_part(&out);
    assert!(
        part.contains("elements = { 203.0.113.8 . tcp . 80 comment \"default/empty:http\" : goto reject-chain,\n10.96.0.13 . tcp . 80 comment \"default/empty:http\" : goto reject-chain }\n"),
        "{part}"
    );
    assert!(
        part.contains("elements = { tcp . 30082 comment \"default/empty:http\" : goto reject-chain,\ntcp . 30083 comment \"default/far\" : drop }\n"),
        "{part}"
    );
    // The Local Service keeps its external chain (for pods and the node
    // itself) but has nowhere else to go; without a cluster CIDR there is
    // no pod short-circuit.
    assert!(
        part.contains("chain external-2ZQHPFSI-default/far/tcp/ {\nfib saddr type local meta mark set meta mark | 0x00004000 comment \"masquerade local traffic\"\nfib saddr type local goto service-2ZQHPFSI-default/far/tcp/ comment \"short-circuit local traffic\"\n}\n"),
        "{part}"
    );
    assert!(
        !out.contains("default/empty/tcp/http"),
        "no chain for a port without endpoints:\n{out}"
    );
    assert!(
        !out.contains("saddr != "),
        "no cluster CIDR, no masquerade rule:\n{out}"
    );
}

#[test]
fn dual_stack_prints_both_tables() {
    let text = format!(
        "{NODE}---\napiVersion: v1\nkind: Service\nmetadata: {{name: ds}}\nspec: {{clusterIP: 10.96.0.15, clusterIPs: [10.96.0.15, 'fd00:96::15'], ipFamilies: [IPv4, IPv6], ports: [{{port: 80}}]}}\n{}{}",
        slice("ds-4", "ds", "IPv4", 8080, &[("10.244.0.8", "node-1")]),
        slice("ds-6", "ds", "IPv6", 8080, &[("fd00:10::8", "node-1"), ("fd00:10::9", "node-2")]),
    );
    let cfg = config(&["10.244.0.0/16", "fd00:10::/64"], &["10.96.0.0/16", "fd00:96::/112"]);
    let out = render(&text, &[IpFamily::IPv4, IpFamily::IPv6], &cfg);
    let (v4, v6) = out.split_once("}\ntable ip6 kube-proxy {\n").expect("two tables");
    assert!(v4.starts_with("table ip kube-proxy {\n"), "{out}");
    assert!(v4.contains("meta l4proto tcp dnat to 10.244.0.8:8080"), "{v4}");
    let part6 = service_part(v6);
    assert_eq!(
        part6,
        "elements = { fd00:10::8 . fd00:10::8 . tcp . 8080 }\n\
         elements = { fd00:96::15 }\n\
         elements = { fd00::2 }\n\
         elements = { fd00:96::15 . tcp . 80 : goto service-SQDLBZT3-default/ds/tcp/ }\n\
         chain service-SQDLBZT3-default/ds/tcp/ {\n\
         meta l4proto tcp dnat ip6 to numgen random mod 2 map { 0 : fd00:10::8 . 8080, 1 : fd00:10::9 . 8080 }\n\
         }\n"
    );
    assert!(
        v6.contains("\t\tip6 daddr @cluster-ips ip6 saddr != fd00:10::/64 meta mark set"),
        "{v6}"
    );
    assert!(v6.contains("\t\tip6 daddr fd00:96::/112 drop comment"), "{v6}");
    assert!(
        v6.contains("type ipv6_addr . ipv6_addr . inet_proto . inet_service"),
        "{v6}"
    );
}
