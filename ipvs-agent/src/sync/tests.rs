use super::*;
use crate::memory::MemoryDataplane;
use svcnet_core::controlplane::{ClusterConfig, ControlPlane};
use svcnet_core::proxy::{
    IpvsTable, Operation, PlanState, Protocol, VirtualServer, VirtualServerKey, VirtualServerSettings,
};

const SVC: &str = "apiVersion: v1\nkind: Service\nmetadata: {name: web}\nspec: {clusterIP: 10.96.0.20, selector: {app: web}, ports: [{port: 80, targetPort: 8080}]}\n";

fn pod(name: &str, ip: &str) -> String {
    format!("apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, labels: {{app: web}}}}\nspec: {{nodeName: node-a}}\nstatus: {{phase: Running, podIPs: [{{ip: {ip}}}], conditions: [{{type: Ready, status: \"True\"}}]}}\n")
}

fn cluster() -> ControlPlane {
    let mut cp = ControlPlane::new(ClusterConfig {
        apiservers: vec!["192.168.0.10:6443".into()],
        ..ClusterConfig::default()
    })
    .unwrap();
    for text in [
        SVC.to_string(),
        pod("web-1", "10.244.1.11"),
        pod("web-2", "10.244.1.12"),
    ] {
        for r in cp.apply_manifest(&text).unwrap() {
            r.unwrap();
        }
    }
    cp
}

fn node() -> NodeInfo {
    NodeInfo {
        name: "node-a".into(),
        ips: vec!["192.168.0.10".parse().unwrap()],
        zone: None,
    }
}

fn settings() -> SyncSettings {
    SyncSettings::new(Duration::from_secs(1), Duration::from_secs(30))
}

fn new_loop(dp: MemoryDataplane, cp: &ControlPlane) -> SyncLoop<MemoryDataplane> {
    let mut sync = SyncLoop::new(
        dp,
        ProxyConfig::default(),
        node(),
        settings(),
        Arc::new(Metrics::default()),
    );
    sync.rebuild(cp.services(), cp.endpoint_slices(), node());
    sync
}

fn update(sync: &mut SyncLoop<MemoryDataplane>, cp: &ControlPlane, key: &str) {
    let (ns, name) = key.split_once('/').unwrap();
    let slices = cp.endpoint_slices_for(ns, name);
    sync.update_service(key, cp.service(ns, name).map(|s| (s, slices.as_slice())));
}

/// A loop that has programmed the cluster, then seen web-2 (which has one
/// active connection) removed; not synced since.
async fn web_2_removed_with_a_connection() -> SyncLoop<MemoryDataplane> {
    let mut cp = cluster();
    let mut sync = new_loop(MemoryDataplane::default(), &cp);
    sync.tick(T0).await.unwrap();
    sync.dataplane_mut().table.set_counters(&web(), rs("10.244.1.12"), 1, 0);
    cp.delete_pod("default", "web-2").unwrap();
    update(&mut sync, &cp, "default/web");
    sync
}

fn web() -> VirtualServerKey {
    VirtualServerKey::new(Protocol::Tcp, "10.96.0.20".parse().unwrap(), 80)
}

fn rs(ip: &str) -> std::net::SocketAddr {
    format!("{ip}:8080").parse().unwrap()
}

const T0: Time = Time(1_000_000);

fn at(secs: u64) -> Time {
    T0.plus(Duration::from_secs(secs))
}

#[tokio::test]
async fn first_sync_programs_everything_and_a_matching_table_is_adopted_without_operations() {
    let cp = cluster();
    let mut sync = new_loop(MemoryDataplane::default(), &cp);
    let report = sync.tick(T0).await.unwrap();
    assert!(report.full && report.succeeded());
    assert!(report.operations > 0);
    assert_eq!(&sync.dataplane().table, sync.desired());

    // A restarted agent finds the same table, with live connections.
    let mut kernel = std::mem::take(&mut sync.dataplane_mut().table);
    kernel.set_counters(&web(), rs("10.244.1.11"), 3, 1);
    let mut restarted = new_loop(
        MemoryDataplane {
            table: kernel,
            ..MemoryDataplane::default()
        },
        &cp,
    );
    let report = restarted.tick(T0).await.unwrap();
    assert_eq!((report.full, report.operations), (true, 0));
    assert!(restarted.dataplane_mut().log.is_empty(), "no flush, nothing touched");
}

