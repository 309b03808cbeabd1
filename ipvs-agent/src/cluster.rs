//! The agent's cluster: the core's control plane, restored from the state
//! file, made to hold exactly what the manifests hold, kept alive with
//! apiserver lease heartbeats, and saved back after each change. All the
//! Kubernetes behaviour is the core's; this is the I/O around it.

use crate::manifests::{ManifestError, Manifests, Sources, Stamps};
use crate::state::{self, StateError};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::SystemTime;
use svcnet_core::api::manifest::Object;
use svcnet_core::controlplane::{ApplyAction, ClusterConfig, ConfigError, ControlPlane, SetOutcome};
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
    /// Objects applied and deleted, and the Services that changed.
    pub outcome: SetOutcome,
    /// Objects in the manifests not applied again, being unchanged since
    /// the last accepted read.
    pub unchanged: usize,
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
    /// The files' stamps when they were last read, if settled.
    stamps: Option<Stamps>,
    /// The manifests last accepted, decoded.
    accepted: Option<Manifests>,
    /// A write of the state file begun by [`Cluster::begin_save`].
    pending_save: Option<PendingSave>,
}

/// A write of the state file begun in the background.
#[derive(Debug)]
enum PendingSave {
    /// Going on, on a thread of its own.
    Writing(JoinHandle<Result<(), StateError>>),
    /// Over already: no thread could be started, so it was written at once.
    Done(Result<(), StateError>),
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
            stamps: None,
            accepted: None,
            pending_save: None,
        })
    }

    /// The control plane.
    pub fn control_plane(&self) -> &ControlPlane {
        &self.cp
    }

    /// The state file (`--state-file`), if there is one.
    pub fn state_file(&self) -> Option<&Path> {
        self.state_file.as_deref()
    }

    /// Reads the manifests and, when they differ from the last ones seen,
    /// makes the control plane hold exactly their objects (deleting those
    /// no longer there). After the first accepted read, only files whose
    /// text changed are decoded and only objects that changed are applied.
    /// `Ok(None)` when nothing changed. On error the control plane is
    /// unchanged, and the same broken content is not reported again until
    /// it changes.
    pub fn refresh(&mut self) -> Result<Option<Refreshed>, ManifestError> {
        let stamps = self.take_stamps(SystemTime::now())?;
        self.refresh_from(stamps)
    }

    /// [`Cluster::refresh`] when the files' [`Stamps`] changed since they
    /// were last read (or were not settled then), else `Ok(None)` without
    /// reading them: a poll that costs a `stat` per file. `now` is the wall
    /// clock's time. The agent also calls [`Cluster::refresh`] every sync
    /// period, whatever the stamps say.
    pub fn refresh_if_touched(&mut self, now: SystemTime) -> Result<Option<Refreshed>, ManifestError> {
        let stamps = self.take_stamps(now)?;
        if self.stamps.as_ref() == Some(&stamps) {
            return Ok(None);
        }
        self.refresh_from(stamps)
    }

    fn take_stamps(&mut self, now: SystemTime) -> Result<Stamps, ManifestError> {
        Stamps::take(&self.manifests, now).inspect_err(|_| {
            self.seen = None;
            self.stamps = None;
        })
    }

    /// Reads the files `stamps` were taken of (just before, so a change
    /// made while reading is seen by the next poll) and acts on what
    /// changed.
    fn refresh_from(&mut self, stamps: Stamps) -> Result<Option<Refreshed>, ManifestError> {
        let sources = match Sources::read_stamped(&stamps) {
            Ok(s) => s,
            Err(e) => {
                self.seen = None;
                self.stamps = None;
                return Err(e);
            }
        };
        self.stamps = Some(stamps).filter(Stamps::settled);
        let fingerprint = sources.fingerprint();
        if self.seen == Some(fingerprint) {
            return Ok(None);
        }
        self.seen = Some(fingerprint);
        let manifests = sources.decode(self.accepted.as_ref())?;
        let total = manifests.objects().count();
        let changes = self.accepted.as_ref().and_then(|a| manifests.changes_since(a));
        let (outcome, applied) = match changes {
            Some(batch) => {
                let outcome = self
                    .cp
                    .apply_changes(&batch.objects, &batch.removed)
                    .map_err(|(i, e)| batch.refusal(i, e))?;
                (outcome, batch.objects.len())
            }
            None => {
                let batch = manifests.batch();
                let outcome = self
                    .cp
                    .apply_set(&batch.objects)
                    .map_err(|(i, e)| batch.refusal(i, e))?;
                (outcome, total)
            }
        };
        self.accepted = Some(manifests);
        Ok(Some(Refreshed {
            outcome,
            unchanged: total - applied,
        }))
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

    /// Writes the allocations to the state file, if there is one (finish a
    /// write begun in the background first: [`Cluster::finish_save`]): the
    /// Services and ServiceCIDRs with the allocators' state
    /// ([`ControlPlane::allocation_snapshot`]). Pods, Nodes and
    /// EndpointSlices come from the manifests again at start.
    pub fn save(&self) -> Result<(), StateError> {
        match &self.state_file {
            Some(path) => state::save(path, &self.cp.allocation_snapshot()),
            None => Ok(()),
        }
    }

    /// Begins [`Cluster::save`] on a thread of its own: the snapshot is
    /// taken now and written while the caller goes on (at start, beside
    /// the rest of the start and the first sync); [`Cluster::finish_save`]
    /// takes the result. Returns the result of a write begun before and
    /// not taken yet, finished first (both write through one temporary
    /// file).
    pub fn begin_save(&mut self) -> Option<Result<(), StateError>> {
        let earlier = self.finish_save();
        let Some(path) = self.state_file.clone() else {
            return earlier;
        };
        let snapshot = Arc::new(self.cp.allocation_snapshot());
        let (thread_path, thread_snapshot) = (path.clone(), snapshot.clone());
        let writing = std::thread::Builder::new()
            .name("state-file".into())
            .spawn(move || state::save(&thread_path, &thread_snapshot));
        self.pending_save = Some(match writing {
            Ok(handle) => PendingSave::Writing(handle),
            Err(e) => {
                tracing::debug!(error = %e, "no thread for the state file; writing it now");
                PendingSave::Done(state::save(&path, &snapshot))
            }
        });
        earlier
    }

    /// Whether a write begun by [`Cluster::begin_save`] waits to be taken.
    pub fn save_pending(&self) -> bool {
        self.pending_save.is_some()
    }

    /// Waits for the write begun by [`Cluster::begin_save`], if any, and
    /// returns its result.
    pub fn finish_save(&mut self) -> Option<Result<(), StateError>> {
        Some(match self.pending_save.take()? {
            PendingSave::Writing(handle) => handle.join().unwrap_or_else(|_| {
                Err(StateError::Write {
                    path: self.state_file.clone().unwrap_or_default(),
                    source: std::io::Error::other("the thread writing it panicked"),
                })
            }),
            PendingSave::Done(result) => result,
        })
    }
}

