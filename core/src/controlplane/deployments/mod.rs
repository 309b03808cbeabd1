//! Deployments in the control plane: stored, applied, scaled and deleted
//! (with their Pods), and the Deployment controller
//! ([`crate::controllers::deployment`]) run over them whenever
//! Deployments, Pods or Nodes change.
//!
//! The control plane does for the controller's Pods what the rest of a
//! cluster would: names them from its seeded generator, schedules them
//! ([`crate::scheduler`]), gives them addresses from their Node's pod CIDRs
//! ([`crate::cni`]) and marks them Running and Ready. A Pod that finds no
//! Node, or no free address, stays Pending without an IP and is placed on
//! a later run, when a Node or an address turns up. Pods of the
//! controller that ran on a Node that is gone are deleted and replaced
//! (kube-controller-manager's Pod garbage collector). Every Pod change
//! goes through the same path as a user's, so the EndpointSlices follow.

use super::objects::{compare, default_meta, not_found, Stored};
use super::{ApiError, Applied, ApplyAction, ControlPlane, ObjectKey};
use crate::api::deployment::Deployment;
use crate::api::manifest::Object;
use crate::api::pod::{PodCondition, PodIp};
use crate::api::{ObjectMeta, Pod};
use crate::apiserver::admission::deployment::{validate_deployment, validate_deployment_update};
use crate::collections::SortedSet;
use crate::controllers::deployment::{self as controller, ALPHABET};
use crate::field::{FieldError, FieldPath};
use crate::scheduler::{pick_node, pod_cidrs};
use serde_json::Value;
use std::net::IpAddr;

impl Stored for Deployment {
    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }
    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

impl ControlPlane {
    /// All Deployments, sorted by namespace and name.
    pub fn deployments(&self) -> impl Iterator<Item = &Deployment> {
        self.deployments.values()
    }

    /// One Deployment.
    pub fn deployment(&self, namespace: &str, name: &str) -> Option<&Deployment> {
        self.deployments.get(&(namespace.to_string(), name.to_string()))
    }

    /// Creates or replaces a Deployment (`replicas` defaulted to 1,
    /// `generation` counting spec changes, any given status ignored); the
    /// controller then brings its Pods in line.
    pub fn apply_deployment(&mut self, mut d: Deployment) -> Result<Applied, ApiError> {
        default_meta(
            &mut d.api_version,
            &mut d.kind,
            &mut d.metadata,
            "apps/v1",
            "Deployment",
            true,
        );
        d.spec.replicas.get_or_insert(1);
        let key = (d.metadata.namespace.clone(), d.metadata.name.clone());
        let old = self.deployments.get(&key);
        let errors = match old {
            Some(old) => validate_deployment_update(&d, old),
            None => validate_deployment(&d),
        };
        if !errors.is_empty() {
            return Err(ApiError::invalid("Deployment", &d.metadata.name, errors));
        }
        let generation = match old {
            Some(old) if old.spec == d.spec => old.generation(),
            Some(old) => old.generation() + 1,
            None => 1,
        };
        d.metadata.generation = Some(Value::from(generation));
        d.status = old.map(|o| o.status.clone()).unwrap_or_default();
        let action = compare(&mut d, old);
        self.version(&mut d.metadata, action);
        self.deployments.insert(key.clone(), d);
        if action != ApplyAction::Unchanged {
            self.run_deployment_controller();
        }
        let stored = self.deployments.get(&key).cloned().unwrap_or_default();
        Ok(Applied {
            action,
            object: Object::Deployment(Box::new(stored)),
        })
    }

    /// Deletes a Deployment and the Pods it owns.
    pub fn delete_deployment(&mut self, namespace: &str, name: &str) -> Result<Deployment, ApiError> {
        let d = self
            .deployments
            .remove(&(namespace.to_string(), name.to_string()))
            .ok_or_else(|| not_found("deployments.apps", name))?;
        let owned: Vec<String> = self.owned_pods(&d).iter().map(|p| p.metadata.name.clone()).collect();
        for pod in owned {
            self.remove_pod(namespace, &pod);
        }
        Ok(d)
    }

