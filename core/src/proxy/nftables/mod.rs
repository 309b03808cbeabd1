//! The nftables half of kube-proxy's IPVS mode: the masquerade and filter
//! rules kube-proxy writes with iptables and ipsets, as one nftables table
//! owned by svcnet, `table inet svcnet`, computed from the same inputs as
//! the desired IPVS table.
//!
//! - [`model`]: the table as data (sets, chains, typed rule expressions).
//! - [`sets`]: the named sets, one per family, standing in for kube-proxy's
//!   ipsets; [`elements`]: what each Service and the node put in them.
//! - [`chains`]: the chains and rules, fixed by the settings alone, with
//!   the hook and priority of each base chain and why.
//! - [`render`]: `nft` text; [`diff`]: the element changes between two
//!   rulesets.
//! - [`index`]: the ruleset kept up to date one Service at a time.
//!
//! What the rules do, as kube-proxy's do:
//!
//! - masquerade a pod reaching itself through its Service (hairpin);
//!   NodePort, externalIP and LoadBalancer traffic of Services with
//!   `externalTrafficPolicy: Cluster`; ClusterIP traffic from outside the
//!   cluster CIDRs (or all of it with `masqueradeAll`); traffic of `Local`
//!   Services keeps its source;
//! - drop LoadBalancer traffic from outside `loadBalancerSourceRanges`,
//!   and this node's own when the ranges leave it out;
//! - refuse new connections to a `kube-ipvs0` address on a port and
//!   protocol no Service has;
//! - accept forwarded traffic marked for masquerading and the rest of its
//!   connections.
//!
//! Where this differs from kube-proxy, on purpose: NodePorts are marked
//! only on the NodePort addresses (the node IPs IPVS serves) rather than on
//! every local address; the `ACCEPT` rules of kube-proxy's nat chains are
//! left out, since an accept in one nftables table does not spare a packet
//! another table's rules, and within svcnet's table they would only skip
//! the NodePort rule for an externalIP port that is also a NodePort; the
//! health check port `ACCEPT` in filter INPUT is left out for the same
//! reason. Like kube-proxy's IPVS mode (and unlike its iptables mode),
//! packets in conntrack state INVALID are not dropped.

pub mod chains;
pub mod diff;
pub mod elements;
pub mod index;
pub mod model;
pub mod render;
pub mod sets;

pub use diff::{element_changes, same_shape, ElementChanges};
pub use index::RulesetIndex;
pub use model::Table;
pub use render::nft_text;

use super::desired::{service_fragment, slices_by_service, ProxyConfig};
use super::node::NodeInfo;
use crate::api::{EndpointSlice, Service};
use crate::collections::SortedMap;
use elements::service_elements;
use sets::{SetKind, FAMILIES};

/// The table's family.
pub const TABLE_FAMILY: &str = "inet";
/// The table's name.
pub const TABLE_NAME: &str = "svcnet";

/// The table with its sets empty: what the settings alone decide.
pub fn empty_table(config: &ProxyConfig) -> Table {
    let sets = FAMILIES
        .iter()
        .flat_map(|&family| SetKind::ALL.iter().map(move |kind| kind.empty(family)))
        .collect();
    Table {
        family: TABLE_FAMILY,
        name: TABLE_NAME,
        sets,
        chains: chains::chains(config),
    }
}

/// The desired ruleset of `node`: every Service (the last copy of one that
/// appears twice) with the slices that name it, and the node's addresses.
pub fn desired_ruleset<'s, 'e>(
    services: impl IntoIterator<Item = &'s Service>,
    slices: impl IntoIterator<Item = &'e EndpointSlice>,
    node: &NodeInfo,
    config: &ProxyConfig,
) -> Table {
    let groups = slices_by_service(slices);
    let by_key: SortedMap<String, &Service> = crate::sort::map_from(services.into_iter().map(|svc| (svc.key(), svc)));
    let mut index = RulesetIndex::new(node, config);
    for (key, svc) in by_key {
        let slices = groups.get(&key).map(Vec::as_slice).unwrap_or_default();
        let fragment = service_fragment(svc, slices, node, config);
        index.set_service(key, service_elements(svc, slices, node, &fragment));
    }
    index.into_table()
}

#[cfg(test)]
mod tests;
