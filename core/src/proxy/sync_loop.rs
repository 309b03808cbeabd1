//! The sync loop as a state machine: when to read the kernel, what to plan
//! from what was read, when to try again. It does no I/O and reads no
//! clock; the caller (the agent, the playground, a test) carries out the
//! actions it asks for and passes the time in, in the style of quinn-proto
//! and str0m:
//!
//! - desired-state changes go in with [`SyncMachine::rebuild`] and
//!   [`SyncMachine::update_service`];
//! - [`SyncMachine::poll_timeout`] says when [`SyncMachine::handle_timeout`]
//!   should be called next; [`SyncMachine::start_sync`] starts a sync at once;
//! - [`SyncMachine::poll_action`] is drained: read the whole table, re-read a
//!   few virtual servers, apply these operations; each answer goes back with
//!   [`SyncMachine::handle`];
//! - [`SyncMachine::poll_report`] gives each finished sync's [`SyncReport`].
//!
//! What it decides:
//!
//! - The first sync reads the kernel and adopts what is there: a full
//!   [`plan()`] from the observed table, no flush; a table that already
//!   matches gets no operations.
//! - Desired-state changes update a [`DesiredIndex`] (and, when asked, the
//!   nftables ruleset beside it: [`SyncMachine::keep_ruleset`]) and are synced with
//!   [`plan_changes`], looking only at what changed, at most once per
//!   `min_sync_period` (changes in between are coalesced). Between full reads
//!   the machine keeps its own copy of the kernel's table, updated with
//!   [`apply_operation`] for each operation the kernel accepted.
//! - [`SyncMachine::start_full_sync_over_copy`]: a full sync over that
//!   copy, when there is one (after the additions of the first lists).
//! - Every `sync_period` a full sync reads the whole table again and repairs
//!   drift (a virtual server deleted by hand comes back). With
//!   [`SyncSettings::full_sync_part`] set and a copy of the table kept, it
//!   is done in parts instead, each a partial sync of its own: the
//!   `kube-ipvs0` addresses and the list of virtual servers first, then the
//!   virtual servers a part at a time, each part read and planned as
//!   changed. Changes that arrive
//!   meanwhile go with the next part, so they wait for one part's read,
//!   not for the whole table's (seconds at 5,000 Services on a slow node).
//!   Between parts the machine's copy stays up to date as it does between
//!   syncs. kube-proxy reads the whole table at once.
//! - Removing a real server depends on its connections, so a partial sync
//!   whose plan deletes or drains real servers first re-reads just those
//!   virtual servers for fresh connection counters, and plans again.
//! - While real servers drain, their virtual servers are re-read every
//!   `drain_check_period`, and the plan deletes those whose connections
//!   reached 0 (or whose drain timed out). The [`PlanState`] with the drain
//!   start times lives across syncs and can be restored after a restart.
//! - A virtual server found gone on such a re-read is treated as absent
//!   (the plan adds it back) and a full sync follows.
//! - An additions-only sync ([`SyncMachine::start_additions`]) plans the
//!   changes as a partial sync does, then keeps only what adds (addresses,
//!   virtual servers, real servers that are missing): nothing is changed,
//!   drained or removed, and the plan state stays as it was but for the
//!   virtual servers it claims. The agent programs the first lists with it
//!   while they arrive, when what is desired is not known whole yet.
//! - A failed read or a refused operation schedules a full sync after an
//!   exponential backoff (`backoff_base` doubling up to `backoff_cap`).
//! - Virtual servers the plan does not own are never touched.

use super::nftables::elements::service_elements;
use super::nftables::{RulesetIndex, Table};
use super::{
    apply_operation, plan, plan_changes, Changes, DesiredIndex, IpvsTable, NodeInfo, Operation, Plan, PlanContext,
    PlanState, ProxyConfig, ProxyWarning, VirtualServer, VirtualServerKey,
};
use crate::api::{EndpointSlice, Service};
use crate::time::Time;
use std::collections::VecDeque;
use std::net::IpAddr;

