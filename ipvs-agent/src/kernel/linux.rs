//! [`LinuxDataplane`]: the [`Dataplane`] that programs the running kernel.
//! IPVS goes over generic netlink ([`IpvsSocket`], batched), the
//! `kube-ipvs0` link over rtnetlink ([`KubeIpvs0`]) and its addresses over
//! rtnetlink too, batched ([`AddressSocket`]).
//!
//! `observe` dumps every virtual server, then the real servers of each (one
//! GET_DEST dump per virtual server: the kernel runs one dump per socket at
//! a time), and lists the addresses on `kube-ipvs0`. Virtual servers the
//! core cannot represent (firewall marks, other protocols) are left out with
//! a debug log and counted, so the plan never sees, and never touches, them.
//! `observe_virtual_servers` reads only the virtual servers asked for: a
//! GET_SERVICE and a GET_DEST dump each, one `sendmsg` per virtual server.
//!
//! `apply` sends the IPVS operations and the address operations at once, on
//! two threads, each kind in the plan's order and in batches (an
//! AddVirtualServer and the AddRealServers that follow it can share one
//! `sendmsg`, since the kernel handles messages in order). Neither kind
//! needs the other (a virtual server may sit on an address not bound yet),
//! and they take different kernel locks (the IPVS mutex; RTNL), so on a
//! node with two CPUs the two overlap. From empty that matters: binding
//! thousands of addresses on one link is as slow as the IPVS work, since
//! the kernel walks the link's address list for each. kube-proxy binds a
//! Service's address before it adds its virtual server; the table and the
//! addresses after a sync are the same.

use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::net::SocketAddr;

use svcnet_core::proxy::sync_loop::TableOutline;
use svcnet_core::proxy::{IpvsTable, Operation, RealServer, UdpFrontends, VirtualServer, VirtualServerKey};

use super::addresses::{AddressChange, AddressSocket};
use super::conntrack::ConntrackSocket;
use super::convert::{self, Unrepresentable};
use super::error::{GenlError, LinkError};
use super::genl::{Answer, IpvsSocket};
use super::link::{KubeIpvs0, KUBE_IPVS0};
use super::socket::SocketStats;
use crate::dataplane::{ApplyReport, ConntrackReport, Dataplane, DataplaneError};
use crate::netlink::{DestEntry, IpvsMessage};

/// Counters for metrics, cumulative since the dataplane was opened.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counters {
    /// The IPVS socket's own counters (`sendmsg` calls, requests, refusals).
    pub socket: SocketStats,
    /// The same for the socket that binds and unbinds `kube-ipvs0`'s
    /// addresses.
    pub addresses: SocketStats,
    /// Operations the kernel accepted.
    pub operations_applied: u64,
    /// Operations that failed.
    pub operations_failed: u64,
    /// Failed netlink exchanges of any kind: IPVS refusals and lost answers,
    /// rtnetlink errors, socket errors.
    pub netlink_errors: u64,
    /// Completed `observe` calls.
    pub observations: u64,
    /// Virtual servers (and real servers) left out of the last observation
    /// because the core cannot represent them.
    pub skipped_last_observe: u64,
}

/// The dataplane of the running Linux kernel.
#[derive(Debug)]
pub struct LinuxDataplane {
    ipvs: IpvsSocket,
    link: KubeIpvs0,
    addresses: AddressSocket,
    /// The ctnetlink socket of the UDP conntrack cleanup, opened at its
    /// first use (so an agent with the cleanup off never opens it).
    conntrack: Option<ConntrackSocket>,
    counters: Counters,
}

impl LinuxDataplane {
    /// Open the IPVS socket (resolving the family; a missing `ip_vs` gives
    /// "the IPVS family is not registered: load the ip_vs kernel module
    /// (modprobe ip_vs)"), an rtnetlink connection for `kube-ipvs0` and a
    /// socket for its addresses.
    /// Must run inside a tokio runtime with I/O enabled.
    pub fn open() -> Result<Self, DataplaneError> {
        Self::open_with_link(KUBE_IPVS0)
    }

    /// [`LinuxDataplane::open`] with another dummy link name.
    pub fn open_with_link(link: &str) -> Result<Self, DataplaneError> {
        Ok(Self {
            ipvs: IpvsSocket::open()?,
            link: KubeIpvs0::connect(link)?,
            addresses: AddressSocket::open(link)?,
            conntrack: None,
            counters: Counters::default(),
        })
    }

    /// The counters so far.
    pub fn counters(&self) -> Counters {
        Counters {
            socket: self.ipvs.stats(),
            addresses: self.addresses.stats(),
            ..self.counters
        }
    }

    /// The IPVS socket, for requests beyond the `Dataplane` trait (GET_INFO,
    /// timeouts, ...).
    pub fn ipvs(&mut self) -> &mut IpvsSocket {
        &mut self.ipvs
    }

    /// The `kube-ipvs0` link.
    pub fn link(&self) -> &KubeIpvs0 {
        &self.link
    }

    /// For `run` startup: make sure `kube-ipvs0` exists (created down, as
    /// kube-proxy's); returns its index.
    pub async fn ensure_link(&mut self) -> Result<u32, DataplaneError> {
        self.link_result(self.link.ensure().await)
    }

