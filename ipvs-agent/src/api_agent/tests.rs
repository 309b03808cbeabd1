use super::*;
use crate::memory::MemoryDataplane;
use std::time::Duration;
use svcnet_core::controlplane::{ClusterConfig, ControlPlane};
use svcnet_core::proxy::nftables::desired_ruleset;
use svcnet_core::proxy::watch_cache::{Watched, WatchedKind};
use svcnet_core::proxy::{plan, IpvsTable, PlanContext, PlanState};

const WORKLOAD: &str = "apiVersion: v1\nkind: Service\nmetadata: {name: web}\nspec: {clusterIP: 10.96.0.20, selector: {app: web}, ports: [{port: 80, targetPort: 8080}]}\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: web-1, labels: {app: web}}\nspec: {nodeName: node-a}\nstatus: {phase: Running, podIPs: [{ip: 10.244.1.11}], conditions: [{type: Ready, status: \"True\"}]}\n---\napiVersion: v1\nkind: Node\nmetadata: {name: node-a}\nstatus: {addresses: [{type: InternalIP, address: 192.168.0.10}]}\n";

/// The cluster an apiserver would list.
fn cluster() -> ControlPlane {
    let mut cp = ControlPlane::new(ClusterConfig {
        apiservers: vec!["192.168.0.1:6443".into()],
        ..ClusterConfig::default()
    })
    .unwrap();
    for r in cp.apply_manifest(WORKLOAD).unwrap() {
        r.unwrap();
    }
    cp
}

fn agent(dataplane: MemoryDataplane) -> ApiAgent<MemoryDataplane> {
    let settings = ApiSettings {
        node_name: "node-a".into(),
        node_ips: Vec::new(),
        host_ips: Vec::new(),
        proxy: ProxyConfig::default(),
        sync: SyncSettings::new(Duration::from_secs(1), Duration::from_secs(30)),
        plan_state_file: None,
        conntrack_cleanup: true,
        nftables: true,
    };
    ApiAgent::new(settings, PlanState::default(), dataplane, Arc::new(Metrics::default()))
}

/// An agent over a kernel that already holds `table`.
fn agent_over(table: IpvsTable) -> ApiAgent<MemoryDataplane> {
    agent(MemoryDataplane {
        table,
        ..MemoryDataplane::default()
    })
}

/// The first lists, as the watch streams deliver them.
fn first_lists(agent: &mut ApiAgent<MemoryDataplane>, cp: &ControlPlane, kinds: &[WatchedKind]) {
    for kind in kinds {
        agent.handle(WatchUpdate::Begin(*kind));
        match kind {
            WatchedKind::Service => {
                for svc in cp.services() {
                    agent.handle(WatchUpdate::Listed(Watched::Service(Box::new(svc.clone()))));
                }
            }
            WatchedKind::EndpointSlice => {
                for slice in cp.endpoint_slices() {
                    agent.handle(WatchUpdate::Listed(Watched::EndpointSlice(Box::new(slice.clone()))));
                }
            }
            WatchedKind::Node => {
                for node in cp.nodes() {
                    agent.handle(WatchUpdate::Listed(Watched::Node(Box::new(node.clone()))));
                }
            }
        }
        agent.handle(WatchUpdate::End(*kind));
    }
}

const ALL: [WatchedKind; 3] = [WatchedKind::Service, WatchedKind::EndpointSlice, WatchedKind::Node];

fn at(secs: u64) -> Time {
    Time::from_secs(2_000 + secs)
}

/// The kernel as an earlier run left it: a virtual server (and its
/// kube-ipvs0 address) for a Service deleted since, and nothing else.
fn kernel_left_by_an_earlier_run(cp: &ControlPlane) -> IpvsTable {
    let mut cp = cp.clone();
    let stale =
        "apiVersion: v1\nkind: Service\nmetadata: {name: gone}\nspec: {clusterIP: 10.96.0.99, ports: [{port: 443}]}\n";
    cp.apply_manifest(stale).unwrap();
    let node = cp.node_info("node-a").unwrap();
    let desired = cp.desired_ipvs_table(&node, &ProxyConfig::default()).table;
    let ctx = PlanContext::new(&ProxyConfig::default(), &node, at(0));
    let mut table = IpvsTable::default();
    for op in plan(&table, &desired, &PlanState::default(), &ctx).operations {
        svcnet_core::proxy::apply_operation(&mut table, &op).unwrap();
    }
    let stale_ip: std::net::IpAddr = "10.96.0.99".parse().unwrap();
    table.virtual_servers.retain(|k, _| k.address == stale_ip);
    table.addresses.retain(|a| *a == stale_ip);
    table
}

