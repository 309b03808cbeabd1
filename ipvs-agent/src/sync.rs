//! The sync loop's driver: runs the core's [`SyncMachine`] (which decides
//! when to read the kernel, what to plan and when to retry) against a
//! [`Dataplane`], so it runs the same against the kernel and against an
//! in-memory table in tests. It carries out the machine's actions, feeds
//! back the answers, records metrics and logs; all decisions are the
//! core's (see `svcnet_core::proxy::sync_loop` for what they are).
//!
//! After a sync in which the kernel was read and every operation
//! succeeded (an additions-only one excepted), if the UDP frontends or their endpoints changed since the
//! last cleanup (the first sync counts as a change), it cleans the stale
//! UDP conntrack entries (`svcnet_core::proxy::conntrack`, kube-proxy
//! 1.32+'s cleanup) through [`Dataplane::clean_udp_conntrack`]. A failed
//! cleanup is logged and counted, never undoes the sync, and is tried
//! again after the next successful one. When it is due is the core's
//! decision too (`svcnet_core::proxy::CleanupSchedule`).

use crate::dataplane::{ConntrackReport, Dataplane};
use crate::kube_proxy_metrics::wall_now;
use crate::metrics::{Metrics, TableSize};
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};
use svcnet_core::api::{EndpointSlice, Service};
use svcnet_core::family::IpFamily;
use svcnet_core::proxy::nftables::Table;
use svcnet_core::proxy::sync_loop::{SyncAction, SyncInput, SyncMachine};
use svcnet_core::proxy::watch_cache::WatchCache;
use svcnet_core::proxy::{CleanupSchedule, NodeInfo, PlanState, ProxyConfig, ProxyWarning};
use svcnet_core::time::Time;

pub use svcnet_core::proxy::sync_loop::{SyncPart, SyncSettings};

/// What one sync did, as the agent reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyncReport {
    /// A full sync (whole table compared) or a partial one.
    pub full: bool,
    /// Only additions, made while the first lists were still arriving: the
    /// table is not the whole one yet.
    pub additions_only: bool,
    /// Operations planned.
    pub operations: usize,
    /// Operations the kernel refused.
    pub failed: usize,
    /// The kernel could not be read (nothing was planned).
    pub read_error: Option<String>,
    /// How long it took.
    pub duration: Duration,
    /// Where that time went.
    pub phases: SyncPhases,
    /// The plan state ([`SyncLoop::plan_state`]: drain start times,
    /// claimed virtual servers) changed in this sync, so a saved copy is
    /// out of date.
    pub plan_state_changed: bool,
    /// The UDP conntrack cleanup that followed the sync, if one ran.
    pub conntrack: Option<ConntrackReport>,
    /// When the sync was a part of a full sync done in parts: which.
    pub part: Option<SyncPart>,
}

/// Where one sync's time went, as its log line reports it (`build_ms`,
/// `read_ms`, `plan_ms`, `apply_ms`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SyncPhases {
    /// Handing the changes to the machine (a rebuild of the desired table
    /// included).
    pub build: Duration,
    /// Reading the kernel's table.
    pub read: Duration,
    /// The machine's planning.
    pub plan: Duration,
    /// Carrying out the operations.
    pub apply: Duration,
}

impl SyncReport {
    /// True when the kernel was read and every operation succeeded.
    pub fn succeeded(&self) -> bool {
        self.failed == 0 && self.read_error.is_none()
    }
}

/// The machine and the dataplane it drives.
pub struct SyncLoop<D> {
    dataplane: D,
    machine: SyncMachine,
    metrics: Arc<Metrics>,
    /// Whether to clean stale UDP conntrack entries after syncs
    /// (`--conntrack-cleanup`, on by default).
    conntrack_cleanup: bool,
    /// When the cleanup is due (the core decides).
    conntrack_schedule: CleanupSchedule,
    /// The last cleanup error logged, so a lasting one is logged once.
    conntrack_last_error: Option<String>,
}

