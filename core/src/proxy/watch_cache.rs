//! What kube-proxy's informers hold, fed by list-and-watch events, and
//! what that means for the [`SyncMachine`]: the proxy half of API mode,
//! without I/O.
//!
//! The caller turns each watch stream's events into calls here, in the
//! shape of a reflector: [`WatchCache::begin_list`], [`WatchCache::listed`]
//! for each object of a (re)list, [`WatchCache::end_list`], then
//! [`WatchCache::applied`] and [`WatchCache::deleted`] for each change.
//! [`WatchCache::feed`] hands what changed to the machine.
//!
//! kube-proxy's rules:
//!
//! - Services labelled `service.kubernetes.io/service-proxy-name` belong to
//!   another proxy, and EndpointSlices labelled
//!   `service.kubernetes.io/headless` to headless Services: both are left
//!   out, as kube-proxy's label selectors leave them out (an object that
//!   gains such a label is gone as far as the proxy is concerned).
//! - The node's name, addresses and zone come from its Node object.
//! - Nothing is removed before the first complete list of Services, of
//!   EndpointSlices and of the Node has arrived: until then the machine is
//!   not fed at all.
//! - A relist (after `410 Gone`) removes nothing until it is complete; only
//!   then do the objects it did not list go.
//! - `default/kubernetes` first: once the first lists are complete, that
//!   Service is synced at once on its own, as a partial sync over the
//!   kernel's table (so nothing else is touched); the rest follows in the
//!   next sync, a full one. Sooner still: the caller may read that Service
//!   and its slices on their own at start ([`WatchCache::kubernetes_read`]),
//!   and they are synced the same way before the lists of a large cluster
//!   are in, the lists then starting a full sync at once (kube-proxy left it unreachable for over 30 s on a node joining
//!   a cluster of 2,000 Services: kubernetes/kubernetes#133773).
//! - While the first lists arrive, once `default/kubernetes` read on its
//!   own is programmed and the Node's list is in, what has been listed so
//!   far is programmed as it comes, additions only
//!   ([`SyncMachine::start_additions`]), each Service once its first
//!   EndpointSlice is in (or once the lists are, for one without any), so
//!   it is computed once, with its endpoints: missing addresses, virtual servers
//!   and real servers are added, nothing is changed or removed (a
//!   Service's slices may not all be in yet), and no other sync runs until
//!   the lists are complete, when the full sync compares everything (over
//!   the machine's copy of the kernel's table, read at the `kubernetes`
//!   sync and kept up to date since: [`SyncMachine::start_full_sync_over_copy`]).

use super::sync_loop::SyncMachine;
use super::NodeInfo;
use crate::api::endpoint_slice::HEADLESS_LABEL;
use crate::api::{EndpointSlice, Node, Service};
use crate::collections::{SortedMap, SortedSet};
use crate::time::Time;
use std::net::IpAddr;

/// The label that hands a Service to another proxy.
pub const SERVICE_PROXY_NAME_LABEL: &str = "service.kubernetes.io/service-proxy-name";

/// The kinds the proxy lists and watches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum WatchedKind {
    /// `v1/Service`.
    Service,
    /// `discovery.k8s.io/v1/EndpointSlice`.
    EndpointSlice,
    /// This node's `v1/Node`.
    Node,
}

/// An object of a watched kind.
#[derive(Debug, Clone, PartialEq)]
pub enum Watched {
    /// A Service.
    Service(Box<Service>),
    /// An EndpointSlice.
    EndpointSlice(Box<EndpointSlice>),
    /// The node.
    Node(Box<Node>),
}

impl Watched {
    /// Its kind.
    pub fn kind(&self) -> WatchedKind {
        match self {
            Watched::Service(_) => WatchedKind::Service,
            Watched::EndpointSlice(_) => WatchedKind::EndpointSlice,
            Watched::Node(_) => WatchedKind::Node,
        }
    }
}