/// The kernel holds the desired table, and the Service deleted since the
/// earlier run (10.96.0.99) is gone from it.
fn assert_programmed_and_the_stale_service_gone(agent: &ApiAgent<MemoryDataplane>) {
    let dp = agent.sync_loop().dataplane();
    assert_eq!(&dp.table, agent.sync_loop().desired());
    assert!(dp
        .table
        .virtual_servers
        .keys()
        .all(|k| k.address.to_string() != "10.96.0.99"));
}

/// The nftables ruleset the sync loop keeps, one Service at a time, is the
/// one built whole from the watch cache.
fn assert_ruleset_follows_the_cache(agent: &ApiAgent<MemoryDataplane>) {
    let (cache, node) = (agent.cache(), agent.sync_loop().node());
    let whole = desired_ruleset(cache.services(), cache.slices(), node, &ProxyConfig::default());
    assert_eq!(agent.sync_loop().ruleset(), Some(&whole));
}

#[tokio::test]
async fn nothing_is_touched_before_every_first_list_has_arrived() {
    let cp = cluster();
    let before = kernel_left_by_an_earlier_run(&cp);
    let mut agent = agent_over(before.clone());
    first_lists(&mut agent, &cp, &[WatchedKind::Service, WatchedKind::EndpointSlice]);
    assert!(agent.step(at(0)).await.is_empty());
    assert!(agent.step(at(60)).await.is_empty(), "not even after a sync period");
    assert_eq!(agent.next_wake(at(60)), None);
    let dp = agent.sync_loop().dataplane();
    assert_eq!((dp.reads, dp.log.len()), (0, 0), "the kernel was not even read");
    assert_eq!(dp.table, before);
}

#[tokio::test]
async fn kubernetes_read_on_its_own_is_programmed_before_the_lists_and_alone() {
    let cp = cluster();
    let before = kernel_left_by_an_earlier_run(&cp);
    let mut agent = agent_over(before.clone());
    let service = cp.service("default", "kubernetes").unwrap().clone();
    let slices = cp
        .endpoint_slices_for("default", "kubernetes")
        .into_iter()
        .cloned()
        .collect();
    agent.handle(WatchUpdate::KubernetesRead(Box::new(service), slices));
    first_lists(&mut agent, &cp, &[WatchedKind::Service]);
    let reports = agent.step(at(0)).await;
    assert!(reports.len() == 1 && !reports[0].full && reports[0].succeeded());
    let kubernetes = cp.service("default", "kubernetes").unwrap().spec.cluster_ip.clone();
    let dp = agent.sync_loop().dataplane();
    assert!(!dp.log.is_empty() && dp.log.iter().all(|op| op.to_string().contains(&kubernetes)));
    assert!(
        before
            .virtual_servers
            .keys()
            .all(|k| dp.table.virtual_servers.contains_key(k)),
        "the stale Service stays until the lists are in"
    );
    assert!(agent.step(at(60)).await.is_empty(), "nothing more before the lists");

    first_lists(&mut agent, &cp, &[WatchedKind::EndpointSlice, WatchedKind::Node]);
    let reports = agent.step(at(61)).await;
    assert!(reports.len() == 1 && reports[0].full, "the full sync at once");
    assert_programmed_and_the_stale_service_gone(&agent);
}

#[tokio::test]
async fn kubernetes_goes_first_then_the_rest_and_the_stale_service_goes() {
    let cp = cluster();
    let mut agent = agent_over(kernel_left_by_an_earlier_run(&cp));
    first_lists(&mut agent, &cp, &ALL);
    let reports = agent.step(at(0)).await;
    assert_eq!(reports.len(), 1, "the kubernetes sync, at once");
    assert!(!reports[0].full);
    let kubernetes = cp.service("default", "kubernetes").unwrap().spec.cluster_ip.clone();
    let touched: Vec<String> = (agent.sync_loop().dataplane().log.iter())
        .map(|op| op.to_string())
        .collect();
    assert!(
        !touched.is_empty() && touched.iter().all(|op| op.contains(&kubernetes)),
        "{touched:?}"
    );

    let reports = agent.step(at(1)).await;
    assert!(reports.len() == 1 && reports[0].full && reports[0].succeeded());
    assert_programmed_and_the_stale_service_gone(&agent);
    assert_ruleset_follows_the_cache(&agent);
}