impl Drop for Cluster {
    /// A cluster dropped while its state file is being written (the agent
    /// stopping before its first sync) lets the write finish.
    fn drop(&mut self) {
        if let Some(Err(e)) = self.finish_save() {
            tracing::error!(error = %e, "cannot save the state");
        }
    }
}

impl Refreshed {
    /// Whether allocations may have changed: some Service or ServiceCIDR
    /// was created, changed or deleted. Otherwise the state file need not
    /// be written again.
    pub fn allocations_changed(&self) -> bool {
        let allocating = |o: &Object| matches!(o, Object::Service(_) | Object::ServiceCidr(_));
        self.outcome
            .applied
            .iter()
            .any(|a| a.action != ApplyAction::Unchanged && allocating(&a.object))
            || self.outcome.deleted.iter().any(allocating)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;
    use std::fs;
    use std::time::Duration;

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
        assert!(refreshed.outcome.services.is_empty());
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
        // Bytes that are not even text (found by tests/vm/faults.sh): the
        // same refusal and advice, not a bare read error.
        fs::write(&state, b"{\"services\": \xff\xfe}").unwrap();
        let err = Cluster::open(config(), Some(state.clone()), vec![])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("not a valid svcnet state file (not UTF-8 text: an invalid byte at offset 13)")
                && err.contains("move it away"),
            "{err}"
        );
    }

    #[test]
    fn a_poll_reads_the_files_only_when_their_stamps_changed() {
        // A ConfigMap volume: visible links into `..data`, swapped by rename.
        let dir = tempfile::tempdir().unwrap();
        let version = |name: &str, text: &str| {
            fs::create_dir(dir.path().join(name)).unwrap();
            fs::write(dir.path().join(name).join("svc.yaml"), text).unwrap();
            std::os::unix::fs::symlink(name, dir.path().join("..data_tmp")).unwrap();
            fs::rename(dir.path().join("..data_tmp"), dir.path().join("..data")).unwrap();
        };
        version("..v1", &format!("{WEB}---\n{POD}"));
        std::os::unix::fs::symlink("..data/svc.yaml", dir.path().join("svc.yaml")).unwrap();
        let mut cluster = Cluster::open(config(), None, vec![dir.path().to_path_buf()]).unwrap();
        // Polls a minute on: the files' changes have settled (see Stamps).
        let later = || SystemTime::now() + Duration::from_secs(60);
        assert!(
            cluster.refresh_if_touched(later()).unwrap().is_some(),
            "the first poll reads"
        );
        assert!(
            cluster.refresh_if_touched(later()).unwrap().is_none(),
            "nothing touched"
        );
        assert!(cluster.refresh().unwrap().is_none(), "a full read finds the same text");

        // The same size, other text: only the inode behind the link differs.
        let renamed = format!("{WEB}---\n{POD}").replace("web-1", "web-9");
        assert_eq!(renamed.len(), format!("{WEB}---\n{POD}").len());
        version("..v2", &renamed);
        let refreshed = cluster.refresh_if_touched(later()).unwrap().expect("the swap is seen");
        assert_eq!(refreshed.outcome.deleted.len(), 1, "web-1 went");
        assert!(cluster.refresh_if_touched(later()).unwrap().is_none());

        // An edit in place changes the change time; a file going is seen too.
        let file = dir.path().join("..v2/svc.yaml");
        fs::write(&file, WEB).unwrap();
        assert!(
            cluster.refresh_if_touched(later()).unwrap().is_some(),
            "an edit in place is seen"
        );
        fs::remove_file(dir.path().join("svc.yaml")).unwrap();
        let refreshed = cluster.refresh_if_touched(later()).unwrap().expect("the file went");
        assert_eq!(refreshed.outcome.deleted.len(), 1, "web went with its file");
    }

    #[test]
    fn refresh_acts_on_changes_only_and_keeps_the_last_good_state() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("svc.yaml");
        fs::write(&file, format!("{WEB}---\n{POD}")).unwrap();
        let mut cluster = Cluster::open(config(), None, vec![dir.path().to_path_buf()]).unwrap();
        let first = cluster.refresh().unwrap().unwrap();
        assert_eq!(
            first.outcome.services,
            BTreeSet::from([("default".to_string(), "web".to_string())])
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
            (refreshed.outcome.applied.len(), refreshed.unchanged),
            (0, 1),
            "web is not applied again"
        );
        assert_eq!(
            refreshed.outcome.services,
            BTreeSet::from([("default".to_string(), "web".to_string())])
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
