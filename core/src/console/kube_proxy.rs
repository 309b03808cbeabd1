//! kube-proxy on the playground's node, following the cluster the way the
//! real one does: it lists and then watches Services and EndpointSlices
//! (each change arrives as an ADDED, MODIFIED or DELETED event with the
//! object's resourceVersion), keeps them in a local cache, and runs its
//! sync loop, the core's sans-I/O [`SyncMachine`], on the cluster's clock:
//! at most one sync per `--min-sync-period` (1 s, kube-proxy's default), so
//! changes that arrive closer together are coalesced into one sync, and a
//! full resync every `--sync-period` (30 s). The kernel is an in-memory
//! IPVS table that takes every operation.
//!
//! [`KubeProxyView::follow`] is called with the control plane after each
//! change and each tick of the clock; [`KubeProxyView::report`] is what the
//! page shows.

use crate::api::endpoint_slice::SERVICE_NAME_LABEL;
use crate::api::EndpointSlice;
use crate::controlplane::ControlPlane;
use crate::proxy::sync_loop::{SyncAction, SyncInput, SyncMachine, SyncSettings, TableOutline};
use crate::proxy::{apply_operation, IpvsTable, ProxyConfig};
use crate::time::Time;
use serde::Serialize;
use std::collections::VecDeque;

use crate::collections::{SortedMap, SortedSet};
use std::time::Duration;

/// kube-proxy's `--min-sync-period` default.
pub const MIN_SYNC_PERIOD: Duration = Duration::from_secs(1);
/// kube-proxy's `--sync-period` default for IPVS.
pub const SYNC_PERIOD: Duration = Duration::from_secs(30);
/// Events and syncs kept for the page (the oldest go first).
const KEPT: usize = 100;
/// At most this many timer firings are played out per call; a longer gap
/// (the page left alone for hours) skips ahead to the present.
const MAX_FIRINGS: usize = 64;

/// One watch event, as kube-proxy's informer delivers it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WatchEvent {
    /// When it arrived (milliseconds on the cluster's clock).
    pub at: u64,
    /// `ADDED`, `MODIFIED` or `DELETED`.
    #[serde(rename = "type")]
    pub event_type: &'static str,
    /// `Service` or `EndpointSlice`.
    pub kind: &'static str,
    /// `namespace/name`.
    pub object: String,
    /// The object's resourceVersion (the last one, for a deletion).
    pub resource_version: String,
}

/// One run of the sync loop.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SyncRecord {
    /// When it ran (milliseconds on the cluster's clock).
    pub at: u64,
    /// A full resync (the whole table compared) or a partial one.
    pub full: bool,
    /// Watch events it took in (coalesced since the previous sync).
    pub events: usize,
    /// IPVS operations it carried out.
    pub operations: usize,
    /// How many syncs this record stands for: periodic resyncs that found
    /// nothing to do in a row are folded into one record.
    pub count: usize,
}

/// One object in kube-proxy's cache.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Cached {
    /// `Service` or `EndpointSlice`.
    pub kind: &'static str,
    /// `namespace/name`.
    pub object: String,
    /// The resourceVersion last seen.
    pub resource_version: String,
}

/// What the page shows.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    /// The node kube-proxy runs on.
    pub node: String,
    /// `--min-sync-period` and `--sync-period`, in milliseconds.
    pub min_sync_period_ms: u64,
    /// See `min_sync_period_ms`.
    pub sync_period_ms: u64,
    /// The cluster's clock now.
    pub now: u64,
    /// The latest events, oldest first.
    pub events: Vec<WatchEvent>,
    /// The cache: every Service and EndpointSlice with its resourceVersion.
    pub cache: Vec<Cached>,
    /// The latest syncs, oldest first.
    pub syncs: Vec<SyncRecord>,
    /// Events received that no sync has taken in yet.
    pub pending_events: usize,
    /// When the next sync is due.
    pub next_sync_at: Option<u64>,
}

