//! Property tests for the EndpointSlice controller as the control plane
//! runs it: random sequences of Service applies (selectors, named and
//! numeric target ports, dual-stack), Pod applies and deletes (labels,
//! readiness, termination, phases, named ports, one or two families) and
//! snapshot/restore, with a small `maxEndpointsPerSlice` so slices split.
//!
//! Invariants after every step, for every Service with a selector and each
//! of its families:
//! - its managed slices hold exactly one endpoint per selected, non-terminal
//!   Pod with an address of that family, with the right conditions;
//! - every endpoint sits in a slice whose ports are the ports its Pod
//!   resolves, and no slice holds more than `maxEndpointsPerSlice`;
//! - there is at least one slice (a placeholder when there are no Pods);
//! - restore(snapshot(x)) == x (re-running the controller changes nothing).

use proptest::prelude::*;
use svcnet_core::api::pod::{Container, ContainerPort, PodCondition, PodIp};
use svcnet_core::api::service::{IntOrString, ServicePort};
use svcnet_core::api::{EndpointSlice, Pod, Service};
use svcnet_core::collections::SortedMap;
use svcnet_core::controllers::endpointslice::desired::{endpoint_ports, selector, selects, should_be_in_slices};
use svcnet_core::controlplane::{ClusterConfig, ControlPlane};
use svcnet_core::family::IpFamily;

const MAX: u32 = 3;

#[derive(Clone, Debug)]
enum Op {
    Service {
        name: u8,
        app: u8,
        named: bool,
        dual: bool,
    },
    Pod {
        name: u8,
        app: u8,
        ready: bool,
        terminating: bool,
        phase: u8,
        port: u8,
        dual: bool,
    },
    DeletePod {
        name: u8,
    },
    DeleteService {
        name: u8,
    },
    SnapshotRestore,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        2 => (0u8..3, 0u8..2, any::<bool>(), any::<bool>())
            .prop_map(|(name, app, named, dual)| Op::Service { name, app, named, dual }),
        8 => (0u8..12, 0u8..2, any::<bool>(), any::<bool>(), 0u8..5, 0u8..3, any::<bool>()).prop_map(
            |(name, app, ready, terminating, phase, port, dual)| Op::Pod { name, app, ready, terminating, phase, port, dual }
        ),
        3 => (0u8..12).prop_map(|name| Op::DeletePod { name }),
        1 => (0u8..3).prop_map(|name| Op::DeleteService { name }),
        1 => Just(Op::SnapshotRestore),
    ]
}

fn service(name: u8, app: u8, named: bool, dual: bool) -> Service {
    let mut svc = Service::default();
    svc.metadata.name = format!("svc-{name}");
    svc.spec.selector = Some(SortedMap::from([("app".to_string(), format!("a{app}"))]));
    let target = if named {
        IntOrString::Str("http".into())
    } else {
        IntOrString::Int(8080)
    };
    svc.spec.ports.push(ServicePort {
        name: "http".into(),
        port: 80,
        target_port: Some(target),
        ..Default::default()
    });
    if dual {
        svc.spec.ip_family_policy = Some("PreferDualStack".into());
    }
    svc
}

#[allow(clippy::too_many_arguments)]
fn pod(name: u8, app: u8, ready: bool, terminating: bool, phase: u8, port: u8, dual: bool) -> Pod {
    let mut p = Pod::default();
    p.metadata.name = format!("pod-{name}");
    p.metadata.labels.insert("app".into(), format!("a{app}"));
    if terminating {
        p.metadata.deletion_timestamp = Some("2025-01-01T00:00:00Z".into());
    }
    let ports = match port {
        0 => Vec::new(),
        n => vec![ContainerPort {
            name: Some("http".into()),
            container_port: 8000 + i64::from(n),
            ..Default::default()
        }],
    };
    p.spec.containers.push(Container {
        name: "c".into(),
        ports,
        ..Default::default()
    });
    p.status.phase = Some(["Running", "Running", "Pending", "Succeeded", "Failed"][usize::from(phase)].into());
    if phase != 2 {
        p.status.pod_ips.push(PodIp {
            ip: format!("10.244.0.{name}"),
        });
        if dual {
            p.status.pod_ips.push(PodIp {
                ip: format!("fd00::{name}"),
            });
        }
    }
    p.status.conditions.push(PodCondition {
        condition_type: "Ready".into(),
        status: if ready { "True" } else { "False" }.into(),
        ..Default::default()
    });
    p
}

