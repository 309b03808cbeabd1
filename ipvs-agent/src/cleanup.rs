//! `cleanup`: removes what the agent owns and nothing else. The plan is the
//! core's, from the kernel's table towards an empty one, so its ownership
//! rules decide: virtual servers on `kube-ipvs0` addresses and NodePorts on
//! the node's addresses go, with the addresses; anything else (keepalived,
//! hand-made rules) stays. Then the `kube-ipvs0` link itself is deleted.

use crate::dataplane::{Dataplane, DataplaneError};
use crate::kernel::LinuxDataplane;
use svcnet_core::proxy::{plan, IpvsTable, NodeInfo, PlanContext, PlanState, ProxyConfig};
use svcnet_core::time::Time;

/// Deleting the `kube-ipvs0` link: the one step of cleanup outside the IPVS
/// table and the link's addresses.
#[allow(async_fn_in_trait)]
pub trait RemoveDummyLink {
    /// Deletes the `kube-ipvs0` link; no link is not an error.
    async fn remove_dummy_link(&mut self) -> Result<(), DataplaneError>;
}

impl RemoveDummyLink for LinuxDataplane {
    async fn remove_dummy_link(&mut self) -> Result<(), DataplaneError> {
        self.delete_link().await.map(|_| ())
    }
}

/// What cleanup did.
#[derive(Debug, Default)]
pub struct CleanupReport {
    /// Operations planned.
    pub operations: usize,
    /// Those the kernel refused, as `ipvsadm` commands with the error.
    pub failed: Vec<String>,
    /// Why the link could not be deleted, if it could not.
    pub link_error: Option<String>,
}

impl CleanupReport {
    /// True when everything owned is gone.
    pub fn succeeded(&self) -> bool {
        self.failed.is_empty() && self.link_error.is_none()
    }
}

/// Removes everything the agent owns on `node`.
pub async fn cleanup<D: Dataplane + RemoveDummyLink>(
    dataplane: &mut D,
    node: &NodeInfo,
    proxy: &ProxyConfig,
    now: Time,
) -> Result<CleanupReport, DataplaneError> {
    let observed = dataplane.observe().await?;
    let ctx = PlanContext::new(proxy, node, now);
    let plan = plan(&observed, &IpvsTable::default(), &PlanState::default(), &ctx);
    let applied = dataplane.apply(&plan.operations).await;
    let mut report = CleanupReport {
        operations: plan.operations.len(),
        failed: applied.failed.iter().map(|(op, e)| format!("{op}: {e}")).collect(),
        link_error: None,
    };
    if let Err(e) = dataplane.remove_dummy_link().await {
        report.link_error = Some(e.to_string());
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::MemoryDataplane;
    use svcnet_core::proxy::{Protocol, RealServer, VirtualServer, VirtualServerKey, VirtualServerSettings};

    impl RemoveDummyLink for MemoryDataplane {
        async fn remove_dummy_link(&mut self) -> Result<(), DataplaneError> {
            self.link_removed = true;
            Ok(())
        }
    }

    fn vs(table: &mut IpvsTable, addr: &str, port: u16) -> VirtualServerKey {
        let key = VirtualServerKey::new(Protocol::Tcp, addr.parse().unwrap(), port);
        let mut v = VirtualServer {
            settings: VirtualServerSettings {
                scheduler: Default::default(),
                flags: Default::default(),
                timeout: 0,
                netmask: u32::MAX,
            },
            real_servers: Default::default(),
        };
        v.real_servers
            .insert("10.244.1.11:8080".parse().unwrap(), RealServer::masq(1));
        table.virtual_servers.insert(key, v);
        key
    }

    #[tokio::test]
    async fn removes_what_is_owned_and_leaves_the_rest() {
        let mut table = IpvsTable::default();
        table.addresses.insert("10.96.0.20".parse().unwrap());
        let cluster_ip = vs(&mut table, "10.96.0.20", 80);
        let node_port = vs(&mut table, "192.168.0.10", 30080);
        let foreign = vs(&mut table, "192.168.0.10", 8443);
        let elsewhere = vs(&mut table, "203.0.113.5", 443);
        let mut dp = MemoryDataplane {
            table,
            ..MemoryDataplane::default()
        };
        let node = NodeInfo {
            name: "node-a".into(),
            ips: vec!["192.168.0.10".parse().unwrap()],
            zone: None,
        };
        let report = cleanup(&mut dp, &node, &ProxyConfig::default(), Time::ZERO)
            .await
            .unwrap();
        assert!(report.succeeded());
        assert_eq!(report.operations, 3, "two virtual servers and one address");
        assert!(dp.link_removed);
        assert!(dp.table.addresses.is_empty());
        let left: Vec<VirtualServerKey> = dp.table.virtual_servers.keys().copied().collect();
        assert_eq!(left.len(), 2);
        assert!(left.contains(&foreign) && left.contains(&elsewhere));
        assert!(!left.contains(&cluster_ip) && !left.contains(&node_port));
    }
}
