//! The Deployment controller (with the ReplicaSet controller folded in):
//! what a Deployment's Pods should be, as pure functions over plain data.
//! The control plane ([`crate::controlplane`]) runs it whenever
//! Deployments, Pods or Nodes change, places the Pods it asks for
//! ([`crate::scheduler`], [`crate::cni`]) and stores them.
//!
//! It owns:
//! - the `pod-template-hash` of a template, and the names of a
//!   Deployment's ReplicaSet (`<deployment>-<hash>`) and Pods
//!   (`<deployment>-<hash>-<5 characters>`);
//! - which Pods a Deployment owns: those whose controller owner
//!   reference names its ReplicaSet (orphans that merely match the
//!   selector are not adopted);
//! - the plan: Pods to delete (every Pod of an older template, and the
//!   excess when scaled down, in the ReplicaSet controller's order) and
//!   how many to create (at most [`BURST_REPLICAS`] per run);
//! - the status counts.
//!
//! Differences from Kubernetes, on purpose:
//! - Kubernetes hashes its internal Go struct of the template (printed by
//!   a deep-hash printer, with the collision count) with FNV-32a. That
//!   printing cannot be reproduced outside Go, so svcnet hashes the
//!   template's JSON with its keys sorted, with the same FNV-32a and the
//!   same encoding (each decimal digit of the hash mapped into the
//!   `bcdfghjklmnpqrstvwxz2456789` alphabet). Hashes look like
//!   Kubernetes' and are stable, but are not byte-identical to them.
//! - There are no ReplicaSet objects: the owner reference names a
//!   ReplicaSet that is not stored.
//! - A template change replaces every Pod at once (like the `Recreate`
//!   strategy); a rolling update's steps bounded by `maxSurge` and
//!   `maxUnavailable` are not modelled, nor is `minReadySeconds` (a ready
//!   Pod is available at once) or `paused`.

use crate::api::deployment::Deployment;
use crate::api::pod::Pod;
use serde_json::Value;
use std::cmp::Reverse;

/// The label a Deployment's Pods carry with their template's hash.
pub const TEMPLATE_HASH_LABEL: &str = "pod-template-hash";

/// The characters Kubernetes' generated names and hashes are made of.
pub const ALPHABET: &[u8; 27] = b"bcdfghjklmnpqrstvwxz2456789";

/// At most this many Pods are created for one Deployment per run (the
/// ReplicaSet controller's `burstReplicas`); the next run creates more.
/// It also bounds the work one `kubectl scale --replicas=2000000000` can
/// cause.
pub const BURST_REPLICAS: usize = 500;

/// Longest base kept before a generated 5-character suffix.
const MAX_GENERATED_BASE: usize = 58;

/// The `pod-template-hash` of `d`'s template.
pub fn template_hash(d: &Deployment) -> String {
    // The template is plain data: it serialises to a JSON value.
    let value = crate::api::value::to_value(&d.spec.template);
    let mut text = String::new();
    canonical(&value, &mut text);
    let hash = text
        .bytes()
        .fold(0x811c_9dc5_u32, |h, b| (h ^ u32::from(b)).wrapping_mul(0x0100_0193));
    hash.to_string()
        .bytes()
        .map(|digit| char::from(ALPHABET[usize::from(digit) % ALPHABET.len()]))
        .collect()
}

