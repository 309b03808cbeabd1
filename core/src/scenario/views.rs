//! The read-only actions over derived state: `endpointSlices`,
//! `endpoints` and `env`.

use super::{to_value, EndpointsQuery, PodRef, SliceQuery, StepResult};
use crate::api::{EndpointSlice, Endpoints};
use crate::controlplane::ControlPlane;
use crate::kubectl::{endpoint_slices_table, endpoints_table};
use serde_json::Value;

/// The slices asked for, as objects or as the kubectl table.
pub(super) fn endpoint_slices(cp: &ControlPlane, q: &SliceQuery) -> Value {
    let namespace = q
        .namespace
        .clone()
        .or_else(|| q.service.as_ref().map(|_| "default".to_string()));
    let slices: Vec<&EndpointSlice> = match (&namespace, &q.service) {
        (Some(ns), Some(service)) => cp.endpoint_slices_for(ns, service),
        (Some(ns), None) => cp
            .endpoint_slices()
            .filter(|s| s.metadata.namespace_or_default() == ns)
            .collect(),
        (None, _) => cp.endpoint_slices().collect(),
    };
    if q.table {
        Value::String(endpoint_slices_table(&slices, namespace.is_none(), None))
    } else {
        to_value(&slices)
    }
}

/// The Endpoints asked for, as object(s) or as the kubectl table.
pub(super) fn endpoints(cp: &ControlPlane, q: &EndpointsQuery) -> StepResult {
    let namespace = q
        .namespace
        .clone()
        .or_else(|| q.name.as_ref().map(|_| "default".to_string()));
    let list: Vec<Endpoints> = match (&namespace, &q.name) {
        (Some(ns), Some(name)) => match cp.endpoints(ns, name) {
            Some(ep) => vec![ep],
            None => return Err((None, format!("endpoints {name:?} not found"))),
        },
        (Some(ns), None) => cp
            .all_endpoints()
            .into_iter()
            .filter(|e| e.metadata.namespace_or_default() == ns)
            .collect(),
        (None, _) => cp.all_endpoints(),
    };
    if q.table {
        let refs: Vec<&Endpoints> = list.iter().collect();
        return Ok(Value::String(endpoints_table(&refs, namespace.is_none(), None)));
    }
    match (&q.name, list.as_slice()) {
        (Some(_), [one]) => Ok(to_value(one)),
        _ => Ok(to_value(&list)),
    }
}

/// The environment of a Pod as a map (sorted by name).
pub(super) fn env(cp: &ControlPlane, r: &PodRef) -> StepResult {
    let namespace = r.namespace.as_deref().unwrap_or("default");
    let vars = cp
        .pod_env(namespace, &r.name)
        .ok_or_else(|| (None, format!("pods {:?} not found", r.name)))?;
    let map: serde_json::Map<String, Value> = vars.into_iter().map(|(k, v)| (k, Value::String(v))).collect();
    Ok(Value::Object(map))
}