    /// For `cleanup`: delete `kube-ipvs0` and its addresses; returns whether
    /// it existed.
    pub async fn delete_link(&mut self) -> Result<bool, DataplaneError> {
        self.link_result(self.link.delete().await)
    }

    fn link_result<T>(&mut self, result: Result<T, LinkError>) -> Result<T, DataplaneError> {
        result.map_err(|error| {
            self.counters.netlink_errors += 1;
            error.into()
        })
    }

    fn genl_result<T>(&mut self, result: Result<T, GenlError>) -> Result<T, DataplaneError> {
        result.map_err(|error| {
            self.counters.netlink_errors += 1;
            error.into()
        })
    }

    /// Every virtual server the core can represent, with its real servers.
    fn observe_ipvs(&mut self, table: &mut IpvsTable) -> Result<u64, DataplaneError> {
        let services = self.ipvs.services();
        let services = self.genl_result(services)?;
        let mut skipped = 0;
        for entry in services {
            let (key, settings) = match convert::virtual_server(&entry) {
                Ok(converted) => converted,
                Err(why) => {
                    log::debug!("observe: leaving out {why}: the agent does not manage it");
                    skipped += 1;
                    continue;
                }
            };
            let dests = self.ipvs.dests(&entry.key);
            let dests = self.genl_result(dests)?;
            let (real_servers, left_out) = real_servers(&key, &dests);
            skipped += left_out;
            table
                .virtual_servers
                .insert(key, VirtualServer { settings, real_servers });
        }
        Ok(skipped)
    }

    /// The IPVS requests of `operations`, with the operations they carry
    /// out; an operation the kernel's format cannot express fails here.
    fn ipvs_requests<'a>(
        &mut self,
        operations: &[&'a Operation],
        report: &mut ApplyReport,
    ) -> (Vec<IpvsMessage>, Vec<&'a Operation>) {
        let mut messages = Vec::with_capacity(operations.len());
        let mut sent = Vec::with_capacity(operations.len());
        for &operation in operations {
            match convert::request(operation) {
                Ok(Some(message)) => {
                    messages.push(message);
                    sent.push(operation);
                }
                Ok(None) => {}
                Err(error) => self.fail(
                    report,
                    operation,
                    DataplaneError::Io(io::Error::new(io::ErrorKind::InvalidInput, error.to_string())),
                ),
            }
        }
        (messages, sent)
    }

    /// Send `messages` to IPVS and `changes` to `kube-ipvs0` (link `index`)
    /// at once, each on its own thread, or on this one when the other has
    /// nothing to do or no thread can be started.
    fn execute_both(
        &mut self,
        messages: Vec<IpvsMessage>,
        index: Option<u32>,
        changes: &[AddressChange],
    ) -> (Vec<Answer>, Vec<Result<(), LinkError>>) {
        let Some(index) = index.filter(|_| !changes.is_empty()) else {
            return (self.ipvs.execute(messages), Vec::new());
        };
        if messages.is_empty() {
            return (Vec::new(), self.addresses.execute(index, changes));
        }
        let ipvs = &mut self.ipvs;
        // The thread's, or this one's if no thread can be started.
        let addresses = std::sync::Mutex::new(&mut self.addresses);
        let bind = || {
            let mut addresses = addresses.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            addresses.execute(index, changes)
        };
        std::thread::scope(|scope| {
            match std::thread::Builder::new()
                .name("kube-ipvs0".into())
                .spawn_scoped(scope, bind)
            {
                Ok(binder) => {
                    let answers = ipvs.execute(messages);
                    let results = binder.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic));
                    (answers, results)
                }
                Err(error) => {
                    log::debug!("no thread for kube-ipvs0's addresses ({error}): binding them first");
                    let results = bind();
                    (ipvs.execute(messages), results)
                }
            }
        })
    }

    /// Count the kernel's answer to `operation` in `report`.
    fn record<E: Into<DataplaneError>>(
        &mut self,
        report: &mut ApplyReport,
        operation: &Operation,
        answer: Result<(), E>,
    ) {
        match answer {
            Ok(()) => self.succeed(report),
            Err(error) => {
                self.counters.netlink_errors += 1;
                self.fail(report, operation, error.into());
            }
        }
    }

    fn succeed(&mut self, report: &mut ApplyReport) {
        report.applied += 1;
        self.counters.operations_applied += 1;
    }

    fn fail(&mut self, report: &mut ApplyReport, operation: &Operation, error: DataplaneError) {
        self.counters.operations_failed += 1;
        report.failed.push((operation.clone(), error));
    }

    /// The index of `kube-ipvs0` for `operations` (address operations
    /// only), made sure of (created if missing) when one of them binds. None
    /// when there is nothing to do: no address operation, or only unbinds on
    /// a link that does not exist (they succeed); or when the link cannot be
    /// had (they fail, with why).
    async fn address_link(&mut self, operations: &[&Operation], report: &mut ApplyReport) -> Option<u32> {
        if operations.is_empty() {
            return None;
        }
        let binds = (operations.iter()).any(|operation| matches!(operation, Operation::BindAddress { .. }));
        let link_index = if binds {
            self.ensure_link().await.map(Some)
        } else {
            let found = self.link.index().await;
            self.link_result(found)
        };
        match link_index {
            Ok(Some(link_index)) => Some(link_index),
            Ok(None) => {
                for _ in operations {
                    self.succeed(report);
                }
                None
            }
            Err(error) => {
                let message = error.to_string();
                for &operation in operations {
                    self.fail(report, operation, DataplaneError::Address(message.clone()));
                }
                None
            }
        }
    }
}

