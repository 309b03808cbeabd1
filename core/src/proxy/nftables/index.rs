//! The ruleset kept up to date one Service at a time, as
//! [`DesiredIndex`](crate::proxy::DesiredIndex) keeps the IPVS table.
//!
//! [`RulesetIndex`] holds each Service's set elements and, for an element
//! more than one owner (Services, the node) needs, how many do, so
//! replacing one Service's elements touches only those: after an endpoint
//! change the agent's table `inet svcnet` is ready without computing every
//! other Service's elements again. An element two Services need (the same hairpin
//! endpoint, say) stays until neither does.
//! [`desired_ruleset`](super::desired_ruleset) builds its table through it
//! too, so the two cannot disagree.

use super::elements::{node_elements, SetElement};
use super::model::Set;
use super::sets::SetKind;
use super::{empty_table, Table};
use crate::collections::{SortedMap, SortedSet};
use crate::family::IpFamily;
use crate::proxy::desired::ProxyConfig;
use crate::proxy::node::NodeInfo;

/// Per-Service set elements and the table they make up.
#[derive(Clone, Debug)]
pub struct RulesetIndex {
    table: Table,
    /// Each Service's (`namespace/name`) elements.
    services: SortedMap<String, SortedSet<SetElement>>,
    /// How many owners each element of the table has, for those with
    /// more than one (most have one: the table's copy is all there is).
    shared: SortedMap<SetElement, usize>,
    /// Where each set is in the table's list ([`slot`]), found by name
    /// once rather than at each element.
    positions: [Option<usize>; 2 * SetKind::ALL.len()],
}

/// The index of `kind`'s `family` variant in [`RulesetIndex::positions`].
fn slot(kind: SetKind, family: IpFamily) -> usize {
    // The kinds are numbered 0 to `SetKind::ALL.len() - 1` as declared.
    2 * kind as usize
        + match family {
            IpFamily::IPv4 => 0,
            IpFamily::IPv6 => 1,
        }
}

impl RulesetIndex {
    /// The table of `node` with no Service yet: the chains `config`
    /// decides, and the node's addresses.
    pub fn new(node: &NodeInfo, config: &ProxyConfig) -> RulesetIndex {
        let table = empty_table(config);
        let mut positions = [None; 2 * SetKind::ALL.len()];
        for kind in SetKind::ALL {
            for family in [IpFamily::IPv4, IpFamily::IPv6] {
                let name = kind.name(family);
                positions[slot(kind, family)] = table.sets.iter().position(|set| set.name == name);
            }
        }
        let mut index = RulesetIndex {
            table,
            services: SortedMap::new(),
            shared: SortedMap::new(),
            positions,
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

    /// The table's set `element` belongs in.
    fn set_of(&mut self, element: &SetElement) -> Option<&mut Set> {
        // Every kind exists in both families (`empty_table`).
        let position = self.positions[slot(element.kind, element.family)]?;
        self.table.sets.get_mut(position)
    }

    fn add(&mut self, element: &SetElement) {
        let Some(set) = self.set_of(element) else {
            return;
        };
        if !set.elements.insert(element.element.clone()) {
            *self.shared.entry(element.clone()).or_insert(1) += 1;
        }
    }

    fn remove(&mut self, element: &SetElement) {
        match self.shared.get_mut(element) {
            Some(owners) if *owners > 2 => *owners -= 1,
            Some(_) => {
                self.shared.remove(element);
            }
            None => {
                if let Some(set) = self.set_of(element) {
                    set.elements.remove(&element.element);
                }
            }
        }
    }
}
