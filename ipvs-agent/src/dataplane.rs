//! The boundary between the sync loop and the kernel: what the agent reads
//! back ([`Dataplane::observe`] for everything,
//! [`Dataplane::observe_virtual_servers`] for a few virtual servers,
//! [`Dataplane::observe_outline`] for the addresses and which virtual
//! servers there are) and how
//! it changes it ([`Dataplane::apply`]), in the core's own vocabulary
//! ([`IpvsTable`], [`VirtualServer`], [`Operation`]), and the UDP
//! conntrack cleanup after a sync ([`Dataplane::clean_udp_conntrack`]). The Linux implementation talks IPVS generic netlink and
//! rtnetlink; the sync loop only sees this trait.

use std::collections::{BTreeMap, BTreeSet};

use svcnet_core::proxy::sync_loop::TableOutline;
use svcnet_core::proxy::{IpvsTable, Operation, UdpFrontends, VirtualServer, VirtualServerKey};

use crate::netlink::IpvsError;

/// The kernel as the sync loop sees it.
#[allow(async_fn_in_trait)]
pub trait Dataplane {
    /// Everything there is now: every IPVS virtual server (foreign ones
    /// included) with its settings, real servers, weights and connection
    /// counters, and the addresses bound on `kube-ipvs0`.
    async fn observe(&mut self) -> Result<IpvsTable, DataplaneError>;

    /// Just the virtual servers `keys` name, as the kernel has them now:
    /// settings, real servers, weights and connection counters. Far cheaper
    /// than [`Dataplane::observe`] for a few virtual servers of a large
    /// table. A key missing from the answer is a virtual server the kernel
    /// does not have.
    async fn observe_virtual_servers(
        &mut self,
        keys: &BTreeSet<VirtualServerKey>,
    ) -> Result<BTreeMap<VirtualServerKey, VirtualServer>, DataplaneError>;

    /// The addresses bound on `kube-ipvs0` and the keys of every virtual
    /// server, without their real servers (the first part of a full sync
    /// done in parts).
    async fn observe_outline(&mut self) -> Result<TableOutline, DataplaneError>;

    /// Carries out `operations` in order, batching IPVS requests (many per
    /// `sendmsg`). A failed operation does not stop the others.
    async fn apply(&mut self, operations: &[Operation]) -> ApplyReport;

    /// Deletes the stale UDP conntrack entries of `frontends` (see
    /// `svcnet_core::proxy::conntrack`): dumps each family's UDP entries
    /// and deletes those [`UdpFrontends::should_delete`] picks, one by one.
    /// Failures are reported, never fatal: the IPVS programming stays.
    async fn clean_udp_conntrack(&mut self, frontends: &UdpFrontends) -> ConntrackReport;
}

/// What [`Dataplane::clean_udp_conntrack`] did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ConntrackReport {
    /// UDP entries dumped.
    pub scanned: u64,
    /// Entries that could not be read (skipped).
    pub unreadable: u64,
    /// Entries found stale.
    pub stale: u64,
    /// Stale entries deleted.
    pub deleted: u64,
    /// Stale entries gone before their delete (expired, or replaced).
    pub gone: u64,
    /// Failed dumps and deletes.
    pub errors: u64,
    /// The first failure, for the log.
    pub first_error: Option<String>,
}

/// What [`Dataplane::apply`] did.
#[derive(Debug, Default)]
pub struct ApplyReport {
    /// Operations the kernel accepted.
    pub applied: usize,
    /// Operations the kernel refused, with why.
    pub failed: Vec<(Operation, DataplaneError)>,
}

/// Why the kernel could not be read or changed.
#[derive(Debug, thiserror::Error)]
pub enum DataplaneError {
    /// The IPVS family answered with an error.
    #[error(transparent)]
    Ipvs(#[from] IpvsError),
    /// Addresses or the `kube-ipvs0` link (rtnetlink).
    #[error("kube-ipvs0: {0}")]
    Address(String),
    /// The netlink socket itself.
    #[error("netlink socket: {0}")]
    Io(#[from] std::io::Error),
}
