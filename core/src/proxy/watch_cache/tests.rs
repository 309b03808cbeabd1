//! List-and-watch events in, the machine's actions out, against an
//! in-memory kernel.

use super::*;
use crate::api::manifest::{parse_manifests, Object};
use crate::controlplane::{ClusterConfig, ControlPlane};
use crate::proxy::sync_loop::{SyncAction, SyncInput, SyncSettings, TableOutline};
use crate::proxy::{apply_operation, IpvsTable, Operation, ProxyConfig};
use std::time::Duration;

const WORKLOAD: &str = "apiVersion: v1\nkind: Service\nmetadata: {name: web}\nspec: {clusterIP: 10.96.0.20, selector: {app: web}, ports: [{port: 80, targetPort: 8080}]}\n---\napiVersion: v1\nkind: Service\nmetadata: {name: db}\nspec: {clusterIP: 10.96.0.30, selector: {app: web}, ports: [{port: 5432}]}\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: web-1, labels: {app: web}}\nspec: {nodeName: node-a}\nstatus: {phase: Running, podIPs: [{ip: 10.244.1.11}], conditions: [{type: Ready, status: \"True\"}]}\n";

const NODE: &str = "apiVersion: v1\nkind: Node\nmetadata: {name: node-a, labels: {topology.kubernetes.io/zone: zone-1}}\nstatus: {addresses: [{type: InternalIP, address: 192.168.0.10}]}\n";

/// A cluster with `kubernetes`, `web` and `db`, as an apiserver would list
/// them.
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

fn node() -> Watched {
    match parse_manifests(NODE).unwrap().remove(0) {
        Object::Node(n) => Watched::Node(n),
        other => panic!("not a Node: {other:?}"),
    }
}

/// Lists everything `cp` holds, kind by kind, as a first list would.
fn list_all(cache: &mut WatchCache, cp: &ControlPlane, kinds: &[WatchedKind]) {
    for kind in kinds {
        cache.begin_list(*kind);
        match kind {
            WatchedKind::Service => {
                for svc in cp.services() {
                    cache.listed(Watched::Service(Box::new(svc.clone())));
                }
            }
            WatchedKind::EndpointSlice => {
                for slice in cp.endpoint_slices() {
                    cache.listed(Watched::EndpointSlice(Box::new(slice.clone())));
                }
            }
            WatchedKind::Node => cache.listed(node()),
        }
        cache.end_list(*kind);
    }
}

const ALL: [WatchedKind; 3] = [WatchedKind::Service, WatchedKind::EndpointSlice, WatchedKind::Node];

fn machine() -> SyncMachine {
    let settings = SyncSettings::new(Duration::from_secs(1), Duration::from_secs(30));
    let node = NodeInfo {
        name: "node-a".into(),
        ips: Vec::new(),
        zone: None,
    };
    SyncMachine::new(ProxyConfig::default(), node, settings)
}

/// Answers the machine's actions from `kernel`; returns the operations
/// applied.
fn serve(m: &mut SyncMachine, kernel: &mut IpvsTable, now: Time) -> Vec<Operation> {
    let mut applied = Vec::new();
    while let Some(action) = m.poll_action() {
        let input = match action {
            SyncAction::ObserveAll => SyncInput::Observed(kernel.clone()),
            SyncAction::ObserveVirtualServers(keys) => SyncInput::ObservedVirtualServers(
                keys.iter()
                    .filter_map(|k| Some((*k, kernel.virtual_servers.get(k)?.clone())))
                    .collect(),
            ),
            SyncAction::ObserveOutline => SyncInput::ObservedOutline(TableOutline::of(kernel)),
            SyncAction::Apply(ops) => {
                for op in &ops {
                    apply_operation(kernel, op).unwrap();
                }
                applied.extend(ops);
                SyncInput::Applied(Vec::new())
            }
        };
        m.handle(input, now);
    }
    while m.poll_report().is_some() {}
    applied
}

fn t(secs: u64) -> Time {
    Time::from_secs(1_000 + secs)
}

/// The ClusterIPs a list of operations binds or gives virtual servers.
fn addresses(ops: &[Operation]) -> SortedSet<String> {
    ops.iter()
        .filter_map(|op| match op {
            Operation::AddVirtualServer { virtual_server, .. } => Some(virtual_server.address.to_string()),
            _ => None,
        })
        .collect()
}

