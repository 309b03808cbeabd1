//! The ruleset of a small dual-stack cluster (core/tests/nftables/), as
//! elements and as golden `nft` text; what a change of one endpoint or of
//! a setting alters; and a property: Services and endpoints only ever
//! change elements.

use super::*;
use crate::controlplane::{ClusterConfig, ControlPlane};
use crate::proxy::nftables::model::{Set, Value};
use proptest::prelude::*;
use std::net::IpAddr;

const MANIFEST: &str = include_str!("../../../tests/nftables/small-cluster.yaml");
const GOLDEN: &str = include_str!("../../../tests/nftables/small-cluster.nft");

fn cluster(manifest: &str) -> ControlPlane {
    let mut cp = ControlPlane::new(ClusterConfig {
        service_cluster_ip_range: "10.96.0.0/16,fd00:96::/112".into(),
        apiservers: vec!["192.168.0.10:6443".into()],
        ..ClusterConfig::default()
    })
    .unwrap();
    for applied in cp.apply_manifest(manifest).unwrap() {
        applied.unwrap();
    }
    cp
}

fn config() -> ProxyConfig {
    ProxyConfig {
        cluster_cidrs: vec!["10.244.0.0/16".parse().unwrap(), "fd00:244::/48".parse().unwrap()],
        ..ProxyConfig::default()
    }
}

fn ruleset(cp: &ControlPlane, config: &ProxyConfig) -> Table {
    let node = cp.node_info("node-a").unwrap();
    desired_ruleset(cp.services(), cp.endpoint_slices(), &node, config)
}

fn set<'t>(table: &'t Table, name: &str) -> &'t Set {
    table.set(name).unwrap_or_else(|| panic!("no set {name}"))
}

/// The elements of a set as `nft` writes them.
fn elements(table: &Table, name: &str) -> Vec<String> {
    let set = set(table, name);
    let text = nft_text(&Table {
        sets: vec![set.clone()],
        chains: Vec::new(),
        ..table.clone()
    });
    let Some(start) = text.find("elements = { ") else {
        return Vec::new();
    };
    let end = text.rfind(" }\n\t}").unwrap();
    text[start + "elements = { ".len()..end]
        .split(",\n")
        .map(|e| e.trim().to_string())
        .collect()
}

#[test]
fn golden_text() {
    let text = nft_text(&ruleset(&cluster(MANIFEST), &config()));
    if std::env::var_os("SVCNET_BLESS").is_some() {
        std::fs::write(
            concat!(env!("CARGO_MANIFEST_DIR"), "/tests/nftables/small-cluster.nft"),
            &text,
        )
        .unwrap();
    }
    assert_eq!(text, GOLDEN, "rerun with SVCNET_BLESS=1 to accept:\n{text}");
}

#[test]
fn services_put_their_frontends_in_the_sets_of_their_policy() {
    let t = ruleset(&cluster(MANIFEST), &config());
    assert_eq!(
        elements(&t, "cluster-ips-v4"),
        [
            "10.96.0.1 . tcp . 443",
            "10.96.0.10 . tcp . 53",
            "10.96.0.10 . udp . 53",
            "10.96.1.1 . tcp . 80",
            "10.96.1.2 . tcp . 80",
            "10.96.1.3 . tcp . 443",
            "10.96.1.4 . tcp . 8443",
            "10.96.1.5 . tcp . 8080",
        ]
    );
    assert_eq!(elements(&t, "cluster-ips-v6"), ["fd00:96::30 . tcp . 80"]);
    assert_eq!(
        elements(&t, "external-ips-v4"),
        ["192.0.2.51 . tcp . 8443", "192.0.2.60 . tcp . 8080"]
    );
    assert_eq!(elements(&t, "external-ips-local-v4"), ["192.0.2.50 . tcp . 443"]);
    // web (Cluster) and lb-internal (Cluster); web-local and lb are Local.
    assert_eq!(elements(&t, "node-ports-v4"), ["tcp . 30080", "tcp . 30444"]);
    assert!(elements(&t, "node-ports-v6").is_empty(), "no dual-stack NodePort");
    assert_eq!(elements(&t, "node-port-ips-v4"), ["192.168.0.10"]);
    assert_eq!(elements(&t, "node-port-ips-v6"), ["fd00::10"]);
    assert_eq!(elements(&t, "health-check-node-ports-v4"), ["32000"]);
    assert_eq!(
        elements(&t, "ipvs-addresses-v4"),
        [
            "10.96.0.1",
            "10.96.0.10",
            "10.96.1.1",
            "10.96.1.2",
            "10.96.1.3",
            "10.96.1.4",
            "10.96.1.5",
            "192.0.2.50",
            "192.0.2.51",
            "192.0.2.60"
        ]
    );
}

