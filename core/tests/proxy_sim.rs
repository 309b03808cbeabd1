//! Simulation of one node's proxy over random event sequences: Services
//! come and go and change type, policies, scheduler and addresses;
//! endpoints come and go and flip between ready, serving and terminating;
//! the node's addresses and zone change; the kernel's connection counters
//! change; time advances. After every event the plan is applied to an
//! in-memory kernel table that starts with foreign virtual servers, and:
//!
//! - the kernel accepts every operation, in order, and addresses are bound
//!   before virtual servers are added on them;
//! - the kernel then equals the desired table, except for real servers that
//!   are draining (TCP, weight 0, with connections, within the timeout);
//! - a second plan is empty and keeps the same state;
//! - the foreign virtual servers are never named by an operation and never
//!   change;
//! - the per-Service index equals a full rebuild, and the plan from its
//!   reported changes equals the full plan.

use proptest::prelude::*;
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;
use svcnet_core::api::endpoint_slice::{
    Endpoint, EndpointConditions, EndpointHints, EndpointPort, ForZone, SERVICE_NAME_LABEL,
};
use svcnet_core::api::service::{LoadBalancerIngress, LoadBalancerStatus, ServicePort};
use svcnet_core::api::{EndpointSlice, Service};
use svcnet_core::collections::{SortedMap, SortedSet};
use svcnet_core::proxy::{
    apply_plan, desired_table, plan, plan_changes, Changes, DesiredIndex, Flags, Forward, IpvsTable, NodeInfo,
    Operation, PlanContext, PlanState, Protocol, ProxyConfig, RealServer, Scheduler, VirtualServer, VirtualServerKey,
    VirtualServerSettings,
};
use svcnet_core::time::Time;

const SLOTS: u8 = 6;
const DRAIN_TIMEOUT_SECS: u64 = 120;

/// A Service, as generated.
#[derive(Clone, Debug)]
struct SvcSpec {
    kind: u8,
    dual: bool,
    external_ip: Option<u8>,
    load_balancer_ip: bool,
    affinity: bool,
    scheduler: u8,
    internal_local: bool,
    external_local: bool,
    udp: bool,
}

/// An endpoint, as generated.
#[derive(Clone, Debug)]
struct EpSpec {
    ip: u8,
    on_this_node: bool,
    ready: bool,
    serving: bool,
    terminating: bool,
    zone_hint: Option<bool>,
}

#[derive(Clone, Debug)]
enum Event {
    UpsertService(u8, SvcSpec),
    DeleteService(u8),
    SetEndpoints(u8, Vec<EpSpec>),
    SetCounters { pick: usize, active: u32, inactive: u32 },
    Advance(u64),
    NodeAddresses { second_v4: bool, v6: bool },
    Zone(bool),
}

fn svc_spec() -> impl Strategy<Value = SvcSpec> {
    (
        0u8..3,
        any::<bool>(),
        prop::option::of(0u8..3),
        any::<bool>(),
        any::<bool>(),
        0u8..6,
        any::<bool>(),
        any::<bool>(),
        prop::bool::weighted(0.25),
    )
        .prop_map(
            |(kind, dual, external_ip, load_balancer_ip, affinity, scheduler, internal_local, external_local, udp)| {
                SvcSpec {
                    kind,
                    dual,
                    external_ip,
                    load_balancer_ip,
                    affinity,
                    scheduler,
                    internal_local,
                    external_local,
                    udp,
                }
            },
        )
}

fn ep_spec() -> impl Strategy<Value = EpSpec> {
    (
        1u8..9,
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
        prop::option::of(any::<bool>()),
    )
        .prop_map(|(ip, on_this_node, ready, serving, terminating, zone_hint)| EpSpec {
            ip,
            on_this_node,
            ready,
            serving,
            terminating,
            zone_hint,
        })
}

fn event() -> impl Strategy<Value = Event> {
    prop_oneof![
        3 => (0..SLOTS, svc_spec()).prop_map(|(s, spec)| Event::UpsertService(s, spec)),
        1 => (0..SLOTS).prop_map(Event::DeleteService),
        4 => (0..SLOTS, prop::collection::vec(ep_spec(), 0..5)).prop_map(|(s, eps)| Event::SetEndpoints(s, eps)),
        3 => (any::<usize>(), 0u32..3, 0u32..3).prop_map(|(pick, active, inactive)| Event::SetCounters {
            pick,
            active,
            inactive
        }),
        2 => (0u64..200).prop_map(Event::Advance),
        1 => (any::<bool>(), any::<bool>()).prop_map(|(second_v4, v6)| Event::NodeAddresses { second_v4, v6 }),
        1 => any::<bool>().prop_map(Event::Zone),
    ]
}

fn ip(text: &str) -> IpAddr {
    text.parse().expect("test addresses are valid")
}

