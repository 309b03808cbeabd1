//! `run`'s main loop, one step at a time: pick up manifest changes (at most
//! once per `--min-sync-period`; a poll stats the files and reads them only
//! when their stamps changed, and reads them all every `--sync-period`),
//! renew the apiserver leases, feed what changed to the [`SyncLoop`], save
//! the state file at start (in the background, taken by the first sync)
//! and after each accepted change that may have moved allocations (a
//! Service or ServiceCIDR), and save the plan state (drain start times,
//! claimed virtual servers) beside it after each sync that changed it, so
//! a restarted agent starts from
//! the plan state the last one saved ([`load_plan_state`]). A write that
//! fails (disk full) is counted and tried again at every poll until it
//! succeeds, while the agent keeps serving from memory. A bad manifest
//! is logged (file, document, field) and the last good state stays
//! programmed and saved. Time is passed in, so tests drive it; `main.rs`
//! drives it with the real clock.

use crate::cluster::{Cluster, ClusterError, Refreshed};
use crate::dataplane::Dataplane;
use crate::metrics::Metrics;
use crate::node::NodeFlags;
use crate::state::writer::PlanStateWriter;
use crate::state::{self, StateError};
use crate::sync::{SyncLoop, SyncReport, SyncSettings};
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;
use svcnet_core::controlplane::{ApplyAction, ControlPlane, ObjectKey};
use svcnet_core::proxy::{NodeInfo, PlanState, ProxyConfig};
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
    /// `--conntrack-cleanup`: delete stale UDP conntrack entries after
    /// syncs that change UDP Services.
    pub conntrack_cleanup: bool,
    /// Table `inet svcnet` is kept: the sync loop keeps its ruleset up to
    /// date with the desired table ([`SyncLoop::ruleset`]).
    pub nftables: bool,
}

/// The running agent.
pub struct Agent<D> {
    cluster: Cluster,
    sync: SyncLoop<D>,
    settings: AgentSettings,
    metrics: Arc<Metrics>,
    next_poll: Time,
    /// When a poll next reads every file whatever their stamps say (every
    /// sync period; other polls only stat them).
    next_full_read: Time,
    /// The last manifest error logged, so a lasting one is logged once.
    last_error: Option<String>,
    /// The plan state's pending writes, beside the state file
    /// ([`state::plan_state_path`]).
    plan_state_writer: PlanStateWriter,
    /// The last write of the state file failed: written again at each poll.
    state_unsaved: bool,
}

/// The plan state an earlier run saved beside `cluster`'s state file
/// ([`state::plan_state_path`]), for [`Agent::start`]; empty without a
/// state file or when none was saved yet.
///
/// A plan-state file that cannot be read or does not parse is logged and
/// ignored, whereas a bad state file stops the agent. What is lost is not
/// dangerous: real servers that were draining (already at weight 0, given
/// no new connections) start their `--drain-timeout` again, and a claimed
/// virtual server on a node address that stops being wanted may be left
/// in the kernel like one the agent does not own. Losing allocations would
/// move ClusterIPs and NodePorts; losing this moves nothing. Refusing to
/// start would be worse: the node's IPVS table would stop following
/// Services and endpoints until someone moved the file away. The file is
/// replaced at the next save.
pub fn load_plan_state(cluster: &Cluster) -> PlanState {
    let Some(path) = cluster.state_file().map(state::plan_state_path) else {
        return PlanState::default();
    };
    match state::load_plan_state(&path) {
        Ok(saved) => saved.unwrap_or_default(),
        Err(e) => {
            tracing::warn!(
                error = %e,
                "starting without the saved plan state: draining real servers start their drain timeout again"
            );
            PlanState::default()
        }
    }
}