use crate::collections::{SortedMap, SortedSet};
use std::time::Duration;

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
    /// Periodic full syncs read this many virtual servers a part (see the
    /// module's doc); `None`: the whole table at once, as kube-proxy does.
    pub full_sync_part: Option<usize>,
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
            full_sync_part: None,
        }
    }

    /// The same, with periodic full syncs done in parts of `virtual_servers`
    /// (at least 1).
    pub fn in_parts(self, virtual_servers: usize) -> SyncSettings {
        SyncSettings {
            full_sync_part: Some(virtual_servers.max(1)),
            ..self
        }
    }
}

/// What the machine asks its caller to do.
#[derive(Debug, Clone, PartialEq)]
pub enum SyncAction {
    /// Read the kernel's whole table (every virtual server with its real
    /// servers and counters, and the `kube-ipvs0` addresses); answer with
    /// [`SyncInput::Observed`].
    ObserveAll,
    /// Read just these virtual servers; answer with
    /// [`SyncInput::ObservedVirtualServers`].
    ObserveVirtualServers(SortedSet<VirtualServerKey>),
    /// Read the `kube-ipvs0` addresses and which virtual servers the kernel
    /// has, without their real servers; answer with
    /// [`SyncInput::ObservedOutline`].
    ObserveOutline,
    /// Carry out these operations in order, a failed one not stopping the
    /// others; answer with [`SyncInput::Applied`].
    Apply(Vec<Operation>),
}

/// The answer to a [`SyncAction`].
#[derive(Debug, Clone, PartialEq)]
pub enum SyncInput {
    /// The whole table, as read.
    Observed(IpvsTable),
    /// The virtual servers asked for that the kernel has; one missing is
    /// one the kernel does not have.
    ObservedVirtualServers(SortedMap<VirtualServerKey, VirtualServer>),
    /// The addresses and the virtual servers, as read.
    ObservedOutline(TableOutline),
    /// The operations the kernel refused, in the order they were given,
    /// with why.
    Applied(Vec<(Operation, String)>),
    /// The read asked for failed.
    ReadFailed(String),
}

/// The kernel's table in outline: what the first part of a full sync in
/// parts reads.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TableOutline {
    /// The addresses bound on `kube-ipvs0`.
    pub addresses: SortedSet<IpAddr>,
    /// Every virtual server the kernel has (foreign ones included).
    pub virtual_servers: SortedSet<VirtualServerKey>,
}

impl TableOutline {
    /// The outline of `table`.
    pub fn of(table: &IpvsTable) -> TableOutline {
        TableOutline {
            addresses: table.addresses.clone(),
            virtual_servers: table.virtual_servers.keys().copied().collect(),
        }
    }
}

/// What one sync did.
#[derive(Debug, Clone, PartialEq)]
pub struct SyncReport {
    /// A full sync (whole table compared) or a partial one.
    pub full: bool,
    /// An additions-only sync ([`SyncMachine::start_additions`]).
    pub additions_only: bool,
    /// When it started and when it finished (the times passed in).
    pub started: Time,
    /// See `started`.
    pub finished: Time,
    /// Operations the kernel accepted, in order.
    pub applied: Vec<Operation>,
    /// Operations the kernel refused, with why.
    pub failed: Vec<(Operation, String)>,
    /// The kernel could not be read (nothing was planned).
    pub read_error: Option<String>,
    /// The plan state ([`SyncMachine::plan_state`]: drain start times,
    /// claimed virtual servers) changed in this sync, so a saved copy is
    /// out of date.
    pub plan_state_changed: bool,
    /// When the next try is due, after a failure.
    pub retry_at: Option<Time>,
    /// When the sync was a part of a full sync done in parts: which.
    pub part: Option<SyncPart>,
}

/// One part of a full sync done in parts ([`SyncSettings::full_sync_part`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SyncPart {
    /// This part's number, from 1: part 1 reads the outline (the addresses
    /// and which virtual servers there are), the others the virtual servers.
    pub number: usize,
    /// How many parts the full sync has.
    pub of: usize,
    /// When part 1 started: the full sync's start.
    pub full_sync_started: Time,
}