fn check(cp: &ControlPlane) -> Result<(), TestCaseError> {
    for svc in cp.services() {
        let Some(sel) = selector(svc) else {
            continue;
        };
        let ns = svc.metadata.namespace_or_default();
        let slices: Vec<&EndpointSlice> = cp
            .endpoint_slices_for(ns, &svc.metadata.name)
            .into_iter()
            .filter(|s| s.is_managed_by_controller())
            .collect();
        for family_name in &svc.spec.ip_families {
            let family = IpFamily::parse(family_name).unwrap();
            let of_family: Vec<&&EndpointSlice> = slices.iter().filter(|s| s.family() == Some(family)).collect();
            prop_assert!(!of_family.is_empty(), "{} has no {family} slice", svc.metadata.name);
            let mut seen: SortedMap<String, (Vec<String>, bool)> = SortedMap::new();
            for slice in &of_family {
                prop_assert!(slice.endpoints.len() <= MAX as usize);
                for ep in &slice.endpoints {
                    let target = ep.target_ref.as_ref().unwrap().name.clone();
                    let p = cp.pod(ns, &target).unwrap();
                    prop_assert_eq!(&slice.ports, &endpoint_ports(svc, p), "ports of {}", target);
                    let dup = seen.insert(target.clone(), (ep.addresses.clone(), ep.conditions.is_ready()));
                    prop_assert!(dup.is_none(), "{} twice", target);
                }
            }
            let mut want: SortedMap<String, (Vec<String>, bool)> = SortedMap::new();
            for p in cp.pods().filter(|p| selects(sel, p) && should_be_in_slices(p)) {
                let ips: Vec<String> = p
                    .ips()
                    .into_iter()
                    .filter(|ip| IpFamily::of(ip.parse().unwrap()) == family)
                    .collect();
                if !ips.is_empty() {
                    let ready = p.is_ready() && !p.is_terminating();
                    want.insert(p.metadata.name.clone(), (ips, ready));
                }
            }
            prop_assert_eq!(seen, want, "endpoints of {} {}", svc.metadata.name, family);
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn slices_always_match_the_pods(ops in proptest::collection::vec(op(), 1..60)) {
        let config = ClusterConfig {
            service_cluster_ip_range: "10.96.0.0/16,fd00:10:96::/112".into(),
            max_endpoints_per_slice: MAX,
            ..Default::default()
        };
        let mut cp = ControlPlane::new(config).unwrap();
        for op in ops {
            match op {
                Op::Service { name, app, named, dual } => {
                    cp.apply_service(service(name, app, named, dual)).unwrap();
                }
                Op::Pod { name, app, ready, terminating, phase, port, dual } => {
                    cp.apply_pod(pod(name, app, ready, terminating, phase, port, dual)).unwrap();
                }
                Op::DeletePod { name } => {
                    let _ = cp.delete_pod("default", &format!("pod-{name}"));
                }
                Op::DeleteService { name } => {
                    let _ = cp.delete_service("default", &format!("svc-{name}"));
                }
                Op::SnapshotRestore => {
                    let snap = cp.snapshot();
                    let restored = ControlPlane::restore(snap).unwrap();
                    prop_assert_eq!(&restored, &cp);
                    cp = restored;
                }
            }
            check(&cp)?;
        }
    }
}
