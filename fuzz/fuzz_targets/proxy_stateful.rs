//! Stateful: random sequences of cluster changes and kernel drift, one
//! node's proxy planning after each. The cluster is svcnet's control plane
//! (`ControlPlane`: Services allocated ClusterIPs and NodePorts, Pods with
//! IPs on two nodes turned into EndpointSlices by the controller,
//! hand-written EndpointSlices for selectorless Services); the kernel is an
//! in-memory `IpvsTable` that starts with a foreign virtual server and
//! that steps may alter behind the proxy's back (virtual servers deleted
//! or re-tuned, real servers deleted, re-weighted or given connections,
//! addresses unbound, stray entries added), as an administrator or a
//! crash would. The approach of core/tests/proxy_sim.rs and
//! core/tests/controlplane_props.rs.
//!
//! Asserts after every step: nothing panics; no ClusterIP is held by two
//! live Services and every one is marked allocated, no NodePort twice;
//! the plan from the drifted kernel to the desired table applies without
//! a refusal, after which the kernel holds exactly the desired addresses
//! and virtual servers (plus the foreign one, untouched) with the desired
//! settings and real servers, except real servers draining (TCP, weight 0,
//! with connections, recorded in the plan state, within the timeout); a
//! second plan is empty.
#![no_main]

use std::collections::{BTreeMap, BTreeSet};
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use serde_json::json;
use svcnet_core::api::pod::{Node, Pod};
use svcnet_core::api::{EndpointSlice, Service};
use svcnet_core::controlplane::{ClusterConfig, ControlPlane};
use svcnet_core::proxy::{
    apply_plan, plan, Flags, Forward, IpvsTable, PlanContext, PlanState, Protocol, ProxyConfig, RealServer, Scheduler,
    VirtualServer, VirtualServerKey, VirtualServerSettings,
};
use svcnet_core::time::Time;

const DRAIN_TIMEOUT_SECS: u64 = 120;
const NODE: &str = "node-a";

#[derive(Arbitrary, Debug)]
struct ServiceSpec {
    kind: u8,
    dual: bool,
    pick: Option<u8>,
    selector: Option<u8>,
    udp: bool,
    two_ports: bool,
    affinity: bool,
    scheduler: u8,
    internal_local: bool,
    external_local: bool,
    external_ip: Option<u8>,
}

#[derive(Arbitrary, Debug)]
struct EndpointSpec {
    ip: u8,
    ready: bool,
    serving: bool,
    terminating: bool,
    here: bool,
}

#[derive(Arbitrary, Debug)]
enum Drift {
    DeleteVirtualServer(u16),
    RetuneVirtualServer(u16, u8, u32),
    DeleteRealServer(u16),
    Reweight(u16, u32),
    Connections(u16, u8, u8),
    Unbind(u16),
    StrayVirtualServer(u8, u16),
    StrayRealServer(u16, u8),
}

#[derive(Arbitrary, Debug)]
enum Step {
    CreateService(u8, ServiceSpec),
    DeleteService(u8),
    CreatePod {
        slot: u8,
        app: u8,
        ip: u8,
        here: bool,
        ready: bool,
    },
    DeletePod(u8),
    ApplySlice(u8, Vec<EndpointSpec>),
    DeleteSlice(u8),
    Drift(Drift),
    Advance(u8),
}

fn from_json<T: serde::de::DeserializeOwned>(value: serde_json::Value) -> T {
    serde_json::from_value(value).expect("the harness's objects decode")
}

