//! What kube-scheduler decides for a Pod svcnet creates, reduced to what
//! the playground and the vectors need: which Node it runs on.
//!
//! A Node qualifies when it has a pod CIDR (`spec.podCIDRs`, or the older
//! `spec.podCIDR`) and is not cordoned (`spec.unschedulable: true`). Of
//! those, the one running the fewest Pods wins, ties going to the first
//! name. No Node qualifies: the Pod stays unscheduled (Pending). Resources,
//! affinity, taints and topology spread are not modelled.

use crate::api::{Node, Pod};
use crate::collections::SortedMap;
use ipnetwork::IpNetwork;
use serde_json::Value;

/// The Node's pod CIDRs, primary first; those that do not parse are
/// skipped.
pub fn pod_cidrs(node: &Node) -> Vec<IpNetwork> {
    let listed: Vec<&str> = match node.spec.get("podCIDRs").and_then(Value::as_array) {
        Some(list) => list.iter().filter_map(Value::as_str).collect(),
        None => node.spec.get("podCIDR").and_then(Value::as_str).into_iter().collect(),
    };
    listed.into_iter().filter_map(|c| c.parse().ok()).collect()
}

/// Whether Pods may be placed on `node`.
pub fn schedulable(node: &Node) -> bool {
    node.spec.get("unschedulable").and_then(Value::as_bool) != Some(true) && !pod_cidrs(node).is_empty()
}

/// The Node a new Pod goes to: the schedulable one with the fewest of
/// `pods` bound to it, ties by name.
pub fn pick_node<'a>(nodes: &'a SortedMap<String, Node>, pods: &[&Pod]) -> Option<&'a Node> {
    let mut load: SortedMap<&str, usize> = SortedMap::new();
    for pod in pods.iter().filter(|p| !p.is_terminal()) {
        if let Some(node) = pod.spec.node_name.as_deref() {
            *load.entry(node).or_default() += 1;
        }
    }
    nodes.values().filter(|n| schedulable(n)).min_by_key(|n| {
        (
            load.get(n.metadata.name.as_str()).copied().unwrap_or(0),
            &n.metadata.name,
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::manifest::{parse_manifests, Object};

    fn node(text: &str) -> Node {
        match parse_manifests(text).unwrap().remove(0) {
            Object::Node(n) => *n,
            other => panic!("not a Node: {other:?}"),
        }
    }

    fn on(node: &str) -> Pod {
        let mut p = Pod::default();
        p.spec.node_name = Some(node.into());
        p
    }

    #[test]
    fn the_least_loaded_node_with_a_pod_cidr_wins() {
        let mut nodes = SortedMap::new();
        for text in [
            "apiVersion: v1\nkind: Node\nmetadata: {name: a}\nspec: {podCIDR: 10.244.0.0/24}\n",
            "apiVersion: v1\nkind: Node\nmetadata: {name: b}\nspec: {podCIDRs: [10.244.1.0/24, 'fd00:1::/64']}\n",
            "apiVersion: v1\nkind: Node\nmetadata: {name: c}\n",
            "apiVersion: v1\nkind: Node\nmetadata: {name: d}\nspec: {podCIDR: 10.244.3.0/24, unschedulable: true}\n",
        ] {
            let n = node(text);
            nodes.insert(n.metadata.name.clone(), n);
        }
        let pick = |nodes: &SortedMap<String, Node>, pods: &[Pod]| {
            let refs: Vec<&Pod> = pods.iter().collect();
            pick_node(nodes, &refs).map(|n| n.metadata.name.clone())
        };
        assert_eq!(pick(&nodes, &[]), Some("a".into()));
        assert_eq!(pick(&nodes, &[on("a")]), Some("b".into()));
        assert_eq!(pick(&nodes, &[on("a"), on("b"), on("b")]), Some("a".into()));
        assert_eq!(pod_cidrs(&nodes["b"]).len(), 2);
        nodes.retain(|name, _| name == "c" || name == "d");
        assert_eq!(pick(&nodes, &[]), None);
    }
}