#[test]
fn hairpin_holds_this_nodes_endpoints_only() {
    let t = ruleset(&cluster(MANIFEST), &config());
    assert_eq!(
        elements(&t, "hairpin-v4"),
        [
            "10.244.1.5 . tcp . 53 . 10.244.1.5",
            "10.244.1.5 . udp . 53 . 10.244.1.5",
            "10.244.1.11 . tcp . 8080 . 10.244.1.11",
            "10.244.1.11 . tcp . 8443 . 10.244.1.11",
        ]
    );
    assert_eq!(
        elements(&t, "hairpin-v6"),
        ["fd00:244:1::11 . tcp . 8080 . fd00:244:1::11"]
    );
}

#[test]
fn source_ranges_fence_load_balancers() {
    let t = ruleset(&cluster(MANIFEST), &config());
    assert_eq!(
        elements(&t, "firewall-v4"),
        ["192.0.2.50 . tcp . 443", "192.0.2.51 . tcp . 8443"]
    );
    assert_eq!(
        elements(&t, "firewall-allow-v4"),
        [
            "192.0.2.50 . tcp . 443 . 198.51.100.0/24",
            "192.0.2.50 . tcp . 443 . 203.0.113.0/24",
            // node-a (192.168.0.10) is inside lb-internal's range: the node
            // may reach it, from the LoadBalancer IP as its source.
            "192.0.2.51 . tcp . 8443 . 192.0.2.51",
            "192.0.2.51 . tcp . 8443 . 192.168.0.0/24",
        ]
    );
    assert_eq!(
        elements(&t, "no-node-access-v4"),
        ["192.0.2.50 . 192.0.2.50 . tcp . 443"]
    );
}

#[test]
fn a_zero_range_allows_everyone() {
    let manifest = MANIFEST.replace("[203.0.113.0/24, \" 198.51.100.0/24 \"]", "[203.0.113.0/24, 0.0.0.0/0]");
    let t = ruleset(&cluster(&manifest), &config());
    assert_eq!(elements(&t, "firewall-v4"), ["192.0.2.51 . tcp . 8443"]);
    assert!(elements(&t, "no-node-access-v4").is_empty());
}

#[test]
fn one_endpoint_changes_only_elements() {
    let before = ruleset(&cluster(MANIFEST), &config());
    let extra = "---\napiVersion: v1\nkind: Pod\nmetadata: {name: web-2, labels: {app: web}}\nspec: {nodeName: node-a, containers: [{name: web, image: nginx}]}\nstatus: {phase: Running, podIPs: [{ip: 10.244.1.12}], conditions: [{type: Ready, status: \"True\"}]}\n";
    let after = ruleset(&cluster(&format!("{MANIFEST}{extra}")), &config());
    let changes = element_changes(&before, &after).expect("same shape");
    let hairpin = |port: u16| {
        let ip = Value::Addr("10.244.1.12".parse().unwrap());
        (
            "hairpin-v4".to_string(),
            vec![ip, Value::Proto(crate::proxy::Protocol::Tcp), Value::Port(port), ip],
        )
    };
    assert_eq!(changes.added, [hairpin(8080), hairpin(8443)]);
    assert!(changes.removed.is_empty());
    let back = element_changes(&after, &before).unwrap();
    assert_eq!((back.added.len(), back.removed.len()), (0, 2));
    assert!(element_changes(&before, &before).unwrap().is_empty());
}

#[test]
fn settings_change_the_chains() {
    let cp = cluster(MANIFEST);
    let by_cidr = ruleset(&cp, &config());
    let all = ProxyConfig {
        masquerade_all: true,
        ..config()
    };
    let masquerade_all = ruleset(&cp, &all);
    let no_cidr = ruleset(&cp, &ProxyConfig::default());
    assert_eq!(element_changes(&by_cidr, &masquerade_all), None);
    let rules = |t: &Table| -> Vec<String> {
        let services = t.chains.iter().find(|c| c.name == "services").unwrap();
        services
            .rules
            .iter()
            .map(render::rule_text)
            .filter(|r| r.contains("@cluster-ips"))
            .collect()
    };
    assert_eq!(
        rules(&by_cidr),
        [
            "ip saddr != 10.244.0.0/16 ip daddr . meta l4proto . th dport @cluster-ips-v4 jump mark-for-masquerade",
            "ip6 saddr != fd00:244::/48 ip6 daddr . meta l4proto . th dport @cluster-ips-v6 jump mark-for-masquerade",
        ]
    );
    assert_eq!(
        rules(&masquerade_all)[0],
        "ip daddr . meta l4proto . th dport @cluster-ips-v4 jump mark-for-masquerade"
    );
    assert_eq!(
        rules(&no_cidr)[1],
        "ip6 saddr . meta l4proto . th dport @cluster-ips-v6 jump mark-for-masquerade"
    );
}