/// `(kind, namespace, name)`.
type Key = (&'static str, String, String);

/// A cached object's resourceVersion and the Service it belongs to (its
/// own name for a Service, the `kubernetes.io/service-name` label for a
/// slice), kept so a deletion knows which Service to recompute.
type Seen = (String, String);

/// kube-proxy's view of one cluster.
#[derive(Clone, Debug)]
pub struct KubeProxyView {
    node: String,
    machine: SyncMachine,
    kernel: IpvsTable,
    cache: SortedMap<Key, Seen>,
    events: VecDeque<WatchEvent>,
    syncs: VecDeque<SyncRecord>,
    unsynced: usize,
    now: Time,
}

impl KubeProxyView {
    /// kube-proxy on `node` of `cp`, before its first list.
    pub fn new(cp: &ControlPlane, node: &str) -> KubeProxyView {
        let proxy = ProxyConfig {
            node_port_range: cp.config().node_ports,
            ..ProxyConfig::default()
        };
        let info = cp.node_info(node).unwrap_or_default();
        KubeProxyView {
            node: node.to_string(),
            machine: SyncMachine::new(proxy, info, SyncSettings::new(MIN_SYNC_PERIOD, SYNC_PERIOD)),
            kernel: IpvsTable::default(),
            cache: SortedMap::new(),
            events: VecDeque::new(),
            syncs: VecDeque::new(),
            unsynced: 0,
            now: Time::ZERO,
        }
    }

    /// Catches up with `cp` at its clock: the sync loop first runs the
    /// syncs that fell due since the last call, then the changes since
    /// then arrive as watch events, and a sync runs at once if one is due.
    pub fn follow(&mut self, cp: &ControlPlane) {
        let now = cp.now().max(self.now);
        // Before its first list kube-proxy has nothing to sync.
        let first = self.cache.is_empty();
        if !first {
            self.run_until(now);
        }
        let changed = self.watch(cp, now);
        if first {
            let node = cp.node_info(&self.node).unwrap_or_default();
            self.machine.rebuild(cp.services(), cp.endpoint_slices(), node);
        } else {
            for (namespace, name) in changed {
                let key = format!("{namespace}/{name}");
                match cp.service(&namespace, &name) {
                    Some(svc) => {
                        let slices: Vec<&EndpointSlice> = cp.endpoint_slices_for(&namespace, &name);
                        self.machine.update_service(&key, Some((svc, &slices)));
                    }
                    None => self.machine.update_service(&key, None),
                }
            }
        }
        self.now = now;
        self.run_until(now);
    }

    /// The events for what changed in `cp` since the cache was last
    /// updated; returns the Services (`namespace`, `name`) they touch.
    fn watch(&mut self, cp: &ControlPlane, now: Time) -> SortedSet<(String, String)> {
        let mut current: SortedMap<Key, Seen> = SortedMap::new();
        for svc in cp.services() {
            let ns = svc.metadata.namespace_or_default().to_string();
            let seen = (svc.metadata.resource_version.clone(), svc.metadata.name.clone());
            current.insert(("Service", ns, svc.metadata.name.clone()), seen);
        }
        for slice in cp.endpoint_slices() {
            let ns = slice.metadata.namespace_or_default().to_string();
            let service = slice
                .metadata
                .labels
                .get(SERVICE_NAME_LABEL)
                .cloned()
                .unwrap_or_default();
            let seen = (slice.metadata.resource_version.clone(), service);
            current.insert(("EndpointSlice", ns, slice.metadata.name.clone()), seen);
        }
        let mut arrived: Vec<(&'static str, Key, Seen)> = (self.cache.iter())
            .filter(|(key, _)| !current.contains_key(*key))
            .map(|(key, seen)| ("DELETED", key.clone(), seen.clone()))
            .collect();
        for (key, seen) in current {
            match self.cache.get(&key) {
                None => arrived.push(("ADDED", key, seen)),
                Some(old) if old.0 != seen.0 => arrived.push(("MODIFIED", key, seen)),
                Some(_) => {}
            }
        }
        let mut touched = SortedSet::new();
        for (event_type, key, seen) in arrived {
            self.events.push_back(WatchEvent {
                at: now.as_millis(),
                event_type,
                kind: key.0,
                object: format!("{}/{}", key.1, key.2),
                resource_version: seen.0.clone(),
            });
            self.unsynced += 1;
            touched.insert((key.1.clone(), seen.1.clone()));
            if event_type == "DELETED" {
                self.cache.remove(&key);
            } else {
                self.cache.insert(key, seen);
            }
        }
        while self.events.len() > KEPT {
            self.events.pop_front();
        }
        touched.retain(|(_, service)| !service.is_empty());
        touched
    }

    /// Plays out the sync loop's timers up to `now`.
    fn run_until(&mut self, now: Time) {
        for _ in 0..MAX_FIRINGS {
            let Some(due) = self.machine.poll_timeout() else { break };
            let at = due.max(self.now);
            if at > now {
                return;
            }
            if !self.machine.handle_timeout(at) {
                break;
            }
            self.serve(at);
        }
        // Left alone for long: skip to the present.
        if self.machine.handle_timeout(now) {
            self.serve(now);
        }
    }

    /// Answers the machine's actions from the in-memory kernel.
    fn serve(&mut self, at: Time) {
        while let Some(action) = self.machine.poll_action() {
            let answer = match action {
                SyncAction::ObserveAll => SyncInput::Observed(self.kernel.clone()),
                SyncAction::ObserveVirtualServers(keys) => SyncInput::ObservedVirtualServers(crate::sort::map_from(
                    (keys.iter()).filter_map(|k| self.kernel.virtual_servers.get(k).map(|vs| (*k, vs.clone()))),
                )),
                SyncAction::ObserveOutline => SyncInput::ObservedOutline(TableOutline::of(&self.kernel)),
                SyncAction::Apply(operations) => {
                    let failed = (operations.into_iter())
                        .filter_map(|op| {
                            apply_operation(&mut self.kernel, &op)
                                .err()
                                .map(|e| (op, e.to_string()))
                        })
                        .collect();
                    SyncInput::Applied(failed)
                }
            };
            self.machine.handle(answer, at);
        }
        while let Some(report) = self.machine.poll_report() {
            let record = SyncRecord {
                at: report.started.as_millis(),
                full: report.full,
                events: std::mem::take(&mut self.unsynced),
                operations: report.operations(),
                count: 1,
            };
            let idle = |r: &SyncRecord| r.full && r.events == 0 && r.operations == 0;
            match self.syncs.back_mut() {
                Some(last) if idle(last) && idle(&record) => last.count += 1,
                _ => self.syncs.push_back(record),
            }
            while self.syncs.len() > KEPT {
                self.syncs.pop_front();
            }
        }
    }

    /// What the page shows.
    pub fn report(&self) -> Report {
        Report {
            node: self.node.clone(),
            min_sync_period_ms: MIN_SYNC_PERIOD.as_millis() as u64,
            sync_period_ms: SYNC_PERIOD.as_millis() as u64,
            now: self.now.as_millis(),
            events: self.events.iter().cloned().collect(),
            cache: (self.cache.iter())
                .map(|((kind, ns, name), (rv, _))| Cached {
                    kind,
                    object: format!("{ns}/{name}"),
                    resource_version: rv.clone(),
                })
                .collect(),
            syncs: self.syncs.iter().cloned().collect(),
            pending_events: self.unsynced,
            next_sync_at: self.machine.poll_timeout().map(|t| t.max(self.now).as_millis()),
        }
    }

    /// The IPVS table the syncs have programmed.
    pub fn kernel(&self) -> &IpvsTable {
        &self.kernel
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::console::{preset, run};

    fn cluster() -> ControlPlane {
        preset::cluster("10.96.0.0/12", 0, preset::ControlPlaneShape::Single).unwrap()
    }

    fn at(cp: &mut ControlPlane, view: &mut KubeProxyView, ms: u64, line: &str) {
        preset::advance(cp, Time(ms));
        run(cp, line, None);
        view.follow(cp);
    }

    #[test]
    fn the_list_then_watch_events_and_one_sync_per_min_sync_period() {
        let mut cp = cluster();
        let mut view = KubeProxyView::new(&cp, preset::NODE_NAME);
        view.follow(&cp);
        let first = view.report();
        assert!(first.events.iter().all(|e| e.event_type == "ADDED"));
        assert!(first
            .events
            .iter()
            .any(|e| e.kind == "Service" && e.object == "default/kubernetes"));
        assert_eq!(first.syncs.len(), 1, "the first sync ran at once");
        assert!(first.syncs[0].full && first.syncs[0].operations > 0);
        assert_eq!(view.kernel(), &cp.node_ipvs_table(preset::NODE_NAME).unwrap());

        // A change 5 s later syncs at once; two more 200 ms apart wait for
        // the min sync period and go in one sync.
        at(&mut cp, &mut view, 5_000, "kubectl create svc clusterip a --tcp=80");
        at(&mut cp, &mut view, 5_200, "kubectl create svc clusterip b --tcp=80");
        at(&mut cp, &mut view, 5_400, "kubectl delete svc a");
        let waiting = view.report();
        assert_eq!(waiting.pending_events, 4, "b and its slice, a and its slice gone");
        assert_eq!(waiting.next_sync_at, Some(6_000));
        preset::advance(&mut cp, Time(7_000));
        view.follow(&cp);
        let report = view.report();
        let syncs: Vec<(u64, usize)> = report.syncs.iter().map(|s| (s.at, s.events)).collect();
        assert_eq!(syncs[1..], [(5_000, 2), (6_000, 4)]);
        let deleted: Vec<(&str, &str)> = (report.events.iter())
            .filter(|e| e.event_type == "DELETED")
            .map(|e| (e.kind, e.object.as_str()))
            .collect();
        assert_eq!(deleted.len(), 2, "{deleted:?}");
        assert!(deleted.contains(&("Service", "default/a")), "{deleted:?}");
        assert!(deleted
            .iter()
            .any(|(kind, o)| *kind == "EndpointSlice" && o.starts_with("default/a-")));
        assert_eq!(view.kernel(), &cp.node_ipvs_table(preset::NODE_NAME).unwrap());
        assert!(report.cache.iter().any(|c| c.object == "default/b"));
        assert!(!report.cache.iter().any(|c| c.object == "default/a"));

        // An hour alone: the periodic resyncs fold into one record.
        preset::advance(&mut cp, Time(3_607_000));
        view.follow(&cp);
        let last = view.report().syncs.last().cloned().unwrap();
        assert!(last.full && last.count > 1 && last.operations == 0, "{last:?}");
    }
}
