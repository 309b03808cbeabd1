//! Which UDP conntrack entries to delete after a sync, as kube-proxy 1.32+
//! decides (its `CleanStaleEntries`), computed from the desired IPVS table.
//!
//! UDP has no connection for IPVS or conntrack to end: as long as a client
//! keeps sending (a DNS resolver on a fixed source port, say), the kernel's
//! conntrack entry keeps its old verdict, so packets keep going to an
//! endpoint that is gone, or stay black-holed after a Service that had no
//! endpoint gets one. kube-proxy therefore deletes, after a sync, the UDP
//! entries whose original destination is a Service frontend and whose reply
//! source is not one of its serving endpoints. This module owns that
//! decision; the agent dumps and deletes (over ctnetlink).
//!
//! - [`UdpFrontends::of`]: every UDP frontend of a desired table (ClusterIP,
//!   node IP with NodePort, externalIP, LoadBalancer IP, each with its port)
//!   with the endpoints it serves now, its real servers.
//! - [`UdpFrontends::should_delete`]: the verdict on one entry: delete when
//!   its original destination is a frontend that has endpoints and its reply
//!   source is none of them. That covers both "the endpoint is gone" and "the
//!   entry was black-holed (its reply source is the frontend itself, or
//!   whatever answered with an ICMP error) and the Service now has
//!   endpoints". A frontend without endpoints is left alone, as kube-proxy
//!   does: a new entry would be black-holed the same way.
//! - [`UdpFrontends::changed`]: the frontends whose endpoints differ from an
//!   earlier snapshot.
//! - [`CleanupSchedule`]: when to clean: after a successful sync whose UDP
//!   frontends differ from those of the last successful cleanup (the first
//!   sync counts as a change; a failed cleanup is due again after the next
//!   sync), and never while no frontend has an endpoint.
//!
//! Differences from kube-proxy, all from taking the IPVS table (what the
//! node actually forwards to) rather than every serving endpoint of the
//! Service: an entry whose reply source is a serving endpoint the table
//! does not use (a terminating one while ready ones exist; a remote one
//! behind `externalTrafficPolicy: Local`) is deleted, since IPVS no longer
//! forwards to it anyway; the reply source is compared as address and
//! port, so a changed `targetPort` also counts as a stale endpoint; and a
//! NodePort entry is matched on a node IP with that port (the virtual
//! servers IPVS has), not on the port alone. Only UDP, as in kube-proxy:
//! TCP and SCTP end their connections themselves.

use super::table::{IpvsTable, Protocol};
use crate::collections::{SortedMap, SortedSet};
use crate::family::IpFamily;
use std::net::SocketAddr;

/// The IP protocol number of UDP, as conntrack reports it.
pub const IPPROTO_UDP: u8 = 17;

/// One conntrack entry, reduced to what the decision reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ConntrackEntry {
    /// The IP protocol number (17 for UDP).
    pub protocol: u8,
    /// Source address and port of the original direction (the client).
    pub orig_src: SocketAddr,
    /// Destination of the original direction (what the client sent to).
    pub orig_dst: SocketAddr,
    /// Source of the reply direction (who answers: the endpoint after
    /// IPVS's NAT, or the frontend itself when nothing did).
    pub reply_src: SocketAddr,
}

/// Every UDP frontend of a table with the endpoints it forwards to.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UdpFrontends {
    frontends: SortedMap<SocketAddr, SortedSet<SocketAddr>>,
}

impl UdpFrontends {
    /// The UDP virtual servers of `table`, each with its real servers.
    pub fn of(table: &IpvsTable) -> UdpFrontends {
        let frontends = table
            .virtual_servers
            .iter()
            .filter(|(key, _)| key.protocol == Protocol::Udp)
            .map(|(key, vs)| (key.socket_addr(), vs.real_servers.keys().copied().collect()))
            .collect();
        UdpFrontends { frontends }
    }

    /// True when the table has no UDP frontend.
    pub fn is_empty(&self) -> bool {
        self.frontends.is_empty()
    }

