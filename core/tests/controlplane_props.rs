//! Property tests over the whole control plane: random sequences of
//! Service creates (dynamic and static picks, dual-stack, NodePorts),
//! deletes (including `kubernetes`), snapshot/restore and repair.
//!
//! Invariants after every step:
//! - no ClusterIP and no NodePort is held by two Services;
//! - `kubernetes` exists and holds the first address of the primary range,
//!   which no other Service ever holds;
//! - the allocators agree with the Services (repair finds nothing to fix);
//! - restore(snapshot(x)) == x.

use proptest::prelude::*;
use svcnet_core::api::service::{Service, ServicePort};
use svcnet_core::collections::SortedSet;
use svcnet_core::controlplane::{ClusterConfig, ControlPlane};

#[derive(Clone, Debug)]
enum Op {
    Create {
        name: u8,
        dual: bool,
        node_port: bool,
        pick: Option<u8>,
    },
    Delete {
        name: u8,
    },
    DeleteKubernetes,
    SnapshotRestore,
    Repair,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0u8..40, any::<bool>(), any::<bool>(), proptest::option::of(0u8..30))
            .prop_map(|(name, dual, node_port, pick)| Op::Create { name, dual, node_port, pick }),
        3 => (0u8..40).prop_map(|name| Op::Delete { name }),
        1 => Just(Op::DeleteKubernetes),
        1 => Just(Op::SnapshotRestore),
        1 => Just(Op::Repair),
    ]
}

fn service(name: u8, dual: bool, node_port: bool, pick: Option<u8>) -> Service {
    let mut svc = Service::default();
    svc.metadata.name = format!("svc-{name}");
    svc.spec.ports.push(ServicePort {
        port: 80,
        ..Default::default()
    });
    if dual {
        svc.spec.ip_family_policy = Some("PreferDualStack".into());
    }
    if node_port {
        svc.spec.service_type = "NodePort".into();
    }
    if let Some(p) = pick {
        svc.spec.cluster_ip = format!("10.96.0.{p}");
    }
    svc
}

fn check_invariants(cp: &ControlPlane) -> Result<(), TestCaseError> {
    let mut ips = SortedSet::new();
    let mut ports = SortedSet::new();
    let kubernetes = cp
        .service("default", "kubernetes")
        .ok_or_else(|| TestCaseError::fail("kubernetes missing"))?;
    prop_assert_eq!(&kubernetes.spec.cluster_ip, "10.96.0.1");
    for svc in cp.services() {
        for ip in &svc.spec.cluster_ips {
            prop_assert!(ips.insert(ip.clone()), "{} held twice", ip);
            let ip: std::net::IpAddr = ip.parse().map_err(|_| TestCaseError::fail("bad ip"))?;
            prop_assert!(
                cp.cluster_ip_allocator().is_allocated(ip),
                "{} not marked allocated",
                ip
            );
        }
        for p in svc.spec.ports.iter().filter_map(|p| p.node_port) {
            prop_assert!(ports.insert(p), "nodePort {} held twice", p);
        }
    }
    let used: u128 = cp.cluster_ip_allocator().usage().iter().map(|u| u.used).sum();
    prop_assert_eq!(used, ips.len() as u128, "allocator and Services disagree");
    prop_assert_eq!(cp.node_port_allocator().usage().used as usize, ports.len());
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn random_operations_keep_the_invariants(ops in proptest::collection::vec(op(), 1..80)) {
        let config = ClusterConfig {
            service_cluster_ip_range: "10.96.0.0/27,fd00:10::/123".into(),
            service_node_port_range: "30000-30007".into(),
            seed: 99,
            ..Default::default()
        };
        let mut cp = ControlPlane::new(config).map_err(|e| TestCaseError::fail(e.to_string()))?;
        for op in ops {
            match op {
                Op::Create { name, dual, node_port, pick } => {
                    let before = cp.clone();
                    if cp.apply_service(service(name, dual, node_port, pick)).is_err() {
                        prop_assert_eq!(&cp, &before, "a refused request changed the state");
                    }
                }
                Op::Delete { name } => {
                    let _ = cp.delete_service("default", &format!("svc-{name}"));
                }
                Op::DeleteKubernetes => {
                    cp.delete_service("default", "kubernetes").map_err(|e| TestCaseError::fail(e.to_string()))?;
                }
                Op::SnapshotRestore => {
                    let snap = cp.snapshot();
                    let json = serde_json::to_string(&snap).map_err(|e| TestCaseError::fail(e.to_string()))?;
                    let back = serde_json::from_str(&json).map_err(|e| TestCaseError::fail(e.to_string()))?;
                    let restored = ControlPlane::restore(back).map_err(|e| TestCaseError::fail(e.to_string()))?;
                    prop_assert_eq!(&restored, &cp);
                    cp = restored;
                }
                Op::Repair => {
                    let events = cp.repair();
                    prop_assert!(events.iter().all(|e| e.reason == "ServiceCIDRFull"), "unexpected repair findings: {:?}", events);
                }
            }
            check_invariants(&cp)?;
        }
    }
}