/// `value` as JSON text with every object's keys sorted, so the hash does
/// not depend on the order a map keeps its keys in.
fn canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            crate::sort::sort(&mut keys);
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::from(key.as_str()).to_string());
                out.push(':');
                if let Some(v) = map.get(key) {
                    canonical(v, out);
                }
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical(item, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

/// The name of the ReplicaSet that holds `d`'s Pods of template `hash`.
pub fn replica_set_name(d: &Deployment, hash: &str) -> String {
    format!("{}-{hash}", d.metadata.name)
}

/// A Pod name for the ReplicaSet `replica_set` with a 5-character
/// `suffix`: the ReplicaSet's name and a dash, cut to 58 characters as
/// kube-apiserver cuts a `generateName`, then the suffix.
pub fn pod_name(replica_set: &str, suffix: &str) -> String {
    let base: String = format!("{replica_set}-").chars().take(MAX_GENERATED_BASE).collect();
    format!("{base}{suffix}")
}

/// The ReplicaSet-shaped controller owner reference of a Pod of
/// `replica_set`.
fn owner_references(replica_set: &str) -> Value {
    serde_json::json!([{
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "name": replica_set,
        "controller": true,
        "blockOwnerDeletion": true,
    }])
}

/// The ReplicaSet named by `pod`'s controller owner reference, if it has
/// one.
fn controller_replica_set(pod: &Pod) -> Option<&str> {
    pod.metadata
        .owner_references
        .as_ref()?
        .as_array()?
        .iter()
        .find(|r| r.get("controller").and_then(Value::as_bool) == Some(true))
        .filter(|r| {
            r.get("kind").and_then(Value::as_str) == Some("ReplicaSet")
                && r.get("apiVersion").and_then(Value::as_str) == Some("apps/v1")
        })?
        .get("name")?
        .as_str()
}

/// Whether `d` owns `pod`: same namespace, and the Pod's controller is
/// `d`'s ReplicaSet of the Pod's own `pod-template-hash`.
pub fn owns(d: &Deployment, pod: &Pod) -> bool {
    let Some(hash) = pod.metadata.labels.get(TEMPLATE_HASH_LABEL) else {
        return false;
    };
    pod.metadata.namespace_or_default() == d.metadata.namespace_or_default()
        && controller_replica_set(pod) == Some(replica_set_name(d, hash).as_str())
}

/// Whether some Deployment's ReplicaSet controls `pod` (as far as the Pod
/// says: a ReplicaSet owner reference and a `pod-template-hash` label).
pub fn is_controlled(pod: &Pod) -> bool {
    controller_replica_set(pod).is_some() && pod.metadata.labels.contains_key(TEMPLATE_HASH_LABEL)
}

/// A new Pod of `d` from its template, named `name`, not yet placed on a
/// node: the template's labels with the hash, its annotations and spec,
/// and the owner reference.
pub fn new_pod(d: &Deployment, hash: &str, name: String) -> Pod {
    let template = &d.spec.template;
    let mut pod = Pod {
        api_version: "v1".into(),
        kind: "Pod".into(),
        spec: template.spec.clone(),
        ..Pod::default()
    };
    pod.metadata.name = name;
    pod.metadata.namespace = d.metadata.namespace_or_default().to_string();
    pod.metadata.labels = template.metadata.labels.clone();
    pod.metadata
        .labels
        .insert(TEMPLATE_HASH_LABEL.to_string(), hash.to_string());
    pod.metadata.annotations = template.metadata.annotations.clone();
    pod.metadata.owner_references = Some(owner_references(&replica_set_name(d, hash)));
    pod
}

/// What to do for one Deployment.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Plan {
    /// Pods to delete, by name, in order.
    pub delete: Vec<String>,
    /// How many Pods of the current template to create.
    pub create: usize,
}

/// The plan for `d`, whose Pods are `owned` (terminating ones are left
/// out of every count): Pods of another template go, then the current
/// template's are scaled to `spec.replicas` (at most [`BURST_REPLICAS`]
/// more at a time).
pub fn plan(d: &Deployment, owned: &[&Pod]) -> Plan {
    let hash = template_hash(d);
    let live: Vec<&Pod> = owned.iter().copied().filter(|p| !p.is_terminating()).collect();
    let (mut current, old): (Vec<&Pod>, Vec<&Pod>) = live
        .into_iter()
        .partition(|p| p.metadata.labels.get(TEMPLATE_HASH_LABEL) == Some(&hash));
    let mut delete: Vec<String> = old.iter().map(|p| p.metadata.name.clone()).collect();
    let want = usize::try_from(d.replicas()).unwrap_or(0);
    if current.len() > want {
        crate::sort::sort_by_key(&mut current, |p| deletion_rank(p));
        delete.extend(current[..current.len() - want].iter().map(|p| p.metadata.name.clone()));
    }
    Plan {
        delete,
        create: want.saturating_sub(current.len()).min(BURST_REPLICAS),
    }
}

/// The ReplicaSet controller's order for scaling down, as far as svcnet
/// models a Pod: unscheduled before scheduled, Pending before Unknown
/// before Running, not ready before ready, then the newest first (the
/// control plane's uids grow with creation).
fn deletion_rank(pod: &Pod) -> (bool, u8, bool, Reverse<(usize, String)>) {
    let phase = match pod.status.phase.as_deref() {
        Some("Pending") | None => 0,
        Some("Unknown") => 1,
        _ => 2,
    };
    (
        pod.spec.node_name.is_some(),
        phase,
        pod.is_ready(),
        Reverse((pod.metadata.uid.len(), pod.metadata.uid.clone())),
    )
}