/// The proxy's view of the cluster.
#[derive(Debug, Clone)]
pub struct WatchCache {
    node_name: String,
    /// `--node-ip`: when given, the node's addresses whatever its Node says.
    flag_ips: Vec<IpAddr>,
    /// The host's addresses, for a Node object without any.
    host_ips: Vec<IpAddr>,
    services: SortedMap<String, Service>,
    /// Slices by `namespace/name` of the slice.
    slices: SortedMap<String, EndpointSlice>,
    /// The keys of `slices` by the Service they belong to
    /// (`namespace/service`), so one Service's update does not scan them all.
    slices_of: SortedMap<String, SortedSet<String>>,
    node: Option<Node>,
    /// Kinds whose first list is complete.
    listed_once: SortedSet<WatchedKind>,
    /// Relists under way: the keys listed so far.
    relisting: SortedMap<WatchedKind, SortedSet<String>>,
    /// Services (`namespace/name`) whose Service or slices changed since
    /// the machine was last fed.
    changed: SortedSet<String>,
    node_changed: bool,
    /// Whether the machine has been fed (the first lists were complete).
    fed: bool,
    /// `default/kubernetes` and its slices read on their own at start, not
    /// yet handed to the machine.
    kubernetes_early: Option<(Service, Vec<EndpointSlice>)>,
    /// Whether they were handed to the machine before the lists were in.
    kubernetes_fed_early: bool,
    /// Whether the machine's desired table was rebuilt for the additions
    /// made while the first lists arrive (with the Node's information).
    adding_early: bool,
    /// Services listed while the first lists arrive whose EndpointSlices
    /// have not come yet: left for their first slice (which marks them
    /// changed again) or, failing that, for the full sync after the
    /// lists, so each is computed once rather than once without its
    /// endpoints and again with them.
    no_slices_yet: SortedSet<String>,
    /// kube-proxy's change counts since [`WatchCache::take_change_stats`].
    stats: ChangeStats,
}

/// kube-proxy's change counts: events since the last take, the Services
/// with changes not synced yet, and the `last-change-trigger-time` of the
/// EndpointSlices that changed (for its network programming latency).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChangeStats {
    /// Service events (`kubeproxy_sync_proxy_rules_service_changes_total`).
    pub service_changes: u64,
    /// EndpointSlice events (`..._endpoint_changes_total`).
    pub endpoint_changes: u64,
    /// Services whose Service changed.
    pub pending_services: SortedSet<String>,
    /// Services whose EndpointSlices changed.
    pub pending_endpoints: SortedSet<String>,
    /// When the endpoint changes were triggered
    /// (`endpoints.kubernetes.io/last-change-trigger-time`).
    pub trigger_times: Vec<Time>,
}

/// The annotation the EndpointSlice controller stamps with the time of the
/// change that made it write the slice.
pub const LAST_CHANGE_TRIGGER_TIME: &str = "endpoints.kubernetes.io/last-change-trigger-time";

impl WatchCache {
    /// An empty cache for the node `node_name`.
    pub fn new(node_name: &str) -> WatchCache {
        WatchCache {
            node_name: node_name.to_string(),
            flag_ips: Vec::new(),
            host_ips: Vec::new(),
            services: SortedMap::new(),
            slices: SortedMap::new(),
            slices_of: SortedMap::new(),
            node: None,
            listed_once: SortedSet::new(),
            relisting: SortedMap::new(),
            changed: SortedSet::new(),
            node_changed: false,
            fed: false,
            kubernetes_early: None,
            kubernetes_fed_early: false,
            adding_early: false,
            no_slices_yet: SortedSet::new(),
            stats: ChangeStats::default(),
        }
    }

    /// `default/kubernetes` and its EndpointSlices, read on their own at
    /// start: the next [`WatchCache::feed`] syncs that Service alone, even
    /// before the first lists are complete. Taken only until then: once
    /// the lists are in, their copies are the newer ones and this is
    /// ignored. The proxy's rules apply as to listed objects (a Service of
    /// another proxy, headless slices and other Services' slices are left
    /// out).
    pub fn kubernetes_read(&mut self, service: Service, slices: Vec<EndpointSlice>) {
        let key = object_key(&service.metadata.namespace, &service.metadata.name);
        if self.fed || key != KUBERNETES || service.metadata.labels.contains_key(SERVICE_PROXY_NAME_LABEL) {
            return;
        }
        let mut slices: Vec<EndpointSlice> = slices
            .into_iter()
            .filter(|s| !s.metadata.labels.contains_key(HEADLESS_LABEL) && service_of(s) == KUBERNETES)
            .collect();
        crate::sort::sort_by(&mut slices, |a, b| a.metadata.name.cmp(&b.metadata.name));
        self.kubernetes_early = Some((service, slices));
    }

    /// Where the node's addresses come from besides its Node object:
    /// `flags` (`--node-ip`) win over the Node's; `host` is used when
    /// neither has any.
    pub fn set_node_ips(&mut self, flags: Vec<IpAddr>, host: Vec<IpAddr>) {
        self.flag_ips = flags;
        self.host_ips = host;
    }