impl SyncPart {
    /// Whether this is the last part: the full sync is done with it.
    pub fn is_last(&self) -> bool {
        self.number == self.of
    }
}

impl SyncReport {
    /// Operations planned.
    pub fn operations(&self) -> usize {
        self.applied.len() + self.failed.len()
    }

    /// True when the kernel was read and every operation succeeded.
    pub fn succeeded(&self) -> bool {
        self.failed.is_empty() && self.read_error.is_none()
    }
}

/// What one sync has read from the kernel.
#[derive(Debug, Clone)]
enum Fresh {
    /// The whole table.
    Everything,
    /// These virtual servers.
    VirtualServers(SortedSet<VirtualServerKey>),
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

/// A sync under way: what it waits for.
#[derive(Debug, Clone)]
enum Phase {
    /// No sync under way.
    Idle,
    /// The whole table was asked for.
    ReadingTable,
    /// A full sync's first part: the outline was asked for.
    ReadingOutline { observed: IpvsTable },
    /// A full sync's later part: its virtual servers were asked for.
    ReadingPart { observed: IpvsTable },
    /// The counters of draining real servers were asked for.
    ReadingDrainCounters { observed: IpvsTable, fresh: Fresh },
    /// The counters of real servers the plan removes were asked for.
    ReadingRemovals { observed: IpvsTable, fresh: Fresh },
    /// The plan's operations were handed out.
    Applying {
        observed: IpvsTable,
        fresh: Fresh,
        plan: Plan,
    },
}

/// The sync under way.
#[derive(Debug, Clone)]
struct Running {
    full: bool,
    /// Only additions are carried out.
    additions_only: bool,
    started: Time,
    /// The desired changes this sync plans for; later ones wait.
    changes: Changes,
    /// The keys asked for by the read under way.
    asked: SortedSet<VirtualServerKey>,
    /// When this sync is a part of a full sync done in parts: which.
    part: Option<SyncPart>,
}

/// A full sync done in parts, under way.
#[derive(Debug, Clone)]
struct Parts {
    /// When its first part started.
    started: Time,
    /// The virtual servers to read, in key order: every one in the copy,
    /// the desired table or the plan state when it started, and in the
    /// kernel's outline.
    keys: Vec<VirtualServerKey>,
    /// How many of `keys` a part reads.
    size: usize,
    /// Parts done.
    done: usize,
}

impl Parts {
    /// Parts in all: the outline, then the virtual servers.
    fn count(&self) -> usize {
        1 + self.keys.len().div_ceil(self.size)
    }
}

/// The sync loop's state.
#[derive(Debug, Clone)]
pub struct SyncMachine {
    proxy: ProxyConfig,
    node: NodeInfo,
    settings: SyncSettings,
    index: DesiredIndex,
    /// The nftables ruleset of the desired state, when kept.
    ruleset: Option<RulesetIndex>,
    /// Services (`namespace/name`) in the desired table whose elements
    /// the kept ruleset does not have yet ([`SyncMachine::add_table_first`]).
    ruleset_behind: SortedSet<String>,
    state: PlanState,
    /// The kernel's table as last read, with accepted operations applied.
    observed: Option<IpvsTable>,
    /// Desired changes not synced yet.
    pending: Changes,
    full_due: bool,
    last_sync: Option<Time>,
    last_full: Option<Time>,
    /// When the draining real servers' counters were last read.
    counters_read: Option<Time>,
    failures: u32,
    retry_at: Option<Time>,
    phase: Phase,
    running: Option<Running>,
    /// The full sync done in parts under way.
    parts: Option<Parts>,
    actions: VecDeque<SyncAction>,
    reports: VecDeque<SyncReport>,
}

impl SyncMachine {
    /// A machine for `node` whose first sync will be full.
    pub fn new(proxy: ProxyConfig, node: NodeInfo, settings: SyncSettings) -> SyncMachine {
        SyncMachine {
            proxy,
            node,
            settings,
            index: DesiredIndex::new(),
            ruleset: None,
            ruleset_behind: SortedSet::new(),
            state: PlanState::default(),
            observed: None,
            pending: Changes::default(),
            full_due: true,
            last_sync: None,
            last_full: None,
            counters_read: None,
            failures: 0,
            retry_at: None,
            phase: Phase::Idle,
            running: None,
            parts: None,
            actions: VecDeque::new(),
            reports: VecDeque::new(),
        }
    }

