//! From the slices a Service has to the slices it should have, for one IP
//! family, changing as few slices as possible (Kubernetes' `reconciler.go`):
//!
//! 1. Existing slices keep the endpoints still desired (updated in place);
//!    a slice left empty is deleted; untouched slices stay byte-identical.
//! 2. Slices that changed anyway are filled up first, fullest first.
//! 3. Remaining endpoints go to the unchanged slice they fill most exactly
//!    (when fewer than a full slice remain), else to new slices.
//! 4. A Service with no endpoints keeps one placeholder slice (no ports, no
//!    endpoints).
//! 5. A new slice takes over the name of a slice being deleted (the first
//!    by name), so names stay stable when, say, every Pod changes its port.
//!
//! Where Kubernetes picks at random (which endpoint, which slice), this
//! picks in order: endpoints by address, slices by name.

use super::desired::{EndpointKey, Group, PortKey};
use super::SliceTemplate;
use crate::api::endpoint_slice::{Endpoint, EndpointSlice};
use crate::collections::SortedMap;

/// The slices of one family after reconciling: unchanged ones as they were,
/// changed ones with their new content, new ones without a name.
pub fn reconcile_family(
    template: &SliceTemplate<'_>,
    mut existing: Vec<&EndpointSlice>,
    desired: SortedMap<PortKey, Group>,
    max_endpoints: usize,
) -> Vec<EndpointSlice> {
    crate::sort::sort_by(&mut existing, |a, b| a.metadata.name.cmp(&b.metadata.name));
    let existing_count = existing.len();
    let mut to_delete: Vec<EndpointSlice> = Vec::new();
    let mut by_ports: SortedMap<PortKey, Vec<&EndpointSlice>> = SortedMap::new();
    for slice in existing {
        if template.owns(slice) {
            let mut key = slice.ports.clone();
            crate::sort::sort(&mut key);
            by_ports.entry(key).or_default().push(slice);
        } else {
            to_delete.push(slice.clone());
        }
    }
    let mut kept: Vec<EndpointSlice> = Vec::new();
    let mut created: Vec<EndpointSlice> = Vec::new();
    for (key, group) in desired {
        let slices = by_ports.remove(&key).unwrap_or_default();
        let outcome = reconcile_ports(template, slices, group, max_endpoints);
        kept.extend(outcome.kept);
        created.extend(outcome.created);
        to_delete.extend(outcome.deleted);
    }
    to_delete.extend(by_ports.into_values().flatten().cloned());
    if existing_count == to_delete.len() && created.is_empty() {
        let placeholder = template.new_slice(Vec::new());
        match to_delete.as_slice() {
            [only] if is_same_placeholder(only, &placeholder) => kept.append(&mut to_delete),
            _ => created.push(placeholder),
        }
    }
    crate::sort::sort_by(&mut to_delete, |a, b| a.metadata.name.cmp(&b.metadata.name));
    let mut reusable = to_delete.iter().filter(|s| template.owns(s));
    for slice in created.iter_mut().rev() {
        let Some(old) = reusable.next() else {
            break;
        };
        slice.metadata.name = old.metadata.name.clone();
    }
    kept.extend(created);
    kept
}

/// What happened to the slices of one port set.
struct PortsOutcome {
    kept: Vec<EndpointSlice>,
    created: Vec<EndpointSlice>,
    deleted: Vec<EndpointSlice>,
}

/// Steps 1 to 3 for the slices of one port set (`reconcileByPortMapping`).
fn reconcile_ports(
    template: &SliceTemplate<'_>,
    existing: Vec<&EndpointSlice>,
    group: Group,
    max_endpoints: usize,
) -> PortsOutcome {
    let mut desired = group.endpoints;
    let mut unchanged: Vec<EndpointSlice> = Vec::new();
    let mut updated: Vec<EndpointSlice> = Vec::new();
    let mut deleted: Vec<EndpointSlice> = Vec::new();
    for slice in existing {
        let mut endpoints: Vec<Endpoint> = Vec::with_capacity(slice.endpoints.len());
        let mut endpoint_changed = false;
        for endpoint in &slice.endpoints {
            if let Some(want) = desired.remove(&EndpointKey::of(endpoint)) {
                endpoint_changed |= want != *endpoint;
                endpoints.push(want);
            }
        }
        let labels_changed = slice.metadata.labels != template.labels;
        if endpoint_changed || endpoints.len() != slice.endpoints.len() {
            if endpoints.is_empty() {
                deleted.push(slice.clone());
            } else {
                let mut slice = slice.clone();
                slice.endpoints = endpoints;
                slice.metadata.labels = template.labels.clone();
                updated.push(slice);
            }
        } else if labels_changed {
            let mut slice = slice.clone();
            slice.metadata.labels = template.labels.clone();
            updated.push(slice);
        } else {
            unchanged.push(slice.clone());
        }
    }
    // 2. Fill the slices that change anyway, fullest first.
    crate::sort::sort_by_key(&mut updated, |s| std::cmp::Reverse(s.endpoints.len()));
    for slice in &mut updated {
        fill(slice, &mut desired, max_endpoints);
    }
    // 3. The rest: one unchanged slice if it fits, else new slices.
    let mut created = Vec::new();
    while !desired.is_empty() {
        let reuse = if desired.len() < max_endpoints {
            slice_to_fill(&unchanged, desired.len(), max_endpoints)
        } else {
            None
        };
        match reuse {
            Some(index) => {
                let mut slice = unchanged.remove(index);
                fill(&mut slice, &mut desired, max_endpoints);
                updated.push(slice);
            }
            None => {
                let mut slice = template.new_slice(group.ports.clone());
                fill(&mut slice, &mut desired, max_endpoints);
                created.push(slice);
            }
        }
    }
    unchanged.append(&mut updated);
    PortsOutcome {
        kept: unchanged,
        created,
        deleted,
    }
}

/// Moves endpoints from `desired` into `slice`, in order, until it is full.
fn fill(slice: &mut EndpointSlice, desired: &mut SortedMap<EndpointKey, Endpoint>, max_endpoints: usize) {
    while slice.endpoints.len() < max_endpoints {
        let Some((_, endpoint)) = desired.pop_first() else {
            break;
        };
        slice.endpoints.push(endpoint);
    }
}

/// The slice that `count` more endpoints would bring closest to full
/// without overflowing it (`getSliceToFill`); the first such by name.
fn slice_to_fill(slices: &[EndpointSlice], count: usize, max_endpoints: usize) -> Option<usize> {
    let mut best: Option<(usize, usize)> = None;
    for (index, slice) in slices.iter().enumerate() {
        let Some(room) = max_endpoints.checked_sub(count + slice.endpoints.len()) else {
            continue;
        };
        if best.is_none_or(|(_, best_room)| room < best_room) {
            best = Some((index, room));
            if room == 0 {
                break;
            }
        }
    }
    best.map(|(index, _)| index)
}

/// True when `slice` already is the placeholder `placeholder` would be
/// (`placeholderSliceCompare`: namespace, labels, type, nothing inside).
fn is_same_placeholder(slice: &EndpointSlice, placeholder: &EndpointSlice) -> bool {
    slice.metadata.namespace == placeholder.metadata.namespace
        && slice.metadata.labels == placeholder.metadata.labels
        && slice.address_type == placeholder.address_type
        && slice.endpoints.is_empty()
        && slice.ports.is_empty()
}