#[tokio::test]
async fn foreign_virtual_servers_are_never_touched() {
    let cp = cluster();
    let mut kernel = IpvsTable::default();
    let foreign = VirtualServerKey::new(Protocol::Tcp, "203.0.113.5".parse().unwrap(), 443);
    kernel.virtual_servers.insert(
        foreign,
        VirtualServer {
            settings: VirtualServerSettings {
                scheduler: Default::default(),
                flags: Default::default(),
                timeout: 0,
                netmask: u32::MAX,
            },
            real_servers: Default::default(),
        },
    );
    let mut sync = new_loop(
        MemoryDataplane {
            table: kernel,
            ..MemoryDataplane::default()
        },
        &cp,
    );
    sync.tick(T0).await.unwrap();
    sync.sync(true, at(40)).await;
    let dp = sync.dataplane_mut();
    assert!(dp.table.virtual_servers.contains_key(&foreign));
    assert!(
        dp.log.iter().all(|op| !op.to_string().contains("203.0.113.5")),
        "{:?}",
        dp.log
    );
}

#[tokio::test]
async fn drift_is_repaired_by_the_periodic_full_sync() {
    let cp = cluster();
    let mut sync = new_loop(MemoryDataplane::default(), &cp);
    sync.tick(T0).await.unwrap();
    // Someone runs `ipvsadm -D -t 10.96.0.20:80`.
    sync.dataplane_mut().table.virtual_servers.remove(&web());
    assert_eq!(sync.tick(at(5)).await, None, "nothing due before the sync period");
    assert_eq!(sync.next_due(at(5)), at(30));
    let report = sync.tick(at(30)).await.unwrap();
    assert!(report.full);
    assert_eq!(report.operations, 3, "the virtual server and its two real servers");
    assert_eq!(&sync.dataplane().table, sync.desired());
}

#[tokio::test]
async fn a_full_sync_in_parts_repairs_drift_with_reads_of_a_part_at_a_time() {
    let cp = cluster();
    let metrics = Arc::new(Metrics::default());
    let mut sync = SyncLoop::new(
        MemoryDataplane::default(),
        ProxyConfig::default(),
        node(),
        settings().in_parts(1),
        metrics.clone(),
    );
    sync.rebuild(cp.services(), cp.endpoint_slices(), node());
    assert!(
        sync.tick(T0).await.unwrap().full,
        "the first sync reads the whole table"
    );
    let kubernetes = VirtualServerKey::new(Protocol::Tcp, "10.96.0.1".parse().unwrap(), 443);
    assert_eq!(
        sync.desired().virtual_servers.keys().copied().collect::<Vec<_>>(),
        [kubernetes, web()]
    );
    // Someone deletes web's virtual server and its address.
    let dp = sync.dataplane_mut();
    dp.table.virtual_servers.remove(&web());
    dp.table.addresses.remove(&"10.96.0.20".parse().unwrap());

    let mut parts = Vec::new();
    while let Some(report) = sync.tick(at(30)).await {
        assert!(!report.full && report.succeeded());
        parts.push(report.part.map(|p| (p.number, p.of)).unwrap());
    }
    assert_eq!(parts, [(1, 3), (2, 3), (3, 3)], "the outline, then each virtual server");
    let dp = sync.dataplane();
    assert_eq!(
        (dp.reads, dp.outline_reads),
        (1, 1),
        "no whole-table read after the first"
    );
    assert_eq!(dp.virtual_server_reads, [vec![kubernetes], vec![web()]]);
    assert_eq!(&dp.table, sync.desired(), "the address and the virtual server are back");
    assert_eq!(sync.next_due(at(31)), at(60));
    let text = metrics.render();
    assert!(
        text.contains("kubeproxy_sync_full_proxy_rules_duration_seconds_count{ip_family=\"IPv4\"} 2"),
        "the first sync and the one in parts are full syncs to kube-proxy's histogram:\n{text}"
    );
}