fn service(slot: u8, spec: &ServiceSpec) -> Service {
    let protocol = if spec.udp { "UDP" } else { "TCP" };
    let mut ports = vec![json!({"name": "http", "port": 80, "targetPort": 8080, "protocol": protocol})];
    if spec.two_ports {
        ports.push(json!({"name": "metrics", "port": 9090, "protocol": "TCP"}));
    }
    let mut svc = json!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": format!("svc-{slot}"), "namespace": "default"},
        "spec": {
            "type": (["ClusterIP", "NodePort", "LoadBalancer"][usize::from(spec.kind % 3)]),
            "ports": ports,
            "sessionAffinity": if spec.affinity { "ClientIP" } else { "None" },
            "internalTrafficPolicy": if spec.internal_local { "Local" } else { "Cluster" },
        },
    });
    if !spec.kind.is_multiple_of(3) {
        svc["spec"]["externalTrafficPolicy"] = json!(if spec.external_local { "Local" } else { "Cluster" });
    }
    if let Some(app) = spec.selector {
        svc["spec"]["selector"] = json!({"app": format!("app-{}", app % 3)});
    }
    if spec.dual {
        svc["spec"]["ipFamilyPolicy"] = json!("PreferDualStack");
    }
    if let Some(pick) = spec.pick {
        svc["spec"]["clusterIP"] = json!(format!("10.96.0.{}", pick % 40));
    }
    if let Some(e) = spec.external_ip {
        svc["spec"]["externalIPs"] = json!([(["203.0.113.1", "192.168.0.10", "2001:db8::1"][usize::from(e % 3)])]);
    }
    let scheduler = ["", "mh", "sh", "wlc", "nonsense", ""][usize::from(spec.scheduler % 6)];
    if !scheduler.is_empty() {
        svc["metadata"]["annotations"] = json!({"svcnet.io/ipvs-scheduler": scheduler});
    }
    from_json(svc)
}

fn pod(slot: u8, app: u8, ip: u8, here: bool, ready: bool) -> Pod {
    from_json(json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": format!("pod-{slot}"), "namespace": "default", "labels": {"app": format!("app-{}", app % 3)}},
        "spec": {"nodeName": if here { NODE } else { "node-b" }, "containers": [{"name": "c"}]},
        "status": {
            "phase": "Running",
            "podIP": format!("10.244.0.{}", ip % 32 + 1),
            "podIPs": [{"ip": format!("10.244.0.{}", ip % 32 + 1)}, {"ip": format!("fd00:10:244::{:x}", ip % 32 + 1)}],
            "conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" }}],
        },
    }))
}

fn slice(slot: u8, endpoints: &[EndpointSpec]) -> EndpointSlice {
    let endpoints: Vec<_> = endpoints
        .iter()
        .take(8)
        .map(|e| {
            json!({
                "addresses": [format!("10.244.1.{}", e.ip % 32 + 1)],
                "conditions": {"ready": e.ready, "serving": e.serving, "terminating": e.terminating},
                "nodeName": if e.here { NODE } else { "node-b" },
            })
        })
        .collect();
    from_json(json!({
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {
            "name": format!("svc-{slot}-manual"),
            "namespace": "default",
            "labels": {"kubernetes.io/service-name": format!("svc-{slot}")},
        },
        "addressType": "IPv4",
        "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
        "endpoints": endpoints,
    }))
}

fn node(name: &str, ip: &str) -> Node {
    from_json(json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"topology.kubernetes.io/zone": "zone-a"}},
        "status": {"addresses": [{"type": "InternalIP", "address": ip}]},
    }))
}

fn foreign() -> (VirtualServerKey, VirtualServer) {
    let key: VirtualServerKey = "TCP/192.168.0.100:80".parse().expect("a valid key");
    let mut real = RealServer::masq(3);
    real.forward = Forward::Route;
    real.active_connections = 7;
    let vs = VirtualServer {
        settings: VirtualServerSettings {
            scheduler: Scheduler::Wlc,
            flags: Flags::HASHED,
            timeout: 0,
            netmask: u32::MAX,
        },
        real_servers: [("10.0.0.5:80".parse::<SocketAddr>().expect("valid"), real)].into(),
    };
    (key, vs)
}

struct Sim {
    cp: ControlPlane,
    kernel: IpvsTable,
    state: PlanState,
    now: Time,
    config: ProxyConfig,
}

impl Sim {
    fn new() -> Sim {
        let config = ClusterConfig {
            service_cluster_ip_range: "10.96.0.0/26,fd00:10:96::/122".into(),
            service_node_port_range: "30000-30015".into(),
            seed: 7,
            ..Default::default()
        };
        let mut cp = ControlPlane::new(config).expect("a valid configuration");
        cp.apply_node(node(NODE, "192.168.0.10")).expect("a valid node");
        cp.apply_node(node("node-b", "192.168.0.11")).expect("a valid node");
        let mut kernel = IpvsTable::new();
        let (key, vs) = foreign();
        kernel.virtual_servers.insert(key, vs);
        let config = ProxyConfig {
            drain_timeout_seconds: DRAIN_TIMEOUT_SECS,
            node_port_range: cp.config().node_ports,
            ..ProxyConfig::default()
        };
        Sim {
            cp,
            kernel,
            state: PlanState::default(),
            now: Time::ZERO,
            config,
        }
    }

