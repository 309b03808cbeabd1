//! `run`'s main loop in API mode, one step at a time: watch updates go
//! into the core's [`WatchCache`], which decides what they mean; what
//! changed is fed to the [`SyncLoop`]; syncs run when due; the plan state
//! (drain start times, claimed virtual servers) is saved beside
//! `--state-file` after each sync that changed it. Nothing is synced before
//! the first complete lists, so a restart removes nothing it should keep,
//! but `default/kubernetes`, read on its own at start, is programmed alone
//! as soon as it arrives (and first, on its own, after the lists). While the
//! apiserver cannot be reached, the last state stays programmed and the
//! periodic full syncs keep repairing the kernel from it. Time is passed
//! in, so tests drive it; `main.rs` drives it with the real clock and the
//! watch streams.

use crate::dataplane::Dataplane;
use crate::kubeapi::watch::WatchUpdate;
use crate::metrics::Metrics;
use crate::state::writer::PlanStateWriter;
use crate::sync::{SyncLoop, SyncReport, SyncSettings};
use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;
use svcnet_core::proxy::watch_cache::{WatchCache, WatchedKind};
use svcnet_core::proxy::{NodeInfo, PlanState, ProxyConfig};
use svcnet_core::time::Time;

/// How the agent runs in API mode.
#[derive(Debug, Clone)]
pub struct ApiSettings {
    /// This node's name (`--node-name`, else the hostname).
    pub node_name: String,
    /// `--node-ip`: the node's addresses, whatever its Node object says.
    pub node_ips: Vec<IpAddr>,
    /// The host's addresses, for a Node object without any.
    pub host_ips: Vec<IpAddr>,
    /// Scheduler, drain timeout.
    pub proxy: ProxyConfig,
    /// Sync periods.
    pub sync: SyncSettings,
    /// Where the plan state is kept, if anywhere.
    pub plan_state_file: Option<PathBuf>,
    /// `--conntrack-cleanup`: delete stale UDP conntrack entries after
    /// syncs that change UDP Services.
    pub conntrack_cleanup: bool,
    /// Table `inet svcnet` is kept: the sync loop keeps its ruleset up to
    /// date with the desired table ([`SyncLoop::ruleset`]).
    pub nftables: bool,
}

/// The running agent in API mode.
pub struct ApiAgent<D> {
    cache: WatchCache,
    sync: SyncLoop<D>,
    metrics: Arc<Metrics>,
    plan_state_writer: PlanStateWriter,
    /// The (re)lists under way: when each began and the objects so far,
    /// for the `list complete` log line.
    lists: BTreeMap<WatchedKind, (Instant, usize)>,
}

impl<D: Dataplane> ApiAgent<D> {
    /// An agent that has seen nothing yet; the sync loop starts from
    /// `plan_state` (saved by an earlier run, or empty).
    pub fn new(settings: ApiSettings, plan_state: PlanState, dataplane: D, metrics: Arc<Metrics>) -> ApiAgent<D> {
        let mut cache = WatchCache::new(&settings.node_name);
        cache.set_node_ips(settings.node_ips, settings.host_ips);
        let node = NodeInfo {
            name: settings.node_name,
            ips: Vec::new(),
            zone: None,
        };
        let mut sync = SyncLoop::new(dataplane, settings.proxy, node, settings.sync, metrics.clone());
        sync.restore_plan_state(plan_state);
        sync.set_conntrack_cleanup(settings.conntrack_cleanup);
        if settings.nftables {
            sync.keep_ruleset();
        }
        ApiAgent {
            cache,
            sync,
            metrics,
            plan_state_writer: PlanStateWriter::new(settings.plan_state_file),
            lists: BTreeMap::new(),
        }
    }

    /// The sync loop.
    pub fn sync_loop(&self) -> &SyncLoop<D> {
        &self.sync
    }

    /// The sync loop, to change (tests reach the dataplane through it).
    pub fn sync_loop_mut(&mut self) -> &mut SyncLoop<D> {
        &mut self.sync
    }

    /// The watch cache: the Services, EndpointSlices and Node as the
    /// proxy sees them.
    pub fn cache(&self) -> &WatchCache {
        &self.cache
    }

    /// Whether the first lists of Services, EndpointSlices and the Node
    /// have all arrived.
    pub fn synced(&self) -> bool {
        self.cache.synced()
    }

    /// One watch update.
    pub fn handle(&mut self, update: WatchUpdate) {
        match update {
            WatchUpdate::Begin(kind) => {
                self.lists.insert(kind, (Instant::now(), 0));
                self.cache.begin_list(kind);
            }
            WatchUpdate::Listed(object) => {
                if let Some((_, count)) = self.lists.get_mut(&object.kind()) {
                    *count += 1;
                }
                self.cache.listed(object);
            }
            WatchUpdate::End(kind) => {
                self.cache.end_list(kind);
                let (began, objects) = self.lists.remove(&kind).unwrap_or((Instant::now(), 0));
                tracing::info!(kind = ?kind, objects, duration_ms = began.elapsed().as_millis() as u64, "list complete");
            }
            WatchUpdate::Applied(object) => {
                self.cache.applied(object);
            }
            WatchUpdate::Deleted(object) => self.cache.deleted(&object),
            WatchUpdate::KubernetesRead(service, slices) => {
                tracing::info!(
                    slices = slices.len(),
                    "default/kubernetes read on its own, ahead of the lists"
                );
                self.cache.kubernetes_read(*service, slices);
            }
            WatchUpdate::Unreadable(error) => tracing::warn!(%error, "left out: the core cannot read it"),
            WatchUpdate::Error(error) => {
                self.metrics.record_api_error();
                tracing::warn!(%error, "watch failed; reconnecting with backoff, the programmed state stays");
            }
        }
    }

    /// One step at `now`: what changed goes to the sync loop, and the syncs
    /// that are due run. Before the first complete lists, only
    /// `default/kubernetes` read on its own is synced.
    pub async fn step(&mut self, now: Time) -> Vec<SyncReport> {
        if !self.cache.synced() {
            // Only `default/kubernetes`, when read on its own, is synced
            // before the first lists are in.
            let early = self.sync.feed(&mut self.cache, now).await;
            for report in &early {
                self.plan_state_writer.changed(report.plan_state_changed);
            }
            self.save_plan_state();
            return early;
        }
        self.metrics.kube_proxy.record_changes(self.cache.take_change_stats());
        self.metrics.kube_proxy.set_node_eligible(self.cache.node_eligible());
        let mut reports = self.sync.feed(&mut self.cache, now).await;
        if let Some(report) = self.sync.tick(now).await {
            reports.push(report);
        }
        for report in &reports {
            self.plan_state_writer.changed(report.plan_state_changed);
        }
        self.save_plan_state();
        reports
    }

    /// When the next step has something to do without a watch update:
    /// `None` before the first lists (only updates can move things then).
    pub fn next_wake(&self, now: Time) -> Option<Time> {
        self.cache.synced().then(|| self.sync.next_due(now).max(now))
    }

    /// Writes the plan state if it has changes not saved yet (see
    /// [`PlanStateWriter`]: a failed write is tried again at the next step).
    pub fn save_plan_state(&mut self) {
        self.plan_state_writer.save(self.sync.plan_state(), &self.metrics);
        self.metrics.set_state_unsaved(self.plan_state_writer.unsaved());
    }
}

#[cfg(test)]
mod tests;