#[tokio::test]
async fn changes_are_synced_incrementally_and_rate_limited() {
    let mut cp = cluster();
    let mut sync = new_loop(MemoryDataplane::default(), &cp);
    sync.tick(T0).await.unwrap();
    let reads = sync.dataplane_mut().reads;

    for r in cp.apply_manifest(&pod("web-3", "10.244.1.13")).unwrap() {
        r.unwrap();
    }
    update(&mut sync, &cp, "default/web");
    // Within min-sync-period of the last sync: wait.
    let soon = T0.plus(Duration::from_millis(300));
    assert_eq!(sync.tick(soon).await, None);
    assert_eq!(sync.next_due(soon), at(1));
    let report = sync.tick(at(1)).await.unwrap();
    assert_eq!((report.full, report.operations, report.failed), (false, 1, 0));
    assert_eq!(sync.dataplane_mut().reads, reads, "no dump for an incremental sync");
    assert_eq!(&sync.dataplane().table, sync.desired());
    assert_eq!(sync.tick(at(2)).await, None, "nothing left to do");
}

#[tokio::test]
async fn draining_real_servers_go_when_their_connections_end() {
    let mut sync = web_2_removed_with_a_connection().await;
    let report = sync.tick(at(1)).await.unwrap();
    assert_eq!(report.operations, 1);
    let kept = &sync.dataplane().table.virtual_servers[&web()].real_servers[&rs("10.244.1.12")];
    assert_eq!(kept.weight, 0, "drains at weight 0 while a connection is open");
    assert_eq!(sync.plan_state().draining.len(), 1);

    // Counters are re-read every drain check period, not on every tick, and
    // only the draining real servers' virtual server is read.
    let reads = sync.dataplane_mut().reads;
    let partial = sync.dataplane().virtual_server_reads.len();
    assert_eq!(sync.next_due(at(2)), at(6));
    let report = sync.tick(at(6)).await.unwrap();
    assert_eq!((report.full, report.operations), (false, 0), "still connected");
    assert_eq!(sync.dataplane().reads, reads, "no whole-table read");
    assert_eq!(sync.dataplane().virtual_server_reads[partial..], [vec![web()]]);

    sync.dataplane_mut().table.set_counters(&web(), rs("10.244.1.12"), 0, 0);
    let report = sync.tick(at(11)).await.unwrap();
    assert_eq!(report.operations, 1);
    assert_eq!(&sync.dataplane().table, sync.desired());
    assert!(sync.plan_state().draining.is_empty());
}

#[tokio::test]
async fn a_removal_rereads_only_its_virtual_server_and_plans_with_those_counters() {
    let mut cp = cluster();
    let other = "apiVersion: v1\nkind: Service\nmetadata: {name: api}\nspec: {clusterIP: 10.96.0.21, selector: {app: api}, ports: [{port: 443}]}\n";
    for r in cp.apply_manifest(other).unwrap() {
        r.unwrap();
    }
    let mut sync = new_loop(MemoryDataplane::default(), &cp);
    sync.tick(T0).await.unwrap();
    assert_eq!(
        sync.dataplane().table.virtual_servers.len(),
        3,
        "kubernetes, web and api"
    );
    // The loop's copy has no connection on web-2; the kernel has one.
    sync.dataplane_mut().table.set_counters(&web(), rs("10.244.1.12"), 1, 0);
    let reads = sync.dataplane().reads;

    cp.delete_pod("default", "web-2").unwrap();
    update(&mut sync, &cp, "default/web");
    let report = sync.tick(at(1)).await.unwrap();
    assert_eq!((report.full, report.operations, report.failed), (false, 1, 0));
    assert_eq!(sync.dataplane().reads, reads, "no whole-table read");
    assert_eq!(sync.dataplane().virtual_server_reads, [vec![web()]]);
    let kept = &sync.dataplane().table.virtual_servers[&web()].real_servers[&rs("10.244.1.12")];
    assert_eq!(
        kept.weight, 0,
        "drained on the fresh counters, not deleted on the copy's"
    );
}

