//! A kernel for integration tests that drive the sync loop: its IPVS table
//! simulated by the core's `apply_operation`, accepting what the core's
//! rules accept (the real kernel is tested in the VM suite). Declared by
//! the tests that need it (`mod table;`).

use ipvs_agent::dataplane::{ApplyReport, ConntrackReport, Dataplane, DataplaneError};
use std::collections::{BTreeMap, BTreeSet};
use svcnet_core::proxy::{apply_operation, IpvsTable, Operation, UdpFrontends, VirtualServer, VirtualServerKey};

/// The kernel's table simulated by the core's `apply_operation`.
#[derive(Default)]
pub struct TableDataplane(pub IpvsTable);

impl Dataplane for TableDataplane {
    async fn observe(&mut self) -> Result<IpvsTable, DataplaneError> {
        Ok(self.0.clone())
    }

    async fn observe_virtual_servers(
        &mut self,
        keys: &BTreeSet<VirtualServerKey>,
    ) -> Result<BTreeMap<VirtualServerKey, VirtualServer>, DataplaneError> {
        Ok((keys.iter())
            .filter_map(|key| Some((*key, self.0.virtual_servers.get(key)?.clone())))
            .collect())
    }

    async fn observe_outline(&mut self) -> Result<svcnet_core::proxy::sync_loop::TableOutline, DataplaneError> {
        Ok(svcnet_core::proxy::sync_loop::TableOutline::of(&self.0))
    }

    async fn apply(&mut self, operations: &[Operation]) -> ApplyReport {
        let mut report = ApplyReport::default();
        for op in operations {
            match apply_operation(&mut self.0, op) {
                Ok(()) => report.applied += 1,
                Err(e) => report.failed.push((op.clone(), DataplaneError::Address(e.to_string()))),
            }
        }
        report
    }

    async fn clean_udp_conntrack(&mut self, _frontends: &UdpFrontends) -> ConntrackReport {
        ConntrackReport::default()
    }
}
