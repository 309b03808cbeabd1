//! The ruleset kept up to date one Service at a time, as
//! [`DesiredIndex`](crate::proxy::DesiredIndex) keeps the IPVS table.
//!
//! [`RulesetIndex`] holds each Service's set elements and how many owners
//! (Services, the node) each element has, so replacing one Service's
//! elements touches only those: after an endpoint change the agent's
//! table `inet svcnet` is ready without computing every other Service's
//! elements again. An element two Services need (the same hairpin
//! endpoint, say) stays until neither does.
//! [`desired_ruleset`](super::desired_ruleset) builds its table through it
//! too, so the two cannot disagree.

use super::elements::{node_elements, SetElement};
use super::{empty_table, Table};
use crate::collections::{SortedMap, SortedSet};
use crate::proxy::desired::ProxyConfig;
use crate::proxy::node::NodeInfo;

/// Per-Service set elements and the table they make up.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RulesetIndex {
    table: Table,
    /// Each Service's (`namespace/name`) elements.
    services: SortedMap<String, SortedSet<SetElement>>,
    /// How many owners each element of the table has.
    owners: SortedMap<SetElement, usize>,
}

impl RulesetIndex {
    /// The table of `node` with no Service yet: the chains `config`
    /// decides, and the node's addresses.
    pub fn new(node: &NodeInfo, config: &ProxyConfig) -> RulesetIndex {
        let mut index = RulesetIndex {
            table: empty_table(config),
            services: SortedMap::new(),
            owners: SortedMap::new(),
        };
        for element in &node_elements(node) {
            index.add(element);
        }
        index
    }

    /// The table.
    pub fn table(&self) -> &Table {
        &self.table
    }

    /// The table, giving up the index.
    pub fn into_table(self) -> Table {
        self.table
    }

    /// Sets one Service's (`namespace/name`) elements, replacing those it
    /// had.
    pub fn set_service(&mut self, service: String, elements: SortedSet<SetElement>) {
        for element in &elements {
            self.add(element);
        }
        if let Some(old) = self.services.insert(service, elements) {
            for element in &old {
                self.remove(element);
            }
        }
    }

    /// Removes one Service (`namespace/name`) and its elements.
    pub fn remove_service(&mut self, service: &str) {
        if let Some(old) = self.services.remove(service) {
            for element in &old {
                self.remove(element);
            }
        }
    }

    fn add(&mut self, element: &SetElement) {
        let owners = self.owners.entry(element.clone()).or_insert(0);
        *owners += 1;
        if *owners == 1 {
            // Every kind exists in both families (`empty_table`).
            if let Some(set) = self.table.set_mut(&element.kind.name(element.family)) {
                set.elements.insert(element.element.clone());
            }
        }
    }

    fn remove(&mut self, element: &SetElement) {
        let Some(owners) = self.owners.get_mut(element) else {
            return;
        };
        *owners -= 1;
        if *owners == 0 {
            self.owners.remove(element);
            if let Some(set) = self.table.set_mut(&element.kind.name(element.family)) {
                set.elements.remove(&element.element);
            }
        }
    }
}