fn key(text: &str) -> VirtualServerKey {
    text.parse().expect("test keys are valid")
}

fn service(slot: u8, spec: &SvcSpec) -> Service {
    let mut svc = Service::default();
    svc.metadata.name = format!("svc-{slot}");
    svc.metadata.namespace = "default".into();
    svc.spec.service_type = ["ClusterIP", "NodePort", "LoadBalancer"][usize::from(spec.kind)].into();
    svc.spec.cluster_ips = vec![format!("10.96.0.{}", 10 + slot)];
    if spec.dual {
        svc.spec.cluster_ips.push(format!("fd00:10:96::{}", 10 + slot));
    }
    svc.spec.cluster_ip = svc.spec.cluster_ips[0].clone();
    let node_port = (spec.kind > 0).then_some(30000 + i64::from(slot));
    svc.spec.ports = vec![ServicePort {
        name: "http".into(),
        protocol: if spec.udp { "UDP" } else { "TCP" }.into(),
        port: 80,
        node_port,
        ..Default::default()
    }];
    if let Some(e) = spec.external_ip {
        // 1 is the node's own address: a virtual server the plan must claim.
        svc.spec.external_ips = vec![["203.0.113.1", "192.168.0.10", "2001:db8::1"][usize::from(e)].into()];
    }
    if spec.kind == 2 && spec.load_balancer_ip {
        svc.status.load_balancer = Some(LoadBalancerStatus {
            ingress: vec![LoadBalancerIngress {
                ip: Some(format!("198.51.100.{}", 1 + slot)),
                hostname: None,
            }],
        });
    }
    svc.spec.session_affinity = if spec.affinity { "ClientIP" } else { "None" }.into();
    let scheduler = ["", "mh", "sh", "wlc", "nonsense", ""][usize::from(spec.scheduler)];
    if !scheduler.is_empty() {
        svc.metadata
            .annotations
            .insert("svcnet.io/ipvs-scheduler".into(), scheduler.into());
    }
    svc.spec.internal_traffic_policy = Some(if spec.internal_local { "Local" } else { "Cluster" }.into());
    svc.spec.external_traffic_policy = Some(if spec.external_local { "Local" } else { "Cluster" }.into());
    svc
}