    /// How many UDP frontends there are.
    pub fn len(&self) -> usize {
        self.frontends.len()
    }

    /// The endpoints of one frontend, if it is one.
    pub fn endpoints(&self, frontend: SocketAddr) -> Option<&SortedSet<SocketAddr>> {
        self.frontends.get(&frontend)
    }

    /// The families that have a frontend with endpoints: the only ones
    /// whose entries can need deleting, so the only ones worth dumping.
    pub fn families(&self) -> SortedSet<IpFamily> {
        self.frontends
            .iter()
            .filter(|(_, endpoints)| !endpoints.is_empty())
            .map(|(frontend, _)| IpFamily::of(frontend.ip()))
            .collect()
    }

    /// The frontends that are new, gone, or forward to other endpoints
    /// than in `before`.
    pub fn changed(&self, before: &UdpFrontends) -> SortedSet<SocketAddr> {
        let mut changed: SortedSet<SocketAddr> = SortedSet::new();
        for (frontend, endpoints) in &self.frontends {
            if before.frontends.get(frontend) != Some(endpoints) {
                changed.insert(*frontend);
            }
        }
        changed.extend(
            before
                .frontends
                .keys()
                .filter(|frontend| !self.frontends.contains_key(frontend)),
        );
        changed
    }

    /// Whether `entry` is stale: UDP, sent to a frontend that has
    /// endpoints, answered by something that is not one of them.
    pub fn should_delete(&self, entry: &ConntrackEntry) -> bool {
        if entry.protocol != IPPROTO_UDP {
            return false;
        }
        match self.frontends.get(&entry.orig_dst) {
            Some(endpoints) => !endpoints.is_empty() && !endpoints.contains(&entry.reply_src),
            None => false,
        }
    }
}

/// When the agent cleans: the UDP frontends as of the last cleanup that
/// succeeded.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CleanupSchedule {
    cleaned: Option<UdpFrontends>,
}

/// A cleanup to run now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CleanupDue {
    /// The frontends to clean against (the desired table's, now).
    pub frontends: UdpFrontends,
    /// How many frontends changed since the last cleanup (for the log).
    pub changed: usize,
}

impl CleanupSchedule {
    /// A schedule that has cleaned nothing yet: the first sync's table is
    /// cleaned.
    pub fn new() -> CleanupSchedule {
        CleanupSchedule::default()
    }

    /// After a successful sync to `table`: the cleanup to run, if one is
    /// due. When nothing can be stale (no frontend has an endpoint), the
    /// table counts as cleaned and nothing is due.
    pub fn after_sync(&mut self, table: &IpvsTable) -> Option<CleanupDue> {
        let frontends = UdpFrontends::of(table);
        let changed = match &self.cleaned {
            Some(before) => frontends.changed(before).len(),
            None => frontends.len().max(1),
        };
        if changed == 0 {
            return None;
        }
        if frontends.families().is_empty() {
            self.cleaned = Some(frontends);
            return None;
        }
        Some(CleanupDue { frontends, changed })
    }

