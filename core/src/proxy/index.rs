//! The desired table kept up to date one Service at a time.
//!
//! [`DesiredIndex`] holds each Service's [`ServiceFragment`] and the table
//! they add up to. Replacing or removing one Service's fragment touches only
//! that Service's virtual servers and addresses, and returns them as
//! [`Changes`], so the plan can look at just those
//! ([`plan_changes`](super::plan::plan_changes)): a change to one endpoint
//! costs microseconds however large the table is.
//!
//! When two Services want the same virtual server (the same external IP and
//! port, say), the first by `namespace/name` gets it and a
//! [`ProxyWarning::VirtualServerConflict`] is reported; if it goes away, the
//! next one takes over. An address stays bound while any Service needs it.

use super::desired::{service_fragment, slices_by_service, ProxyConfig, ServiceFragment};
use super::error::ProxyWarning;
use super::node::NodeInfo;
use super::table::{IpvsTable, VirtualServerKey};
use crate::api::{EndpointSlice, Service};
use crate::collections::{SortedMap, SortedSet};
use std::net::IpAddr;

/// The virtual servers and addresses whose desired state changed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Changes {
    /// Virtual servers added, removed or changed in the desired table.
    pub virtual_servers: SortedSet<VirtualServerKey>,
    /// Addresses that started or stopped being needed on `kube-ipvs0`.
    pub addresses: SortedSet<IpAddr>,
}

impl Changes {
    /// True when nothing changed.
    pub fn is_empty(&self) -> bool {
        self.virtual_servers.is_empty() && self.addresses.is_empty()
    }

    /// Adds `other`'s changes to these.
    pub fn extend(&mut self, other: Changes) {
        self.virtual_servers.extend(other.virtual_servers);
        self.addresses.extend(other.addresses);
    }
}

/// Per-Service fragments and the desired table they make up.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DesiredIndex {
    fragments: SortedMap<String, ServiceFragment>,
    /// Which Services want each virtual server; the first one gets it.
    claims: SortedMap<VirtualServerKey, SortedSet<String>>,
    /// How many Services need each address.
    address_users: SortedMap<IpAddr, usize>,
    table: IpvsTable,
}

impl DesiredIndex {
    /// An empty index.
    pub fn new() -> DesiredIndex {
        DesiredIndex::default()
    }

    /// The index of every Service, with the slices that name it.
    pub fn build<'s, 'e>(
        services: impl IntoIterator<Item = &'s Service>,
        slices: impl IntoIterator<Item = &'e EndpointSlice>,
        node: &NodeInfo,
        config: &ProxyConfig,
    ) -> DesiredIndex {
        DesiredIndex::build_with(services, slices, node, config, |_, _, _| {})
    }

    /// [`DesiredIndex::build`], showing `each` every Service with its
    /// slices and fragment as they go in (the nftables ruleset is built
    /// from the same).
    pub fn build_with<'s, 'e>(
        services: impl IntoIterator<Item = &'s Service>,
        slices: impl IntoIterator<Item = &'e EndpointSlice>,
        node: &NodeInfo,
        config: &ProxyConfig,
        mut each: impl FnMut(&Service, &[&EndpointSlice], &ServiceFragment),
    ) -> DesiredIndex {
        let groups = slices_by_service(slices);
        let mut index = DesiredIndex::new();
        for svc in services {
            let key = svc.key();
            let slices = groups.get(&key).map(Vec::as_slice).unwrap_or_default();
            let fragment = service_fragment(svc, slices, node, config);
            each(svc, slices, &fragment);
            index.set(key, fragment);
        }
        index
    }

    /// The desired table.
    pub fn table(&self) -> &IpvsTable {
        &self.table
    }

    /// The desired table, giving up the index.
    pub fn into_table(self) -> IpvsTable {
        self.table
    }

    /// The Services (`namespace/name`) indexed, in order.
    pub fn services(&self) -> impl Iterator<Item = &str> {
        self.fragments.keys().map(String::as_str)
    }

    /// The fragment of one Service (`namespace/name`).
    pub fn fragment(&self, service: &str) -> Option<&ServiceFragment> {
        self.fragments.get(service)
    }

    /// Every warning: each Service's, in order, then conflicts.
    pub fn warnings(&self) -> Vec<ProxyWarning> {
        let mut out: Vec<ProxyWarning> = self
            .fragments
            .values()
            .flat_map(|f| f.warnings.iter().cloned())
            .collect();
        out.extend(
            self.claims
                .iter()
                .filter(|(_, services)| services.len() > 1)
                .map(|(key, services)| ProxyWarning::VirtualServerConflict {
                    virtual_server: key.to_string(),
                    services: services.iter().cloned().collect(),
                }),
        );
        out
    }

    /// Recomputes one Service (its slices sorted by name) and returns what
    /// changed in the table.
    pub fn update(
        &mut self,
        svc: &Service,
        slices: &[&EndpointSlice],
        node: &NodeInfo,
        config: &ProxyConfig,
    ) -> Changes {
        self.set(svc.key(), service_fragment(svc, slices, node, config))
    }