#[tokio::test]
async fn a_connection_closed_since_the_last_read_lets_the_real_server_go_at_once() {
    let mut cp = cluster();
    let mut sync = new_loop(MemoryDataplane::default(), &cp);
    sync.tick(T0).await.unwrap();
    // A full read sees a connection on web-2, which then closes.
    sync.dataplane_mut().table.set_counters(&web(), rs("10.244.1.12"), 1, 0);
    sync.sync(true, at(1)).await;
    sync.dataplane_mut().table.set_counters(&web(), rs("10.244.1.12"), 0, 0);
    let reads = sync.dataplane().reads;

    cp.delete_pod("default", "web-2").unwrap();
    update(&mut sync, &cp, "default/web");
    let report = sync.tick(at(2)).await.unwrap();
    assert_eq!(report.operations, 1);
    assert!(
        matches!(sync.dataplane().log.last(), Some(Operation::DeleteRealServer { .. })),
        "{:?}",
        sync.dataplane().log.last()
    );
    assert_eq!(sync.dataplane().reads, reads);
    assert!(sync.plan_state().draining.is_empty());
    assert_eq!(&sync.dataplane().table, sync.desired());
}

#[tokio::test]
async fn a_draining_virtual_server_deleted_by_hand_is_added_back_and_a_full_sync_follows() {
    let mut sync = web_2_removed_with_a_connection().await;
    sync.tick(at(1)).await.unwrap();
    assert_eq!(sync.plan_state().draining.len(), 1);

    // Someone runs `ipvsadm -D -t 10.96.0.20:80` during the drain.
    sync.dataplane_mut().table.virtual_servers.remove(&web());
    let report = sync.tick(at(6)).await.unwrap();
    assert_eq!((report.full, report.failed), (false, 0));
    assert_eq!(
        report.operations, 2,
        "the virtual server and its one wanted real server"
    );
    assert_eq!(&sync.dataplane().table, sync.desired());
    assert!(sync.plan_state().draining.is_empty());
    assert_eq!(sync.next_due(at(6)), at(7), "a full sync is due");
    let report = sync.tick(at(7)).await.unwrap();
    assert_eq!((report.full, report.operations), (true, 0));
}

#[tokio::test]
async fn a_failed_reread_schedules_a_full_sync() {
    let mut sync = web_2_removed_with_a_connection().await;
    sync.dataplane_mut().fail_reads = true;
    let logged = sync.dataplane().log.len();
    let report = sync.tick(at(1)).await.unwrap();
    assert!(report.read_error.is_some());
    assert_eq!(sync.dataplane().log.len(), logged, "nothing applied");

    sync.dataplane_mut().fail_reads = false;
    let due = sync.next_due(at(1));
    let report = sync.tick(due).await.unwrap();
    assert!(report.full && report.succeeded());
    let kept = &sync.dataplane().table.virtual_servers[&web()].real_servers[&rs("10.244.1.12")];
    assert_eq!(kept.weight, 0, "the change is not lost: drained by the full sync");
}

#[tokio::test]
async fn draining_stops_at_the_drain_timeout() {
    let mut sync = web_2_removed_with_a_connection().await;
    sync.tick(at(1)).await.unwrap();
    let report = sync.sync(false, at(1 + 600)).await;
    assert_eq!(report.operations, 1);
    assert!(sync.plan_state().draining.is_empty());
}