/// A cache, machine and kernel after the first lists and the first two
/// syncs (`kubernetes`, then the rest).
fn programmed(cp: &ControlPlane) -> (WatchCache, SyncMachine, IpvsTable) {
    let mut cache = WatchCache::new("node-a");
    let mut m = machine();
    list_all(&mut cache, cp, &ALL);
    let mut kernel = IpvsTable::default();
    cache.feed(&mut m, t(0));
    serve(&mut m, &mut kernel, t(0));
    m.handle_timeout(t(1));
    serve(&mut m, &mut kernel, t(1));
    (cache, m, kernel)
}

#[test]
fn nothing_is_fed_before_every_first_list_is_complete() {
    let cp = cluster();
    let mut cache = WatchCache::new("node-a");
    let mut m = machine();
    list_all(&mut cache, &cp, &[WatchedKind::Service, WatchedKind::EndpointSlice]);
    cache.feed(&mut m, t(0));
    assert!(!cache.synced());
    assert!(!m.is_syncing() && m.poll_action().is_none());
    assert!(m.desired().virtual_servers.is_empty());
}

#[test]
fn kubernetes_is_programmed_first_and_alone_then_the_rest() {
    let cp = cluster();
    let mut cache = WatchCache::new("node-a");
    let mut m = machine();
    list_all(&mut cache, &cp, &ALL);
    let mut kernel = IpvsTable::default();
    cache.feed(&mut m, t(0));
    let first = serve(&mut m, &mut kernel, t(0));
    let kubernetes_ip = cp.service("default", "kubernetes").unwrap().spec.cluster_ip.clone();
    assert_eq!(addresses(&first), SortedSet::from([kubernetes_ip]));

    assert!(m.handle_timeout(t(1)), "the rest follows after min-sync-period");
    let rest = serve(&mut m, &mut kernel, t(1));
    assert_eq!(
        addresses(&rest),
        SortedSet::from(["10.96.0.20".to_string(), "10.96.0.30".to_string()])
    );
    assert_eq!(&kernel, m.desired());
    assert_eq!(m.node().zone.as_deref(), Some("zone-1"), "topology from the Node");
    assert_eq!(m.node().ips, vec!["192.168.0.10".parse::<std::net::IpAddr>().unwrap()]);
}

/// `default/kubernetes` and its slices, as read on their own at start.
fn kubernetes_of(cp: &ControlPlane) -> (Service, Vec<EndpointSlice>) {
    let service = cp.service("default", "kubernetes").unwrap().clone();
    let slices = cp
        .endpoint_slices()
        .filter(|s| s.service_name() == Some("kubernetes"))
        .cloned()
        .collect();
    (service, slices)
}

#[test]
fn kubernetes_read_at_start_is_programmed_before_the_lists_and_touches_nothing_else() {
    let cp = cluster();
    let mut cache = WatchCache::new("node-a");
    let mut m = machine();
    // What an earlier run left: everything but kubernetes, and web with a
    // real server that has gone since. Only the full sync may remove it.
    let (_, _, mut kernel) = programmed(&cp);
    let kubernetes_ip = cp.service("default", "kubernetes").unwrap().spec.cluster_ip.clone();
    kernel
        .virtual_servers
        .retain(|k, _| k.address.to_string() != kubernetes_ip);
    kernel.addresses.retain(|a| a.to_string() != kubernetes_ip);
    let gone: std::net::SocketAddr = "10.244.1.99:8080".parse().unwrap();
    let web = kernel
        .virtual_servers
        .iter_mut()
        .find(|(k, _)| k.address.to_string() == "10.96.0.20")
        .unwrap()
        .1;
    web.real_servers
        .insert(gone, web.real_servers.values().next().unwrap().clone());
    let before = kernel.clone();
    cache.feed(&mut m, t(0));
    assert!(!m.is_syncing(), "nothing read yet, nothing synced");

    let (service, slices) = kubernetes_of(&cp);
    cache.kubernetes_read(service, slices);
    list_all(&mut cache, &cp, &[WatchedKind::Service]);
    cache.feed(&mut m, t(0));
    assert!(!cache.synced());
    let first = serve(&mut m, &mut kernel, t(0));
    assert_eq!(addresses(&first), SortedSet::from([kubernetes_ip.clone()]));
    let mut others = kernel.clone();
    others
        .virtual_servers
        .retain(|k, _| k.address.to_string() != kubernetes_ip);
    others.addresses.retain(|a| a.to_string() != kubernetes_ip);
    assert_eq!(others, before, "nothing else touched, the gone real server kept");
    let kubernetes_vs = kernel
        .virtual_servers
        .iter()
        .find(|(k, _)| k.address.to_string() == kubernetes_ip)
        .unwrap()
        .1;
    let apiserver: std::net::SocketAddr = "192.168.0.1:6443".parse().unwrap();
    assert_eq!(kubernetes_vs.real_servers.keys().collect::<Vec<_>>(), vec![&apiserver]);

    // The lists come in: a full sync at once, which removes the real server
    // that has gone and needs nothing more for kubernetes.
    list_all(&mut cache, &cp, &[WatchedKind::EndpointSlice, WatchedKind::Node]);
    cache.feed(&mut m, t(1));
    assert!(m.is_syncing());
    let rest = serve(&mut m, &mut kernel, t(1));
    assert!(
        !rest.is_empty() && rest.iter().all(|op| !op.to_string().contains(&kubernetes_ip)),
        "{rest:?}"
    );
    assert_eq!(&kernel, m.desired());
    assert!(kernel
        .virtual_servers
        .values()
        .all(|vs| !vs.real_servers.contains_key(&gone)));

    // A read that arrives after the lists is older than they are: ignored.
    let (mut service, slices) = kubernetes_of(&cp);
    service.spec.ports[0].port = 8443;
    cache.kubernetes_read(service, slices);
    cache.feed(&mut m, t(3));
    assert!(!m.is_syncing());
    assert!(m.desired().virtual_servers.keys().all(|k| k.port != 8443));
}