    /// Whether the first lists of all three kinds are complete.
    pub fn synced(&self) -> bool {
        self.listed_once.len() == 3
    }

    /// The Services the proxy serves, by `namespace/name`.
    pub fn services(&self) -> impl Iterator<Item = &Service> {
        self.services.values()
    }

    /// The EndpointSlices the proxy uses.
    pub fn slices(&self) -> impl Iterator<Item = &EndpointSlice> {
        self.slices.values()
    }

    /// The node as the proxy sees it: its name, zone and addresses from
    /// its Node object, the addresses from the flags when given, else the
    /// host's when the Node has none.
    pub fn node_info(&self) -> NodeInfo {
        let mut info = self
            .node
            .as_ref()
            .and_then(|n| NodeInfo::from_node(n).ok())
            .unwrap_or_else(|| NodeInfo {
                name: self.node_name.clone(),
                ips: Vec::new(),
                zone: None,
            });
        if !self.flag_ips.is_empty() {
            info.ips = self.flag_ips.clone();
        } else if info.ips.is_empty() {
            info.ips = self.host_ips.clone();
        }
        info
    }

    /// A (re)list of `kind` begins: objects it does not list go when it
    /// ends, not before.
    pub fn begin_list(&mut self, kind: WatchedKind) {
        self.relisting.insert(kind, SortedSet::new());
    }

    /// One object of the list under way.
    pub fn listed(&mut self, object: Watched) {
        let kind = object.kind();
        if let Some(key) = self.applied(object) {
            self.relisting.entry(kind).or_default().insert(key);
        }
    }

    /// The list of `kind` is complete: what it did not list is deleted.
    pub fn end_list(&mut self, kind: WatchedKind) {
        let listed = self.relisting.remove(&kind).unwrap_or_default();
        let gone: Vec<String> = match kind {
            WatchedKind::Service => self.services.keys().filter(|k| !listed.contains(*k)).cloned().collect(),
            WatchedKind::EndpointSlice => self.slices.keys().filter(|k| !listed.contains(*k)).cloned().collect(),
            WatchedKind::Node => match &self.node {
                Some(_) if listed.is_empty() => vec![self.node_name.clone()],
                _ => Vec::new(),
            },
        };
        for key in gone {
            self.remove(kind, &key);
        }
        self.listed_once.insert(kind);
    }

    /// An object was added or changed; returns its key when the proxy
    /// keeps it (`None` when it is left out, or is another node).
    pub fn applied(&mut self, object: Watched) -> Option<String> {
        match object {
            Watched::Service(svc) => {
                let key = object_key(&svc.metadata.namespace, &svc.metadata.name);
                if svc.metadata.labels.contains_key(SERVICE_PROXY_NAME_LABEL) {
                    self.remove(WatchedKind::Service, &key);
                    return None;
                }
                if self.services.get(&key) != Some(&svc) {
                    self.changed.insert(key.clone());
                    self.stats.service_changes += 1;
                    self.stats.pending_services.insert(key.clone());
                    self.services.insert(key.clone(), *svc);
                }
                Some(key)
            }
            Watched::EndpointSlice(slice) => {
                let key = object_key(&slice.metadata.namespace, &slice.metadata.name);
                if slice.metadata.labels.contains_key(HEADLESS_LABEL) || slice.service_name().is_none() {
                    self.remove(WatchedKind::EndpointSlice, &key);
                    return None;
                }
                if self.slices.get(&key) != Some(&slice) {
                    if let Some(old) = self.slices.get(&key) {
                        let old_service = service_of(old);
                        self.unindex_slice(&old_service, &key);
                        self.changed.insert(old_service);
                    }
                    let service = service_of(&slice);
                    self.slices_of.entry(service.clone()).or_default().insert(key.clone());
                    self.changed.insert(service);
                    self.note_endpoint_change(&slice);
                    self.slices.insert(key.clone(), *slice);
                }
                Some(key)
            }
            Watched::Node(node) => {
                if node.metadata.name != self.node_name {
                    return None;
                }
                if self.node.as_ref() != Some(&*node) {
                    self.node = Some(*node);
                    self.node_changed = true;
                }
                Some(self.node_name.clone())
            }
        }
    }

