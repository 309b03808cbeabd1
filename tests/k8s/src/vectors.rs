//! The behaviour vectors of `tests/vectors/`, replayed against the real
//! apiserver: each vector becomes a case of the `vectors` area whose steps
//! are the vector's applies, deletes and createServices, compared object by
//! object (accepted, or the same error text). A vector stops being replayed
//! at its first step the real apiserver has no equivalent for (time,
//! snapshots, repair, another start); a vector whose cluster does not start
//! is not replayed at all.

use crate::case::{Area, Case, ClusterFlags, CreateServices, ObjectName, Step};
use std::path::Path;
use svcnet_core::scenario::{Action, Vector};

/// Every vector in `dir` with at least one step to replay, as a case named
/// `vector-<file>`.
pub fn load(dir: &Path) -> Result<Vec<Case>, String> {
    let mut cases = Vec::new();
    for path in crate::case::yaml_files(dir)? {
        let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        let vector: Vector = serde_yaml_ng::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        let name = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        if let Some(case) = replayable(&name, &vector) {
            cases.push(case);
        }
    }
    Ok(cases)
}

/// The case a vector replays as, if it has anything to replay.
fn replayable(name: &str, vector: &Vector) -> Option<Case> {
    if vector.expect_config_error.is_some() {
        return None;
    }
    let steps: Vec<Step> = vector
        .steps
        .iter()
        .map_while(|step| match &step.action {
            Action::Apply(text) => Some(Step::Apply(text.clone())),
            Action::Delete(r) => Some(Step::Delete(ObjectName {
                kind: kind_of(&r.kind),
                name: r.name.clone()?,
                namespace: r.namespace.clone(),
            })),
            Action::CreateServices(c) => Some(Step::CreateServices(CreateServices {
                count: c.count,
                prefix: c.prefix.clone(),
                spec: None,
            })),
            _ => None,
        })
        .collect();
    if steps.is_empty() {
        return None;
    }
    let config = &vector.config;
    Some(Case {
        description: format!(
            "tests/vectors/{name}.yaml, its first {} step(s): {}",
            steps.len(),
            vector.description.split_whitespace().collect::<Vec<_>>().join(" ")
        ),
        area: Area::Vectors,
        cluster: ClusterFlags {
            service_cluster_ip_range: Some(config.service_cluster_ip_range.clone()),
            service_node_port_range: Some(config.service_node_port_range.clone()),
            // Vectors count on a range nothing else allocated from.
            fresh: true,
        },
        steps,
        name: format!("vector-{name}"),
    })
}

/// The kind as the API names it, from the words vectors use.
fn kind_of(word: &str) -> String {
    match word.to_ascii_lowercase().as_str() {
        "service" | "services" | "svc" => "Service",
        "pod" | "pods" | "po" => "Pod",
        "node" | "nodes" | "no" => "Node",
        "endpointslice" | "endpointslices" => "EndpointSlice",
        "servicecidr" | "servicecidrs" => "ServiceCIDR",
        _ => word,
    }
    .to_string()
}