#[test]
fn while_the_first_lists_arrive_what_is_listed_is_added_and_nothing_else_is_touched() {
    let cp = cluster();
    let mut cache = WatchCache::new("node-a");
    let mut m = machine();
    // What an earlier run left: web with a real server that has gone since,
    // no db and no kubernetes.
    let (_, _, mut kernel) = programmed(&cp);
    let kubernetes_ip = cp.service("default", "kubernetes").unwrap().spec.cluster_ip.clone();
    for gone_address in [kubernetes_ip.as_str(), "10.96.0.30"] {
        kernel
            .virtual_servers
            .retain(|k, _| k.address.to_string() != gone_address);
        kernel.addresses.retain(|a| a.to_string() != gone_address);
    }
    let gone: std::net::SocketAddr = "10.244.1.99:8080".parse().unwrap();
    let web = (kernel.virtual_servers.iter_mut())
        .find(|(k, _)| k.address.to_string() == "10.96.0.20")
        .unwrap()
        .1;
    web.real_servers
        .insert(gone, web.real_servers.values().next().unwrap().clone());
    let web_before = web.clone();

    let (service, slices) = kubernetes_of(&cp);
    cache.kubernetes_read(service, slices);
    cache.feed(&mut m, t(0));
    let first = serve(&mut m, &mut kernel, t(0));
    assert_eq!(addresses(&first), SortedSet::from([kubernetes_ip.clone()]));

    // The Services are listed before the Node: nothing yet.
    list_all(&mut cache, &cp, &[WatchedKind::Service]);
    cache.feed(&mut m, t(0));
    assert!(!m.is_syncing(), "no additions before the Node's list");

    // With the Node in, the Services listed so far wait for their first
    // slice, so each is computed once, with its endpoints.
    list_all(&mut cache, &cp, &[WatchedKind::Node]);
    cache.feed(&mut m, t(0));
    assert!(!m.is_syncing(), "no Service is added before its first slice");

    // db's slice comes first in the list under way: db is added (virtual
    // and real servers), and nothing is taken from web, whose slices are
    // not in yet.
    cache.begin_list(WatchedKind::EndpointSlice);
    for slice in cp.endpoint_slices().filter(|s| s.service_name() == Some("db")) {
        cache.listed(Watched::EndpointSlice(Box::new(slice.clone())));
    }
    cache.feed(&mut m, t(0));
    assert!(m.is_syncing());
    let added = serve(&mut m, &mut kernel, t(0));
    let is_addition = |op: &Operation| {
        matches!(
            op,
            Operation::BindAddress { .. } | Operation::AddVirtualServer { .. } | Operation::AddRealServer { .. }
        )
    };
    assert!(added.iter().all(is_addition), "{added:?}");
    assert_eq!(addresses(&added), SortedSet::from(["10.96.0.30".to_string()]));
    assert!(
        added.iter().any(|op| matches!(op, Operation::AddRealServer { .. })),
        "{added:?}"
    );
    let web_now = |kernel: &IpvsTable| {
        (kernel.virtual_servers.iter())
            .find(|(k, _)| k.address.to_string() == "10.96.0.20")
            .map(|(_, vs)| vs.clone())
    };
    assert_eq!(web_now(&kernel), Some(web_before.clone()));

    // web's slices: its real server is in the kernel from the earlier run,
    // so nothing is added, and the gone one stays.
    for slice in cp.endpoint_slices().filter(|s| s.service_name() != Some("db")) {
        cache.listed(Watched::EndpointSlice(Box::new(slice.clone())));
    }
    cache.feed(&mut m, t(0));
    let added = serve(&mut m, &mut kernel, t(0));
    assert!(added.iter().all(is_addition), "{added:?}");
    assert!(added.iter().all(|op| !op.to_string().contains(&kubernetes_ip)));
    assert_eq!(web_now(&kernel), Some(web_before.clone()));
    assert!(web_before.real_servers.contains_key(&gone));

    // The lists complete: a full sync at once, over the machine's copy of
    // the kernel's table (only web, whose real server goes, is read again),
    // removes the gone real server.
    cache.end_list(WatchedKind::EndpointSlice);
    cache.feed(&mut m, t(1));
    assert!(m.is_syncing());
    let first = m.poll_action().unwrap();
    let SyncAction::ObserveVirtualServers(keys) = first else {
        panic!("planned over the copy, not over a fresh read: {first:?}");
    };
    assert!(keys.iter().all(|k| k.address.to_string() == "10.96.0.20"), "{keys:?}");
    let found = (keys.iter())
        .filter_map(|k| Some((*k, kernel.virtual_servers.get(k)?.clone())))
        .collect();
    m.handle(SyncInput::ObservedVirtualServers(found), t(1));
    serve(&mut m, &mut kernel, t(1));
    assert_eq!(&kernel, m.desired());
    assert!(!web_now(&kernel).unwrap().real_servers.contains_key(&gone));
}

