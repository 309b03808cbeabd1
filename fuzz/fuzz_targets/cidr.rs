//! CIDR and IP parsing: `--service-cluster-ip-range` as kube-apiserver
//! reads it (`parse_service_cluster_ip_range`, one CIDR or two of different
//! families), one CIDR (`parse_cidr`), `--service-node-port-range`
//! (`PortRange`), and the whole `ClusterConfig` validation and control
//! plane start with that range. Input: text; with a `|` in it, the text
//! after the first `|` is the node-port range.
//!
//! Asserts: nothing panics; a parsed CIDR prints and parses back to itself,
//! its prefix fits its family; an accepted range has one or two CIDRs of
//! distinct families, each canonical (no host bits) and passing
//! `validate_service_cidr`, of at least 8 addresses; the control plane
//! starts exactly when the range and port range are accepted, and then
//! the `kubernetes` Service's ClusterIP is the first address of the
//! primary range, inside it; a parsed port range prints and parses back
//! to itself.
#![no_main]

use libfuzzer_sys::fuzz_target;
use svcnet_core::apiserver::node_port::PortRange;
use svcnet_core::apiserver::service_cidr::{
    parse_cidr, parse_service_cluster_ip_range, validate_service_cidr, CidrConstraints,
};
use svcnet_core::controlplane::{ClusterConfig, ControlPlane};
use svcnet_core::family::IpFamily;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (range_text, ports_text) = text.split_once('|').unwrap_or((text, "30000-32767"));

    for entry in range_text.split(',') {
        if let Ok(cidr) = parse_cidr(entry) {
            let max = if cidr.is_ipv4() { 32 } else { 128 };
            assert!(cidr.prefix() <= max);
            let printed = cidr.to_string();
            assert_eq!(
                parse_cidr(&printed).ok(),
                Some(cidr),
                "{entry:?} printed as {printed:?}"
            );
        }
    }

    let constraints = CidrConstraints::default();
    let range = parse_service_cluster_ip_range(range_text, &constraints);
    if let Ok(cidrs) = &range {
        assert!(matches!(cidrs.len(), 1 | 2), "{cidrs:?}");
        if let [a, b] = cidrs.as_slice() {
            assert_ne!(IpFamily::of(a.ip()), IpFamily::of(b.ip()), "two CIDRs of one family");
        }
        for cidr in cidrs {
            assert_eq!(cidr.ip(), cidr.network(), "{cidr} has host bits");
            assert!(
                validate_service_cidr(*cidr, &constraints).is_ok(),
                "{cidr} accepted unvalidated"
            );
            let width = if cidr.is_ipv4() { 32 } else { 128 };
            assert!(width - cidr.prefix() >= 3, "{cidr} holds fewer than 8 addresses");
        }
    }

    let ports = ports_text.parse::<PortRange>();
    if let Ok(ports) = &ports {
        assert_eq!(ports.to_string().parse::<PortRange>().ok(), Some(*ports));
    }

    let config = ClusterConfig {
        service_cluster_ip_range: range_text.to_string(),
        service_node_port_range: ports_text.to_string(),
        ..ClusterConfig::default()
    };
    let started = ControlPlane::new(config);
    assert_eq!(
        started.is_ok(),
        range.is_ok() && ports.is_ok(),
        "the control plane starts exactly when the flags are valid: {:?}",
        started.as_ref().err()
    );
    if let (Ok(cp), Ok(cidrs)) = (started, range) {
        let kubernetes = cp.kubernetes_ip();
        assert!(cidrs[0].contains(kubernetes), "{kubernetes} outside {}", cidrs[0]);
        let svc = cp.service("default", "kubernetes").expect("kubernetes exists");
        assert_eq!(svc.spec.cluster_ip, kubernetes.to_string());
    }
});