    /// `kubectl scale deployment`: sets `spec.replicas` and lets the
    /// controller follow.
    pub fn scale(&mut self, namespace: &str, name: &str, replicas: i32) -> Result<Deployment, ApiError> {
        let namespace = if namespace.is_empty() { "default" } else { namespace };
        let mut d = self
            .deployment(namespace, name)
            .cloned()
            .ok_or_else(|| not_found("deployments.apps", name))?;
        if replicas < 0 {
            let path = FieldPath::new("spec").child("replicas");
            let error = FieldError::invalid(&path, i64::from(replicas), "must be greater than or equal to 0");
            return Err(ApiError::invalid("Scale", name, vec![error]));
        }
        d.spec.replicas = Some(replicas);
        match self.apply_deployment(d)?.object {
            Object::Deployment(d) => Ok(*d),
            // apply_deployment always answers with the Deployment.
            _ => Err(ApiError::Internal("the scaled object is not a Deployment".into())),
        }
    }

    /// Runs the controller over every Deployment: Pods of vanished Nodes
    /// go, each Deployment's Pods are brought to its template and replica
    /// count, Pending Pods get another try at a Node and an address, and
    /// the statuses are recounted.
    pub(super) fn run_deployment_controller(&mut self) {
        let keys: Vec<ObjectKey> = self.deployments.keys().cloned().collect();
        for key in keys {
            self.reconcile_deployment(&key);
        }
    }

    fn reconcile_deployment(&mut self, key: &ObjectKey) {
        let Some(d) = self.deployments.get(key).cloned() else {
            return;
        };
        let namespace = key.0.as_str();
        let lost: Vec<String> = (self.owned_pods(&d).into_iter())
            .filter(|p| p.status.phase.as_deref() == Some("Running"))
            .filter(|p| p.spec.node_name.as_ref().is_some_and(|n| !self.nodes.contains_key(n)))
            .map(|p| p.metadata.name.clone())
            .collect();
        for name in lost {
            self.remove_pod(namespace, &name);
        }
        let plan = controller::plan(&d, &self.owned_pods(&d));
        for name in plan.delete {
            self.remove_pod(namespace, &name);
        }
        let hash = controller::template_hash(&d);
        let replica_set = controller::replica_set_name(&d, &hash);
        for _ in 0..plan.create {
            let name = self.fresh_pod_name(namespace, &replica_set);
            let mut pod = controller::new_pod(&d, &hash, name);
            self.place(&mut pod);
            self.stamp(&mut pod.metadata);
            self.store_pod(pod, None);
        }
        let pending: Vec<Pod> = (self.owned_pods(&d).into_iter())
            .filter(|p| p.status.phase.as_deref() == Some("Pending") && !p.is_terminating())
            .cloned()
            .collect();
        for old in pending {
            let mut pod = old.clone();
            self.place(&mut pod);
            if pod != old {
                self.bump(&mut pod.metadata);
                self.store_pod(pod, Some(old));
            }
        }
        let status = controller::status(&d, &self.owned_pods(&d));
        if let Some(stored) = self.deployments.get(key).filter(|s| s.status != status).cloned() {
            let mut updated = stored;
            updated.status = status;
            self.bump(&mut updated.metadata);
            self.deployments.insert(key.clone(), updated);
        }
    }

    /// The Pods `d` owns.
    fn owned_pods(&self, d: &Deployment) -> Vec<&Pod> {
        let namespace = d.metadata.namespace_or_default().to_string();
        self.pods
            .range((namespace.clone(), String::new())..)
            .take_while(|((ns, _), _)| *ns == namespace)
            .map(|(_, pod)| pod)
            .filter(|pod| controller::owns(d, pod))
            .collect()
    }