    /// Removes one Service (`namespace/name`) and returns what changed.
    pub fn remove(&mut self, service: &str) -> Changes {
        self.replace(service, None)
    }

    /// Sets one Service's fragment and returns what changed.
    pub fn set(&mut self, service: String, fragment: ServiceFragment) -> Changes {
        let key = service.clone();
        self.replace(&key, Some((service, fragment)))
    }

    fn replace(&mut self, service: &str, new: Option<(String, ServiceFragment)>) -> Changes {
        let mut touched: SortedSet<VirtualServerKey> = SortedSet::new();
        let mut touched_addresses: SortedSet<IpAddr> = SortedSet::new();
        if let Some(old) = self.fragments.remove(service) {
            for key in old.virtual_servers.keys() {
                if let Some(claimants) = self.claims.get_mut(key) {
                    claimants.remove(service);
                    if claimants.is_empty() {
                        self.claims.remove(key);
                    }
                }
                touched.insert(*key);
            }
            for ip in &old.addresses {
                if let Some(count) = self.address_users.get_mut(ip) {
                    *count -= 1;
                    if *count == 0 {
                        self.address_users.remove(ip);
                    }
                }
                touched_addresses.insert(*ip);
            }
        }
        if let Some((name, fragment)) = new {
            for key in fragment.virtual_servers.keys() {
                self.claims.entry(*key).or_default().insert(name.clone());
                touched.insert(*key);
            }
            for ip in &fragment.addresses {
                *self.address_users.entry(*ip).or_insert(0) += 1;
                touched_addresses.insert(*ip);
            }
            self.fragments.insert(name, fragment);
        }
        let mut changes = Changes::default();
        for key in touched {
            let winner = self
                .claims
                .get(&key)
                .and_then(|claimants| claimants.first())
                .and_then(|name| self.fragments.get(name))
                .and_then(|fragment| fragment.virtual_servers.get(&key));
            let current = self.table.virtual_servers.get(&key);
            if winner == current {
                continue;
            }
            changes.virtual_servers.insert(key);
            match winner {
                Some(vs) => {
                    self.table.virtual_servers.insert(key, vs.clone());
                }
                None => {
                    self.table.virtual_servers.remove(&key);
                }
            }
        }
        for ip in touched_addresses {
            let wanted = self.address_users.contains_key(&ip);
            let changed = if wanted {
                self.table.addresses.insert(ip)
            } else {
                self.table.addresses.remove(&ip)
            };
            if changed {
                changes.addresses.insert(ip);
            }
        }
        changes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::service::ServicePort;

    fn service(name: &str, ip: &str, external: &[&str]) -> Service {
        let mut svc = Service::default();
        svc.metadata.name = name.into();
        svc.metadata.namespace = "default".into();
        svc.spec.cluster_ips = vec![ip.into()];
        svc.spec.cluster_ip = ip.into();
        svc.spec.external_ips = external.iter().map(|s| s.to_string()).collect();
        svc.spec.ports = vec![ServicePort {
            port: 80,
            protocol: "TCP".into(),
            ..Default::default()
        }];
        svc
    }

    fn node() -> NodeInfo {
        NodeInfo {
            name: "n".into(),
            ips: vec![],
            zone: None,
        }
    }

    #[test]
    fn incremental_updates_match_a_full_build() {
        let config = ProxyConfig::default();
        let a = service("a", "10.96.0.1", &["203.0.113.1"]);
        let b = service("b", "10.96.0.2", &["203.0.113.1"]);
        let mut index = DesiredIndex::new();
        let changes = index.update(&a, &[], &node(), &config);
        assert_eq!(changes.virtual_servers.len(), 2);
        assert_eq!(changes.addresses.len(), 2);
        let changes = index.update(&b, &[], &node(), &config);
        assert_eq!(changes.virtual_servers.len(), 1, "the shared external IP stays with a");
        assert_eq!(changes.addresses.len(), 1);
        assert_eq!(index, DesiredIndex::build([&a, &b], [], &node(), &config));
        assert_eq!(
            index.warnings().iter().map(ToString::to_string).collect::<Vec<_>>(),
            ["virtual server TCP/203.0.113.1:80 is wanted by Services default/a, default/b; default/a gets it"]
        );

        let mut batch = index.update(&a, &[], &node(), &config);
        assert!(batch.is_empty());
        batch.extend(index.remove("default/a"));
        let changes = batch;
        assert_eq!(changes.addresses.len(), 1, "203.0.113.1 is still needed by b");
        assert_eq!(
            changes.virtual_servers.len(),
            1,
            "b takes over the shared virtual server, which stays the same"
        );
        assert_eq!(index, DesiredIndex::build([&b], [], &node(), &config));
        assert!(
            index.update(&b, &[], &node(), &config).is_empty(),
            "no change, no changes"
        );
    }
}