    /// The desired table.
    pub fn desired(&self) -> &IpvsTable {
        self.index.table()
    }

    /// The Services (`namespace/name`) the desired table was computed
    /// from, in order.
    pub fn services(&self) -> impl Iterator<Item = &str> {
        self.index.services()
    }

    /// What the desired table had to skip, and why.
    pub fn warnings(&self) -> Vec<ProxyWarning> {
        self.index.warnings()
    }

    /// The plan state (what is draining, what is claimed).
    pub fn plan_state(&self) -> &PlanState {
        &self.state
    }

    /// The node the machine programs for.
    pub fn node(&self) -> &NodeInfo {
        &self.node
    }

    /// The settings.
    pub fn settings(&self) -> &SyncSettings {
        &self.settings
    }

    /// Whether a sync is under way (actions handed out, answers awaited).
    pub fn is_syncing(&self) -> bool {
        self.running.is_some()
    }

    /// Starts from a plan state saved by an earlier run (before the first
    /// sync): real servers still draining keep their drain start time, so
    /// the drain timeout counts from when they began to drain, and claimed
    /// virtual servers stay owned. Stale entries need no cleaning: the
    /// first sync is full, and a full plan builds its state afresh from the
    /// two tables.
    pub fn restore_plan_state(&mut self, state: PlanState) {
        self.state = state;
    }

    /// Keeps the nftables ruleset of the desired state too, from the next
    /// [`SyncMachine::rebuild`] on (call before it): [`SyncMachine::ruleset`]
    /// then follows each change of a Service for the cost of that
    /// Service's elements, as the desired table does.
    pub fn keep_ruleset(&mut self) {
        self.ruleset
            .get_or_insert_with(|| RulesetIndex::new(&self.node, &self.proxy));
    }

    /// The nftables ruleset of the desired state, when it is kept
    /// ([`SyncMachine::keep_ruleset`]); without the elements of the
    /// Services in [`SyncMachine::ruleset_behind`].
    pub fn ruleset(&self) -> Option<&Table> {
        self.ruleset.as_ref().map(RulesetIndex::table)
    }

    /// Rebuilds the whole desired table (at start, or when the node
    /// changed); the next sync is full.
    pub fn rebuild<'a>(
        &mut self,
        services: impl IntoIterator<Item = &'a Service>,
        slices: impl IntoIterator<Item = &'a EndpointSlice>,
        node: NodeInfo,
    ) {
        match &mut self.ruleset {
            None => self.index = DesiredIndex::build(services, slices, &node, &self.proxy),
            Some(ruleset) => {
                *ruleset = RulesetIndex::new(&node, &self.proxy);
                self.index = DesiredIndex::build_with(services, slices, &node, &self.proxy, |svc, slices, fragment| {
                    ruleset.set_service(svc.key(), service_elements(svc, slices, &node, fragment));
                });
            }
        }
        self.node = node;
        self.pending = Changes::default();
        self.ruleset_behind.clear();
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
        self.update_ruleset(key, service);
        self.pending.extend(changes);
    }

    /// As [`SyncMachine::update_service`] with a Service, for the additions
    /// made while the first lists arrive, when the table is what is
    /// waited for: the desired table is updated now, the kept ruleset
    /// (which is not programmed before the lists are in) later, by
    /// [`SyncMachine::update_ruleset`] for each of
    /// [`SyncMachine::ruleset_behind`].
    pub fn add_table_first(&mut self, service: &Service, slices: &[&EndpointSlice]) {
        let changes = self.index.update(service, slices, &self.node, &self.proxy);
        if self.ruleset.is_some() {
            self.ruleset_behind.insert(service.key());
        }
        self.pending.extend(changes);
    }

