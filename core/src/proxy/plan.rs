//! The plan: the ordered operations that turn the observed IPVS table (what
//! the kernel has, with its connection counters) into the desired one.
//!
//! [`plan`] is a pure diff of two [`IpvsTable`]s: it walks both maps in step
//! and emits operations only where they differ, so an unchanged table gives
//! an empty plan and a plan's size follows what changed. [`plan_changes`]
//! looks only at the virtual servers and addresses a
//! [`DesiredIndex`](super::index::DesiredIndex) update reported (plus the
//! real servers still draining), for microsecond updates on large tables.
//!
//! Order, as the kernel accepts it: bind new addresses; then, virtual server
//! by virtual server, add or update it before adding, updating or deleting
//! its real servers; then delete the virtual servers no longer wanted
//! (deleting a virtual server deletes its real servers with it); finally
//! unbind the addresses no longer wanted.
//!
//! Graceful termination: a real server no longer wanted is deleted at once
//! for UDP and SCTP, or for TCP when it has no connections (active +
//! inactive). Otherwise it is set to weight 0 and kept, draining, until its
//! connections reach 0 or `drain_timeout` has passed since draining began;
//! if its endpoint comes back meanwhile, it is restored. The drain start
//! times are a small [`DrainState`] the plan takes and returns (inside
//! [`PlanState`]), so time is an input like everything else.
//!
//! Ownership: the plan only touches virtual servers it manages: those on
//! addresses bound on `kube-ipvs0` (observed or desired), those on the
//! node's IPs with a port in the NodePort range, and those it wanted before
//! on addresses that are not bound (an external IP that is the node's own
//! address, a NodePort on a node address that changed), which
//! [`PlanState::claimed`] remembers. Anything else in the kernel
//! (keepalived, a hand-made `ipvsadm` rule) is never updated or deleted.

use super::desired::ProxyConfig;
use super::index::Changes;
use super::node::NodeInfo;
use super::table::{Forward, IpvsTable, Protocol, RealServer, VirtualServer, VirtualServerKey, VirtualServerSettings};
use crate::apiserver::node_port::PortRange;
use crate::collections::{SortedMap, SortedSet};
use crate::time::Time;
use serde::{Deserialize, Serialize};
use std::iter::Peekable;
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

/// One change to the kernel's IPVS table or to `kube-ipvs0`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "camelCase", rename_all_fields = "camelCase")]
pub enum Operation {
    /// Bind an address on `kube-ipvs0` (/32 or /128).
    BindAddress {
        /// The address.
        address: IpAddr,
    },
    /// Create a virtual server (`NEW_SERVICE`, `ipvsadm -A`).
    AddVirtualServer {
        /// Which one.
        virtual_server: VirtualServerKey,
        /// Scheduler, flags, timeout, netmask.
        settings: VirtualServerSettings,
    },
    /// Change a virtual server's settings (`SET_SERVICE`, `ipvsadm -E`).
    UpdateVirtualServer {
        /// Which one.
        virtual_server: VirtualServerKey,
        /// The new settings.
        settings: VirtualServerSettings,
    },
    /// Delete a virtual server and its real servers (`DEL_SERVICE`,
    /// `ipvsadm -D`).
    DeleteVirtualServer {
        /// Which one.
        virtual_server: VirtualServerKey,
    },
    /// Add a real server (`NEW_DEST`, `ipvsadm -a`).
    AddRealServer {
        /// Its virtual server.
        virtual_server: VirtualServerKey,
        /// Its address and port.
        real_server: SocketAddr,
        /// Forwarding method.
        forward: Forward,
        /// Weight.
        weight: u32,
    },
    /// Change a real server's forwarding method or weight (`SET_DEST`,
    /// `ipvsadm -e`); weight 0 drains it.
    UpdateRealServer {
        /// Its virtual server.
        virtual_server: VirtualServerKey,
        /// Its address and port.
        real_server: SocketAddr,
        /// Forwarding method.
        forward: Forward,
        /// New weight.
        weight: u32,
    },
    /// Delete a real server (`DEL_DEST`, `ipvsadm -d`).
    DeleteRealServer {
        /// Its virtual server.
        virtual_server: VirtualServerKey,
        /// Its address and port.
        real_server: SocketAddr,
    },
    /// Remove an address from `kube-ipvs0`.
    UnbindAddress {
        /// The address.
        address: IpAddr,
    },
}