#[tokio::test]
async fn while_the_apiserver_is_unreachable_the_last_state_stays_and_drift_is_repaired() {
    let cp = cluster();
    let mut agent = agent(MemoryDataplane::default());
    first_lists(&mut agent, &cp, &ALL);
    agent.step(at(0)).await;
    agent.step(at(1)).await;
    let programmed = agent.sync_loop().dataplane().table.clone();

    for _ in 0..3 {
        agent.handle(WatchUpdate::Error("watch Service: connection refused".into()));
    }
    let web = *programmed
        .virtual_servers
        .keys()
        .find(|k| k.address.to_string() == "10.96.0.20")
        .unwrap();
    agent.sync_loop_mut().dataplane_mut().table.virtual_servers.remove(&web);
    let due = agent.next_wake(at(2)).unwrap();
    assert_eq!(due, at(31), "the periodic full sync");
    let reports = agent.step(due).await;
    assert!(reports[0].full);
    assert_eq!(agent.sync_loop().dataplane().table, programmed);
}

#[tokio::test]
async fn a_relist_after_410_removes_only_what_it_did_not_list() {
    let mut cp = cluster();
    let mut agent = agent(MemoryDataplane::default());
    first_lists(&mut agent, &cp, &ALL);
    agent.step(at(0)).await;
    agent.step(at(1)).await;

    cp.delete_service("default", "web").unwrap();
    agent.handle(WatchUpdate::Begin(WatchedKind::Service));
    agent.step(at(5)).await;
    assert!(
        (agent.sync_loop().desired().virtual_servers.keys()).any(|k| k.address.to_string() == "10.96.0.20"),
        "kept while the relist is under way"
    );
    for svc in cp.services() {
        agent.handle(WatchUpdate::Listed(Watched::Service(Box::new(svc.clone()))));
    }
    agent.handle(WatchUpdate::End(WatchedKind::Service));
    agent.step(at(6)).await;
    let dp = agent.sync_loop().dataplane();
    assert!(dp
        .table
        .virtual_servers
        .keys()
        .all(|k| k.address.to_string() != "10.96.0.20"));
    assert_eq!(&dp.table, agent.sync_loop().desired());
    assert_ruleset_follows_the_cache(&agent);
}

#[tokio::test]
async fn the_ruleset_follows_an_endpoint_change_and_a_deleted_service() {
    let mut cp = cluster();
    let mut agent = agent(MemoryDataplane::default());
    first_lists(&mut agent, &cp, &ALL);
    agent.step(at(0)).await;
    assert_ruleset_follows_the_cache(&agent);
    let hairpins = |agent: &ApiAgent<MemoryDataplane>| {
        let ruleset = agent.sync_loop().ruleset().unwrap();
        ruleset.set("hairpin-v4").unwrap().elements.len()
    };
    assert_eq!(hairpins(&agent), 1, "web-1 on node-a");

    let second = "apiVersion: v1\nkind: Pod\nmetadata: {name: web-2, labels: {app: web}}\nspec: {nodeName: node-a}\nstatus: {phase: Running, podIPs: [{ip: 10.244.1.12}], conditions: [{type: Ready, status: \"True\"}]}\n";
    cp.apply_manifest(second).unwrap();
    for slice in cp.endpoint_slices_for("default", "web") {
        agent.handle(WatchUpdate::Applied(Watched::EndpointSlice(Box::new(slice.clone()))));
    }
    agent.step(at(2)).await;
    assert_ruleset_follows_the_cache(&agent);
    assert_eq!(hairpins(&agent), 2, "web-2 too");

    let web = cp.service("default", "web").unwrap().clone();
    cp.delete_service("default", "web").unwrap();
    agent.handle(WatchUpdate::Deleted(Watched::Service(Box::new(web))));
    agent.step(at(4)).await;
    assert_ruleset_follows_the_cache(&agent);
    assert_eq!(hairpins(&agent), 0, "web is gone");
}