fn slices(slot: u8, eps: &[EpSpec], udp: bool) -> Vec<EndpointSlice> {
    ["IPv4", "IPv6"]
        .into_iter()
        .map(|family| {
            let mut s = EndpointSlice {
                address_type: family.into(),
                ports: vec![EndpointPort {
                    name: Some("http".into()),
                    protocol: Some(if udp { "UDP" } else { "TCP" }.into()),
                    port: Some(8080),
                    app_protocol: None,
                }],
                endpoints: eps
                    .iter()
                    .map(|e| Endpoint {
                        addresses: vec![if family == "IPv4" {
                            format!("10.244.{slot}.{}", e.ip)
                        } else {
                            format!("fd00:10:244::{slot}:{}", e.ip)
                        }],
                        conditions: EndpointConditions {
                            ready: Some(e.ready),
                            serving: Some(e.serving),
                            terminating: Some(e.terminating),
                        },
                        node_name: Some(if e.on_this_node { "node-a" } else { "node-b" }.into()),
                        hints: e.zone_hint.map(|a| {
                            Box::new(EndpointHints {
                                for_zones: vec![ForZone {
                                    name: if a { "zone-a" } else { "zone-b" }.into(),
                                }],
                                for_nodes: vec![],
                            })
                        }),
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            };
            s.metadata.name = format!("svc-{slot}-{}", family.to_lowercase());
            s.metadata.namespace = "default".into();
            s.metadata
                .labels
                .insert(SERVICE_NAME_LABEL.into(), format!("svc-{slot}"));
            s
        })
        .collect()
}

/// The foreign virtual servers the kernel starts with (keepalived, a
/// hand-made rule on a node address outside the NodePort range).
fn foreign() -> SortedMap<VirtualServerKey, VirtualServer> {
    let mut out = SortedMap::new();
    for (k, rs, weight) in [
        ("TCP/192.168.0.100:80", "10.0.0.5:80", 3),
        ("TCP/192.168.0.10:22", "10.0.0.22:22", 5),
    ] {
        let mut real = RealServer::masq(weight);
        real.forward = Forward::Route;
        real.active_connections = 7;
        out.insert(
            key(k),
            VirtualServer {
                settings: VirtualServerSettings {
                    scheduler: Scheduler::Wlc,
                    flags: Flags::HASHED,
                    timeout: 0,
                    netmask: u32::MAX,
                },
                real_servers: [(rs.parse::<SocketAddr>().expect("valid"), real)].into(),
            },
        );
    }
    out
}

struct Sim {
    services: SortedMap<u8, (SvcSpec, Service)>,
    endpoints: SortedMap<u8, Vec<EpSpec>>,
    node: NodeInfo,
    config: ProxyConfig,
    kernel: IpvsTable,
    state: PlanState,
    index: DesiredIndex,
    now: Time,
    foreign: SortedMap<VirtualServerKey, VirtualServer>,
}

impl Sim {
    fn new() -> Sim {
        let foreign = foreign();
        let mut kernel = IpvsTable::new();
        kernel.virtual_servers = foreign.clone();
        // A stale virtual server of svcnet's own, from before a restart.
        kernel.addresses.insert(ip("10.96.0.99"));
        kernel.virtual_servers.insert(
            key("TCP/10.96.0.99:80"),
            VirtualServer {
                settings: VirtualServerSettings {
                    scheduler: Scheduler::Rr,
                    flags: Flags::HASHED,
                    timeout: 0,
                    netmask: u32::MAX,
                },
                real_servers: SortedMap::new(),
            },
        );
        Sim {
            services: SortedMap::new(),
            endpoints: SortedMap::new(),
            node: NodeInfo {
                name: "node-a".into(),
                ips: vec![ip("192.168.0.10")],
                zone: Some("zone-a".into()),
            },
            config: ProxyConfig {
                drain_timeout_seconds: DRAIN_TIMEOUT_SECS,
                ..Default::default()
            },
            kernel,
            state: PlanState::default(),
            index: DesiredIndex::new(),
            now: Time::ZERO,
            foreign,
        }
    }

    fn all_slices(&self) -> Vec<EndpointSlice> {
        self.services
            .iter()
            .flat_map(|(slot, (spec, _))| {
                slices(*slot, self.endpoints.get(slot).map_or(&[][..], Vec::as_slice), spec.udp)
            })
            .collect()
    }

    /// Re-indexes one Service slot; returns what changed.
    fn reindex(&mut self, slot: u8) -> Changes {
        let name = format!("default/svc-{slot}");
        match self.services.get(&slot) {
            None => self.index.remove(&name),
            Some((spec, svc)) => {
                let own = slices(slot, self.endpoints.get(&slot).map_or(&[][..], Vec::as_slice), spec.udp);
                let mut refs: Vec<&EndpointSlice> = own.iter().collect();
                refs.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
                self.index.update(svc, &refs, &self.node, &self.config)
            }
        }
    }

    /// Applies one event; returns the changes for the incremental plan, or
    /// `None` when only a full plan applies (node changes).
    fn event(&mut self, e: &Event) -> Option<Changes> {
        match e {
            Event::UpsertService(slot, spec) => {
                self.services.insert(*slot, (spec.clone(), service(*slot, spec)));
                Some(self.reindex(*slot))
            }
            Event::DeleteService(slot) => {
                self.services.remove(slot);
                Some(self.reindex(*slot))
            }
            Event::SetEndpoints(slot, eps) => {
                self.endpoints.insert(*slot, eps.clone());
                Some(self.reindex(*slot))
            }
            Event::SetCounters { pick, active, inactive } => {
                let owned: Vec<(VirtualServerKey, SocketAddr)> = self
                    .kernel
                    .virtual_servers
                    .iter()
                    .filter(|(k, _)| !self.foreign.contains_key(k))
                    .flat_map(|(k, vs)| vs.real_servers.keys().map(move |rs| (*k, *rs)))
                    .collect();
                if !owned.is_empty() {
                    let (vs, rs) = owned[pick % owned.len()];
                    self.kernel.set_counters(&vs, rs, *active, *inactive);
                }
                Some(Changes::default())
            }
            Event::Advance(secs) => {
                self.now = self.now.plus(Duration::from_secs(*secs));
                Some(Changes::default())
            }
            Event::NodeAddresses { second_v4, v6 } => {
                self.node.ips = vec![ip("192.168.0.10")];
                if *second_v4 {
                    self.node.ips.push(ip("10.0.0.10"));
                }
                if *v6 {
                    self.node.ips.push(ip("fd00::10"));
                }
                None
            }
            Event::Zone(a) => {
                self.node.zone = Some(if *a { "zone-a" } else { "zone-b" }.into());
                None
            }
        }
    }
}

fn check_step(sim: &mut Sim, changes: Option<Changes>) -> Result<(), TestCaseError> {
    let services: Vec<&Service> = sim.services.values().map(|(_, s)| s).collect();
    let slices = sim.all_slices();
    let desired = desired_table(services.iter().copied(), &slices, &sim.node, &sim.config);
    if changes.is_none() {
        sim.index = DesiredIndex::build(services.iter().copied(), &slices, &sim.node, &sim.config);
    }
    prop_assert_eq!(sim.index.table(), &desired.table, "the index matches a full rebuild");
    prop_assert_eq!(sim.index.warnings(), desired.warnings.clone());

    let ctx = PlanContext::new(&sim.config, &sim.node, sim.now);
    let full = plan(&sim.kernel, &desired.table, &sim.state, &ctx);
    if let Some(changes) = &changes {
        let partial = plan_changes(&sim.kernel, &desired.table, changes, &sim.state, &ctx);
        prop_assert_eq!(
            &partial,
            &full,
            "the plan from the reported changes equals the full plan"
        );
    }

    let bound_before = sim.kernel.addresses.clone();
    let mut bound_so_far = bound_before.clone();
    for op in &full.operations {
        match op {
            Operation::BindAddress { address } => {
                bound_so_far.insert(*address);
            }
            Operation::AddVirtualServer { virtual_server, .. }
                if desired.table.addresses.contains(&virtual_server.address) =>
            {
                prop_assert!(
                    bound_so_far.contains(&virtual_server.address),
                    "{} added before its address is bound",
                    op
                );
            }
            _ => {}
        }
        let named = match op {
            Operation::AddVirtualServer { virtual_server, .. }
            | Operation::UpdateVirtualServer { virtual_server, .. }
            | Operation::DeleteVirtualServer { virtual_server }
            | Operation::AddRealServer { virtual_server, .. }
            | Operation::UpdateRealServer { virtual_server, .. }
            | Operation::DeleteRealServer { virtual_server, .. } => Some(virtual_server),
            Operation::BindAddress { .. } | Operation::UnbindAddress { .. } => None,
        };
        prop_assert!(
            named.is_none_or(|k| !sim.foreign.contains_key(k)),
            "{} touches a foreign virtual server",
            op
        );
    }

    apply_plan(&mut sim.kernel, &full).map_err(|e| TestCaseError::fail(format!("kernel refused: {e}")))?;
    sim.state = full.state.clone();

    let unbound: SortedSet<IpAddr> = bound_before.difference(&sim.kernel.addresses).copied().collect();
    prop_assert!(
        sim.kernel.virtual_servers.keys().all(|k| !unbound.contains(&k.address)),
        "a virtual server is left on an unbound address"
    );
    prop_assert_eq!(&sim.kernel.addresses, &desired.table.addresses);
    for (k, vs) in &sim.foreign {
        prop_assert_eq!(sim.kernel.virtual_servers.get(k), Some(vs), "foreign {} changed", k);
    }
    for (k, kernel_vs) in &sim.kernel.virtual_servers {
        if sim.foreign.contains_key(k) {
            continue;
        }
        let Some(want) = desired.table.virtual_servers.get(k) else {
            return Err(TestCaseError::fail(format!(
                "{k} is left in the kernel but not desired"
            )));
        };
        prop_assert!(kernel_vs.settings.same_as(&want.settings), "{} settings differ", k);
        for (addr, rs) in &want.real_servers {
            let got = kernel_vs.real_servers.get(addr);
            prop_assert!(got.is_some_and(|g| g.same_as(rs)), "{} real server {} differs", k, addr);
        }
        for (addr, rs) in &kernel_vs.real_servers {
            if want.real_servers.contains_key(addr) {
                continue;
            }
            let since = sim.state.draining.since(k, addr);
            prop_assert!(
                k.protocol == Protocol::Tcp && rs.weight == 0 && rs.connections() > 0 && since.is_some(),
                "{} real server {} is left without draining",
                k,
                addr
            );
            let since = since.unwrap_or(sim.now);
            prop_assert!(sim.now.since(since) < Duration::from_secs(DRAIN_TIMEOUT_SECS));
        }
    }
    for k in desired.table.virtual_servers.keys() {
        prop_assert!(sim.kernel.virtual_servers.contains_key(k), "{} is missing", k);
    }
    prop_assert_eq!(sim.state.draining.len(), count_draining(&sim.kernel, &desired.table));

    let again = plan(&sim.kernel, &desired.table, &sim.state, &ctx);
    prop_assert!(again.is_empty(), "second plan not empty: {:?}", again.operations);
    prop_assert_eq!(&again.state, &sim.state);
    Ok(())
}

fn count_draining(kernel: &IpvsTable, desired: &IpvsTable) -> usize {
    desired
        .virtual_servers
        .iter()
        .filter_map(|(k, want)| kernel.virtual_servers.get(k).map(|got| (got, want)))
        .map(|(got, want)| {
            got.real_servers
                .keys()
                .filter(|a| !want.real_servers.contains_key(a))
                .count()
        })
        .sum()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn plans_reach_the_desired_table(events in prop::collection::vec(event(), 1..40)) {
        let mut sim = Sim::new();
        check_step(&mut sim, None)?;
        for e in &events {
            let changes = sim.event(e);
            check_step(&mut sim, changes)?;
        }
    }
}