#[tokio::test]
async fn failures_back_off_exponentially_and_recover() {
    let cp = cluster();
    let mut sync = new_loop(
        MemoryDataplane {
            fail_reads: true,
            ..MemoryDataplane::default()
        },
        &cp,
    );
    let report = sync.tick(T0).await.unwrap();
    assert!(report.read_error.as_deref().unwrap().contains("injected failure"));
    let mut now = T0;
    let mut delays = Vec::new();
    for _ in 0..7 {
        let due = sync.next_due(now);
        delays.push(due.since(now).as_secs());
        assert_eq!(sync.tick(Time(due.0 - 1)).await, None, "not before the backoff");
        now = due;
        assert!(!sync.tick(now).await.unwrap().succeeded());
    }
    assert_eq!(delays, vec![1, 2, 4, 8, 16, 30, 30]);

    sync.dataplane_mut().fail_reads = false;
    let due = sync.next_due(now);
    let report = sync.tick(due).await.unwrap();
    assert!(report.full && report.succeeded());
    assert_eq!(&sync.dataplane().table, sync.desired());
    assert_eq!(
        sync.next_due(due),
        due.plus(Duration::from_secs(30)),
        "back to the sync period"
    );
}

#[tokio::test]
async fn refused_operations_are_retried_with_a_full_sync() {
    let cp = cluster();
    let mut sync = new_loop(
        MemoryDataplane {
            fail_operations: true,
            ..MemoryDataplane::default()
        },
        &cp,
    );
    let report = sync.tick(T0).await.unwrap();
    assert_eq!(report.failed, report.operations);
    assert!(!report.succeeded());
    sync.dataplane_mut().fail_operations = false;
    assert_eq!(sync.tick(T0.plus(Duration::from_millis(500))).await, None);
    let report = sync.tick(at(1)).await.unwrap();
    assert!(report.full && report.succeeded());
    assert_eq!(&sync.dataplane().table, sync.desired());
}

/// A new loop over the kernel `sync` programmed, as a restarted agent
/// makes it: the cluster without web-2, and `saved` restored if given.
fn restarted(sync: &mut SyncLoop<MemoryDataplane>, saved: Option<PlanState>) -> SyncLoop<MemoryDataplane> {
    let table = std::mem::take(&mut sync.dataplane_mut().table);
    let mut cp = cluster();
    cp.delete_pod("default", "web-2").unwrap();
    let mut again = new_loop(
        MemoryDataplane {
            table,
            ..MemoryDataplane::default()
        },
        &cp,
    );
    if let Some(saved) = saved {
        again.restore_plan_state(saved);
    }
    again
}

#[tokio::test]
async fn after_a_restart_the_drain_timeout_counts_from_the_saved_drain_start() {
    let mut sync = web_2_removed_with_a_connection().await;
    let report = sync.tick(at(1)).await.unwrap();
    assert!(report.plan_state_changed, "web-2 began to drain");
    let drain_start = at(1);
    assert_eq!(
        sync.plan_state().draining.since(&web(), &rs("10.244.1.12")),
        Some(drain_start)
    );
    let saved = sync.plan_state().clone();

    // Restarted 400 s into the drain (--drain-timeout 600 s), the
    // connection still open: adopted as it is, the drain start kept.
    let mut again = restarted(&mut sync, Some(saved.clone()));
    let report = again.tick(at(401)).await.unwrap();
    assert_eq!((report.full, report.operations), (true, 0));
    assert!(!report.plan_state_changed, "nothing to save again");
    assert_eq!(again.plan_state(), &saved);

    // 601 s after the drain began, the connection never closed: deleted
    // (counting from the restart it would stay until 1,001 s).
    let report = again.tick(at(1 + 601)).await.unwrap();
    assert_eq!(report.operations, 1);
    assert!(
        matches!(
            again.dataplane().log.last(),
            Some(Operation::DeleteRealServer { real_server, .. }) if *real_server == rs("10.244.1.12")
        ),
        "{:?}",
        again.dataplane().log
    );
    assert!(report.plan_state_changed);
    assert!(again.plan_state().draining.is_empty());
    assert_eq!(&again.dataplane().table, again.desired());
}