/// When each draining real server started draining, by virtual server.
/// JSON: `{"TCP/10.96.0.1:443": {"10.244.1.5:8443": 120000}}` (milliseconds).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct DrainState(SortedMap<VirtualServerKey, SortedMap<SocketAddr, Time>>);

impl DrainState {
    /// When a real server started draining, if it is draining.
    pub fn since(&self, vs: &VirtualServerKey, rs: &SocketAddr) -> Option<Time> {
        self.0.get(vs).and_then(|m| m.get(rs)).copied()
    }

    /// The number of draining real servers.
    pub fn len(&self) -> usize {
        self.0.values().map(SortedMap::len).sum()
    }

    /// True when nothing is draining.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Every draining real server with its start time.
    pub fn iter(&self) -> impl Iterator<Item = (&VirtualServerKey, &SocketAddr, Time)> {
        self.0
            .iter()
            .flat_map(|(vs, m)| m.iter().map(move |(rs, since)| (vs, rs, *since)))
    }

    fn virtual_servers(&self) -> impl Iterator<Item = &VirtualServerKey> {
        self.0.keys()
    }

    fn replace(&mut self, vs: VirtualServerKey, entries: SortedMap<SocketAddr, Time>) {
        if entries.is_empty() {
            self.0.remove(&vs);
        } else {
            self.0.insert(vs, entries);
        }
    }
}

/// What one plan passes to the next. Keep it between plans (the agent
/// may persist it across restarts); an empty state is a valid start.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PlanState {
    /// The real servers draining, with their start times.
    #[serde(default)]
    pub draining: DrainState,
    /// Virtual servers the proxy wants on addresses it does not bind on
    /// `kube-ipvs0` (node addresses): remembered so they can be deleted when
    /// no longer wanted, even outside the NodePort range.
    #[serde(default)]
    pub claimed: SortedSet<VirtualServerKey>,
}

/// A plan: operations in order, and the state after them.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Plan {
    /// What to do, in order.
    pub operations: Vec<Operation>,
    /// The state to pass to the next plan once these operations are applied.
    pub state: PlanState,
}

impl Plan {
    /// True when there is nothing to do.
    pub fn is_empty(&self) -> bool {
        self.operations.is_empty()
    }
}

/// The inputs of a plan besides the two tables and the plan state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlanContext {
    /// The current time.
    pub now: Time,
    /// How long a real server may drain before it is deleted anyway.
    pub drain_timeout: Duration,
    /// The node's addresses (NodePort virtual servers live on them).
    pub node_ips: Vec<IpAddr>,
    /// The NodePort range.
    pub node_port_range: PortRange,
    /// Addresses whose virtual servers are never deleted
    /// (`--ipvs-exclude-cidrs`), unless wanted.
    pub exclude_cidrs: Vec<ipnetwork::IpNetwork>,
}

impl PlanContext {
    /// The context for `node` at `now` under `config`.
    pub fn new(config: &ProxyConfig, node: &NodeInfo, now: Time) -> PlanContext {
        PlanContext {
            now,
            drain_timeout: config.drain_timeout(),
            node_ips: node.ips.clone(),
            node_port_range: config.node_port_range,
            exclude_cidrs: config.exclude_cidrs.clone(),
        }
    }

    /// Whether `address` lies in `--ipvs-exclude-cidrs`: nothing there is
    /// deleted or unbound unless wanted, as kube-proxy leaves it.
    pub fn excluded(&self, address: IpAddr) -> bool {
        self.exclude_cidrs.iter().any(|c| c.contains(address))
    }

    /// True when the proxy manages this virtual server: it wants it, or
    /// (outside the exclude CIDRs) it is on an address bound (or to be
    /// bound) on `kube-ipvs0`, it is a NodePort on a node address, or an
    /// earlier plan claimed it.
    pub fn owns(&self, key: &VirtualServerKey, observed: &IpvsTable, desired: &IpvsTable, state: &PlanState) -> bool {
        desired.virtual_servers.contains_key(key)
            || (!self.excluded(key.address)
                && (observed.addresses.contains(&key.address)
                    || desired.addresses.contains(&key.address)
                    || (self.node_ips.contains(&key.address) && self.node_port_range.contains(key.port))
                    || state.claimed.contains(key)))
    }
}