/// Feeds and serves until the machine has nothing more to do.
fn settle(cache: &mut WatchCache, m: &mut SyncMachine, kernel: &mut IpvsTable, now: Time) {
    loop {
        cache.feed(m, now);
        if !m.is_syncing() {
            return;
        }
        serve(m, kernel, now);
    }
}

#[test]
fn after_additions_the_lists_end_in_the_table_a_whole_build_gives() {
    let mut cp = cluster();
    let mut cache = WatchCache::new("node-a");
    let mut m = machine();
    m.keep_ruleset();
    let mut kernel = IpvsTable::default();

    // `kubernetes` read on its own with an endpoint the lists no longer
    // have.
    let (service, mut slices) = kubernetes_of(&cp);
    slices[0].endpoints[0].addresses = vec!["192.168.0.99".into()];
    cache.kubernetes_read(service, slices);
    settle(&mut cache, &mut m, &mut kernel, t(0));

    // A Service with no selector has no slice: it waits for the end of
    // the lists.
    let external = "apiVersion: v1\nkind: Service\nmetadata: {name: external}\nspec: {clusterIP: 10.96.0.40, ports: [{port: 443}]}\n";
    for r in cp.apply_manifest(external).unwrap() {
        r.unwrap();
    }

    // The Services, the Node and db's slice are listed and added; then db
    // goes before the slices' list is in.
    list_all(&mut cache, &cp, &[WatchedKind::Service, WatchedKind::Node]);
    cache.begin_list(WatchedKind::EndpointSlice);
    for slice in cp.endpoint_slices().filter(|s| s.service_name() == Some("db")) {
        cache.listed(Watched::EndpointSlice(Box::new(slice.clone())));
    }
    settle(&mut cache, &mut m, &mut kernel, t(0));
    assert!(m.services().any(|key| key == "default/db"));
    assert!(!m.services().any(|key| key == "default/external"));
    // Its nftables elements wait for the lists (they are not programmed
    // before): the table comes first.
    assert!(m.ruleset_behind().eq(["default/db"]));
    let db = cp.service("default", "db").unwrap().clone();
    cache.deleted(&Watched::Service(Box::new(db)));
    cp.delete_service("default", "db").unwrap();
    settle(&mut cache, &mut m, &mut kernel, t(0));
    list_all(&mut cache, &cp, &[WatchedKind::EndpointSlice]);
    settle(&mut cache, &mut m, &mut kernel, t(1));
    assert!(m.services().any(|key| key == "default/external"));
    assert_eq!(m.ruleset_behind().count(), 0);

    // The same cluster listed whole at once.
    let mut whole_cache = WatchCache::new("node-a");
    let mut whole = machine();
    whole.keep_ruleset();
    let mut whole_kernel = IpvsTable::default();
    list_all(&mut whole_cache, &cp, &ALL);
    settle(&mut whole_cache, &mut whole, &mut whole_kernel, t(1));
    // Its full sync follows at the next period (`kubernetes` went first).
    assert!(whole.handle_timeout(t(3)));
    serve(&mut whole, &mut whole_kernel, t(3));
    assert!(!m.handle_timeout(t(3)), "the lists' full sync is done");

    assert_eq!(m.desired(), whole.desired());
    assert_eq!(m.ruleset(), whole.ruleset());
    assert!(m.services().eq(whole.services()));
    assert_eq!(kernel, whole_kernel);
}

