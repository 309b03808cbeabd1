//! An in-memory [`Dataplane`] for tests of the loop logic: the kernel's
//! table simulated by the core's [`apply_operation`] over an [`IpvsTable`],
//! with failures that can be switched on. The real kernel is tested in the
//! VM suite.

use std::collections::{BTreeMap, BTreeSet};

use crate::dataplane::{ApplyReport, ConntrackReport, Dataplane, DataplaneError};
use svcnet_core::family::IpFamily;
use svcnet_core::proxy::sync_loop::TableOutline;
use svcnet_core::proxy::{
    apply_operation, ConntrackEntry, IpvsTable, Operation, UdpFrontends, VirtualServer, VirtualServerKey,
};

/// A simulated kernel table.
#[derive(Debug, Default)]
pub struct MemoryDataplane {
    /// The table as the "kernel" has it.
    pub table: IpvsTable,
    /// Every operation asked for, in order.
    pub log: Vec<Operation>,
    /// How many whole-table reads ([`Dataplane::observe`]) happened.
    pub reads: usize,
    /// The virtual servers each [`Dataplane::observe_virtual_servers`] call
    /// asked for, in order.
    pub virtual_server_reads: Vec<Vec<VirtualServerKey>>,
    /// How many outline reads ([`Dataplane::observe_outline`]) happened.
    pub outline_reads: usize,
    /// Fail every read while set.
    pub fail_reads: bool,
    /// Refuse every operation while set.
    pub fail_operations: bool,
    /// Set when cleanup removed the `kube-ipvs0` link.
    pub link_removed: bool,
    /// The simulated conntrack table.
    pub conntrack: Vec<ConntrackEntry>,
    /// How many conntrack cleanups ran (failed ones included).
    pub conntrack_cleanups: usize,
    /// Fail every conntrack dump while set.
    pub fail_conntrack: bool,
}

fn injected(what: &str) -> DataplaneError {
    DataplaneError::Io(std::io::Error::other(format!("injected failure: {what}")))
}

impl Dataplane for MemoryDataplane {
    async fn observe(&mut self) -> Result<IpvsTable, DataplaneError> {
        self.reads += 1;
        if self.fail_reads {
            return Err(injected("read"));
        }
        Ok(self.table.clone())
    }

    async fn observe_virtual_servers(
        &mut self,
        keys: &BTreeSet<VirtualServerKey>,
    ) -> Result<BTreeMap<VirtualServerKey, VirtualServer>, DataplaneError> {
        self.virtual_server_reads.push(keys.iter().copied().collect());
        if self.fail_reads {
            return Err(injected("read"));
        }
        Ok((keys.iter())
            .filter_map(|key| Some((*key, self.table.virtual_servers.get(key)?.clone())))
            .collect())
    }

    async fn observe_outline(&mut self) -> Result<TableOutline, DataplaneError> {
        self.outline_reads += 1;
        if self.fail_reads {
            return Err(injected("read"));
        }
        Ok(TableOutline::of(&self.table))
    }

    async fn apply(&mut self, operations: &[Operation]) -> ApplyReport {
        let mut report = ApplyReport::default();
        for op in operations {
            self.log.push(op.clone());
            let result = if self.fail_operations {
                Err(injected("operation"))
            } else {
                apply_operation(&mut self.table, op).map_err(|e| DataplaneError::Address(e.to_string()))
            };
            match result {
                Ok(()) => report.applied += 1,
                Err(e) => report.failed.push((op.clone(), e)),
            }
        }
        report
    }

    async fn clean_udp_conntrack(&mut self, frontends: &UdpFrontends) -> ConntrackReport {
        self.conntrack_cleanups += 1;
        if self.fail_conntrack {
            return ConntrackReport {
                errors: 1,
                first_error: Some("injected failure: conntrack dump".into()),
                ..ConntrackReport::default()
            };
        }
        let families = frontends.families();
        let mut report = ConntrackReport::default();
        self.conntrack.retain(|entry| {
            // The dump is per family and UDP only.
            if entry.protocol != 17 || !families.contains(&IpFamily::of(entry.orig_dst.ip())) {
                return true;
            }
            report.scanned += 1;
            let stale = frontends.should_delete(entry);
            report.stale += u64::from(stale);
            report.deleted += u64::from(stale);
            !stale
        });
        report
    }
}
