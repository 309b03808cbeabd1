//! `run`'s main loop, one step at a time: pick up manifest changes (at most
//! once per `--min-sync-period`), renew the apiserver leases, feed what
//! changed to the [`SyncLoop`], save the state file after each accepted
//! change that may have moved allocations (a Service or ServiceCIDR). A
//! bad manifest is logged (file, document, field) and the last good state
//! stays programmed and saved. Time is passed in, so tests drive
//! it; `main.rs` drives it with the real clock.

use crate::cluster::{Cluster, ClusterError, Refreshed};
use crate::dataplane::Dataplane;
use crate::metrics::Metrics;
use crate::node::NodeFlags;
use crate::sync::{SyncLoop, SyncReport, SyncSettings};
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;
use svcnet_core::controlplane::{ApplyAction, ControlPlane, ObjectKey};
use svcnet_core::proxy::{NodeInfo, ProxyConfig};
use svcnet_core::time::Time;

/// Leases live 15 s; renew them at least this often.
const MAX_POLL: Duration = Duration::from_secs(5);

/// How the agent runs.
#[derive(Debug, Clone)]
pub struct AgentSettings {
    /// `--node-name` and `--node-ip`.
    pub node: NodeFlags,
    /// The host's addresses (used when neither flags nor a Node object give any).
    pub host_ips: Vec<IpAddr>,
    /// Scheduler, NodePort range, drain timeout.
    pub proxy: ProxyConfig,
    /// Sync periods.
    pub sync: SyncSettings,
}

/// The running agent.
pub struct Agent<D> {
    cluster: Cluster,
    sync: SyncLoop<D>,
    settings: AgentSettings,
    metrics: Arc<Metrics>,
    next_poll: Time,
    /// The last manifest error logged, so a lasting one is logged once.
    last_error: Option<String>,
}

impl<D: Dataplane> Agent<D> {
    /// Starts at `now`: the manifests must be readable and accepted (else
    /// the error is returned, nothing is programmed), the state file is
    /// saved and the desired table built. Nothing touches the kernel yet.
    pub fn start(
        mut cluster: Cluster,
        dataplane: D,
        settings: AgentSettings,
        metrics: Arc<Metrics>,
        now: Time,
    ) -> Result<Agent<D>, ClusterError> {
        cluster.heartbeat(now);
        if let Some(refreshed) = cluster.refresh()? {
            log_outcome(&refreshed);
        }
        if let Err(e) = cluster.save() {
            tracing::error!(error = %e, "cannot save the state");
        }
        let node = resolve_node(&settings, cluster.control_plane(), None);
        let sync = SyncLoop::new(dataplane, settings.proxy.clone(), node, settings.sync, metrics.clone());
        let next_poll = now.plus(poll_period(&settings.sync));
        let mut agent = Agent {
            cluster,
            sync,
            settings,
            metrics,
            next_poll,
            last_error: None,
        };
        agent.rebuild();
        Ok(agent)
    }

    /// The control plane.
    pub fn control_plane(&self) -> &ControlPlane {
        self.cluster.control_plane()
    }

    /// The sync loop.
    pub fn sync_loop(&self) -> &SyncLoop<D> {
        &self.sync
    }

    /// The sync loop, to change.
    pub fn sync_loop_mut(&mut self) -> &mut SyncLoop<D> {
        &mut self.sync
    }

    /// One full sync now, whatever is due (`run --once`).
    pub async fn sync_now(&mut self, now: Time) -> SyncReport {
        self.sync.sync(true, now).await
    }

    /// One step at `now`: manifests (when their poll is due), leases, and a
    /// sync if one is due.
    pub async fn step(&mut self, now: Time) -> Option<SyncReport> {
        if now >= self.next_poll {
            self.next_poll = now.plus(self.poll_period());
            self.poll_manifests();
        }
        if self.cluster.heartbeat(now) {
            self.update_services([("default".to_string(), "kubernetes".to_string())]);
        }
        self.sync.tick(now).await
    }

    /// When the next step has something to do.
    pub fn next_wake(&self, now: Time) -> Time {
        self.next_poll.min(self.sync.next_due(now)).max(now)
    }

    /// Saves the state file (logged on failure).
    pub fn save(&self) {
        if let Err(e) = self.cluster.save() {
            tracing::error!(error = %e, "cannot save the state");
        }
    }

    fn poll_period(&self) -> Duration {
        poll_period(&self.settings.sync)
    }

    fn poll_manifests(&mut self) {
        match self.cluster.refresh() {
            Ok(None) => {}
            Ok(Some(refreshed)) => {
                self.last_error = None;
                log_outcome(&refreshed);
                if refreshed.allocations_changed() {
                    self.save();
                }
                let node = resolve_node(&self.settings, self.cluster.control_plane(), Some(self.sync.node()));
                if &node != self.sync.node() {
                    tracing::info!(node = %node.name, ips = ?node.ips, "node addresses changed");
                    self.rebuild();
                } else {
                    self.update_services(refreshed.outcome.services);
                }
            }
            Err(e) => {
                let message = e.to_string();
                if self.last_error.as_ref() != Some(&message) {
                    self.metrics.record_manifest_error();
                    tracing::error!(error = %message, "manifests not applied; the previous state stays programmed");
                    self.last_error = Some(message);
                }
            }
        }
    }

    fn rebuild(&mut self) {
        let cp = self.cluster.control_plane();
        let node = resolve_node(&self.settings, cp, Some(self.sync.node()));
        self.sync.rebuild(cp.services(), cp.endpoint_slices(), node);
        for warning in self.sync.warnings() {
            tracing::warn!("{warning}");
        }
    }

    fn update_services(&mut self, keys: impl IntoIterator<Item = ObjectKey>) {
        let cp = self.cluster.control_plane();
        for (ns, name) in keys {
            let slices = cp.endpoint_slices_for(&ns, &name);
            self.sync.update_service(
                &format!("{ns}/{name}"),
                cp.service(&ns, &name).map(|svc| (svc, slices.as_slice())),
            );
        }
    }
}

fn poll_period(settings: &SyncSettings) -> Duration {
    settings.min_sync_period.min(MAX_POLL)
}

/// The node from the flags and the control plane; on a bad Node object
/// the previous node stays (logged).
fn resolve_node(settings: &AgentSettings, cp: &ControlPlane, previous: Option<&NodeInfo>) -> NodeInfo {
    match settings.node.resolve(cp, || settings.host_ips.clone()) {
        Ok(node) => node,
        Err(e) => {
            tracing::error!(error = %e, "cannot read this node's addresses; keeping the previous ones");
            previous.cloned().unwrap_or_else(|| NodeInfo {
                name: settings.node.name.clone(),
                ips: settings.host_ips.clone(),
                zone: None,
            })
        }
    }
}

/// Logs what applying the manifests did, as counts.
pub fn log_outcome(refreshed: &Refreshed) {
    let outcome = &refreshed.outcome;
    let count = |action| outcome.applied.iter().filter(|a| a.action == action).count();
    tracing::info!(
        created = count(ApplyAction::Created),
        configured = count(ApplyAction::Configured),
        unchanged = count(ApplyAction::Unchanged) + refreshed.unchanged,
        deleted = outcome.deleted.len(),
        services_changed = outcome.services.len(),
        "manifests applied"
    );
}

#[cfg(test)]
mod tests;
