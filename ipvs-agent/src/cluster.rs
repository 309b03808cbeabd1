//! The agent's cluster: the core's control plane, restored from the state
//! file, made to hold exactly what the manifests hold, kept alive with
//! apiserver lease heartbeats, and saved back after each change. All the
//! Kubernetes behaviour is the core's; this is the I/O around it.

use crate::manifests::{ManifestError, Sources};
use crate::state::{self, StateError};
use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::path::PathBuf;
use svcnet_core::api::EndpointSlice;
use svcnet_core::controlplane::{ClusterConfig, ConfigError, ControlPlane, SetOutcome};
use svcnet_core::proxy::slices_by_service;
use svcnet_core::time::Time;
use thiserror::Error;

/// Why the cluster could not start.
#[derive(Debug, Error)]
pub enum ClusterError {
    /// The flags describe no valid cluster.
    #[error("{0}")]
    Config(#[from] ConfigError),
    /// The state file is unreadable, corrupt or for other ranges.
    #[error(transparent)]
    State(#[from] StateError),
    /// The manifests are unreadable or refused.
    #[error(transparent)]
    Manifest(#[from] ManifestError),
}

/// What a manifest change did.
#[derive(Debug)]
pub struct Refreshed {
    /// The control plane before the change.
    pub before: ControlPlane,
    /// Objects applied and deleted.
    pub outcome: SetOutcome,
}

/// The control plane with its inputs and its state file.
#[derive(Debug)]
pub struct Cluster {
    cp: ControlPlane,
    manifests: Vec<PathBuf>,
    state_file: Option<PathBuf>,
    apiservers: Vec<SocketAddr>,
    /// Fingerprint of the manifests last acted on, accepted or not.
    seen: Option<u64>,
}

impl Cluster {
    /// Restores the control plane from `state_file` when it exists (under
    /// the flags' configuration; the ranges must match), or starts a new
    /// one. The manifests are not read yet: see [`Cluster::refresh`].
    pub fn open(
        config: ClusterConfig,
        state_file: Option<PathBuf>,
        manifests: Vec<PathBuf>,
    ) -> Result<Cluster, ClusterError> {
        let apiservers = config.validate()?.apiservers;
        let snapshot = match &state_file {
            Some(path) => state::load(path)?,
            None => None,
        };
        let cp = match (snapshot, &state_file) {
            (Some(snapshot), Some(path)) => {
                ControlPlane::restore_with_config(config, snapshot).map_err(|e| StateError::Mismatch {
                    path: path.clone(),
                    message: e.to_string(),
                })?
            }
            _ => ControlPlane::new(config)?,
        };
        Ok(Cluster {
            cp,
            manifests,
            state_file,
            apiservers,
            seen: None,
        })
    }

    /// The control plane.
    pub fn control_plane(&self) -> &ControlPlane {
        &self.cp
    }

    /// Reads the manifests and, when they differ from the last ones seen,
    /// makes the control plane hold exactly their objects (deleting those
    /// no longer there). `Ok(None)` when nothing changed. On error the
    /// control plane is unchanged, and the same broken content is not
    /// reported again until it changes.
    pub fn refresh(&mut self) -> Result<Option<Refreshed>, ManifestError> {
        let sources = match Sources::read(&self.manifests) {
            Ok(s) => s,
            Err(e) => {
                self.seen = None;
                return Err(e);
            }
        };
        let fingerprint = sources.fingerprint();
        if self.seen == Some(fingerprint) {
            return Ok(None);
        }
        self.seen = Some(fingerprint);
        let manifests = sources.decode()?;
        let before = self.cp.clone();
        let outcome = self
            .cp
            .apply_set(&manifests.objects)
            .map_err(|(i, e)| manifests.refusal(i, e))?;
        Ok(Some(Refreshed { before, outcome }))
    }

    /// Renews the apiservers' leases at `now` (the agent stands in for the
    /// apiservers it is told about) and lets leases of others expire.
    /// Returns true when the `kubernetes` EndpointSlice changed.
    pub fn heartbeat(&mut self, now: Time) -> bool {
        let before = self.cp.endpoint_slice("default", "kubernetes").cloned();
        self.cp.advance_to(now);
        for addr in &self.apiservers {
            self.cp.heartbeat(*addr, now);
        }
        self.cp.endpoint_slice("default", "kubernetes") != before.as_ref()
    }

    /// Writes the control plane to the state file, if there is one.
    pub fn save(&self) -> Result<(), StateError> {
        match &self.state_file {
            Some(path) => state::save(path, &self.cp.snapshot()),
            None => Ok(()),
        }
    }
}

/// The Services (`namespace/name`) whose object or EndpointSlices differ
/// between two control planes, removed ones included.
pub fn changed_services(before: &ControlPlane, after: &ControlPlane) -> BTreeSet<String> {
    let services = |cp: &ControlPlane| -> BTreeMap<String, _> { cp.services().map(|s| (s.key(), s.clone())).collect() };
    let slices = |cp: &ControlPlane| -> BTreeMap<String, Vec<EndpointSlice>> {
        slices_by_service(cp.endpoint_slices())
            .into_iter()
            .map(|(k, v)| (k, v.into_iter().cloned().collect()))
            .collect()
    };
    let (svc_a, svc_b) = (services(before), services(after));
    let (sl_a, sl_b) = (slices(before), slices(after));
    svc_a
        .keys()
        .chain(svc_b.keys())
        .filter(|k| svc_a.get(*k) != svc_b.get(*k) || sl_a.get(*k) != sl_b.get(*k))
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    const WEB: &str = "apiVersion: v1\nkind: Service\nmetadata: {name: web}\nspec: {type: NodePort, selector: {app: web}, ports: [{port: 80}]}\n";
    const DB: &str = "apiVersion: v1\nkind: Service\nmetadata: {name: db}\nspec: {ports: [{port: 5432}]}\n";
    const POD: &str = "apiVersion: v1\nkind: Pod\nmetadata: {name: web-1, labels: {app: web}}\nstatus: {phase: Running, podIPs: [{ip: 10.244.0.5}], conditions: [{type: Ready, status: \"True\"}]}\n";

    fn config() -> ClusterConfig {
        ClusterConfig {
            apiservers: vec!["192.168.0.10:6443".into()],
            ..ClusterConfig::default()
        }
    }

    #[test]
    fn allocations_survive_a_restart_through_the_state_file() {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("state.json");
        let file = dir.path().join("svc.yaml");
        fs::write(&file, format!("{DB}---\n{WEB}")).unwrap();
        let mut first = Cluster::open(config(), Some(state.clone()), vec![file.clone()]).unwrap();
        first.refresh().unwrap().unwrap();
        first.save().unwrap();
        let web = first.control_plane().service("default", "web").unwrap().clone();

        // Restarted with web listed first: without the state file it would
        // get db's address; with it, both keep theirs.
        fs::write(&file, format!("{WEB}---\n{DB}")).unwrap();
        let fresh = {
            let mut c = Cluster::open(config(), None, vec![file.clone()]).unwrap();
            c.refresh().unwrap();
            c.control_plane()
                .service("default", "web")
                .unwrap()
                .spec
                .cluster_ip
                .clone()
        };
        assert_ne!(
            fresh, web.spec.cluster_ip,
            "the test needs an order-dependent allocation"
        );
        let mut second = Cluster::open(config(), Some(state.clone()), vec![file]).unwrap();
        let refreshed = second.refresh().unwrap().unwrap();
        let again = second.control_plane().service("default", "web").unwrap();
        assert_eq!(again.spec.cluster_ip, web.spec.cluster_ip);
        assert_eq!(again.spec.ports[0].node_port, web.spec.ports[0].node_port);
        assert!(changed_services(&refreshed.before, second.control_plane()).is_empty());
    }

    #[test]
    fn a_state_file_for_another_range_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("state.json");
        Cluster::open(config(), Some(state.clone()), vec![])
            .unwrap()
            .save()
            .unwrap();
        let other = ClusterConfig {
            service_cluster_ip_range: "10.100.0.0/16".into(),
            ..config()
        };
        let err = Cluster::open(other, Some(state.clone()), vec![])
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            format!(
                "state file {}: the provided range does not match the current range",
                state.display()
            )
        );
        fs::write(&state, "garbage").unwrap();
        let err = Cluster::open(config(), Some(state.clone()), vec![])
            .unwrap_err()
            .to_string();
        assert!(err.contains("not a valid svcnet state file"), "{err}");
    }

    #[test]
    fn refresh_acts_on_changes_only_and_keeps_the_last_good_state() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("svc.yaml");
        fs::write(&file, format!("{WEB}---\n{POD}")).unwrap();
        let mut cluster = Cluster::open(config(), None, vec![dir.path().to_path_buf()]).unwrap();
        let first = cluster.refresh().unwrap().unwrap();
        assert_eq!(
            changed_services(&first.before, cluster.control_plane()),
            BTreeSet::from(["default/web".to_string()])
        );
        assert!(cluster.refresh().unwrap().is_none(), "unchanged content");

        let good = cluster.control_plane().clone();
        fs::write(&file, format!("{WEB}---\n{POD}---\nkind: [\n")).unwrap();
        let err = cluster.refresh().unwrap_err().to_string();
        assert!(err.contains("svc.yaml: document 3: invalid YAML"), "{err}");
        assert_eq!(cluster.control_plane(), &good);
        assert!(
            cluster.refresh().unwrap().is_none(),
            "the same bad content is reported once"
        );

        // The pod goes: web's slice changes, nothing else.
        fs::write(&file, WEB).unwrap();
        let refreshed = cluster.refresh().unwrap().unwrap();
        assert_eq!(refreshed.outcome.deleted.len(), 1);
        assert_eq!(
            changed_services(&refreshed.before, cluster.control_plane()),
            BTreeSet::from(["default/web".to_string()])
        );
    }

    #[test]
    fn heartbeats_keep_the_kubernetes_endpoints() {
        let mut cluster = Cluster::open(config(), None, vec![]).unwrap();
        let ttl = 15_000;
        assert!(!cluster.heartbeat(Time(ttl * 10)));
        assert!(cluster
            .control_plane()
            .endpoint_slice("default", "kubernetes")
            .is_some());
        let two = ClusterConfig {
            apiservers: vec!["192.168.0.10:6443".into(), "192.168.0.11:6443".into()],
            ..ClusterConfig::default()
        };
        let mut cluster = Cluster::open(two, None, vec![]).unwrap();
        cluster.apiservers.truncate(1);
        assert!(cluster.heartbeat(Time(ttl * 10)), "an apiserver nobody renews expires");
        let slice = cluster.control_plane().endpoint_slice("default", "kubernetes").unwrap();
        assert_eq!(slice.endpoints.len(), 1);
    }
}