/// `d`'s status from the Pods it owns.
pub fn status(d: &Deployment, owned: &[&Pod]) -> crate::api::deployment::DeploymentStatus {
    let hash = template_hash(d);
    let live: Vec<&Pod> = owned.iter().copied().filter(|p| !p.is_terminating()).collect();
    let count = |f: &dyn Fn(&Pod) -> bool| i32::try_from(live.iter().filter(|p| f(p)).count()).unwrap_or(i32::MAX);
    let ready = count(&|p| p.is_ready());
    crate::api::deployment::DeploymentStatus {
        observed_generation: Some(d.generation()),
        replicas: count(&|_| true),
        updated_replicas: count(&|p| p.metadata.labels.get(TEMPLATE_HASH_LABEL) == Some(&hash)),
        ready_replicas: ready,
        available_replicas: ready,
        unavailable_replicas: d.replicas().saturating_sub(ready).max(0),
        extra: Default::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::manifest::{parse_manifests, Object};
    use crate::api::pod::PodCondition;

    const WEB: &str = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: shop}\nspec:\n  replicas: 2\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec: {containers: [{name: nginx, image: 'nginx:1.27'}]}\n";

    fn deployment(text: &str) -> Deployment {
        match parse_manifests(text).unwrap().remove(0) {
            Object::Deployment(d) => *d,
            other => panic!("not a Deployment: {other:?}"),
        }
    }

    fn pod(d: &Deployment, name: &str, uid: u64, node: bool, ready: bool) -> Pod {
        let mut p = new_pod(d, &template_hash(d), name.into());
        p.metadata.uid = format!("00000000-0000-4000-8000-{uid:012x}");
        if node {
            p.spec.node_name = Some("n1".into());
            p.status.phase = Some("Running".into());
        } else {
            p.status.phase = Some("Pending".into());
        }
        p.status.conditions.push(PodCondition {
            condition_type: "Ready".into(),
            status: if ready { "True" } else { "False" }.into(),
            ..PodCondition::default()
        });
        p
    }

    #[test]
    fn the_hash_is_stable_looks_like_kubernetes_and_follows_the_template() {
        let d = deployment(WEB);
        let hash = template_hash(&d);
        assert_eq!(hash, template_hash(&deployment(WEB)));
        assert!(hash.len() <= 10 && !hash.is_empty(), "{hash}");
        assert!(hash.bytes().all(|b| b"456789bcdf".contains(&b)), "{hash}");
        // The replica count and the order keys are written in do not count.
        let reordered = WEB.replace("replicas: 2", "replicas: 5").replace(
            "{name: nginx, image: 'nginx:1.27'}",
            "{image: 'nginx:1.27', name: nginx}",
        );
        assert_eq!(template_hash(&deployment(&reordered)), hash);
        assert_ne!(template_hash(&deployment(&WEB.replace("1.27", "1.28"))), hash);
    }

    #[test]
    fn names_follow_generate_name() {
        assert_eq!(pod_name("web-5d59d67564", "x2x4k"), "web-5d59d67564-x2x4k");
        let long = "a".repeat(70);
        let name = pod_name(&long, "bcdfg");
        assert_eq!(name.len(), 63);
        assert!(name.ends_with("aaabcdfg"));
    }

    #[test]
    fn new_pods_carry_the_template_the_hash_and_the_owner() {
        let d = deployment(WEB);
        let hash = template_hash(&d);
        let p = new_pod(&d, &hash, "web-x".into());
        assert_eq!(p.metadata.namespace, "shop");
        assert_eq!(p.metadata.labels["app"], "web");
        assert_eq!(p.metadata.labels[TEMPLATE_HASH_LABEL], hash);
        assert_eq!(p.spec.containers[0].extra["image"], "nginx:1.27");
        let owner = &p.metadata.owner_references.as_ref().unwrap()[0];
        assert_eq!(owner["kind"], "ReplicaSet");
        assert_eq!(owner["name"], format!("web-{hash}"));
        assert_eq!(owner["controller"], true);
        assert!(owns(&d, &p) && is_controlled(&p));
        let mut other = d.clone();
        other.metadata.name = "web2".into();
        assert!(!owns(&other, &p));
        let mut orphan = p.clone();
        orphan.metadata.owner_references = None;
        assert!(!owns(&d, &orphan) && !is_controlled(&orphan));
    }

    #[test]
    fn scaling_down_removes_unscheduled_then_unready_then_newest() {
        let mut d = deployment(WEB);
        let pods = [
            pod(&d, "old-ready", 1, true, true),
            pod(&d, "new-ready", 4, true, true),
            pod(&d, "unready", 2, true, false),
            pod(&d, "pending", 3, false, false),
        ];
        let refs: Vec<&Pod> = pods.iter().collect();
        let order = |replicas: i32, d: &mut Deployment| {
            d.spec.replicas = Some(replicas);
            plan(d, &refs)
        };
        assert_eq!(
            order(0, &mut d).delete,
            ["pending", "unready", "new-ready", "old-ready"]
        );
        assert_eq!(order(2, &mut d).delete, ["pending", "unready"]);
        assert_eq!(order(4, &mut d), Plan::default());
        assert_eq!(order(i32::MAX, &mut d).create, BURST_REPLICAS);
        assert_eq!(
            order(6, &mut d),
            Plan {
                delete: vec![],
                create: 2
            }
        );
    }

    #[test]
    fn a_new_template_replaces_every_pod_and_status_counts() {
        let d = deployment(WEB);
        let pods = [pod(&d, "a", 1, true, true), pod(&d, "b", 2, true, false)];
        let refs: Vec<&Pod> = pods.iter().collect();
        let s = status(&d, &refs);
        assert_eq!(
            (s.replicas, s.updated_replicas, s.ready_replicas, s.available_replicas),
            (2, 2, 1, 1)
        );
        assert_eq!(s.unavailable_replicas, 1);
        let mut newer = deployment(&WEB.replace("1.27", "1.28"));
        newer.metadata.generation = Some(2.into());
        assert_eq!(
            plan(&newer, &refs),
            Plan {
                delete: vec!["a".into(), "b".into()],
                create: 2
            }
        );
        let s = status(&newer, &refs);
        assert_eq!((s.updated_replicas, s.observed_generation), (0, Some(2)));
    }
}
