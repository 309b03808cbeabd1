//! The sync loop: keeps the kernel's IPVS table equal to the desired one,
//! generic over the [`Dataplane`] so it runs the same against the kernel
//! and against an in-memory table in tests.
//!
//! - The first sync reads the kernel and adopts what is there: a full
//!   [`plan()`] from the observed table, no flush; a table that already
//!   matches gets no operations.
//! - Desired-state changes (a Service or its EndpointSlices) update a
//!   [`DesiredIndex`] and are synced with [`plan_changes`], looking only at
//!   what changed, at most once per `min_sync_period`. Between dumps the
//!   loop keeps its own copy of the kernel's table, updated with
//!   [`apply_operation`] for each operation the kernel accepted.
//! - Every `sync_period` a full sync reads the whole kernel table again and
//!   repairs drift (a virtual server deleted by hand comes back).
//! - Removing a real server depends on its connections, so a partial sync
//!   whose plan deletes or drains real servers first re-reads just those
//!   virtual servers ([`Dataplane::observe_virtual_servers`]) for fresh
//!   connection counters, and plans again with them.
//! - While real servers drain, their virtual servers are re-read the same
//!   way every `drain_check_period`, and the plan deletes those whose
//!   connections reached 0 (or whose drain timed out). The [`PlanState`]
//!   carrying drain start times lives across syncs; a loop can start from
//!   one saved by an earlier run ([`SyncLoop::restore_plan_state`]), and
//!   each [`SyncReport`] says whether it changed, so the agent saves it only
//!   then. Saving is the agent's: the loop does no file I/O.
//! - A virtual server found gone from the kernel on such a re-read is
//!   treated as absent (the plan adds it back) and a full sync follows, to
//!   catch whatever else changed behind the agent's back.
//! - A failed read or operation schedules a full sync after an exponential
//!   backoff (1 s doubling to `backoff_cap`); kernel errors never stop the
//!   loop.
//! - Ownership is the core's: virtual servers the plan does not own are
//!   never touched.

use crate::dataplane::{Dataplane, DataplaneError};
use crate::metrics::{Metrics, TableSize};
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};
use svcnet_core::api::{EndpointSlice, Service};
use svcnet_core::proxy::{
    apply_operation, plan, plan_changes, Changes, DesiredIndex, IpvsTable, NodeInfo, Operation, Plan, PlanContext,
    PlanState, ProxyConfig, ProxyWarning, VirtualServerKey,
};
use svcnet_core::time::Time;

/// How often things happen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SyncSettings {
    /// At most one sync per this period (`--min-sync-period`).
    pub min_sync_period: Duration,
    /// A full sync this often (`--sync-period`).
    pub sync_period: Duration,
    /// While real servers drain, re-read their virtual servers' counters
    /// this often.
    pub drain_check_period: Duration,
    /// The first retry waits this long, doubling after each failure...
    pub backoff_base: Duration,
    /// ... up to this.
    pub backoff_cap: Duration,
}

impl SyncSettings {
    /// The settings for the two periods, with the defaults for the rest
    /// (drain checks every 5 s or `min_sync_period` if longer, backoff
    /// from 1 s to 30 s).
    pub fn new(min_sync_period: Duration, sync_period: Duration) -> SyncSettings {
        SyncSettings {
            min_sync_period,
            sync_period,
            drain_check_period: min_sync_period.max(Duration::from_secs(5)),
            backoff_base: Duration::from_secs(1),
            backoff_cap: Duration::from_secs(30),
        }
    }
}

/// What one sync did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyncReport {
    /// A full sync (whole table compared) or a partial one.
    pub full: bool,
    /// Operations planned.
    pub operations: usize,
    /// Operations the kernel refused.
    pub failed: usize,
    /// The kernel could not be read (nothing was planned).
    pub read_error: Option<String>,
    /// How long it took.
    pub duration: Duration,
    /// The plan state ([`SyncLoop::plan_state`]: drain start times,
    /// claimed virtual servers) changed in this sync, so a saved copy is
    /// out of date.
    pub plan_state_changed: bool,
}

impl SyncReport {
    /// True when the kernel was read and every operation succeeded.
    pub fn succeeded(&self) -> bool {
        self.failed == 0 && self.read_error.is_none()
    }
}