/// The test cluster with a UDP Service `dns` (10.96.0.10:53), and a
/// conntrack entry to it whose reply came from a pod that is not one of
/// its endpoints: stale.
fn cluster_with_udp_dns() -> (ControlPlane, svcnet_core::proxy::ConntrackEntry) {
    let mut cp = cluster();
    let dns = "apiVersion: v1\nkind: Service\nmetadata: {name: dns}\nspec: {clusterIP: 10.96.0.10, selector: {app: web}, ports: [{port: 53, protocol: UDP, targetPort: 5353}]}\n";
    for r in cp.apply_manifest(dns).unwrap() {
        r.unwrap();
    }
    let stale = svcnet_core::proxy::ConntrackEntry {
        protocol: 17,
        orig_src: "10.244.2.3:40000".parse().unwrap(),
        orig_dst: "10.96.0.10:53".parse().unwrap(),
        reply_src: "10.244.1.99:5353".parse().unwrap(),
    };
    (cp, stale)
}

/// API mode: after the first lists, a UDP Service's stale entry is cleaned
/// by the first sync; with `conntrack_cleanup: false`, conntrack is never
/// touched.
#[tokio::test]
async fn api_mode_cleans_stale_udp_entries_unless_turned_off() {
    let (cp, stale) = cluster_with_udp_dns();
    for enabled in [true, false] {
        let settings = ApiSettings {
            node_name: "node-a".into(),
            node_ips: Vec::new(),
            host_ips: Vec::new(),
            proxy: ProxyConfig::default(),
            sync: SyncSettings::new(Duration::from_secs(1), Duration::from_secs(30)),
            plan_state_file: None,
            conntrack_cleanup: enabled,
            nftables: false,
        };
        let dataplane = MemoryDataplane {
            conntrack: vec![stale],
            ..MemoryDataplane::default()
        };
        let mut agent = ApiAgent::new(settings, PlanState::default(), dataplane, Arc::new(Metrics::default()));
        first_lists(&mut agent, &cp, &ALL);
        let reports = agent.step(at(0)).await;
        assert!(!reports.is_empty() && reports.iter().all(SyncReport::succeeded));
        let dp = agent.sync_loop().dataplane();
        if enabled {
            assert!(dp.conntrack.is_empty(), "the stale entry is deleted");
            assert_eq!(dp.conntrack_cleanups, 1);
        } else {
            assert_eq!(dp.conntrack, [stale]);
            assert_eq!(dp.conntrack_cleanups, 0);
        }
    }
}

/// While the first lists arrive, what they hold so far is programmed with
/// additions only, and no UDP conntrack entry is judged against that
/// partial table: the cleanup waits for the full sync after the lists.
#[tokio::test]
async fn the_first_lists_are_programmed_as_they_arrive_and_conntrack_waits_for_them_whole() {
    let (cp, stale) = cluster_with_udp_dns();
    let mut agent = agent(MemoryDataplane {
        conntrack: vec![stale],
        ..MemoryDataplane::default()
    });
    let service = cp.service("default", "kubernetes").unwrap().clone();
    let slices = (cp.endpoint_slices_for("default", "kubernetes").into_iter())
        .cloned()
        .collect();
    agent.handle(WatchUpdate::KubernetesRead(Box::new(service), slices));
    first_lists(&mut agent, &cp, &[WatchedKind::Node, WatchedKind::Service]);
    agent.handle(WatchUpdate::Begin(WatchedKind::EndpointSlice));
    for slice in cp.endpoint_slices() {
        agent.handle(WatchUpdate::Listed(Watched::EndpointSlice(Box::new(slice.clone()))));
    }
    let reports = agent.step(at(0)).await;
    assert_eq!(reports.len(), 2, "kubernetes, then the additions: {reports:?}");
    assert!(reports.iter().all(|r| !r.full && r.succeeded()));
    let dp = agent.sync_loop().dataplane();
    assert!(dp
        .table
        .virtual_servers
        .keys()
        .any(|k| k.address.to_string() == "10.96.0.10"));
    assert_eq!(
        (dp.conntrack.as_slice(), dp.conntrack_cleanups),
        ([stale].as_slice(), 0)
    );

    agent.handle(WatchUpdate::End(WatchedKind::EndpointSlice));
    let reports = agent.step(at(1)).await;
    assert!(
        reports.len() == 1 && reports[0].full && reports[0].succeeded(),
        "{reports:?}"
    );
    let dp = agent.sync_loop().dataplane();
    assert!(
        dp.conntrack.is_empty(),
        "the stale entry is deleted after the full sync"
    );
    assert_eq!(&dp.table, agent.sync_loop().desired());
    assert_ruleset_follows_the_cache(&agent);
}