/// The real servers of `key` the core can represent, and how many were left
/// out.
fn real_servers(key: &VirtualServerKey, dests: &[DestEntry]) -> (BTreeMap<SocketAddr, RealServer>, u64) {
    let mut real_servers = BTreeMap::new();
    let mut skipped = 0;
    for dest in dests {
        match convert::real_server(dest) {
            Ok((addr, real)) => {
                real_servers.insert(addr, real);
            }
            Err(why @ Unrepresentable::Forward(..)) => {
                log::debug!("observe: {key}: leaving out {why}");
                skipped += 1;
            }
            Err(why) => log::debug!("observe: {key}: {why}"),
        }
    }
    (real_servers, skipped)
}

/// The change to `kube-ipvs0` an address operation makes.
fn address_change(operation: &Operation) -> Option<AddressChange> {
    match operation {
        Operation::BindAddress { address } => Some(AddressChange::Bind(*address)),
        Operation::UnbindAddress { address } => Some(AddressChange::Unbind(*address)),
        _ => None,
    }
}

impl Dataplane for LinuxDataplane {
    async fn observe(&mut self) -> Result<IpvsTable, DataplaneError> {
        let mut table = IpvsTable::new();
        let skipped = self.observe_ipvs(&mut table)?;
        let addresses = self.link.addresses().await;
        table.addresses = self.link_result(addresses)?;
        self.counters.observations += 1;
        self.counters.skipped_last_observe = skipped;
        Ok(table)
    }

    async fn observe_virtual_servers(
        &mut self,
        keys: &BTreeSet<VirtualServerKey>,
    ) -> Result<BTreeMap<VirtualServerKey, VirtualServer>, DataplaneError> {
        let wire_keys: Vec<_> = keys.iter().map(convert::service_key).collect();
        let found = self.ipvs.services_with_dests(&wire_keys);
        let found = self.genl_result(found)?;
        let mut servers = BTreeMap::new();
        for (key, found) in keys.iter().zip(found) {
            let Some((entry, dests)) = found else { continue };
            let (_, settings) = convert::virtual_server(&entry).map_err(|why| {
                DataplaneError::Io(io::Error::new(io::ErrorKind::InvalidData, format!("{key}: {why}")))
            })?;
            let (real_servers, _) = real_servers(key, &dests);
            servers.insert(*key, VirtualServer { settings, real_servers });
        }
        Ok(servers)
    }

    async fn observe_outline(&mut self) -> Result<TableOutline, DataplaneError> {
        let services = self.ipvs.services();
        let services = self.genl_result(services)?;
        let virtual_servers = (services.iter())
            .filter_map(|entry| convert::virtual_server(entry).ok())
            .map(|(key, _)| key)
            .collect();
        let addresses = self.link.addresses().await;
        let addresses = self.link_result(addresses)?;
        Ok(TableOutline {
            addresses,
            virtual_servers,
        })
    }

    async fn apply(&mut self, operations: &[Operation]) -> ApplyReport {
        let mut report = ApplyReport::default();
        let (address_operations, ipvs_operations): (Vec<&Operation>, Vec<&Operation>) = operations
            .iter()
            .partition(|operation| address_change(operation).is_some());
        let index = self.address_link(&address_operations, &mut report).await;
        let changes: Vec<AddressChange> = match index {
            Some(_) => address_operations.iter().filter_map(|op| address_change(op)).collect(),
            None => Vec::new(),
        };
        let (messages, sent) = self.ipvs_requests(&ipvs_operations, &mut report);
        let (answers, results) = self.execute_both(messages, index, &changes);
        for (operation, answer) in sent.into_iter().zip(answers) {
            self.record(&mut report, operation, answer.map(drop));
        }
        for (operation, result) in address_operations.into_iter().zip(results) {
            self.record(&mut report, operation, result);
        }
        report
    }

    async fn clean_udp_conntrack(&mut self, frontends: &UdpFrontends) -> ConntrackReport {
        if self.conntrack.is_none() {
            match ConntrackSocket::open() {
                Ok(socket) => self.conntrack = Some(socket),
                Err(error) => {
                    self.counters.netlink_errors += 1;
                    return ConntrackReport {
                        errors: 1,
                        first_error: Some(error.to_string()),
                        ..ConntrackReport::default()
                    };
                }
            }
        }
        let Some(socket) = self.conntrack.as_mut() else {
            return ConntrackReport::default();
        };
        let report = socket.clean_udp(frontends);
        self.counters.netlink_errors += report.errors;
        report
    }
}