    /// The Services (`namespace/name`) whose elements the kept ruleset
    /// lacks ([`SyncMachine::add_table_first`]).
    pub fn ruleset_behind(&self) -> impl Iterator<Item = &str> {
        self.ruleset_behind.iter().map(String::as_str)
    }

    /// Sets Service `key`'s elements in the kept ruleset from the desired
    /// table's fragment (removes them when `service` is `None`).
    pub fn update_ruleset(&mut self, key: &str, service: Option<(&Service, &[&EndpointSlice])>) {
        self.ruleset_behind.remove(key);
        let Some(ruleset) = &mut self.ruleset else {
            return;
        };
        match service {
            Some((svc, slices)) => {
                let key = svc.key();
                if let Some(fragment) = self.index.fragment(&key) {
                    ruleset.set_service(key, service_elements(svc, slices, &self.node, fragment));
                }
            }
            None => ruleset.remove_service(key),
        }
    }

    /// When the next sync is due, given the time now (`now` or later when
    /// something is waiting; earlier values mean "due").
    pub fn next_due(&self, now: Time) -> Time {
        if let Some(at) = self.retry_at {
            return at;
        }
        if self.parts.is_some() && !self.full_due {
            // The next part follows at once.
            return now;
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

    /// When [`Self::handle_timeout`] should be called next; `None` while a
    /// sync is under way (the machine waits for answers, not for time).
    pub fn poll_timeout(&self) -> Option<Time> {
        (!self.is_syncing()).then(|| self.next_due(Time::ZERO))
    }

    /// Starts a sync if one is due at `now` and none is under way; returns
    /// whether it did.
    pub fn handle_timeout(&mut self, now: Time) -> bool {
        if self.is_syncing() || now < self.next_due(now) {
            return false;
        }
        let forced = self.retry_at.is_some() || self.full_due;
        let periodic = self.last_full.is_none_or(|t| now.since(t) >= self.settings.sync_period);
        if !forced && (periodic || self.parts.is_some()) && self.start_part(now) {
            return true;
        }
        // A full sync of the whole table covers what parts were left.
        self.parts = None;
        self.start_sync(forced || periodic, now);
        true
    }

    /// Starts the next part of a full sync done in parts, beginning one if
    /// none is under way; returns false when full syncs are not done in
    /// parts or there is no copy of the table to keep up to date.
    fn start_part(&mut self, now: Time) -> bool {
        let Some(size) = self.settings.full_sync_part else {
            return false;
        };
        let Some(observed) = self.observed.take() else {
            return false;
        };
        let parts = self.parts.get_or_insert_with(|| {
            let mut keys: SortedSet<VirtualServerKey> = observed.virtual_servers.keys().copied().collect();
            keys.extend(self.index.table().virtual_servers.keys().copied());
            keys.extend(self.state.claimed.iter().copied());
            keys.extend(self.state.draining.iter().map(|(vs, _, _)| *vs));
            Parts {
                started: now,
                keys: keys.into_iter().collect(),
                size,
                done: 0,
            }
        });
        let part = SyncPart {
            number: parts.done + 1,
            of: parts.count(),
            full_sync_started: parts.started,
        };
        let mut changes = std::mem::take(&mut self.pending);
        let read: Option<SortedSet<VirtualServerKey>> = (parts.done > 0).then(|| {
            let first = (parts.done - 1) * parts.size;
            let keys = &parts.keys[first..(first + parts.size).min(parts.keys.len())];
            keys.iter().copied().collect()
        });
        if let Some(keys) = &read {
            changes.virtual_servers.extend(keys.iter().copied());
        } else {
            // Every address either table has is looked at once read.
            changes.addresses.extend(observed.addresses.iter().copied());
            changes.addresses.extend(self.index.table().addresses.iter().copied());
        }
        self.running = Some(Running {
            full: false,
            additions_only: false,
            started: now,
            changes,
            asked: SortedSet::new(),
            part: Some(part),
        });
        match read {
            Some(keys) => {
                self.ask(keys);
                self.phase = Phase::ReadingPart { observed };
            }
            None => {
                self.actions.push_back(SyncAction::ObserveOutline);
                self.phase = Phase::ReadingOutline { observed };
            }
        }
        true
    }

    /// Starts a sync now, whatever the timers say: `full` compares the
    /// whole table (reading the kernel first); otherwise only what changed
    /// and what drains. Ignored while a sync is under way.
    pub fn start_sync(&mut self, full: bool, now: Time) {
        self.start(full, false, false, now);
    }

    /// Starts a full sync planned over the machine's copy of the kernel's
    /// table when it has one (read by an earlier sync, with every operation
    /// the kernel accepted since applied to it), else over a fresh read:
    /// the first full sync after the additions of the first lists, which
    /// would otherwise read back the whole table just written. Real servers
    /// it removes are re-read first, as in a partial sync; the periodic
    /// full syncs read the kernel again. Ignored while a sync is under way.
    pub fn start_full_sync_over_copy(&mut self, now: Time) {
        self.start(true, false, true, now);
    }

    /// Starts a partial sync that only adds: the pending changes are
    /// planned, and only the operations that add a missing address,
    /// virtual server or real server are carried out; nothing is changed,
    /// drained or removed. For the first lists while they arrive, before
    /// the whole desired table is known. Ignored while a sync is under way.
    pub fn start_additions(&mut self, now: Time) {
        self.start(false, true, false, now);
    }

    fn start(&mut self, full: bool, additions_only: bool, over_copy: bool, now: Time) {
        if self.is_syncing() {
            return;
        }
        self.running = Some(Running {
            full,
            additions_only,
            started: now,
            changes: std::mem::take(&mut self.pending),
            asked: SortedSet::new(),
            part: None,
        });
        match self.observed.take() {
            Some(observed) if !full || over_copy => {
                self.after_table(observed, Fresh::VirtualServers(SortedSet::new()), now)
            }
            _ => {
                self.phase = Phase::ReadingTable;
                self.actions.push_back(SyncAction::ObserveAll);
            }
        }
    }

    /// The next thing to do, if any.
    pub fn poll_action(&mut self) -> Option<SyncAction> {
        self.actions.pop_front()
    }

    /// The report of a finished sync, if any.
    pub fn poll_report(&mut self) -> Option<SyncReport> {
        self.reports.pop_front()
    }

    /// The answer to the last action, at `now`. An answer nothing waits for
    /// is ignored.
    pub fn handle(&mut self, input: SyncInput, now: Time) {
        let phase = std::mem::replace(&mut self.phase, Phase::Idle);
        match (phase, input) {
            (Phase::Idle, _) => {}
            (_, SyncInput::ReadFailed(error)) => self.read_failed(error, now),
            (Phase::ReadingTable, SyncInput::Observed(table)) => self.after_table(table, Fresh::Everything, now),
            (Phase::ReadingOutline { mut observed }, SyncInput::ObservedOutline(outline)) => {
                observed.addresses = outline.addresses;
                self.read_later(outline.virtual_servers);
                self.after_table(observed, Fresh::VirtualServers(SortedSet::new()), now);
            }
            (Phase::ReadingPart { mut observed }, SyncInput::ObservedVirtualServers(found)) => {
                let mut fresh = Fresh::VirtualServers(SortedSet::new());
                self.merge(&mut observed, &mut fresh, found);
                self.after_table(observed, fresh, now);
            }
            (
                Phase::ReadingDrainCounters {
                    mut observed,
                    mut fresh,
                },
                SyncInput::ObservedVirtualServers(found),
            ) => {
                self.merge(&mut observed, &mut fresh, found);
                self.plan_first(observed, fresh);
            }
            (
                Phase::ReadingRemovals {
                    mut observed,
                    mut fresh,
                },
                SyncInput::ObservedVirtualServers(found),
            ) => {
                self.merge(&mut observed, &mut fresh, found);
                let plan = self.plan(&observed);
                self.hand_out(observed, fresh, plan);
            }
            (Phase::Applying { observed, fresh, plan }, SyncInput::Applied(failed)) => {
                self.finish(observed, &fresh, plan, failed, now);
            }
            (phase, _) => {
                // An answer of the wrong kind: keep waiting for the right one.
                self.phase = phase;
            }
        }
    }

    /// Adds the virtual servers the kernel's outline named to those the
    /// later parts read: one added behind the proxy's back on an address it
    /// owns is then read, and deleted, as a full read would have it.
    fn read_later(&mut self, kernel: SortedSet<VirtualServerKey>) {
        let Some(parts) = self.parts.as_mut() else {
            return;
        };
        let mut keys: SortedSet<VirtualServerKey> = parts.keys.drain(..).collect();
        keys.extend(kernel);
        parts.keys = keys.into_iter().collect();
        let of = parts.count();
        if let Some(part) = self.running.as_mut().and_then(|r| r.part.as_mut()) {
            part.of = of;
        }
    }

    /// With the table read (or the copy), re-reads stale drain counters,
    /// then plans.
    fn after_table(&mut self, observed: IpvsTable, fresh: Fresh, now: Time) {
        let counters_stale = !self.state.draining.is_empty()
            && self
                .counters_read
                .is_none_or(|t| now.since(t) >= self.settings.drain_check_period);
        if counters_stale {
            let draining: SortedSet<VirtualServerKey> =
                crate::sort::set_from(self.state.draining.iter().map(|(vs, _, _)| *vs));
            if let Some(keys) = self.unread(&fresh, draining) {
                self.ask(keys);
                self.phase = Phase::ReadingDrainCounters { observed, fresh };
                return;
            }
        }
        self.plan_first(observed, fresh);
    }

    /// Plans; when the plan removes real servers whose counters this sync
    /// has not read, re-reads them first.
    fn plan_first(&mut self, observed: IpvsTable, fresh: Fresh) {
        let plan = self.plan(&observed);
        let removing: SortedSet<VirtualServerKey> =
            crate::sort::set_from(plan.operations.iter().filter_map(removes_real_server_of));
        if let Some(keys) = self.unread(&fresh, removing) {
            self.ask(keys);
            self.phase = Phase::ReadingRemovals { observed, fresh };
            return;
        }
        self.hand_out(observed, fresh, plan);
    }

    /// Hands the plan's operations out.
    fn hand_out(&mut self, observed: IpvsTable, fresh: Fresh, plan: Plan) {
        self.actions.push_back(SyncAction::Apply(plan.operations.clone()));
        self.phase = Phase::Applying { observed, fresh, plan };
    }

    /// The keys of `keys` this sync has not read, if any.
    fn unread(&self, fresh: &Fresh, keys: SortedSet<VirtualServerKey>) -> Option<SortedSet<VirtualServerKey>> {
        let keys: SortedSet<VirtualServerKey> = crate::sort::set_from(keys.into_iter().filter(|vs| !fresh.covers(vs)));
        (!keys.is_empty()).then_some(keys)
    }

    fn ask(&mut self, keys: SortedSet<VirtualServerKey>) {
        if let Some(running) = self.running.as_mut() {
            running.asked = keys.clone();
        }
        self.actions.push_back(SyncAction::ObserveVirtualServers(keys));
    }

    /// Puts re-read virtual servers into `observed`. One asked for but gone
    /// from the kernel is removed and makes a full sync due, unless this
    /// sync is a part of one (whose parts re-read every virtual server).
    fn merge(
        &mut self,
        observed: &mut IpvsTable,
        fresh: &mut Fresh,
        mut found: SortedMap<VirtualServerKey, VirtualServer>,
    ) {
        let (asked, in_parts) = match self.running.as_mut() {
            Some(running) => (std::mem::take(&mut running.asked), running.part.is_some()),
            None => (SortedSet::new(), false),
        };
        for key in &asked {
            match found.remove(key) {
                Some(server) => {
                    observed.virtual_servers.insert(*key, server);
                }
                None => {
                    if observed.virtual_servers.remove(key).is_some() && !in_parts {
                        self.full_due = true;
                    }
                }
            }
        }
        if let Fresh::VirtualServers(read) = fresh {
            read.extend(asked);
        }
    }

    fn plan(&self, observed: &IpvsTable) -> Plan {
        let Some(running) = &self.running else {
            return Plan::default();
        };
        let ctx = PlanContext::new(&self.proxy, &self.node, running.started);
        let plan = if running.full {
            plan(observed, self.index.table(), &self.state, &ctx)
        } else {
            plan_changes(observed, self.index.table(), &running.changes, &self.state, &ctx)
        };
        if running.additions_only {
            additions(plan, &self.state)
        } else {
            plan
        }
    }

    /// The kernel has answered the operations: keep the copy if it agrees,
    /// take the plan's state, and report.
    fn finish(&mut self, observed: IpvsTable, fresh: &Fresh, plan: Plan, failed: Vec<(Operation, String)>, now: Time) {
        let Some(running) = self.running.take() else {
            return;
        };
        if plan.state.draining.iter().all(|(vs, _, _)| fresh.covers(vs)) {
            self.counters_read = Some(running.started);
        }
        // Failures come back in plan order; walk both lists in step.
        let mut copy = observed;
        let mut applied = Vec::with_capacity(plan.operations.len());
        let mut copy_ok = true;
        let mut next_failed = failed.iter().map(|(op, _)| op).peekable();
        for op in plan.operations {
            if next_failed.peek().is_some_and(|f| **f == op) {
                next_failed.next();
                continue;
            }
            copy_ok &= apply_operation(&mut copy, &op).is_ok();
            applied.push(op);
        }
        copy_ok &= next_failed.next().is_none();
        // A copy that disagrees with what the kernel accepted is re-read.
        self.observed = (copy_ok && failed.is_empty()).then_some(copy);
        let plan_state_changed = plan.state != self.state;
        self.state = plan.state;
        self.last_sync = Some(running.started);
        if running.full {
            self.last_full = Some(running.started);
            self.full_due = false;
        }
        if let Some(part) = running.part {
            if let Some(parts) = self.parts.as_mut() {
                parts.done += 1;
            }
            if part.is_last() {
                self.parts = None;
                self.last_full = Some(part.full_sync_started);
            }
        }
        if failed.is_empty() {
            self.failures = 0;
            self.retry_at = None;
        } else {
            self.schedule_retry(running.started);
        }
        self.reports.push_back(SyncReport {
            full: running.full,
            additions_only: running.additions_only,
            started: running.started,
            finished: now,
            applied,
            failed,
            read_error: None,
            plan_state_changed,
            retry_at: self.retry_at,
            part: running.part,
        });
    }

    fn read_failed(&mut self, error: String, now: Time) {
        let Some(running) = self.running.take() else {
            return;
        };
        // The changes this sync took are planned again by the full sync
        // that follows.
        self.pending.extend(running.changes);
        self.last_sync = Some(running.started);
        self.schedule_retry(running.started);
        self.reports.push_back(SyncReport {
            full: running.full,
            additions_only: running.additions_only,
            started: running.started,
            finished: now,
            applied: Vec::new(),
            failed: Vec::new(),
            read_error: Some(error),
            plan_state_changed: false,
            retry_at: self.retry_at,
            part: running.part,
        });
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
        self.parts = None;
    }
}

/// The operations of `plan` that add something missing (an address, a
/// virtual server, a real server), with `state` kept but for the virtual
/// servers those additions claim.
fn additions(plan: Plan, state: &PlanState) -> Plan {
    let operations: Vec<Operation> = (plan.operations.into_iter())
        .filter(|op| {
            matches!(
                op,
                Operation::BindAddress { .. } | Operation::AddVirtualServer { .. } | Operation::AddRealServer { .. }
            )
        })
        .collect();
    let mut kept = state.clone();
    for op in &operations {
        if let Operation::AddVirtualServer { virtual_server, .. } = op {
            if plan.state.claimed.contains(virtual_server) {
                kept.claimed.insert(*virtual_server);
            }
        }
    }
    Plan {
        operations,
        state: kept,
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
