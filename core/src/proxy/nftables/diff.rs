//! What changed between two rulesets of the same shape: the set elements
//! to add and to remove, the only changes Services, endpoints and node
//! addresses make. A change of shape (a setting that alters the chains)
//! is reported as such, for the caller to rebuild the table.

use super::model::{Element, Table};

/// Elements to add and to remove, by set name, sorted.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ElementChanges {
    /// Elements to add: set name and element.
    pub added: Vec<(String, Element)>,
    /// Elements to remove: set name and element.
    pub removed: Vec<(String, Element)>,
}

impl ElementChanges {
    /// True when nothing changed.
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.removed.is_empty()
    }
}

/// True when the two tables have the same sets (names, types, flags) and
/// the same chains and rules: they differ at most in set elements.
pub fn same_shape(old: &Table, new: &Table) -> bool {
    let strip = |t: &Table| {
        let mut t = t.clone();
        for set in &mut t.sets {
            set.elements.clear();
        }
        t
    };
    strip(old) == strip(new)
}

/// The element changes from `old` to `new`, or `None` when their shapes
/// differ.
pub fn element_changes(old: &Table, new: &Table) -> Option<ElementChanges> {
    if !same_shape(old, new) {
        return None;
    }
    let mut changes = ElementChanges::default();
    for (before, after) in old.sets.iter().zip(&new.sets) {
        let name = || after.name.clone();
        changes
            .added
            .extend(after.elements.difference(&before.elements).map(|e| (name(), e.clone())));
        changes
            .removed
            .extend(before.elements.difference(&after.elements).map(|e| (name(), e.clone())));
    }
    Some(changes)
}