/// The operations that turn `observed` into `desired`, given the state the
/// previous plan returned.
pub fn plan(observed: &IpvsTable, desired: &IpvsTable, state: &PlanState, ctx: &PlanContext) -> Plan {
    let mut planner = Planner::new(ctx, observed, desired, state, PlanState::default());
    for address in desired.addresses.difference(&observed.addresses) {
        planner.binds.push(Operation::BindAddress { address: *address });
    }
    for (key, o, d) in merge(&observed.virtual_servers, &desired.virtual_servers) {
        planner.virtual_server(key, o, d);
    }
    for address in observed.addresses.difference(&desired.addresses) {
        if !ctx.excluded(*address) {
            planner.unbinds.push(Operation::UnbindAddress { address: *address });
        }
    }
    planner.finish()
}

/// The same plan as [`plan`], looking only at what `changes` names, the
/// virtual servers on those addresses and the real servers still draining.
/// Equal to [`plan`] when `observed` differed from the previous desired
/// table only by draining real servers; a periodic full [`plan`] catches
/// anything else (changes made behind the proxy's back).
pub fn plan_changes(
    observed: &IpvsTable,
    desired: &IpvsTable,
    changes: &Changes,
    state: &PlanState,
    ctx: &PlanContext,
) -> Plan {
    let mut planner = Planner::new(ctx, observed, desired, state, state.clone());
    let mut keys: SortedSet<VirtualServerKey> = changes.virtual_servers.clone();
    keys.extend(state.draining.virtual_servers().copied());
    for address in &changes.addresses {
        let wanted = desired.addresses.contains(address);
        let bound = observed.addresses.contains(address);
        if wanted && !bound {
            planner.binds.push(Operation::BindAddress { address: *address });
        } else if bound && !wanted && !ctx.excluded(*address) {
            planner.unbinds.push(Operation::UnbindAddress { address: *address });
            keys.extend(observed.virtual_servers_on(*address).map(|(k, _)| *k));
        }
    }
    for key in keys {
        planner.virtual_server(
            key,
            observed.virtual_servers.get(&key),
            desired.virtual_servers.get(&key),
        );
    }
    planner.finish()
}

/// Collects operations in their four phases and the new state.
struct Planner<'a> {
    ctx: &'a PlanContext,
    observed: &'a IpvsTable,
    desired: &'a IpvsTable,
    old: &'a PlanState,
    state: PlanState,
    binds: Vec<Operation>,
    changes: Vec<Operation>,
    deletes: Vec<Operation>,
    unbinds: Vec<Operation>,
}