    /// The cleanup of `due` ran: if it `succeeded`, its frontends are the
    /// new reference; if not, the same cleanup is due after the next sync.
    pub fn finished(&mut self, due: CleanupDue, succeeded: bool) {
        if succeeded {
            self.cleaned = Some(due.frontends);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proxy::table::{RealServer, VirtualServer, VirtualServerKey, VirtualServerSettings};
    use crate::proxy::Scheduler;

    fn addr(text: &str) -> SocketAddr {
        text.parse().expect("socket address")
    }

    fn table(servers: &[(&str, &[&str])]) -> IpvsTable {
        let mut table = IpvsTable::new();
        for (key, reals) in servers {
            let key: VirtualServerKey = key.parse().expect("key");
            table.virtual_servers.insert(
                key,
                VirtualServer {
                    settings: VirtualServerSettings {
                        scheduler: Scheduler::Rr,
                        flags: Default::default(),
                        timeout: 0,
                        netmask: super::super::table::full_netmask(key.family()),
                    },
                    real_servers: reals.iter().map(|r| (addr(r), RealServer::masq(1))).collect(),
                },
            );
        }
        table
    }

    fn udp(orig_src: &str, orig_dst: &str, reply_src: &str) -> ConntrackEntry {
        ConntrackEntry {
            protocol: IPPROTO_UDP,
            orig_src: addr(orig_src),
            orig_dst: addr(orig_dst),
            reply_src: addr(reply_src),
        }
    }

    /// A DNS Service: ClusterIP 10.96.0.10:53, NodePort 30053 on the node
    /// IPs 192.168.0.10 and fd00::10, an externalIP, a LoadBalancer IP and
    /// an IPv6 ClusterIP; one endpoint per family.
    fn dns() -> UdpFrontends {
        UdpFrontends::of(&table(&[
            ("UDP/10.96.0.10:53", &["10.244.1.7:5353"]),
            ("UDP/192.168.0.10:30053", &["10.244.1.7:5353"]),
            ("UDP/203.0.113.7:53", &["10.244.1.7:5353"]),
            ("UDP/198.51.100.1:53", &["10.244.1.7:5353"]),
            ("UDP/[fd00:10:96::10]:53", &["[fd00:244::7]:5353"]),
            ("UDP/[fd00::10]:30053", &["[fd00:244::7]:5353"]),
            ("TCP/10.96.0.10:53", &["10.244.1.7:5353"]),
            ("UDP/10.96.0.99:53", &[]),
        ]))
    }

    #[test]
    fn only_udp_virtual_servers_are_frontends() {
        let frontends = dns();
        assert_eq!(frontends.len(), 7);
        assert!(frontends.endpoints(addr("10.96.0.10:53")).is_some());
        assert!(frontends.endpoints(addr("192.168.0.10:30053")).is_some());
        assert_eq!(frontends.families(), SortedSet::from([IpFamily::IPv4, IpFamily::IPv6]));
        assert!(UdpFrontends::of(&table(&[("TCP/10.96.0.1:443", &["192.168.0.10:6443"])])).is_empty());
    }

    #[test]
    fn an_entry_to_a_gone_endpoint_is_deleted() {
        let frontends = dns();
        let gone = udp("10.244.2.3:40000", "10.96.0.10:53", "10.244.1.6:5353");
        assert!(frontends.should_delete(&gone));
        let serving = udp("10.244.2.3:40000", "10.96.0.10:53", "10.244.1.7:5353");
        assert!(!frontends.should_delete(&serving));
    }

    #[test]
    fn a_black_holed_entry_is_deleted_once_there_are_endpoints() {
        // While the Service had no endpoint, the kernel answered for the
        // ClusterIP itself.
        let black_holed = udp("10.244.2.3:40000", "10.96.0.10:53", "10.96.0.10:53");
        assert!(dns().should_delete(&black_holed));
        // A frontend without endpoints keeps its entries: a new one would be
        // black-holed the same way.
        let still_empty = udp("10.244.2.3:40000", "10.96.0.99:53", "10.96.0.99:53");
        assert!(!dns().should_delete(&still_empty));
    }

    #[test]
    fn node_ports_on_node_ips_external_and_load_balancer_ips() {
        let frontends = dns();
        for dst in ["192.168.0.10:30053", "203.0.113.7:53", "198.51.100.1:53"] {
            assert!(
                frontends.should_delete(&udp("198.18.0.1:5000", dst, "10.244.1.1:5353")),
                "{dst}"
            );
            assert!(
                !frontends.should_delete(&udp("198.18.0.1:5000", dst, "10.244.1.7:5353")),
                "{dst}"
            );
        }
        // The NodePort on an address that is not a node IP of the table is
        // no frontend.
        assert!(!frontends.should_delete(&udp("198.18.0.1:5000", "127.0.0.1:30053", "10.244.1.1:5353")));
    }

    #[test]
    fn ipv6_frontends() {
        let frontends = dns();
        let stale = udp("[fd00:244::20]:40000", "[fd00:10:96::10]:53", "[fd00:244::6]:5353");
        assert!(frontends.should_delete(&stale));
        let serving = udp("[fd00:244::20]:40000", "[fd00:10:96::10]:53", "[fd00:244::7]:5353");
        assert!(!frontends.should_delete(&serving));
        let node_port = udp("[2001:db8::1]:40000", "[fd00::10]:30053", "[fd00::10]:30053");
        assert!(frontends.should_delete(&node_port));
    }

    #[test]
    fn other_protocols_and_other_destinations_are_kept() {
        let frontends = dns();
        let mut tcp = udp("10.244.2.3:40000", "10.96.0.10:53", "10.244.1.6:5353");
        tcp.protocol = 6;
        assert!(!frontends.should_delete(&tcp));
        let sctp = ConntrackEntry { protocol: 132, ..tcp };
        assert!(!frontends.should_delete(&sctp));
        // Another port of the ClusterIP, another address.
        assert!(!frontends.should_delete(&udp("10.244.2.3:40000", "10.96.0.10:54", "10.244.1.6:5353")));
        assert!(!frontends.should_delete(&udp("10.244.2.3:40000", "8.8.8.8:53", "8.8.8.8:53")));
    }

    #[test]
    fn a_changed_target_port_is_a_stale_endpoint() {
        let frontends = dns();
        assert!(frontends.should_delete(&udp("10.244.2.3:40000", "10.96.0.10:53", "10.244.1.7:53")));
    }

    #[test]
    fn changes_between_snapshots() {
        let before = UdpFrontends::of(&table(&[
            ("UDP/10.96.0.10:53", &["10.244.1.6:53"]),
            ("UDP/10.96.0.11:53", &[]),
            ("UDP/10.96.0.12:53", &["10.244.1.8:53"]),
            ("TCP/10.96.0.13:80", &["10.244.1.9:80"]),
        ]));
        let after = UdpFrontends::of(&table(&[
            ("UDP/10.96.0.10:53", &["10.244.1.7:53"]),
            ("UDP/10.96.0.11:53", &["10.244.1.5:53"]),
            ("UDP/10.96.0.14:53", &[]),
            ("TCP/10.96.0.13:80", &["10.244.1.10:80"]),
        ]));
        let changed: Vec<String> = after.changed(&before).iter().map(ToString::to_string).collect();
        assert_eq!(
            changed,
            ["10.96.0.10:53", "10.96.0.11:53", "10.96.0.12:53", "10.96.0.14:53"]
        );
        assert!(after.changed(&after.clone()).is_empty());
        assert_eq!(after.changed(&UdpFrontends::default()).len(), 3, "the first sync");
    }

    #[test]
    fn the_schedule_cleans_after_changes_and_retries_failures() {
        let mut schedule = CleanupSchedule::new();
        // No endpoint anywhere: nothing due, and that counts as cleaned.
        let empty = table(&[("UDP/10.96.0.10:53", &[])]);
        assert_eq!(schedule.after_sync(&empty), None);
        assert_eq!(schedule.after_sync(&empty), None);
        // The first endpoint: due.
        let one = table(&[("UDP/10.96.0.10:53", &["10.244.1.7:53"])]);
        let due = schedule.after_sync(&one).expect("due");
        assert_eq!(due.changed, 1);
        // It failed: due again after the next sync, though nothing changed.
        schedule.finished(due, false);
        let due = schedule.after_sync(&one).expect("due again");
        schedule.finished(due, true);
        assert_eq!(schedule.after_sync(&one), None, "nothing changed since");
        // A TCP change is no reason.
        let mut tcp = one.clone();
        tcp.virtual_servers
            .extend(table(&[("TCP/10.96.0.10:53", &["10.244.1.7:53"])]).virtual_servers);
        assert_eq!(schedule.after_sync(&tcp), None);
        // The first sync of a fresh schedule with endpoints: due.
        assert!(CleanupSchedule::new().after_sync(&one).is_some());
    }
}