impl<D: Dataplane> SyncLoop<D> {
    /// A loop for `node` that will start with a full sync.
    pub fn new(
        dataplane: D,
        proxy: ProxyConfig,
        node: NodeInfo,
        settings: SyncSettings,
        metrics: Arc<Metrics>,
    ) -> SyncLoop<D> {
        let families = node.ips.iter().map(|ip| IpFamily::of(*ip)).collect::<BTreeSet<_>>();
        metrics.kube_proxy.start(families.into_iter().collect(), wall_now());
        SyncLoop {
            dataplane,
            machine: SyncMachine::new(proxy, node, settings),
            metrics,
            conntrack_cleanup: true,
            conntrack_schedule: CleanupSchedule::new(),
            conntrack_last_error: None,
        }
    }

    /// Turns the UDP conntrack cleanup after syncs on or off (on by
    /// default).
    pub fn set_conntrack_cleanup(&mut self, enabled: bool) {
        self.conntrack_cleanup = enabled;
    }

    /// The desired table.
    pub fn desired(&self) -> &svcnet_core::proxy::IpvsTable {
        self.machine.desired()
    }

    /// What the desired table had to skip, and why.
    pub fn warnings(&self) -> Vec<ProxyWarning> {
        self.machine.warnings()
    }

    /// The plan state (what is draining, what is claimed).
    pub fn plan_state(&self) -> &PlanState {
        self.machine.plan_state()
    }

    /// Starts from a plan state saved by an earlier run (before the first
    /// sync); see [`SyncMachine::restore_plan_state`].
    pub fn restore_plan_state(&mut self, state: PlanState) {
        self.machine.restore_plan_state(state);
    }

    /// The node the loop programs for.
    pub fn node(&self) -> &NodeInfo {
        self.machine.node()
    }

    /// Keeps the nftables ruleset of the desired state too, from the next
    /// rebuild on; see [`SyncMachine::keep_ruleset`].
    pub fn keep_ruleset(&mut self) {
        self.machine.keep_ruleset();
    }

    /// The nftables ruleset of the desired state, when it is kept.
    pub fn ruleset(&self) -> Option<&Table> {
        self.machine.ruleset()
    }

    /// The dataplane.
    pub fn dataplane(&self) -> &D {
        &self.dataplane
    }

    /// The dataplane, to change.
    pub fn dataplane_mut(&mut self) -> &mut D {
        &mut self.dataplane
    }