impl<D: Dataplane> Agent<D> {
    /// Starts at `now`: the manifests must be readable and accepted (else
    /// the error is returned, nothing is programmed), the state file's
    /// write begins (on a thread of its own; the first sync ends by waiting
    /// for it) and the desired table is built. The sync loop starts from
    /// `plan_state`, the one an earlier run saved ([`load_plan_state`]) or
    /// an empty one. Nothing touches the kernel yet.
    pub fn start(
        mut cluster: Cluster,
        plan_state: PlanState,
        dataplane: D,
        settings: AgentSettings,
        metrics: Arc<Metrics>,
        now: Time,
    ) -> Result<Agent<D>, ClusterError> {
        cluster.heartbeat(now);
        let refreshed = cluster.refresh()?;
        let changed = refreshed.is_some();
        if let Some(refreshed) = refreshed {
            log_outcome(&refreshed);
        }
        let node = resolve_node(&settings, cluster.control_plane(), None);
        let mut sync = SyncLoop::new(dataplane, settings.proxy.clone(), node, settings.sync, metrics.clone());
        sync.restore_plan_state(plan_state);
        sync.set_conntrack_cleanup(settings.conntrack_cleanup);
        if settings.nftables {
            sync.keep_ruleset();
        }
        let next_poll = now.plus(poll_period(&settings.sync));
        let next_full_read = now.plus(settings.sync.sync_period);
        let plan_state_writer = PlanStateWriter::new(cluster.state_file().map(state::plan_state_path));
        let mut agent = Agent {
            cluster,
            sync,
            settings,
            metrics,
            next_poll,
            next_full_read,
            last_error: None,
            plan_state_writer,
            state_unsaved: false,
        };
        // Writing 5,000 Services' allocations took 67 to 180 ms natively,
        // against 263 to 337 ms for reading and applying their manifests:
        // the write goes on beside the table's build and the first sync,
        // which ends by waiting for it. `run` begins it as soon as the
        // manifests are applied; it is begun again here if they changed
        // since. A crash before it lands is no worse than one before a
        // write at this point: the next start reads the same state file
        // and manifests, and allocates the same way.
        if changed || !agent.cluster.save_pending() {
            if let Some(earlier) = agent.cluster.begin_save() {
                agent.saved(earlier);
            }
        }
        agent.save_plan_state();
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
        let report = self.sync.sync(true, now).await;
        self.synced(&report);
        report
    }

    /// One step at `now`: manifests (when their poll is due), leases, and a
    /// sync if one is due.
    pub async fn step(&mut self, now: Time) -> Option<SyncReport> {
        if now >= self.next_poll {
            self.next_poll = now.plus(self.poll_period());
            let read_all = now >= self.next_full_read;
            if read_all {
                self.next_full_read = now.plus(self.settings.sync.sync_period);
            }
            if self.state_unsaved {
                self.save();
            } else {
                self.save_plan_state();
            }
            self.poll_manifests(read_all);
        }
        if self.cluster.heartbeat(now) {
            self.update_services([("default".to_string(), "kubernetes".to_string())]);
        }
        let report = self.sync.tick(now).await?;
        self.synced(&report);
        Some(report)
    }

    /// When the next step has something to do.
    pub fn next_wake(&self, now: Time) -> Time {
        self.next_poll.min(self.sync.next_due(now)).max(now)
    }

    /// Saves the state file, and the plan state if a change of it is not
    /// saved yet. A failure is counted, logged once (not at every retry)
    /// and tried again at the next poll.
    pub fn save(&mut self) {
        self.finish_save();
        let result = self.cluster.save();
        self.saved(result);
        self.save_plan_state();
    }

    /// Waits for the write of the state file begun at start, if it is
    /// still going on, and takes its result.
    fn finish_save(&mut self) {
        if let Some(result) = self.cluster.finish_save() {
            self.saved(result);
        }
    }

    /// Takes the result of a write of the state file: a failure is
    /// counted and logged once (not at every retry), and the next poll
    /// writes it again.
    fn saved(&mut self, result: Result<(), StateError>) {
        match result {
            Ok(()) if self.state_unsaved => {
                tracing::info!("state file written again");
                self.state_unsaved = false;
            }
            Ok(()) => {}
            Err(e) => {
                self.metrics.record_state_write_error();
                if !self.state_unsaved {
                    tracing::error!(error = %e, "cannot save the state; serving from memory and trying again");
                }
                self.state_unsaved = true;
            }
        }
    }

    /// After a sync: the state file's write begun at start is finished,
    /// and the plan state is saved if it changed (or an earlier save of it
    /// failed), and only then.
    fn synced(&mut self, report: &SyncReport) {
        self.finish_save();
        self.plan_state_writer.changed(report.plan_state_changed);
        self.save_plan_state();
    }

    /// Writes the plan state beside the state file if it has changes not
    /// saved yet (see [`PlanStateWriter`]).
    fn save_plan_state(&mut self) {
        self.plan_state_writer.save(self.sync.plan_state(), &self.metrics);
        self.metrics
            .set_state_unsaved(self.state_unsaved || self.plan_state_writer.unsaved());
    }

    fn poll_period(&self) -> Duration {
        poll_period(&self.settings.sync)
    }

    /// Acts on manifest changes: files whose stamps changed are read, or
    /// every file when `read_all` (see [`Cluster::refresh_if_touched`]).
    fn poll_manifests(&mut self, read_all: bool) {
        let refreshed = if read_all {
            self.cluster.refresh()
        } else {
            self.cluster.refresh_if_touched(std::time::SystemTime::now())
        };
        match refreshed {
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