/// The loop's state between syncs.
pub struct SyncLoop<D> {
    dataplane: D,
    proxy: ProxyConfig,
    node: NodeInfo,
    settings: SyncSettings,
    metrics: Arc<Metrics>,
    index: DesiredIndex,
    state: PlanState,
    /// The kernel's table as last read, with accepted operations applied.
    observed: Option<IpvsTable>,
    /// Desired changes not synced yet.
    pending: Changes,
    full_due: bool,
    last_sync: Option<Time>,
    last_full: Option<Time>,
    /// When the draining real servers' counters were last read (by a full
    /// read or a re-read of their virtual servers).
    counters_read: Option<Time>,
    failures: u32,
    retry_at: Option<Time>,
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
        SyncLoop {
            dataplane,
            proxy,
            node,
            settings,
            metrics,
            index: DesiredIndex::new(),
            state: PlanState::default(),
            observed: None,
            pending: Changes::default(),
            full_due: true,
            last_sync: None,
            last_full: None,
            counters_read: None,
            failures: 0,
            retry_at: None,
        }
    }

    /// The desired table.
    pub fn desired(&self) -> &IpvsTable {
        self.index.table()
    }

    /// What the desired table had to skip, and why.
    pub fn warnings(&self) -> Vec<ProxyWarning> {
        self.index.warnings()
    }

    /// The plan state (what is draining, what is claimed).
    pub fn plan_state(&self) -> &PlanState {
        &self.state
    }

    /// Starts from a plan state saved by an earlier run (before the first
    /// sync): real servers still draining keep their drain start time, so
    /// `--drain-timeout` counts from when they began to drain, and claimed
    /// virtual servers stay owned. Stale entries need no cleaning: the
    /// first sync is full, and a full plan builds its state afresh from
    /// the two tables, keeping a drain start only for a real server still
    /// in the kernel and still unwanted, and a claim only for a virtual
    /// server still wanted (one claimed but no longer wanted is deleted).
    pub fn restore_plan_state(&mut self, state: PlanState) {
        self.state = state;
    }

    /// The node the loop programs for.
    pub fn node(&self) -> &NodeInfo {
        &self.node
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
        self.index = DesiredIndex::build(services, slices, &node, &self.proxy);
        self.node = node;
        self.pending = Changes::default();
        self.full_due = true;
    }

    /// Recomputes one Service (`namespace/name`) with its slices (sorted by
    /// name), or removes it when `service` is `None`; the change is synced
    /// at the next partial sync.
    pub fn update_service(&mut self, key: &str, service: Option<(&Service, &[&EndpointSlice])>) {
        let changes = match service {
            Some((svc, slices)) => self.index.update(svc, slices, &self.node, &self.proxy),
            None => self.index.remove(key),
        };
        self.pending.extend(changes);
    }

    /// When the next sync is due, given the time now.
    pub fn next_due(&self, now: Time) -> Time {
        if let Some(at) = self.retry_at {
            return at;
        }
        let mut want = self.last_full.map_or(now, |t| t.plus(self.settings.sync_period));
        if self.full_due || !self.pending.is_empty() {
            want = now;
        }
        if !self.state.draining.is_empty() {
            let check = self
                .counters_read
                .map_or(now, |t| t.plus(self.settings.drain_check_period));
            want = want.min(check);
        }
        let earliest = self.last_sync.map_or(now, |t| t.plus(self.settings.min_sync_period));
        want.max(earliest)
    }

    /// Runs a sync if one is due at `now`.
    pub async fn tick(&mut self, now: Time) -> Option<SyncReport> {
        if now < self.next_due(now) {
            return None;
        }
        let full = self.retry_at.is_some()
            || self.full_due
            || self.last_full.is_none_or(|t| now.since(t) >= self.settings.sync_period);
        Some(self.sync(full, now).await)
    }

    /// Runs one sync now: `full` compares the whole table (reading the
    /// kernel first); otherwise only what changed and what drains.
    pub async fn sync(&mut self, full: bool, now: Time) -> SyncReport {
        let started = Instant::now();
        let counters_stale = !self.state.draining.is_empty()
            && self
                .counters_read
                .is_none_or(|t| now.since(t) >= self.settings.drain_check_period);
        let mut fresh = Fresh::VirtualServers(BTreeSet::new());
        let mut observed = match self.observed.take() {
            Some(observed) if !full => observed,
            _ => match self.dataplane.observe().await {
                Ok(table) => {
                    fresh = Fresh::Everything;
                    table
                }
                Err(e) => return self.read_failed(full, now, &e, started),
            },
        };
        if counters_stale {
            let draining = self.state.draining.iter().map(|(vs, _, _)| *vs).collect();
            if let Err(e) = self.refresh(&mut observed, &mut fresh, draining).await {
                return self.read_failed(full, now, &e, started);
            }
        }
        let ctx = PlanContext::new(&self.proxy, &self.node, now);
        let mut plan = self.plan(&observed, full, &ctx);
        // Removing a real server depends on its connections: decide on
        // counters read now, not on the copy's.
        let removing: BTreeSet<VirtualServerKey> = (plan.operations.iter())
            .filter_map(removes_real_server_of)
            .filter(|vs| !fresh.covers(vs))
            .collect();
        if !removing.is_empty() {
            if let Err(e) = self.refresh(&mut observed, &mut fresh, removing).await {
                return self.read_failed(full, now, &e, started);
            }
            plan = self.plan(&observed, full, &ctx);
        }
        if plan.state.draining.iter().all(|(vs, _, _)| fresh.covers(vs)) {
            self.counters_read = Some(now);
        }
        let report = self.dataplane.apply(&plan.operations).await;
        let failed: Vec<&Operation> = report.failed.iter().map(|(op, _)| op).collect();
        for (op, err) in report.failed.iter().take(10) {
            tracing::warn!(operation = %op, error = %err, "kernel refused an operation");
        }
        // Failures come back in plan order; walk both lists in step.
        let mut copy = observed;
        let mut applied = Vec::with_capacity(plan.operations.len());
        let mut copy_ok = true;
        let mut next_failed = failed.iter().peekable();
        for op in &plan.operations {
            if next_failed.peek().is_some_and(|f| **f == op) {
                next_failed.next();
                continue;
            }
            applied.push(op);
            copy_ok &= apply_operation(&mut copy, op).is_ok();
        }
        copy_ok &= next_failed.next().is_none();
        // A copy that disagrees with what the kernel accepted is re-read.
        self.observed = (copy_ok && failed.is_empty()).then_some(copy);
        let plan_state_changed = plan.state != self.state;
        self.state = plan.state;
        self.pending = Changes::default();
        self.last_sync = Some(now);
        if full {
            self.last_full = Some(now);
            self.full_due = false;
        }
        let duration = started.elapsed();
        let ok = failed.is_empty();
        if ok {
            self.failures = 0;
            self.retry_at = None;
        } else {
            self.schedule_retry(now);
        }
        self.metrics
            .record_sync(full, duration, &applied, &failed, ok.then(SystemTime::now));
        self.record_table();
        let report = SyncReport {
            full,
            operations: plan.operations.len(),
            failed: failed.len(),
            read_error: None,
            duration,
            plan_state_changed,
        };
        tracing::info!(
            full,
            operations = report.operations,
            failed = report.failed,
            duration_ms = duration.as_millis() as u64,
            draining = self.state.draining.len(),
            "sync complete"
        );
        report
    }

    /// Re-reads the virtual servers `keys` names that this sync has not
    /// read yet into `observed`. One gone from the kernel is removed from
    /// `observed` and makes a full sync due.
    async fn refresh(
        &mut self,
        observed: &mut IpvsTable,
        fresh: &mut Fresh,
        keys: BTreeSet<VirtualServerKey>,
    ) -> Result<(), DataplaneError> {
        let Fresh::VirtualServers(read) = fresh else {
            return Ok(());
        };
        let keys: BTreeSet<VirtualServerKey> = keys.into_iter().filter(|vs| !read.contains(vs)).collect();
        if keys.is_empty() {
            return Ok(());
        }
        let mut found = self.dataplane.observe_virtual_servers(&keys).await?;
        for key in &keys {
            match found.remove(key) {
                Some(server) => {
                    observed.virtual_servers.insert(*key, server);
                }
                None => {
                    if observed.virtual_servers.remove(key).is_some() {
                        tracing::warn!(virtual_server = %key, "virtual server gone from the kernel; a full sync follows");
                        self.full_due = true;
                    }
                }
            }
        }
        read.extend(keys);
        Ok(())
    }

    fn plan(&self, observed: &IpvsTable, full: bool, ctx: &PlanContext) -> Plan {
        if full {
            plan(observed, self.index.table(), &self.state, ctx)
        } else {
            plan_changes(observed, self.index.table(), &self.pending, &self.state, ctx)
        }
    }

    fn read_failed(&mut self, full: bool, now: Time, e: &DataplaneError, started: Instant) -> SyncReport {
        self.metrics.record_netlink_error();
        self.last_sync = Some(now);
        self.schedule_retry(now);
        let retry = self.retry_at.map(|t| t.since(now)).unwrap_or_default();
        tracing::error!(error = %e, retry_in_ms = retry.as_millis() as u64, "sync failed: cannot read the kernel's IPVS table");
        SyncReport {
            full,
            operations: 0,
            failed: 0,
            read_error: Some(e.to_string()),
            duration: started.elapsed(),
            plan_state_changed: false,
        }
    }

    /// After a failure: a full sync (re-reading the kernel) after the
    /// backoff.
    fn schedule_retry(&mut self, now: Time) {
        self.failures = self.failures.saturating_add(1);
        let exp = self.failures.saturating_sub(1).min(16);
        let delay = self
            .settings
            .backoff_base
            .saturating_mul(1 << exp)
            .min(self.settings.backoff_cap);
        self.retry_at = Some(now.plus(delay));
        self.full_due = true;
        self.observed = None;
    }

    fn record_table(&self) {
        let table = self.index.table();
        self.metrics.record_table(TableSize {
            virtual_servers: table.virtual_servers.len(),
            real_servers: table.real_server_count(),
            draining: self.state.draining.len(),
        });
    }
}

/// What one sync has read from the kernel.
enum Fresh {
    /// The whole table.
    Everything,
    /// These virtual servers.
    VirtualServers(BTreeSet<VirtualServerKey>),
}

impl Fresh {
    /// Whether `vs` was read during this sync.
    fn covers(&self, vs: &VirtualServerKey) -> bool {
        match self {
            Fresh::Everything => true,
            Fresh::VirtualServers(read) => read.contains(vs),
        }
    }
}

/// The virtual server whose real server `op` deletes or drains (weight 0).
fn removes_real_server_of(op: &Operation) -> Option<VirtualServerKey> {
    match op {
        Operation::DeleteRealServer { virtual_server, .. }
        | Operation::UpdateRealServer {
            virtual_server,
            weight: 0,
            ..
        } => Some(*virtual_server),
        _ => None,
    }
}

#[cfg(test)]
mod tests;