    /// A Pod name of `replica_set` with a suffix from the seeded generator
    /// that no Pod of `namespace` has.
    fn fresh_pod_name(&mut self, namespace: &str, replica_set: &str) -> String {
        loop {
            let suffix: String = (0..5)
                .map(|_| {
                    let i = usize::try_from(self.pod_name_rng.below(ALPHABET.len() as u128)).unwrap_or(0);
                    char::from(ALPHABET[i % ALPHABET.len()])
                })
                .collect();
            let name = controller::pod_name(replica_set, &suffix);
            if !self.pods.contains_key(&(namespace.to_string(), name.clone())) {
                return name;
            }
        }
    }

    /// Schedules `pod` (unless it is bound already) and gives it one
    /// address per pod CIDR of its Node: Running and Ready when it got
    /// them, Pending without an IP otherwise. A Pod bound to a Node that
    /// does not exist is left as it is.
    pub(super) fn place(&mut self, pod: &mut Pod) {
        let node = match pod.spec.node_name.as_deref() {
            Some(bound) => match self.nodes.get(bound) {
                Some(node) => node.clone(),
                None => return,
            },
            None => {
                let pods: Vec<&Pod> = self.pods.values().collect();
                match pick_node(&self.nodes, &pods) {
                    Some(node) => node.clone(),
                    None => {
                        set_status(pod, false, None, &[]);
                        return;
                    }
                }
            }
        };
        let node_name = node.metadata.name.clone();
        // Every address a Pod holds, whatever its Node: a Pod a user
        // applied without a Node may hold one of this Node's addresses.
        let in_use: SortedSet<IpAddr> = crate::sort::set_from(
            (self.pods.values())
                .filter(|p| !p.is_terminal())
                .flat_map(Pod::ips)
                .filter_map(|ip| ip.parse().ok()),
        );
        let mut ips = Vec::new();
        for range in pod_cidrs(&node) {
            match self.pod_ipam.allocate(&node_name, range, &in_use) {
                Some(ip) => ips.push(ip),
                None => {
                    ips.clear();
                    break;
                }
            }
        }
        pod.spec.node_name = Some(node_name);
        let host_ip = node.ips().into_iter().next();
        set_status(pod, true, host_ip, &ips);
    }

    /// Stores a Pod the controller made or changed (`old`: as it was) and
    /// lets the EndpointSlices follow, as for a user's Pod.
    fn store_pod(&mut self, pod: Pod, old: Option<Pod>) {
        let key = (pod.metadata.namespace.clone(), pod.metadata.name.clone());
        self.pods.insert(key, pod.clone());
        self.follow_containers(old.as_ref(), Some(&pod));
        self.sync_pod_services(old.as_ref(), Some(&pod));
    }

    /// Removes a Pod the controller deletes; the EndpointSlices follow.
    fn remove_pod(&mut self, namespace: &str, name: &str) {
        if let Some(pod) = self.pods.remove(&(namespace.to_string(), name.to_string())) {
            self.follow_containers(Some(&pod), None);
            self.sync_pod_services(Some(&pod), None);
        }
    }
}

/// The status of a Pod, `scheduled` or not, on a Node with `host_ip`, that
/// got `ips` (none: its sandbox could not be set up).
fn set_status(pod: &mut Pod, scheduled: bool, host_ip: Option<String>, ips: &[IpAddr]) {
    let condition = |kind: &str, ok: bool| PodCondition {
        condition_type: kind.into(),
        status: if ok { "True" } else { "False" }.into(),
        ..PodCondition::default()
    };
    let running = !ips.is_empty();
    pod.status.phase = Some(if running { "Running" } else { "Pending" }.into());
    pod.status.pod_ip = ips.first().map(ToString::to_string);
    pod.status.pod_ips = ips.iter().map(|ip| PodIp { ip: ip.to_string() }).collect();
    pod.status.conditions = vec![condition("PodScheduled", scheduled), condition("Ready", running)];
    pod.status.extra.clear();
    if let Some(host) = host_ip {
        pod.status.extra.insert("hostIP".into(), Value::from(host.as_str()));
        pod.status
            .extra
            .insert("hostIPs".into(), serde_json::json!([{ "ip": host }]));
    }
}

#[cfg(test)]
mod tests;