    /// Real servers of svcnet's virtual servers, in order.
    fn owned_real_servers(&self) -> Vec<(VirtualServerKey, SocketAddr)> {
        let (foreign, _) = foreign();
        self.kernel
            .virtual_servers
            .iter()
            .filter(|(k, _)| **k != foreign)
            .flat_map(|(k, vs)| vs.real_servers.keys().map(move |rs| (*k, *rs)))
            .collect()
    }

    fn owned_virtual_servers(&self) -> Vec<VirtualServerKey> {
        let (foreign, _) = foreign();
        self.kernel
            .virtual_servers
            .keys()
            .filter(|k| **k != foreign)
            .copied()
            .collect()
    }

    fn drift(&mut self, drift: &Drift) {
        let vss = self.owned_virtual_servers();
        let rss = self.owned_real_servers();
        let pick_vs = |i: u16| (!vss.is_empty()).then(|| vss[usize::from(i) % vss.len()]);
        let pick_rs = |i: u16| (!rss.is_empty()).then(|| rss[usize::from(i) % rss.len()]);
        match *drift {
            Drift::DeleteVirtualServer(i) => {
                if let Some(k) = pick_vs(i) {
                    self.kernel.virtual_servers.remove(&k);
                }
            }
            Drift::RetuneVirtualServer(i, scheduler, timeout) => {
                if let Some(k) = pick_vs(i) {
                    if let Some(vs) = self.kernel.virtual_servers.get_mut(&k) {
                        vs.settings.scheduler = [Scheduler::Rr, Scheduler::Wlc, Scheduler::Sh, Scheduler::Mh]
                            [usize::from(scheduler % 4)]
                        .clone();
                        vs.settings.timeout = timeout % 100_000;
                    }
                }
            }
            Drift::DeleteRealServer(i) => {
                if let Some((k, rs)) = pick_rs(i) {
                    if let Some(vs) = self.kernel.virtual_servers.get_mut(&k) {
                        vs.real_servers.remove(&rs);
                    }
                }
            }
            Drift::Reweight(i, weight) => {
                if let Some((k, rs)) = pick_rs(i) {
                    if let Some(real) = self
                        .kernel
                        .virtual_servers
                        .get_mut(&k)
                        .and_then(|vs| vs.real_servers.get_mut(&rs))
                    {
                        real.weight = weight % 1000;
                    }
                }
            }
            Drift::Connections(i, active, inactive) => {
                if let Some((k, rs)) = pick_rs(i) {
                    self.kernel
                        .set_counters(&k, rs, u32::from(active % 4), u32::from(inactive % 4));
                }
            }
            Drift::Unbind(i) => {
                let addresses: Vec<IpAddr> = self.kernel.addresses.iter().copied().collect();
                if !addresses.is_empty() {
                    self.kernel
                        .addresses
                        .remove(&addresses[usize::from(i) % addresses.len()]);
                }
            }
            Drift::StrayVirtualServer(last, port) => {
                // A leftover of svcnet's own in the service range, as after a
                // restart that lost a Service.
                let address: IpAddr = format!("10.96.0.{}", last % 64).parse().expect("valid");
                let key = VirtualServerKey::new(Protocol::Tcp, address, port);
                self.kernel.addresses.insert(address);
                self.kernel.virtual_servers.entry(key).or_insert_with(|| VirtualServer {
                    settings: VirtualServerSettings {
                        scheduler: Scheduler::Rr,
                        flags: Flags::HASHED,
                        timeout: 0,
                        netmask: u32::MAX,
                    },
                    real_servers: BTreeMap::new(),
                });
            }
            Drift::StrayRealServer(i, last) => {
                if let Some(k) = pick_vs(i) {
                    let rs = if k.address.is_ipv4() {
                        format!("10.244.9.{last}:8080")
                    } else {
                        format!("[fd00:10:244::9:{last:x}]:8080")
                    };
                    if let Some(vs) = self.kernel.virtual_servers.get_mut(&k) {
                        vs.real_servers.insert(rs.parse().expect("valid"), RealServer::masq(1));
                    }
                }
            }
        }
    }