#[test]
fn the_node_addresses_are_elements_too() {
    let cp = cluster(MANIFEST);
    let mut node = cp.node_info("node-a").unwrap();
    let before = desired_ruleset(cp.services(), cp.endpoint_slices(), &node, &config());
    node.ips.push("192.168.1.10".parse::<IpAddr>().unwrap());
    let after = desired_ruleset(cp.services(), cp.endpoint_slices(), &node, &config());
    let changes = element_changes(&before, &after).unwrap();
    assert_eq!(
        changes.added,
        [(
            "node-port-ips-v4".to_string(),
            vec![Value::Addr("192.168.1.10".parse().unwrap())]
        )]
    );
}

/// The cluster's manifest with the documents `keep` says (cycled over
/// them); the Node, the first document, always stays.
fn subset(keep: &[bool]) -> String {
    let documents = MANIFEST.split("\n---\n").enumerate();
    let kept = documents.filter(|(i, _)| *i == 0 || keep[*i % keep.len()]);
    kept.map(|(_, d)| d).collect::<Vec<_>>().join("\n---\n")
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Any subset of the cluster's Services and Pods gives a table of the
    /// same shape, and the element changes between two of them turn one
    /// into the other.
    #[test]
    fn services_and_endpoints_change_only_elements(a in prop::collection::vec(any::<bool>(), 16), b in prop::collection::vec(any::<bool>(), 16)) {
        let (old, new) = (ruleset(&cluster(&subset(&a)), &config()), ruleset(&cluster(&subset(&b)), &config()));
        let changes = element_changes(&old, &new);
        prop_assert!(changes.is_some());
        let mut patched = old.clone();
        for (name, element) in changes.iter().flat_map(|c| &c.removed) {
            patched.set_mut(name).unwrap().elements.remove(element);
        }
        for (name, element) in changes.iter().flat_map(|c| &c.added) {
            patched.set_mut(name).unwrap().elements.insert(element.clone());
        }
        prop_assert_eq!(patched, new);
    }

    /// The ruleset a sync machine keeps, built from one subset of the
    /// cluster and then fed the other's Services one at a time (the
    /// changed, the added, the deleted), is the ruleset built whole from
    /// the other: no element is lost when two Services shared it, none is
    /// left behind by a Service gone.
    #[test]
    fn the_ruleset_kept_one_service_at_a_time_is_the_one_built_whole(a in prop::collection::vec(any::<bool>(), 16), b in prop::collection::vec(any::<bool>(), 16)) {
        let (old, new) = (cluster(&subset(&a)), cluster(&subset(&b)));
        let node = new.node_info("node-a").unwrap();
        let settings = crate::proxy::sync_loop::SyncSettings::new(
            std::time::Duration::from_secs(1),
            std::time::Duration::from_secs(30),
        );
        let mut machine = crate::proxy::sync_loop::SyncMachine::new(config(), node.clone(), settings);
        machine.keep_ruleset();
        machine.rebuild(old.services(), old.endpoint_slices(), node.clone());
        prop_assert_eq!(machine.ruleset(), Some(&ruleset(&old, &config())));
        let groups = crate::proxy::slices_by_service(new.endpoint_slices());
        let keys: crate::collections::SortedSet<String> = old.services().chain(new.services()).map(|s| s.key()).collect();
        for key in keys {
            match new.services().find(|s| s.key() == key) {
                Some(svc) => {
                    let slices = groups.get(&key).map(Vec::as_slice).unwrap_or_default();
                    machine.update_service(&key, Some((svc, slices)));
                }
                None => machine.update_service(&key, None),
            }
        }
        prop_assert_eq!(machine.ruleset(), Some(&ruleset(&new, &config())));
    }
}

#[test]
fn comments_fit_in_nft() {
    // nft refuses comments longer than 128 characters.
    let t = empty_table(&config());
    let comments = t
        .sets
        .iter()
        .map(|s| s.comment)
        .chain(t.chains.iter().map(|c| c.comment));
    for comment in comments {
        assert!(comment.len() <= 128, "{} characters: {comment}", comment.len());
    }
}