impl<'a> Planner<'a> {
    fn new(
        ctx: &'a PlanContext,
        observed: &'a IpvsTable,
        desired: &'a IpvsTable,
        old: &'a PlanState,
        state: PlanState,
    ) -> Planner<'a> {
        Planner {
            ctx,
            observed,
            desired,
            old,
            state,
            binds: Vec::new(),
            changes: Vec::new(),
            deletes: Vec::new(),
            unbinds: Vec::new(),
        }
    }

    fn finish(self) -> Plan {
        let mut operations = self.binds;
        operations.extend(self.changes);
        operations.extend(self.deletes);
        operations.extend(self.unbinds);
        Plan {
            operations,
            state: self.state,
        }
    }

    fn virtual_server(
        &mut self,
        key: VirtualServerKey,
        observed: Option<&VirtualServer>,
        desired: Option<&VirtualServer>,
    ) {
        let owned = self.ctx.owns(&key, self.observed, self.desired, self.old);
        if desired.is_some() && !self.desired.addresses.contains(&key.address) {
            self.state.claimed.insert(key);
        } else {
            self.state.claimed.remove(&key);
        }
        let mut draining = SortedMap::new();
        match (observed, desired) {
            (Some(_), None) if owned => self
                .deletes
                .push(Operation::DeleteVirtualServer { virtual_server: key }),
            (_, None) => {}
            (None, Some(d)) => {
                self.changes.push(Operation::AddVirtualServer {
                    virtual_server: key,
                    settings: d.settings.clone(),
                });
                for (addr, rs) in &d.real_servers {
                    self.changes.push(add_real_server(key, *addr, rs));
                }
            }
            (Some(o), Some(d)) => {
                if !o.settings.same_as(&d.settings) {
                    self.changes.push(Operation::UpdateVirtualServer {
                        virtual_server: key,
                        settings: d.settings.clone(),
                    });
                }
                for (addr, o_rs, d_rs) in merge(&o.real_servers, &d.real_servers) {
                    match (o_rs, d_rs) {
                        (None, Some(d_rs)) => self.changes.push(add_real_server(key, addr, d_rs)),
                        (Some(o_rs), Some(d_rs)) if !o_rs.same_as(d_rs) => {
                            self.changes.push(Operation::UpdateRealServer {
                                virtual_server: key,
                                real_server: addr,
                                forward: d_rs.forward,
                                weight: d_rs.weight,
                            })
                        }
                        (Some(o_rs), None) => {
                            if let Some(since) = self.remove_real_server(key, addr, o_rs) {
                                draining.insert(addr, since);
                            }
                        }
                        _ => {}
                    }
                }
            }
        }
        self.state.draining.replace(key, draining);
    }

    /// Deletes a real server that is no longer wanted, or drains it; returns
    /// its drain start time when it stays.
    fn remove_real_server(&mut self, key: VirtualServerKey, addr: SocketAddr, rs: &RealServer) -> Option<Time> {
        let since = self.old.draining.since(&key, &addr);
        let expired = since.is_some_and(|s| self.ctx.now.since(s) >= self.ctx.drain_timeout);
        if key.protocol != Protocol::Tcp || rs.connections() == 0 || expired {
            self.changes.push(Operation::DeleteRealServer {
                virtual_server: key,
                real_server: addr,
            });
            return None;
        }
        if rs.weight != 0 {
            self.changes.push(Operation::UpdateRealServer {
                virtual_server: key,
                real_server: addr,
                forward: rs.forward,
                weight: 0,
            });
        }
        Some(since.unwrap_or(self.ctx.now))
    }
}

fn add_real_server(key: VirtualServerKey, addr: SocketAddr, rs: &RealServer) -> Operation {
    Operation::AddRealServer {
        virtual_server: key,
        real_server: addr,
        forward: rs.forward,
        weight: rs.weight,
    }
}

/// Walks two maps with the same keys in order, pairing equal keys.
fn merge<'m, K: Ord + Copy, A, B>(
    left: &'m SortedMap<K, A>,
    right: &'m SortedMap<K, B>,
) -> impl Iterator<Item = (K, Option<&'m A>, Option<&'m B>)> {
    Merge {
        left: left.iter().peekable(),
        right: right.iter().peekable(),
    }
}

struct Merge<L: Iterator, R: Iterator> {
    left: Peekable<L>,
    right: Peekable<R>,
}

