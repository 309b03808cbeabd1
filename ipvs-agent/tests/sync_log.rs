//! The `sync complete` log line the VM suite and operators grep for, checked
//! in a process of its own: tracing's callsite caches are global, so a
//! subscriber set by one test is not reliably seen while other tests log
//! from the same callsites on other threads.

mod common;
mod table;

use common::LogCapture;
use ipvs_agent::metrics::Metrics;
use ipvs_agent::sync::{SyncLoop, SyncSettings};
use std::sync::Arc;
use std::time::Duration;
use svcnet_core::controlplane::{ClusterConfig, ControlPlane};
use svcnet_core::proxy::{NodeInfo, ProxyConfig};
use svcnet_core::time::Time;
use table::TableDataplane;

#[tokio::test]
async fn each_sync_logs_one_sync_complete_line_with_its_counts() {
    let log = LogCapture::start();

    let mut cp = ControlPlane::new(ClusterConfig::default()).unwrap();
    let manifest = "apiVersion: v1\nkind: Service\nmetadata: {name: web}\n\
                    spec: {clusterIP: 10.96.0.20, ports: [{port: 80}]}\n";
    for result in cp.apply_manifest(manifest).unwrap() {
        result.unwrap();
    }
    let node = NodeInfo {
        name: "node-a".into(),
        ips: vec!["192.168.0.10".parse().unwrap()],
        zone: None,
    };
    let settings = SyncSettings::new(Duration::from_secs(1), Duration::from_secs(30));
    let metrics = Arc::new(Metrics::default());
    let mut sync = SyncLoop::new(
        TableDataplane::default(),
        ProxyConfig::default(),
        node.clone(),
        settings,
        metrics,
    );
    sync.rebuild(cp.services(), cp.endpoint_slices(), node);

    let first = sync.tick(Time(0)).await.unwrap();
    let again = sync.sync(true, Time(1_000)).await;
    assert!(first.operations > 0 && again.operations == 0);

    let text = log.text();
    let lines: Vec<&str> = text.lines().filter(|l| l.contains("sync complete")).collect();
    assert_eq!(lines.len(), 2, "{text}");
    for (line, report) in lines.iter().zip([first, again]) {
        let want = format!(
            "INFO sync complete full=true operations={} failed=0 duration_ms=",
            report.operations
        );
        assert!(line.contains(&want), "{line}");
    }
}