    /// Rebuilds the whole desired table (at start, or when the node
    /// changed); the next sync is full.
    pub fn rebuild<'a>(
        &mut self,
        services: impl IntoIterator<Item = &'a Service>,
        slices: impl IntoIterator<Item = &'a EndpointSlice>,
        node: NodeInfo,
    ) {
        self.machine.rebuild(services, slices, node);
        self.metrics.kube_proxy.queued(wall_now());
    }

    /// Recomputes one Service (`namespace/name`) with its slices (sorted by
    /// name), or removes it when `service` is `None`; the change is synced
    /// at the next partial sync.
    pub fn update_service(&mut self, key: &str, service: Option<(&Service, &[&EndpointSlice])>) {
        self.machine.update_service(key, service);
        self.metrics.kube_proxy.queued(wall_now());
    }

    /// When the next sync is due, given the time now.
    pub fn next_due(&self, now: Time) -> Time {
        self.machine.next_due(now)
    }

    /// Runs a sync if one is due at `now`.
    pub async fn tick(&mut self, now: Time) -> Option<SyncReport> {
        let started = Instant::now();
        if !self.machine.handle_timeout(now) {
            return None;
        }
        let phases = SyncPhases {
            plan: started.elapsed(),
            ..SyncPhases::default()
        };
        Some(self.drive(now, started, phases).await)
    }

    /// Runs one sync now: `full` compares the whole table (reading the
    /// kernel first); otherwise only what changed and what drains.
    pub async fn sync(&mut self, full: bool, now: Time) -> SyncReport {
        let started = Instant::now();
        self.machine.start_sync(full, now);
        let phases = SyncPhases {
            plan: started.elapsed(),
            ..SyncPhases::default()
        };
        self.drive(now, started, phases).await
    }

    /// Hands what changed in the watch cache to the machine (see
    /// [`WatchCache::feed`]), again after each sync that starts
    /// (`default/kubernetes` first; the additions while the first lists
    /// arrive, then the full sync), running each.
    pub async fn feed(&mut self, cache: &mut WatchCache, now: Time) -> Vec<SyncReport> {
        let mut reports = Vec::new();
        loop {
            let started = Instant::now();
            cache.feed(&mut self.machine, now);
            if !self.machine.is_syncing() {
                return reports;
            }
            let phases = SyncPhases {
                build: started.elapsed(),
                ..SyncPhases::default()
            };
            reports.push(self.drive(now, started, phases).await);
        }
    }

    /// Carries out the machine's actions until its sync reports.
    async fn drive(&mut self, now: Time, started: Instant, mut phases: SyncPhases) -> SyncReport {
        loop {
            if let Some(report) = self.machine.poll_report() {
                // An additions-only sync's table is not the whole one yet:
                // no conntrack entry is judged against it.
                let clean = report.succeeded() && !report.additions_only;
                let mut report = self.record(report, started.elapsed(), phases);
                if clean {
                    report.conntrack = self.clean_conntrack().await;
                }
                return report;
            }
            let Some(action) = self.machine.poll_action() else {
                // Unreachable while a sync is under way: the machine always
                // has an action out or a report ready. Report rather than spin.
                return self.record_stalled(started.elapsed(), phases);
            };
            let action_started = Instant::now();
            let applying = matches!(action, SyncAction::Apply(_));
            let input = match action {
                SyncAction::ObserveAll => match self.dataplane.observe().await {
                    Ok(table) => SyncInput::Observed(table),
                    Err(e) => SyncInput::ReadFailed(e.to_string()),
                },
                SyncAction::ObserveVirtualServers(keys) => match self.dataplane.observe_virtual_servers(&keys).await {
                    Ok(found) => {
                        for key in keys.iter().filter(|k| !found.contains_key(k)) {
                            tracing::warn!(virtual_server = %key, "virtual server gone from the kernel; a full sync follows");
                        }
                        SyncInput::ObservedVirtualServers(found)
                    }
                    Err(e) => SyncInput::ReadFailed(e.to_string()),
                },
                SyncAction::ObserveOutline => match self.dataplane.observe_outline().await {
                    Ok(outline) => SyncInput::ObservedOutline(outline),
                    Err(e) => SyncInput::ReadFailed(e.to_string()),
                },
                SyncAction::Apply(operations) => {
                    let report = self.dataplane.apply(&operations).await;
                    for (op, err) in report.failed.iter().take(10) {
                        tracing::warn!(operation = %op, error = %err, "kernel refused an operation");
                    }
                    SyncInput::Applied(report.failed.into_iter().map(|(op, e)| (op, e.to_string())).collect())
                }
            };
            let answered = Instant::now();
            if applying {
                phases.apply += answered - action_started;
            } else {
                phases.read += answered - action_started;
            }
            self.machine.handle(input, now);
            phases.plan += answered.elapsed();
        }
    }

    /// Metrics and a log line for a finished sync.
    fn record(
        &mut self,
        report: svcnet_core::proxy::sync_loop::SyncReport,
        duration: Duration,
        phases: SyncPhases,
    ) -> SyncReport {
        self.metrics
            .kube_proxy
            .synced(report.full, duration, report.succeeded(), wall_now());
        if let Some(part) = report.part.filter(|p| p.is_last() && report.succeeded()) {
            // The full sync done in parts is done: its time, first part to
            // last, is a full sync's.
            let whole = report.finished.since(part.full_sync_started);
            self.metrics.kube_proxy.full_sync_in_parts(whole);
        }
        let part = report.part.map(|p| format!("{}/{}", p.number, p.of));
        if let Some(error) = &report.read_error {
            self.metrics.record_netlink_error();
            let retry = report.retry_at.map(|t| t.since(report.started)).unwrap_or_default();
            tracing::error!(error = %error, retry_in_ms = retry.as_millis() as u64, "sync failed: cannot read the kernel's IPVS table");
        } else {
            let failed: Vec<&svcnet_core::proxy::Operation> = report.failed.iter().map(|(op, _)| op).collect();
            let applied: Vec<&svcnet_core::proxy::Operation> = report.applied.iter().collect();
            self.metrics.record_sync(
                report.full,
                duration,
                &applied,
                &failed,
                report.succeeded().then(SystemTime::now),
            );
            let table = self.machine.desired();
            self.metrics.record_table(TableSize {
                virtual_servers: table.virtual_servers.len(),
                real_servers: table.real_server_count(),
                draining: self.machine.plan_state().draining.len(),
            });
            tracing::info!(
                full = report.full,
                operations = report.operations(),
                failed = report.failed.len(),
                duration_ms = duration.as_millis() as u64,
                draining = self.machine.plan_state().draining.len(),
                build_ms = phases.build.as_millis() as u64,
                read_ms = phases.read.as_millis() as u64,
                plan_ms = phases.plan.as_millis() as u64,
                apply_ms = phases.apply.as_millis() as u64,
                additions_only = report.additions_only,
                full_sync_part = part.as_deref(),
                "sync complete"
            );
        }
        SyncReport {
            full: report.full,
            additions_only: report.additions_only,
            operations: report.operations(),
            failed: report.failed.len(),
            read_error: report.read_error,
            duration,
            phases,
            plan_state_changed: report.plan_state_changed,
            conntrack: None,
            part: report.part,
        }
    }

    /// After a successful sync: the UDP conntrack cleanup, when it is on
    /// and the UDP frontends changed since the last one that succeeded.
    async fn clean_conntrack(&mut self) -> Option<ConntrackReport> {
        if !self.conntrack_cleanup {
            return None;
        }
        let due = self.conntrack_schedule.after_sync(self.machine.desired())?;
        let changed = due.changed;
        let started = Instant::now();
        let report = self.dataplane.clean_udp_conntrack(&due.frontends).await;
        self.conntrack_schedule.finished(due, report.first_error.is_none());
        self.metrics.record_conntrack_deleted(report.deleted);
        self.metrics.record_conntrack_errors(report.errors);
        let duration_ms = started.elapsed().as_millis() as u64;
        match &report.first_error {
            None => {
                self.conntrack_last_error = None;
                if report.stale > 0 {
                    tracing::info!(
                        changed_frontends = changed,
                        scanned = report.scanned,
                        deleted = report.deleted,
                        already_gone = report.gone,
                        duration_ms,
                        "stale UDP conntrack entries deleted"
                    );
                } else {
                    tracing::debug!(
                        changed_frontends = changed,
                        scanned = report.scanned,
                        duration_ms,
                        "no stale UDP conntrack entry"
                    );
                }
            }
            Some(error) => {
                let message = error.clone();
                if self.conntrack_last_error.as_ref() != Some(&message) {
                    tracing::warn!(
                        error = %message,
                        errors = report.errors,
                        deleted = report.deleted,
                        "UDP conntrack cleanup incomplete; IPVS stays programmed, the cleanup is tried again after the next sync"
                    );
                } else {
                    tracing::debug!(error = %message, errors = report.errors, "UDP conntrack cleanup incomplete again");
                }
                self.conntrack_last_error = Some(message);
            }
        }
        Some(report)
    }

    /// A sync that asked for nothing and reported nothing (a broken
    /// invariant of the machine), reported as a failed read.
    fn record_stalled(&mut self, duration: Duration, phases: SyncPhases) -> SyncReport {
        tracing::error!("sync machine stalled: no action and no report");
        SyncReport {
            full: true,
            additions_only: false,
            operations: 0,
            failed: 0,
            read_error: Some("sync machine stalled".into()),
            duration,
            phases,
            plan_state_changed: false,
            conntrack: None,
            part: None,
        }
    }
}

#[cfg(test)]
mod tests;
