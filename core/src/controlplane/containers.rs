//! What each Pod's kubelet did when the Pod's containers started: the
//! Service environment variables it gave them ([`crate::kubelet`]). They
//! are fixed at that moment, as on a real node: a Service created later is
//! not in an older Pod's environment, and one deleted later stays in it.
//! A Pod starts when it first runs (it has a node and an address); a Pod
//! that is deleted forgets its environment.

use super::ControlPlane;
use crate::api::Pod;
use crate::collections::SortedMap;
use crate::kubelet::service_env;

/// The environment of each started Pod, by `namespace/name`.
pub type PodEnvironments = SortedMap<String, SortedMap<String, String>>;

/// The key of a Pod in [`PodEnvironments`].
fn key(pod: &Pod) -> String {
    format!("{}/{}", pod.metadata.namespace_or_default(), pod.metadata.name)
}

/// Whether the Pod's containers are running: it has a node and an address.
fn running(pod: &Pod) -> bool {
    pod.spec.node_name.is_some() && !pod.ips().is_empty() && pod.status.phase.as_deref() == Some("Running")
}

impl ControlPlane {
    /// Follows a Pod from `old` to `new` (`None`: absent): records the
    /// environment its containers get when it starts, forgets it when the
    /// Pod goes.
    pub(super) fn follow_containers(&mut self, old: Option<&Pod>, new: Option<&Pod>) {
        match new {
            None => {
                if let Some(old) = old {
                    self.pod_env.remove(&key(old));
                }
            }
            Some(pod) if running(pod) && !self.pod_env.contains_key(&key(pod)) => {
                let services: Vec<_> = self.services().collect();
                let env = crate::sort::map_from(service_env(pod, &services));
                self.pod_env.insert(key(pod), env);
            }
            Some(_) => {}
        }
    }

    /// The Service environment the Pod's containers got when they started,
    /// sorted by name; `None` for a Pod that has not started.
    pub fn container_env(&self, namespace: &str, name: &str) -> Option<&SortedMap<String, String>> {
        self.pod_env.get(&format!("{namespace}/{name}"))
    }
}