    /// An object was deleted.
    pub fn deleted(&mut self, object: &Watched) {
        let (kind, key) = match object {
            Watched::Service(s) => (
                WatchedKind::Service,
                object_key(&s.metadata.namespace, &s.metadata.name),
            ),
            Watched::EndpointSlice(s) => (
                WatchedKind::EndpointSlice,
                object_key(&s.metadata.namespace, &s.metadata.name),
            ),
            Watched::Node(n) => (WatchedKind::Node, n.metadata.name.clone()),
        };
        self.remove(kind, &key);
    }

    fn remove(&mut self, kind: WatchedKind, key: &str) {
        match kind {
            WatchedKind::Service => {
                if self.services.remove(key).is_some() {
                    self.changed.insert(key.to_string());
                    self.stats.service_changes += 1;
                    self.stats.pending_services.insert(key.to_string());
                }
            }
            WatchedKind::EndpointSlice => {
                if let Some(old) = self.slices.remove(key) {
                    let service = service_of(&old);
                    self.unindex_slice(&service, key);
                    self.changed.insert(service);
                    self.note_endpoint_change(&old);
                }
            }
            WatchedKind::Node => {
                if key == self.node_name && self.node.take().is_some() {
                    self.node_changed = true;
                }
            }
        }
    }

    /// Takes slice `key` out of Service `service`'s index entry.
    fn unindex_slice(&mut self, service: &str, key: &str) {
        if let Some(keys) = self.slices_of.get_mut(service) {
            keys.remove(key);
            if keys.is_empty() {
                self.slices_of.remove(service);
            }
        }
    }

    fn note_endpoint_change(&mut self, slice: &EndpointSlice) {
        self.stats.endpoint_changes += 1;
        self.stats.pending_endpoints.insert(service_of(slice));
        if let Some(at) = slice
            .metadata
            .annotations
            .get(LAST_CHANGE_TRIGGER_TIME)
            .and_then(|t| Time::parse_rfc3339(t))
        {
            self.stats.trigger_times.push(at);
        }
    }

    /// The change counts since the last call, which starts them again.
    pub fn take_change_stats(&mut self) -> ChangeStats {
        std::mem::take(&mut self.stats)
    }

    /// Whether the node may take traffic ([`super::health::node_eligible`]).
    pub fn node_eligible(&self) -> bool {
        super::health::node_eligible(self.node.as_ref())
    }

    /// Hands what changed to `machine`. Before the first lists are complete
    /// only `default/kubernetes` read on its own
    /// ([`WatchCache::kubernetes_read`]) is synced, alone; then, once the
    /// Node's list is in, what has been listed so far is synced with
    /// additions only ([`SyncMachine::start_additions`]); and the first
    /// lists start a full sync at once (after the additions of what came
    /// last). Without that early read the
    /// machine gets everything once the lists are in, with
    /// `default/kubernetes` synced at once on its own (a partial sync over
    /// the kernel's table, touching nothing else) and the rest in the full
    /// sync that follows. Call after each batch of events, and again after
    /// each sync it starts.
    pub fn feed(&mut self, machine: &mut SyncMachine, now: Time) {
        if !self.synced() {
            if self.kubernetes_fed_early {
                self.add_early(machine, now);
            } else if let Some((service, slices)) = &self.kubernetes_early {
                let slices: Vec<&EndpointSlice> = slices.iter().collect();
                machine.update_service(KUBERNETES, Some((service, &slices)));
                machine.start_sync(false, now);
                self.kubernetes_fed_early = true;
            }
            return;
        }
        if !self.fed && self.adding_early && self.changed.iter().any(|key| self.services.contains_key(key)) {
            // The last of the lists are added first, as they came.
            self.add_early(machine, now);
            return;
        }
        if !self.fed && self.kubernetes_fed_early {
            // `kubernetes` is programmed already: everything at once.
            self.fed = true;
            self.kubernetes_early = None;
            if self.adding_early && !self.node_changed {
                self.catch_up(machine);
            } else {
                machine.rebuild(self.services.values(), self.slices.values(), self.node_info());
                self.no_slices_yet.clear();
            }
            if self.adding_early {
                // The kernel was read at the `kubernetes` sync and the
                // machine's copy has followed every addition since.
                machine.start_full_sync_over_copy(now);
            } else {
                machine.start_sync(true, now);
            }
            self.changed.clear();
            self.node_changed = false;
            return;
        }
        if !self.fed {
            self.fed = true;
            self.kubernetes_early = None;
            let others = self.services.iter().filter(|(k, _)| *k != KUBERNETES).map(|(_, s)| s);
            let their_slices = self.slices.values().filter(|s| service_of(s) != KUBERNETES);
            machine.rebuild(others, their_slices, self.node_info());
            self.update(machine, KUBERNETES);
            machine.start_sync(false, now);
            self.changed.clear();
            self.node_changed = false;
            return;
        }
        if std::mem::take(&mut self.node_changed) {
            machine.rebuild(self.services.values(), self.slices.values(), self.node_info());
            self.changed.clear();
            return;
        }
        for key in std::mem::take(&mut self.changed) {
            self.update(machine, &key);
        }
    }