    fn step(&mut self, step: &Step) {
        let cp = &mut self.cp;
        match step {
            Step::CreateService(slot, spec) => {
                let before = cp.clone();
                if cp.apply_service(service(slot % 8, spec)).is_err() {
                    assert!(*cp == before, "a refused Service changed the control plane");
                }
            }
            Step::DeleteService(slot) => {
                let _ = cp.delete_service("default", &format!("svc-{}", slot % 8));
            }
            Step::CreatePod {
                slot,
                app,
                ip,
                here,
                ready,
            } => {
                let _ = cp.apply_pod(pod(slot % 12, *app, *ip, *here, *ready));
            }
            Step::DeletePod(slot) => {
                let _ = cp.delete_pod("default", &format!("pod-{}", slot % 12));
            }
            Step::ApplySlice(slot, endpoints) => {
                let _ = cp.apply_endpoint_slice(slice(slot % 8, endpoints));
            }
            Step::DeleteSlice(slot) => {
                let _ = cp.delete_endpoint_slice("default", &format!("svc-{}-manual", slot % 8));
            }
            Step::Drift(drift) => self.drift(drift),
            Step::Advance(secs) => self.now = self.now.plus(Duration::from_secs(u64::from(*secs))),
        }
    }

    fn check(&mut self) {
        // Allocations.
        let mut ips = BTreeSet::new();
        let mut ports = BTreeSet::new();
        for svc in self.cp.services() {
            for ip in &svc.spec.cluster_ips {
                let Ok(addr) = ip.parse::<IpAddr>() else {
                    continue;
                };
                assert!(ips.insert(addr), "ClusterIP {ip} held by two live Services");
                assert!(
                    self.cp.cluster_ip_allocator().is_allocated(addr),
                    "{ip} not marked allocated"
                );
            }
            let own: BTreeSet<i64> = svc.spec.ports.iter().filter_map(|p| p.node_port).collect();
            for port in own {
                assert!(ports.insert(port), "NodePort {port} held by two Services");
            }
        }

        // The plan, applied to the drifted kernel, gives the desired table.
        let node = self.cp.node_info(NODE).expect("the node's addresses are valid");
        let desired = self.cp.desired_ipvs_table(&node, &self.config).table;
        let ctx = PlanContext::new(&self.config, &node, self.now);
        let full = plan(&self.kernel, &desired, &self.state, &ctx);
        if let Err(e) = apply_plan(&mut self.kernel, &full) {
            panic!("the kernel refused the plan: {e}\nplan: {:?}", full.operations);
        }
        self.state = full.state.clone();

        let (foreign_key, foreign_vs) = foreign();
        assert_eq!(
            self.kernel.virtual_servers.get(&foreign_key),
            Some(&foreign_vs),
            "foreign changed"
        );
        assert_eq!(self.kernel.addresses, desired.addresses, "bound addresses");
        for (k, got) in &self.kernel.virtual_servers {
            if *k == foreign_key {
                continue;
            }
            let Some(want) = desired.virtual_servers.get(k) else {
                panic!("{k} left in the kernel but not desired");
            };
            assert!(got.settings.same_as(&want.settings), "{k} settings differ");
            for (addr, rs) in &want.real_servers {
                let real = got.real_servers.get(addr);
                assert!(
                    real.is_some_and(|g| g.same_as(rs)),
                    "{k} real server {addr} differs: {real:?} != {rs:?}"
                );
            }
            for (addr, rs) in &got.real_servers {
                if want.real_servers.contains_key(addr) {
                    continue;
                }
                let since = self.state.draining.since(k, addr);
                assert!(
                    k.protocol == Protocol::Tcp && rs.weight == 0 && rs.connections() > 0 && since.is_some(),
                    "{k} real server {addr} left without draining: {rs:?}"
                );
                let since = since.unwrap_or(self.now);
                assert!(self.now.since(since) < Duration::from_secs(DRAIN_TIMEOUT_SECS));
            }
        }
        for k in desired.virtual_servers.keys() {
            assert!(self.kernel.virtual_servers.contains_key(k), "{k} missing");
        }
        let again = plan(&self.kernel, &desired, &self.state, &ctx);
        assert!(again.is_empty(), "second plan not empty: {:?}", again.operations);
        assert_eq!(again.state, self.state);
    }
}

fuzz_target!(|steps: Vec<Step>| {
    let mut sim = Sim::new();
    sim.check();
    for step in steps.iter().take(64) {
        sim.step(step);
        sim.check();
    }
});