impl<'m, K: Ord + Copy + 'm, A: 'm, B: 'm, L, R> Iterator for Merge<L, R>
where
    L: Iterator<Item = (&'m K, &'m A)>,
    R: Iterator<Item = (&'m K, &'m B)>,
{
    type Item = (K, Option<&'m A>, Option<&'m B>);

    fn next(&mut self) -> Option<Self::Item> {
        let order = match (self.left.peek(), self.right.peek()) {
            (None, None) => return None,
            (Some(_), None) => std::cmp::Ordering::Less,
            (None, Some(_)) => std::cmp::Ordering::Greater,
            (Some((l, _)), Some((r, _))) => l.cmp(r),
        };
        match order {
            std::cmp::Ordering::Less => self.left.next().map(|(k, a)| (*k, Some(a), None)),
            std::cmp::Ordering::Greater => self.right.next().map(|(k, b)| (*k, None, Some(b))),
            std::cmp::Ordering::Equal => {
                let (k, a) = self.left.next()?;
                let b = self.right.next().map(|(_, b)| b);
                Some((*k, Some(a), b))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proxy::apply::apply_plan;
    use crate::proxy::scheduler::Scheduler;
    use crate::proxy::table::{full_netmask, Flags};

    fn key(text: &str) -> VirtualServerKey {
        text.parse().expect("valid key")
    }

    fn sa(text: &str) -> SocketAddr {
        text.parse().expect("valid socket address")
    }

    fn vs(key: &VirtualServerKey, real_servers: &[&str]) -> VirtualServer {
        VirtualServer {
            settings: VirtualServerSettings {
                scheduler: Scheduler::Rr,
                flags: Flags::NONE,
                timeout: 0,
                netmask: full_netmask(key.family()),
            },
            real_servers: real_servers.iter().map(|r| (sa(r), RealServer::masq(1))).collect(),
        }
    }

    fn table(entries: &[(&str, &[&str])], addresses: &[&str]) -> IpvsTable {
        let mut t = IpvsTable::new();
        for (k, rs) in entries {
            let k = key(k);
            t.virtual_servers.insert(k, vs(&k, rs));
        }
        t.addresses = addresses.iter().map(|a| a.parse().expect("ip")).collect();
        t
    }

    fn ctx(now_secs: u64) -> PlanContext {
        PlanContext {
            now: Time::from_secs(now_secs),
            drain_timeout: Duration::from_secs(600),
            node_ips: vec!["192.168.0.10".parse().expect("ip")],
            node_port_range: PortRange::DEFAULT,
            exclude_cidrs: Vec::new(),
        }
    }

    fn text(plan: &Plan) -> Vec<String> {
        plan.operations.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn virtual_servers_in_exclude_cidrs_are_left_unless_wanted() {
        // Someone else's rules on an address bound on kube-ipvs0.
        let observed = table(
            &[("TCP/10.200.0.5:80", &["10.1.0.1:80"]), ("TCP/10.96.0.9:80", &[])],
            &["10.200.0.5", "10.96.0.9"],
        );
        let desired = table(&[], &[]);
        let excluded = PlanContext {
            exclude_cidrs: vec!["10.200.0.0/16".parse().expect("cidr")],
            ..ctx(0)
        };
        assert_eq!(
            text(&plan(&observed, &desired, &PlanState::default(), &excluded)),
            ["-D -t 10.96.0.9:80", "ip addr del 10.96.0.9/32 dev kube-ipvs0"],
            "the excluded virtual server and its address stay"
        );
        let wanted = table(&[("TCP/10.200.0.5:80", &["10.1.0.2:80"])], &["10.200.0.5"]);
        let ops = text(&plan(&observed, &wanted, &PlanState::default(), &excluded));
        assert!(
            ops.contains(&"-d -t 10.200.0.5:80 -r 10.1.0.1:80".to_string()),
            "{ops:?}"
        );
    }

    #[test]
    fn from_empty_in_kernel_order() {
        let desired = table(
            &[
                ("TCP/10.96.0.1:443", &["192.168.0.10:6443"]),
                ("UDP/10.96.0.10:53", &["10.244.0.5:53"]),
            ],
            &["10.96.0.1", "10.96.0.10"],
        );
        let p = plan(&IpvsTable::new(), &desired, &PlanState::default(), &ctx(0));
        assert_eq!(
            text(&p),
            [
                "ip addr add 10.96.0.1/32 dev kube-ipvs0",
                "ip addr add 10.96.0.10/32 dev kube-ipvs0",
                "-A -t 10.96.0.1:443 -s rr",
                "-a -t 10.96.0.1:443 -r 192.168.0.10:6443 -m -w 1",
                "-A -u 10.96.0.10:53 -s rr",
                "-a -u 10.96.0.10:53 -r 10.244.0.5:53 -m -w 1",
            ]
        );
        let mut kernel = IpvsTable::new();
        apply_plan(&mut kernel, &p).expect("the kernel accepts the plan");
        assert_eq!(kernel, desired);
        assert!(plan(&kernel, &desired, &p.state, &ctx(0)).is_empty());
    }

    #[test]
    fn removal_deletes_virtual_servers_before_unbinding() {
        let observed = table(
            &[
                ("TCP/10.96.0.1:443", &["192.168.0.10:6443"]),
                ("TCP/10.96.0.2:80", &["10.244.0.5:80"]),
            ],
            &["10.96.0.1", "10.96.0.2"],
        );
        let desired = table(&[("TCP/10.96.0.1:443", &["192.168.0.10:6443"])], &["10.96.0.1"]);
        let p = plan(&observed, &desired, &PlanState::default(), &ctx(0));
        assert_eq!(
            text(&p),
            ["-D -t 10.96.0.2:80", "ip addr del 10.96.0.2/32 dev kube-ipvs0"]
        );
    }

    #[test]
    fn foreign_virtual_servers_are_left_alone() {
        let observed = table(
            &[
                ("TCP/192.168.0.100:80", &["10.0.0.1:80"]),
                ("TCP/192.168.0.10:22", &["10.0.0.1:22"]),
                ("TCP/192.168.0.10:30080", &["10.0.0.1:80"]),
            ],
            &[],
        );
        let p = plan(&observed, &IpvsTable::new(), &PlanState::default(), &ctx(0));
        assert_eq!(text(&p), ["-D -t 192.168.0.10:30080"], "only the NodePort is ours");
    }

    #[test]
    fn claimed_node_address_virtual_servers_are_cleaned_up() {
        let desired = table(&[("TCP/192.168.0.10:8000", &["10.244.0.5:80"])], &[]);
        let mut kernel = table(&[("TCP/192.168.0.10:22", &["10.0.0.1:22"])], &[]);
        let p1 = plan(&kernel, &desired, &PlanState::default(), &ctx(0));
        assert_eq!(p1.state.claimed, [key("TCP/192.168.0.10:8000")].into());
        apply_plan(&mut kernel, &p1).expect("applies");
        let p2 = plan(&kernel, &IpvsTable::new(), &p1.state, &ctx(1));
        assert_eq!(
            text(&p2),
            ["-D -t 192.168.0.10:8000"],
            "claimed, so ours; port 22 is not"
        );
        assert!(p2.state.claimed.is_empty());
        let forgotten = plan(&kernel, &IpvsTable::new(), &PlanState::default(), &ctx(1));
        assert!(forgotten.is_empty(), "without the state it is not known to be ours");
    }

    #[test]
    fn tcp_real_servers_drain_then_go() {
        let mut observed = table(
            &[("TCP/10.96.0.5:80", &["10.244.0.5:80", "10.244.0.6:80"])],
            &["10.96.0.5"],
        );
        observed.set_counters(&key("TCP/10.96.0.5:80"), sa("10.244.0.6:80"), 2, 1);
        let desired = table(&[("TCP/10.96.0.5:80", &["10.244.0.5:80"])], &["10.96.0.5"]);

        let p1 = plan(&observed, &desired, &PlanState::default(), &ctx(10));
        assert_eq!(text(&p1), ["-e -t 10.96.0.5:80 -r 10.244.0.6:80 -m -w 0"]);
        assert_eq!(
            p1.state.draining.since(&key("TCP/10.96.0.5:80"), &sa("10.244.0.6:80")),
            Some(Time::from_secs(10))
        );
        apply_plan(&mut observed, &p1).expect("applies");

        let p2 = plan(&observed, &desired, &p1.state, &ctx(20));
        assert!(p2.is_empty(), "still draining: {:?}", text(&p2));
        assert_eq!(p2.state, p1.state);

        let p3 = plan(&observed, &desired, &p2.state, &ctx(610));
        assert_eq!(text(&p3), ["-d -t 10.96.0.5:80 -r 10.244.0.6:80"], "timed out");
        assert!(p3.state.draining.is_empty());

        observed.set_counters(&key("TCP/10.96.0.5:80"), sa("10.244.0.6:80"), 0, 0);
        let p4 = plan(&observed, &desired, &p2.state, &ctx(30));
        assert_eq!(text(&p4), ["-d -t 10.96.0.5:80 -r 10.244.0.6:80"], "connections gone");
    }

    #[test]
    fn draining_real_server_comes_back() {
        let mut observed = table(&[("TCP/10.96.0.5:80", &["10.244.0.6:80"])], &["10.96.0.5"]);
        let k = key("TCP/10.96.0.5:80");
        observed.set_counters(&k, sa("10.244.0.6:80"), 1, 0);
        let empty = table(&[("TCP/10.96.0.5:80", &[])], &["10.96.0.5"]);
        let p1 = plan(&observed, &empty, &PlanState::default(), &ctx(0));
        apply_plan(&mut observed, &p1).expect("applies");
        let back = table(&[("TCP/10.96.0.5:80", &["10.244.0.6:80"])], &["10.96.0.5"]);
        let p2 = plan(&observed, &back, &p1.state, &ctx(5));
        assert_eq!(text(&p2), ["-e -t 10.96.0.5:80 -r 10.244.0.6:80 -m -w 1"]);
        assert!(p2.state.draining.is_empty());
    }

    #[test]
    fn udp_and_sctp_real_servers_go_at_once() {
        let mut observed = table(
            &[
                ("UDP/10.96.0.10:53", &["10.244.0.5:53"]),
                ("SCTP/10.96.0.11:9", &["10.244.0.5:9"]),
            ],
            &["10.96.0.10", "10.96.0.11"],
        );
        observed.set_counters(&key("UDP/10.96.0.10:53"), sa("10.244.0.5:53"), 0, 7);
        observed.set_counters(&key("SCTP/10.96.0.11:9"), sa("10.244.0.5:9"), 3, 0);
        let desired = table(
            &[("UDP/10.96.0.10:53", &[]), ("SCTP/10.96.0.11:9", &[])],
            &["10.96.0.10", "10.96.0.11"],
        );
        let p = plan(&observed, &desired, &PlanState::default(), &ctx(0));
        assert_eq!(
            text(&p),
            [
                "-d -u 10.96.0.10:53 -r 10.244.0.5:53",
                "-d --sctp-service 10.96.0.11:9 -r 10.244.0.5:9"
            ]
        );
    }

    #[test]
    fn settings_changes_update_in_place() {
        let observed = table(&[("TCP/10.96.0.5:80", &["10.244.0.5:80"])], &["10.96.0.5"]);
        let mut desired = observed.clone();
        let vs = desired
            .virtual_servers
            .get_mut(&key("TCP/10.96.0.5:80"))
            .expect("present");
        vs.settings.flags = Flags::PERSISTENT;
        vs.settings.timeout = 600;
        let p = plan(&observed, &desired, &PlanState::default(), &ctx(0));
        assert_eq!(text(&p), ["-E -t 10.96.0.5:80 -s rr -p 600"]);
        let mut kernel = observed.clone();
        kernel
            .virtual_servers
            .get_mut(&key("TCP/10.96.0.5:80"))
            .expect("present")
            .settings
            .flags = Flags::HASHED;
        let p = plan(&kernel, &observed, &PlanState::default(), &ctx(0));
        assert!(p.is_empty(), "the hashed flag the kernel adds is no difference");
    }

    #[test]
    fn changes_only_plan_matches_the_full_plan() {
        let observed = table(
            &[
                ("TCP/10.96.0.1:80", &["10.244.0.1:80"]),
                ("TCP/10.96.0.2:80", &["10.244.0.2:80"]),
            ],
            &["10.96.0.1", "10.96.0.2"],
        );
        let desired = table(
            &[("TCP/10.96.0.1:80", &["10.244.0.9:80"]), ("TCP/10.96.0.3:80", &[])],
            &["10.96.0.1", "10.96.0.3"],
        );
        let changes = Changes {
            virtual_servers: [key("TCP/10.96.0.1:80"), key("TCP/10.96.0.3:80")].into(),
            addresses: ["10.96.0.2".parse().expect("ip"), "10.96.0.3".parse().expect("ip")].into(),
        };
        let full = plan(&observed, &desired, &PlanState::default(), &ctx(0));
        let partial = plan_changes(&observed, &desired, &changes, &PlanState::default(), &ctx(0));
        assert_eq!(full, partial);
        assert_eq!(
            text(&full),
            [
                "ip addr add 10.96.0.3/32 dev kube-ipvs0",
                "-d -t 10.96.0.1:80 -r 10.244.0.1:80",
                "-a -t 10.96.0.1:80 -r 10.244.0.9:80 -m -w 1",
                "-A -t 10.96.0.3:80 -s rr",
                "-D -t 10.96.0.2:80",
                "ip addr del 10.96.0.2/32 dev kube-ipvs0",
            ]
        );
    }
}