#[test]
fn a_node_changed_while_the_lists_arrive_is_the_one_the_table_is_built_for() {
    let cp = cluster();
    let mut cache = WatchCache::new("node-a");
    let mut m = machine();
    let mut kernel = IpvsTable::default();
    let (service, slices) = kubernetes_of(&cp);
    cache.kubernetes_read(service, slices);
    settle(&mut cache, &mut m, &mut kernel, t(0));
    list_all(&mut cache, &cp, &[WatchedKind::Service, WatchedKind::Node]);
    settle(&mut cache, &mut m, &mut kernel, t(0));
    let listed_ips = m.node().ips.clone();

    let Watched::Node(mut moved) = node() else {
        unreachable!()
    };
    moved.status.addresses[0].address = "192.168.0.11".into();
    cache.applied(Watched::Node(moved));
    list_all(&mut cache, &cp, &[WatchedKind::EndpointSlice]);
    settle(&mut cache, &mut m, &mut kernel, t(1));

    let moved_ip: IpAddr = "192.168.0.11".parse().unwrap();
    assert_ne!(listed_ips, vec![moved_ip]);
    assert_eq!(m.node().ips, vec![moved_ip]);
    assert_eq!(m.node(), &cache.node_info());
}

#[test]
fn a_kubernetes_read_of_another_service_or_proxy_is_ignored() {
    let cp = cluster();
    let mut cache = WatchCache::new("node-a");
    let mut m = machine();
    let web = cp.service("default", "web").unwrap().clone();
    cache.kubernetes_read(web, Vec::new());
    cache.feed(&mut m, t(0));
    assert!(!m.is_syncing(), "not default/kubernetes");
    let (mut service, slices) = kubernetes_of(&cp);
    service
        .metadata
        .labels
        .insert(SERVICE_PROXY_NAME_LABEL.into(), "other".into());
    cache.kubernetes_read(service, slices);
    cache.feed(&mut m, t(0));
    assert!(!m.is_syncing(), "another proxy's");
}

#[test]
fn a_relist_removes_nothing_until_it_is_complete() {
    let mut cp = cluster();
    let (mut cache, mut m, mut kernel) = programmed(&cp);

    // The watch expired (410 Gone); meanwhile db was deleted. The relist
    // comes in pieces.
    cp.delete_service("default", "db").unwrap();
    cache.begin_list(WatchedKind::Service);
    cache.listed(Watched::Service(Box::new(
        cp.service("default", "web").unwrap().clone(),
    )));
    cache.feed(&mut m, t(2));
    assert!(m
        .desired()
        .virtual_servers
        .keys()
        .any(|k| k.address.to_string() == "10.96.0.30"));
    cache.listed(Watched::Service(Box::new(
        cp.service("default", "kubernetes").unwrap().clone(),
    )));
    cache.end_list(WatchedKind::Service);
    cache.feed(&mut m, t(2));
    assert!(m
        .desired()
        .virtual_servers
        .keys()
        .all(|k| k.address.to_string() != "10.96.0.30"));
    assert!(m.handle_timeout(t(2)));
    serve(&mut m, &mut kernel, t(2));
    assert_eq!(&kernel, m.desired());
}