#[tokio::test]
async fn a_restored_plan_state_keeps_only_what_the_kernel_still_has() {
    let mut sync = web_2_removed_with_a_connection().await;
    sync.tick(at(1)).await.unwrap();
    // Saved by some earlier run: web-2 draining since T0 (still in the
    // kernel), a real server and a whole virtual server the kernel no
    // longer has, web-1 (wanted, at full weight), and a claimed virtual
    // server that is neither in the kernel nor wanted.
    let saved: PlanState = serde_json::from_value(serde_json::json!({
        "draining": {
            "TCP/10.96.0.20:80": {
                "10.244.1.11:8080": T0,
                "10.244.1.12:8080": T0,
                "10.244.1.99:8080": T0,
            },
            "TCP/10.96.0.99:80": {"10.244.1.12:8080": T0},
        },
        "claimed": ["TCP/192.168.0.10:8443"],
    }))
    .unwrap();
    assert_eq!(saved.draining.len(), 4);

    let mut again = restarted(&mut sync, Some(saved));
    let report = again.tick(at(10)).await.unwrap();
    assert_eq!((report.full, report.operations), (true, 0));
    let draining: Vec<_> = again.plan_state().draining.iter().collect();
    assert_eq!(
        draining,
        [(&web(), &rs("10.244.1.12"), T0)],
        "only web-2 is still draining, since the saved time"
    );
    assert!(again.plan_state().claimed.is_empty());
    assert!(report.plan_state_changed, "the pruned state is saved");
}

mod conntrack {
    use super::*;
    use svcnet_core::proxy::ConntrackEntry;

    const DNS: &str = "apiVersion: v1\nkind: Service\nmetadata: {name: dns}\nspec: {type: NodePort, clusterIP: 10.96.0.10, selector: {app: dns}, ports: [{port: 53, protocol: UDP, targetPort: 5353, nodePort: 30053}]}\n";

    fn dns_pod(name: &str, ip: &str) -> String {
        format!("apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, labels: {{app: dns}}}}\nspec: {{nodeName: node-a}}\nstatus: {{phase: Running, podIPs: [{{ip: {ip}}}], conditions: [{{type: Ready, status: \"True\"}}]}}\n")
    }

    fn apply(cp: &mut ControlPlane, text: &str) {
        for r in cp.apply_manifest(text).unwrap() {
            r.unwrap();
        }
    }

    fn entry(protocol: u8, orig_src: &str, orig_dst: &str, reply_src: &str) -> ConntrackEntry {
        ConntrackEntry {
            protocol,
            orig_src: orig_src.parse().unwrap(),
            orig_dst: orig_dst.parse().unwrap(),
            reply_src: reply_src.parse().unwrap(),
        }
    }

    fn dns_cluster() -> ControlPlane {
        let mut cp = cluster();
        apply(&mut cp, DNS);
        cp
    }