    /// While the first lists arrive (`default/kubernetes` programmed): once
    /// the Node's list is in, the Services listed or changed since the last
    /// call go to the machine and an additions-only sync starts: each
    /// Service once its first slice is in, its virtual and real servers
    /// first, its nftables elements (not programmed before the lists are
    /// in) at [`WatchCache::catch_up`]. The first
    /// time, the machine's desired table is rebuilt with the Node's
    /// information and `default/kubernetes` as read on its own (already
    /// programmed), so it is not synced again.
    fn add_early(&mut self, machine: &mut SyncMachine, now: Time) {
        if !self.listed_once.contains(&WatchedKind::Node) || machine.is_syncing() {
            return;
        }
        if !std::mem::replace(&mut self.adding_early, true) {
            let kubernetes = self.kubernetes_early.as_ref();
            machine.rebuild(
                kubernetes.map(|(service, _)| service),
                kubernetes.into_iter().flat_map(|(_, slices)| slices),
                self.node_info(),
            );
            // The Node as listed is in; only a change from here on needs
            // the whole table computed again.
            self.node_changed = false;
        }
        let slices_listed = self.listed_once.contains(&WatchedKind::EndpointSlice);
        let mut added = false;
        for key in std::mem::take(&mut self.changed) {
            // A Service not listed yet comes back here with its Service.
            let Some(service) = self.services.get(&key).filter(|_| key != KUBERNETES) else {
                continue;
            };
            if !slices_listed && !self.slices_of.contains_key(&key) {
                self.no_slices_yet.insert(key);
                continue;
            }
            self.no_slices_yet.remove(&key);
            machine.add_table_first(service, &self.slices_for(&key));
            added = true;
        }
        if added {
            machine.start_additions(now);
        }
    }

    /// Once the first lists are in, after additions while they arrived
    /// (with the Node as it still is): the machine holds every Service
    /// added as it was listed, so only the rest is handed over, not the
    /// whole desired table again (in the benchmark's VM at 5,000
    /// Services, 51 ms of CPU instead of 788): the Services changed since
    /// the last additions, `default/kubernetes` as listed (it was read on
    /// its own), and Services the machine has that the lists no longer
    /// hold; then the nftables elements of the Services added table first.
    fn catch_up(&mut self, machine: &mut SyncMachine) {
        let gone: Vec<String> = (machine.services())
            .filter(|key| !self.services.contains_key(*key))
            .map(str::to_string)
            .collect();
        let mut keys = std::mem::take(&mut self.changed);
        keys.extend(gone);
        keys.extend(std::mem::take(&mut self.no_slices_yet));
        keys.insert(KUBERNETES.to_string());
        for key in &keys {
            self.update(machine, key);
        }
        let behind: Vec<String> = machine.ruleset_behind().map(str::to_string).collect();
        for key in behind {
            match self.services.get(&key) {
                Some(service) => machine.update_ruleset(&key, Some((service, &self.slices_for(&key)))),
                None => machine.update_ruleset(&key, None),
            }
        }
    }

    /// Recomputes Service `key` in the machine from the cache.
    fn update(&self, machine: &mut SyncMachine, key: &str) {
        match self.services.get(key) {
            Some(service) => machine.update_service(key, Some((service, &self.slices_for(key)))),
            None => machine.update_service(key, None),
        }
    }

    /// Service `key`'s slices, in order of name.
    fn slices_for(&self, key: &str) -> Vec<&EndpointSlice> {
        (self.slices_of.get(key).into_iter().flatten())
            .filter_map(|slice| self.slices.get(slice))
            .collect()
    }
}

/// `default/kubernetes`.
const KUBERNETES: &str = "default/kubernetes";

fn object_key(namespace: &str, name: &str) -> String {
    let namespace = if namespace.is_empty() { "default" } else { namespace };
    format!("{namespace}/{name}")
}

/// `namespace/service` of a slice.
fn service_of(slice: &EndpointSlice) -> String {
    object_key(&slice.metadata.namespace, slice.service_name().unwrap_or_default())
}

#[cfg(test)]
mod tests;