#[test]
fn node_addresses_come_from_the_flags_then_the_node_then_the_host() {
    let mut cache = WatchCache::new("node-a");
    let host: std::net::IpAddr = "10.0.0.9".parse().unwrap();
    let flag: std::net::IpAddr = "10.0.0.7".parse().unwrap();
    cache.set_node_ips(Vec::new(), vec![host]);
    assert_eq!(cache.node_info().ips, vec![host], "no Node yet: the host's");
    cache.applied(node());
    assert_eq!(
        cache.node_info().ips,
        vec!["192.168.0.10".parse::<std::net::IpAddr>().unwrap()]
    );
    cache.set_node_ips(vec![flag], vec![host]);
    assert_eq!(cache.node_info().ips, vec![flag]);
    assert_eq!(cache.node_info().zone.as_deref(), Some("zone-1"));
}

#[test]
fn other_proxies_services_and_headless_slices_are_left_out() {
    let cp = cluster();
    let mut cache = WatchCache::new("node-a");
    let mut web = cp.service("default", "web").unwrap().clone();
    web.metadata
        .labels
        .insert(SERVICE_PROXY_NAME_LABEL.into(), "other-proxy".into());
    assert_eq!(cache.applied(Watched::Service(Box::new(web.clone()))), None);
    assert_eq!(cache.services().count(), 0);

    let mut slice = cp.endpoint_slices_for("default", "db")[0].clone();
    slice.metadata.labels.insert(HEADLESS_LABEL.into(), String::new());
    assert_eq!(cache.applied(Watched::EndpointSlice(Box::new(slice))), None);
    assert_eq!(cache.slices().count(), 0);

    // A Service that gains the label is gone for the proxy.
    web.metadata.labels.clear();
    assert!(cache.applied(Watched::Service(Box::new(web.clone()))).is_some());
    web.metadata
        .labels
        .insert(SERVICE_PROXY_NAME_LABEL.into(), "other-proxy".into());
    cache.applied(Watched::Service(Box::new(web)));
    assert_eq!(cache.services().count(), 0);
}

#[test]
fn changes_after_the_first_sync_reach_the_machine_one_service_at_a_time() {
    let mut cp = cluster();
    let (mut cache, mut m, mut kernel) = programmed(&cp);

    let pod = "apiVersion: v1\nkind: Pod\nmetadata: {name: web-2, labels: {app: web}}\nspec: {nodeName: node-a}\nstatus: {phase: Running, podIPs: [{ip: 10.244.1.12}], conditions: [{type: Ready, status: \"True\"}]}\n";
    cp.apply_manifest(pod).unwrap();
    for slice in cp.endpoint_slices_for("default", "web") {
        cache.applied(Watched::EndpointSlice(Box::new(slice.clone())));
    }
    cache.feed(&mut m, t(5));
    assert!(m.handle_timeout(t(5)));
    let ops = serve(&mut m, &mut kernel, t(5));
    assert!(!ops.is_empty());
    assert!(ops
        .iter()
        .all(|op| matches!(op, Operation::AddRealServer { virtual_server, .. } if virtual_server.address.to_string() == "10.96.0.20")));
    assert_eq!(&kernel, m.desired());
}

#[test]
fn change_counts_and_trigger_times_follow_kube_proxy() {
    let cp = cluster();
    let mut cache = WatchCache::new("node-a");
    list_all(&mut cache, &cp, &ALL);
    let listed = cache.take_change_stats();
    assert_eq!((listed.service_changes, listed.endpoint_changes), (3, 3));
    let mut slice = cp.endpoint_slices_for("default", "web")[0].clone();
    slice
        .metadata
        .annotations
        .insert(LAST_CHANGE_TRIGGER_TIME.into(), "2026-11-24T19:04:29Z".into());
    cache.applied(Watched::EndpointSlice(Box::new(slice.clone())));
    cache.applied(Watched::EndpointSlice(Box::new(slice)));
    let stats = cache.take_change_stats();
    assert_eq!(
        (stats.service_changes, stats.endpoint_changes),
        (0, 1),
        "an unchanged slice is no change"
    );
    assert_eq!(stats.pending_endpoints, SortedSet::from(["default/web".to_string()]));
    assert_eq!(stats.trigger_times, [Time::from_secs(1_795_547_069)]);
    assert!(cache.node_eligible());
}