    #[tokio::test]
    async fn black_holed_then_stale_entries_are_deleted_after_the_syncs_that_change_udp() {
        let mut cp = dns_cluster();
        let black_holed = entry(17, "10.244.2.3:40000", "10.96.0.10:53", "10.96.0.10:53");
        let tcp = entry(6, "10.244.2.3:40001", "10.96.0.20:80", "10.244.1.99:8080");
        let elsewhere = entry(17, "10.244.2.3:40002", "8.8.8.8:53", "8.8.8.8:53");
        let dp = MemoryDataplane {
            conntrack: vec![black_holed, tcp, elsewhere],
            ..MemoryDataplane::default()
        };
        let mut sync = new_loop(dp, &cp);

        // No endpoint yet: nothing can be stale, no dump.
        let report = sync.tick(T0).await.unwrap();
        assert!(report.succeeded() && report.conntrack.is_none());
        assert_eq!(sync.dataplane().conntrack_cleanups, 0);

        // The first endpoint: the black-holed entry goes.
        apply(&mut cp, &dns_pod("dns-1", "10.244.1.21"));
        update(&mut sync, &cp, "default/dns");
        let report = sync.tick(at(1)).await.unwrap();
        let cleanup = report.conntrack.expect("a cleanup ran");
        assert_eq!(
            (cleanup.scanned, cleanup.deleted),
            (2, 1),
            "both UDP entries dumped, one stale"
        );
        assert_eq!(sync.dataplane().conntrack, [tcp, elsewhere]);

        // Flows to dns-1 through the ClusterIP and the NodePort; then dns-1
        // is replaced by dns-2.
        let via_cluster_ip = entry(17, "10.244.2.3:40003", "10.96.0.10:53", "10.244.1.21:5353");
        let via_node_port = entry(17, "198.51.100.7:5000", "192.168.0.10:30053", "10.244.1.21:5353");
        sync.dataplane_mut().conntrack.extend([via_cluster_ip, via_node_port]);
        // Nothing changed: no cleanup at the next full sync.
        let report = sync.tick(at(40)).await.unwrap();
        assert!(report.full && report.conntrack.is_none());
        assert_eq!(sync.dataplane().conntrack_cleanups, 1);

        cp.delete_pod("default", "dns-1").unwrap();
        apply(&mut cp, &dns_pod("dns-2", "10.244.1.22"));
        update(&mut sync, &cp, "default/dns");
        let report = sync.tick(at(42)).await.unwrap();
        assert_eq!(report.conntrack.expect("a cleanup ran").deleted, 2);
        assert_eq!(sync.dataplane().conntrack, [tcp, elsewhere]);
    }

    #[tokio::test]
    async fn a_failed_cleanup_is_tried_again_and_never_undoes_the_sync() {
        let mut cp = dns_cluster();
        apply(&mut cp, &dns_pod("dns-1", "10.244.1.21"));
        let stale = entry(17, "10.244.2.3:40000", "10.96.0.10:53", "10.244.1.20:5353");
        let dp = MemoryDataplane {
            conntrack: vec![stale],
            fail_conntrack: true,
            ..MemoryDataplane::default()
        };
        let mut sync = new_loop(dp, &cp);
        let report = sync.tick(T0).await.unwrap();
        assert!(report.succeeded(), "the IPVS sync stands");
        assert_eq!(report.conntrack.expect("tried").errors, 1);
        assert_eq!(&sync.dataplane().table, sync.desired());

        // The next sync, with nothing changed, tries again.
        sync.dataplane_mut().fail_conntrack = false;
        let report = sync.tick(at(40)).await.unwrap();
        assert_eq!(report.conntrack.expect("tried again").deleted, 1);
        assert!(sync.dataplane().conntrack.is_empty());
        assert_eq!(sync.dataplane().conntrack_cleanups, 2);
        let text = sync.metrics.render();
        assert!(text.contains("svcnet_conntrack_entries_deleted_total 1"), "{text}");
        assert!(text.contains("svcnet_conntrack_cleanup_errors_total 1"), "{text}");
    }

    #[tokio::test]
    async fn the_cleanup_can_be_turned_off() {
        let mut cp = dns_cluster();
        apply(&mut cp, &dns_pod("dns-1", "10.244.1.21"));
        let stale = entry(17, "10.244.2.3:40000", "10.96.0.10:53", "10.244.1.20:5353");
        let dp = MemoryDataplane {
            conntrack: vec![stale],
            ..MemoryDataplane::default()
        };
        let mut sync = new_loop(dp, &cp);
        sync.set_conntrack_cleanup(false);
        let report = sync.tick(T0).await.unwrap();
        assert!(report.succeeded() && report.conntrack.is_none());
        assert_eq!(sync.dataplane().conntrack, [stale]);
        assert_eq!(sync.dataplane().conntrack_cleanups, 0);
    }
}
