//! Service validation: every rule kube-apiserver checks on create and
//! update, in its order, reported as field errors with Kubernetes' wording
//! (even where it prints a Go struct, as for duplicate ports).
//!
//! Runs after [`super::defaults`], so defaulted fields are present.

use super::metadata::{validate_labels, validate_object_meta};
use super::names::{dns1123_label, dns1123_subdomain, iana_svc_name, parse_ip, qualified_name, special_ip, IP_MSG};
use super::source_ranges::validate_source_ranges;
use crate::api::service::{types, IntOrString, Service, ServicePort};
use crate::collections::SortedSet;
use crate::family::IpFamily;
use crate::field::{BadValue, FieldError, FieldPath};

const PORT_RANGE_MSG: &str = "must be between 1 and 65535, inclusive";
const PROTOCOLS: [&str; 3] = ["SCTP", "TCP", "UDP"];
const POLICIES: [&str; 3] = ["PreferDualStack", "RequireDualStack", "SingleStack"];
const MAX_AFFINITY_TIMEOUT: i64 = 86400;
const TRAFFIC_DISTRIBUTIONS: [&str; 3] = ["PreferClose", "PreferSameZone", "PreferSameNode"];
const TOPOLOGY_HINTS: &str = "service.kubernetes.io/topology-aware-hints";
const TOPOLOGY_MODE: &str = "service.kubernetes.io/topology-mode";
const LB_ONLY: &str = "may only be used when `type` is 'LoadBalancer'";

/// Validates a (defaulted) Service for creation. Empty means valid.
pub fn validate_service(svc: &Service) -> Vec<FieldError> {
    // Service names are RFC 1123 labels (RelaxedServiceNameValidation, on
    // by default since Kubernetes 1.34).
    let mut errs = validate_object_meta(&svc.metadata, true, dns1123_label);
    errs.extend(validate_spec(svc, None));
    errs
}

/// Validates an update of `old` into `new` (both defaulted): the
/// ClusterIPs and the load balancer class may not change, then everything
/// [`validate_service`] checks.
pub fn validate_service_update(new: &Service, old: &Service) -> Vec<FieldError> {
    let mut errs = validate_cluster_ips_update(new, old);
    let (old_class, new_class) = (&old.spec.load_balancer_class, &new.spec.load_balancer_class);
    if old.service_type() == types::LOAD_BALANCER
        && new.service_type() == types::LOAD_BALANCER
        && old_class != new_class
    {
        let value = new_class
            .as_deref()
            .map_or(BadValue::Json("null".into()), BadValue::from);
        let path = FieldPath::new("spec").child("loadBalancerClass");
        errs.push(FieldError::invalid(&path, value, "may not change once set"));
    }
    errs.extend(validate_spec(new, Some(old)));
    errs
}

/// kube-apiserver's `validateUpgradeDowngradeClusterIPs`, for the cases
/// svcnet's apply can produce: a changed address, or the primary unset.
fn validate_cluster_ips_update(new: &Service, old: &Service) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if new.service_type() == types::EXTERNAL_NAME || old.service_type() == types::EXTERNAL_NAME {
        return errs;
    }
    if old.is_headless() && new.is_headless() {
        return errs;
    }
    let path = FieldPath::new("spec").child("clusterIPs");
    let (old_ips, new_ips) = (&old.spec.cluster_ips, &new.spec.cluster_ips);
    let value = || BadValue::StrList(new_ips.clone());
    if old_ips.len() == new_ips.len() {
        for (i, (o, n)) in old_ips.iter().zip(new_ips).enumerate() {
            if o != n {
                errs.push(FieldError::invalid(&path.index(i), value(), "may not change once set"));
            }
        }
    } else if old_ips.len() > new_ips.len() {
        if new_ips.is_empty() {
            errs.push(FieldError::invalid(
                &path.index(0),
                value(),
                "primary clusterIP can not be unset",
            ));
        } else if new_ips[0] != old_ips[0] {
            errs.push(FieldError::invalid(&path.index(0), value(), "may not change once set"));
        }
    } else if !old_ips.is_empty() && new_ips[0] != old_ips[0] {
        errs.push(FieldError::invalid(&path.index(0), value(), "may not change once set"));
    }
    errs
}

/// The spec, in the order of kube-apiserver's `validateService`.
fn validate_spec(svc: &Service, old: Option<&Service>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let errs_ref = &mut errs;
    validate_topology_annotations(svc, errs_ref);
    validate_type(svc, errs_ref);
    validate_ports(svc, errs_ref);
    if let Some(selector) = &svc.spec.selector {
        errs_ref.extend(validate_labels(selector, &FieldPath::new("spec").child("selector")));
    }
    validate_affinity(svc, errs_ref);
    validate_cluster_ips(svc, errs_ref);
    validate_external_ips(svc, old, errs_ref);
    validate_type_value(svc, errs_ref);
    validate_node_ports(svc, errs_ref);
    validate_source_ranges(svc, old, errs_ref);
    validate_load_balancer(svc, errs_ref);
    validate_traffic_policies(svc, errs_ref);
    errs
}

/// The two topology annotations must agree when both are set.
fn validate_topology_annotations(svc: &Service, errs: &mut Vec<FieldError>) {
    let annotations = &svc.metadata.annotations;
    if let (Some(hints), Some(mode)) = (annotations.get(TOPOLOGY_HINTS), annotations.get(TOPOLOGY_MODE)) {
        if hints != mode {
            let path = FieldPath::new("metadata").child("annotations").key(TOPOLOGY_MODE);
            let detail = format!("must match annotations[{TOPOLOGY_HINTS}] when both are specified");
            errs.push(FieldError::invalid(&path, mode.as_str(), &detail));
        }
    }
}

/// What depends on the type: headless NodePort and LoadBalancer
/// Services, and ExternalName's own rules.
fn validate_type(svc: &Service, errs: &mut Vec<FieldError>) {
    let spec = FieldPath::new("spec");
    let ty = svc.service_type();
    if svc.spec.ports.is_empty() && !svc.is_headless() && ty != types::EXTERNAL_NAME {
        errs.push(FieldError::required(&spec.child("ports"), ""));
    }
    if svc.is_headless() && (ty == types::NODE_PORT || ty == types::LOAD_BALANCER) {
        let detail = format!("may not be set to 'None' for {ty} services");
        errs.push(FieldError::invalid(&spec.child("clusterIPs").index(0), "None", &detail));
    }
    if ty == types::EXTERNAL_NAME {
        if !svc.spec.cluster_ips.is_empty() {
            errs.push(FieldError::forbidden(
                &spec.child("clusterIPs"),
                "may not be set for ExternalName services",
            ));
        }
        if !svc.spec.ip_families.is_empty() {
            errs.push(FieldError::forbidden(
                &spec.child("ipFamilies"),
                "may not be set for ExternalName services",
            ));
        }
        if svc.spec.ip_family_policy.is_some() {
            errs.push(FieldError::forbidden(
                &spec.child("ipFamilyPolicy"),
                "may not be set for ExternalName services",
            ));
        }
        let path = spec.child("externalName");
        let name = svc.spec.external_name.as_deref().unwrap_or_default();
        let cname = name.strip_suffix('.').unwrap_or(name);
        if cname.is_empty() {
            errs.push(FieldError::required(&path, ""));
        } else {
            for msg in dns1123_subdomain(cname) {
                errs.push(FieldError::invalid(&path, cname, &msg));
            }
        }
    }
}

/// Each port on its own, names unique.
fn validate_ports(svc: &Service, errs: &mut Vec<FieldError>) {
    let ports_path = FieldPath::new("spec").child("ports");
    let multiple = svc.spec.ports.len() > 1;
    let mut names = SortedSet::new();
    for (i, port) in svc.spec.ports.iter().enumerate() {
        validate_port(port, &ports_path.index(i), multiple, &mut names, errs);
    }
}

fn validate_port(
    port: &ServicePort,
    path: &FieldPath,
    multiple: bool,
    names: &mut SortedSet<String>,
    errs: &mut Vec<FieldError>,
) {
    if port.name.is_empty() {
        if multiple {
            errs.push(FieldError::required(&path.child("name"), ""));
        }
    } else {
        for msg in dns1123_label(&port.name) {
            errs.push(FieldError::invalid(&path.child("name"), port.name.as_str(), &msg));
        }
        if !names.insert(port.name.clone()) {
            errs.push(FieldError::duplicate(&path.child("name"), port.name.as_str()));
        }
    }
    if !(1..=65535).contains(&port.port) {
        errs.push(FieldError::invalid(&path.child("port"), port.port, PORT_RANGE_MSG));
    }
    if !PROTOCOLS.contains(&port.protocol.as_str()) {
        errs.push(FieldError::unsupported(
            &path.child("protocol"),
            port.protocol.as_str(),
            &PROTOCOLS,
        ));
    }
    match &port.target_port {
        Some(IntOrString::Int(t)) if !(1..=65535).contains(t) => {
            errs.push(FieldError::invalid(&path.child("targetPort"), *t, PORT_RANGE_MSG));
        }
        Some(IntOrString::Str(name)) => {
            for msg in iana_svc_name(name) {
                errs.push(FieldError::invalid(&path.child("targetPort"), name.as_str(), &msg));
            }
        }
        _ => {}
    }
    if let Some(app) = &port.app_protocol {
        for msg in qualified_name(app) {
            errs.push(FieldError::invalid(&path.child("appProtocol"), app.as_str(), &msg));
        }
    }
}

/// `type` itself, checked late as kube-apiserver does.
fn validate_type_value(svc: &Service, errs: &mut Vec<FieldError>) {
    let ty = svc.service_type();
    if !types::ALL.contains(&ty) {
        errs.push(FieldError::unsupported(
            &FieldPath::new("spec").child("type"),
            ty,
            &types::ALL,
        ));
    }
}

/// NodePorts: none on ClusterIP Services, and in range; then no two ports
/// alike.
fn validate_node_ports(svc: &Service, errs: &mut Vec<FieldError>) {
    let ports_path = FieldPath::new("spec").child("ports");
    let ty = svc.service_type();
    for (i, port) in svc.spec.ports.iter().enumerate() {
        if let Some(np) = port.node_port.filter(|np| *np != 0) {
            let path = ports_path.index(i).child("nodePort");
            if ty == types::CLUSTER_IP {
                errs.push(FieldError::forbidden(
                    &path,
                    "may not be used when `type` is 'ClusterIP'",
                ));
            } else if !(1..=65535).contains(&np) {
                errs.push(FieldError::invalid(&path, np, PORT_RANGE_MSG));
            }
        }
    }
    // Two ports asking for one NodePort are left to the allocator, whose
    // "provided port is already allocated" kube-apiserver reports first.
    let mut keys = SortedSet::new();
    for (i, port) in svc.spec.ports.iter().enumerate() {
        if !keys.insert((port.port, port.protocol.clone())) {
            // kube-apiserver prints the Go struct it keys ports by.
            let key = format!(
                r#"{{"Name":"","Protocol":{},"AppProtocol":null,"Port":{},"TargetPort":0,"NodePort":0}}"#,
                serde_json::Value::from(port.protocol.as_str()),
                port.port
            );
            errs.push(FieldError::duplicate(&ports_path.index(i), BadValue::Json(key)));
        }
    }
}

/// `allocateLoadBalancerNodePorts` and `loadBalancerClass`: LoadBalancer
/// only; a class is a qualified name.
fn validate_load_balancer(svc: &Service, errs: &mut Vec<FieldError>) {
    let spec = FieldPath::new("spec");
    let lb = svc.service_type() == types::LOAD_BALANCER;
    if svc.spec.allocate_load_balancer_node_ports.is_some() && !lb {
        errs.push(FieldError::forbidden(
            &spec.child("allocateLoadBalancerNodePorts"),
            LB_ONLY,
        ));
    }
    if let Some(class) = &svc.spec.load_balancer_class {
        let path = spec.child("loadBalancerClass");
        if lb {
            for msg in qualified_name(class) {
                errs.push(FieldError::invalid(&path, class.as_str(), &msg));
            }
        } else {
            errs.push(FieldError::forbidden(&path, LB_ONLY));
        }
    }
}

fn validate_affinity(svc: &Service, errs: &mut Vec<FieldError>) {
    let spec = FieldPath::new("spec");
    match svc.spec.session_affinity.as_str() {
        "None" => {
            if svc
                .spec
                .session_affinity_config
                .as_ref()
                .is_some_and(|c| c.client_ip.is_some())
            {
                let path = spec.child("sessionAffinityConfig");
                errs.push(FieldError::invalid(
                    &path,
                    "ClientIP",
                    "must not be set when session affinity is None",
                ));
            }
        }
        "ClientIP" => {
            let timeout = svc
                .spec
                .session_affinity_config
                .as_ref()
                .and_then(|c| c.client_ip.as_ref())
                .and_then(|c| c.timeout_seconds);
            if let Some(t) = timeout.filter(|t| *t <= 0 || *t > MAX_AFFINITY_TIMEOUT) {
                let path = spec
                    .child("sessionAffinityConfig")
                    .child("clientIP")
                    .child("timeoutSeconds");
                let detail = format!("must be greater than 0 and less than {MAX_AFFINITY_TIMEOUT}");
                errs.push(FieldError::invalid(&path, t, &detail));
            }
        }
        other => errs.push(FieldError::unsupported(
            &spec.child("sessionAffinity"),
            other,
            &["ClientIP", "None"],
        )),
    }
}

/// kube-apiserver's `ValidateServiceClusterIPsRelatedFields`: `clusterIP`
/// and `clusterIPs` agree, families and policy are known values, the
/// addresses are IPs (at most two, one per family, each of the family
/// `ipFamilies` names).
fn validate_cluster_ips(svc: &Service, errs: &mut Vec<FieldError>) {
    if svc.service_type() == types::EXTERNAL_NAME {
        return;
    }
    let spec = FieldPath::new("spec");
    let ips_path = spec.child("clusterIPs");
    let ips = &svc.spec.cluster_ips;
    let list = || BadValue::StrList(ips.clone());
    if !svc.spec.cluster_ip.is_empty() {
        if ips.is_empty() {
            errs.push(FieldError::required(&ips_path, ""));
        } else if ips[0] != svc.spec.cluster_ip {
            errs.push(FieldError::invalid(
                &ips_path,
                list(),
                "first value must match `clusterIP`",
            ));
        }
    } else if !ips.is_empty() {
        errs.push(FieldError::invalid(
            &ips_path,
            list(),
            "must be empty when `clusterIP` is not specified",
        ));
    }
    let mut seen = SortedSet::new();
    for (i, family) in svc.spec.ip_families.iter().enumerate() {
        let path = spec.child("ipFamilies").index(i);
        if IpFamily::parse(family).is_none() {
            errs.push(FieldError::unsupported(&path, family.as_str(), &["IPv4", "IPv6"]));
        }
        if !seen.insert(family.clone()) {
            errs.push(FieldError::duplicate(&path, family.as_str()));
        }
    }
    if let Some(policy) = svc.spec.ip_family_policy.as_deref() {
        if !POLICIES.contains(&policy) {
            errs.push(FieldError::unsupported(
                &spec.child("ipFamilyPolicy"),
                policy,
                &POLICIES,
            ));
        }
    }
    let mut invalid = false;
    for (i, ip) in ips.iter().enumerate() {
        if i == 0 && ip == "None" {
            if ips.len() > 1 {
                invalid = true;
                errs.push(FieldError::invalid(
                    &ips_path,
                    list(),
                    "'None' must be the first and only value",
                ));
            }
            continue;
        }
        if parse_ip(ip).is_none() {
            invalid = true;
            errs.push(FieldError::invalid(&ips_path.index(i), ip.as_str(), IP_MSG));
        }
    }
    if ips.len() > 2 {
        errs.push(FieldError::invalid(&ips_path, list(), "may only hold up to 2 values"));
    }
    if invalid {
        return;
    }
    let families: Vec<IpFamily> = ips.iter().filter_map(|ip| parse_ip(ip)).map(IpFamily::of).collect();
    if ips.len() > 1 && !(families.len() == 2 && families[0] != families[1]) {
        errs.push(FieldError::invalid(
            &ips_path,
            list(),
            "may specify no more than one IP for each IP family",
        ));
    }
    if !svc.is_headless() {
        for (i, (ip, requested)) in ips.iter().zip(&svc.spec.ip_families).enumerate() {
            let is_v6 = parse_ip(ip).is_some_and(|a| a.is_ipv6());
            let expected = match requested.as_str() {
                "IPv4" if is_v6 => "IPv4",
                "IPv6" if !is_v6 => "IPv6",
                _ => continue,
            };
            let detail = format!("expected an {expected} value as indicated by `ipFamilies[{i}]`");
            errs.push(FieldError::invalid(&ips_path.index(i), ip.as_str(), &detail));
        }
    }
}

/// External traffic policy and the health check port, the internal
/// traffic policy, and `trafficDistribution`.
fn validate_traffic_policies(svc: &Service, errs: &mut Vec<FieldError>) {
    let spec = FieldPath::new("spec");
    let ty = svc.service_type();
    let externally_accessible =
        ty == types::NODE_PORT || ty == types::LOAD_BALANCER || !svc.spec.external_ips.is_empty();
    let etp_path = spec.child("externalTrafficPolicy");
    match svc.spec.external_traffic_policy.as_deref() {
        Some(p) if !externally_accessible => errs.push(FieldError::invalid(
            &etp_path,
            p,
            "may only be set for externally-accessible services",
        )),
        None if externally_accessible => errs.push(FieldError::required(&etp_path, "")),
        Some(p) if p != "Cluster" && p != "Local" => {
            errs.push(FieldError::unsupported(&etp_path, p, &["Cluster", "Local"]))
        }
        _ => {}
    }
    let hc_path = spec.child("healthCheckNodePort");
    let hc = svc.spec.health_check_node_port.unwrap_or(0);
    if !svc.needs_health_check_node_port() {
        if hc != 0 {
            let detail = "may only be set when `type` is 'LoadBalancer' and `externalTrafficPolicy` is 'Local'";
            errs.push(FieldError::invalid(&hc_path, hc, detail));
        }
    } else if hc != 0 && !(1..=65535).contains(&hc) {
        errs.push(FieldError::invalid(&hc_path, hc, PORT_RANGE_MSG));
    }
    if let Some(p) = svc.spec.internal_traffic_policy.as_deref() {
        if p != "Cluster" && p != "Local" {
            errs.push(FieldError::unsupported(
                &spec.child("internalTrafficPolicy"),
                p,
                &["Cluster", "Local"],
            ));
        }
    }
    if let Some(d) = svc.spec.traffic_distribution.as_deref() {
        if !TRAFFIC_DISTRIBUTIONS.contains(&d) {
            errs.push(FieldError::unsupported(
                &spec.child("trafficDistribution"),
                d,
                &TRAFFIC_DISTRIBUTIONS,
            ));
        }
    }
}

/// `externalIPs`: IP addresses, and none of the special ones (unspecified,
/// loopback, link-local, link-local multicast), unless an update keeps
/// them. Also `loadBalancerIP` and the status ingress IPs.
fn validate_external_ips(svc: &Service, old: Option<&Service>, errs: &mut Vec<FieldError>) {
    let spec = FieldPath::new("spec");
    let kept: &[String] = old.map_or(&[], |o| &o.spec.external_ips);
    for (i, ip) in svc.spec.external_ips.iter().enumerate() {
        let path = spec.child("externalIPs").index(i);
        match parse_ip(ip) {
            None => errs.push(FieldError::invalid(&path, ip.as_str(), IP_MSG)),
            Some(_) if kept.contains(ip) => {}
            Some(addr) => {
                for msg in special_ip(addr) {
                    errs.push(FieldError::invalid(&path, ip.as_str(), &msg));
                }
            }
        }
    }
    if let Some(ip) = svc.spec.load_balancer_ip.as_deref().filter(|ip| !ip.is_empty()) {
        if parse_ip(ip).is_none() {
            errs.push(FieldError::invalid(&spec.child("loadBalancerIP"), ip, IP_MSG));
        }
    }
    for (i, ing) in svc.load_balancer_ingress().iter().enumerate() {
        if let Some(ip) = ing.ip.as_deref().filter(|ip| parse_ip(ip).is_none()) {
            let path = FieldPath::new("status")
                .child("loadBalancer")
                .child("ingress")
                .index(i)
                .child("ip");
            errs.push(FieldError::invalid(&path, ip, IP_MSG));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::parse_manifests;
    use crate::api::Object;
    use crate::apiserver::admission::default_service;

    fn svc(yaml: &str) -> Service {
        match parse_manifests(yaml).unwrap().remove(0) {
            Object::Service(mut s) => {
                default_service(&mut s);
                *s
            }
            other => panic!("not a service: {other:?}"),
        }
    }

    fn messages(yaml: &str) -> Vec<String> {
        validate_service(&svc(yaml)).iter().map(ToString::to_string).collect()
    }

    const HEAD: &str = "apiVersion: v1\nkind: Service\nmetadata: {name: web}\n";

    #[test]
    fn a_plain_service_is_valid() {
        assert!(messages(&format!("{HEAD}spec:\n  ports: [{{port: 80}}]\n")).is_empty());
    }

    #[test]
    fn port_errors_name_the_field() {
        let m = messages(&format!("{HEAD}spec:\n  ports: [{{name: a, port: 80}}, {{port: 0}}]\n"));
        assert_eq!(
            m,
            vec![
                "spec.ports[1].name: Required value".to_string(),
                "spec.ports[1].port: Invalid value: 0: must be between 1 and 65535, inclusive".to_string(),
                "spec.ports[1].targetPort: Invalid value: 0: must be between 1 and 65535, inclusive".to_string(),
            ]
        );
        let m = messages(&format!("{HEAD}spec:\n  ports: [{{port: 80, protocol: ICMP}}]\n"));
        assert_eq!(
            m,
            vec![
                "spec.ports[0].protocol: Unsupported value: \"ICMP\": supported values: \"SCTP\", \"TCP\", \"UDP\""
                    .to_string()
            ]
        );
    }

    #[test]
    fn node_port_forbidden_on_cluster_ip() {
        let m = messages(&format!("{HEAD}spec:\n  ports: [{{port: 80, nodePort: 30080}}]\n"));
        assert_eq!(
            m,
            vec!["spec.ports[0].nodePort: Forbidden: may not be used when `type` is 'ClusterIP'".to_string()]
        );
    }

    #[test]
    fn external_name_and_headless_rules() {
        let m = messages(&format!("{HEAD}spec:\n  type: ExternalName\n"));
        assert_eq!(m, vec!["spec.externalName: Required value".to_string()]);
        let m = messages(&format!(
            "{HEAD}spec:\n  type: NodePort\n  clusterIP: None\n  ports: [{{port: 80}}]\n"
        ));
        assert_eq!(
            m,
            vec![
                "spec.clusterIPs[0]: Invalid value: \"None\": may not be set to 'None' for NodePort services"
                    .to_string()
            ]
        );
        assert!(messages(&format!("{HEAD}spec:\n  clusterIP: None\n")).is_empty());
    }

    #[test]
    fn immutable_cluster_ip() {
        let old = svc(&format!(
            "{HEAD}spec:\n  clusterIP: 10.96.0.5\n  ports: [{{port: 80}}]\n"
        ));
        let new = svc(&format!(
            "{HEAD}spec:\n  clusterIP: 10.96.0.6\n  ports: [{{port: 80}}]\n"
        ));
        let m: Vec<String> = validate_service_update(&new, &old)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            m,
            vec!["spec.clusterIPs[0]: Invalid value: [\"10.96.0.6\"]: may not change once set".to_string()]
        );
    }

    #[test]
    fn bad_values_are_quoted() {
        let m = messages(&format!("{HEAD}spec:\n  type: Frob\n  ports: [{{port: 80}}]\n"));
        assert_eq!(m[0], "spec.type: Unsupported value: \"Frob\": supported values: \"ClusterIP\", \"ExternalName\", \"LoadBalancer\", \"NodePort\"");
        let m = messages(&format!(
            "{HEAD}spec:\n  clusterIP: 10.96.0.300\n  ports: [{{port: 80}}]\n"
        ));
        assert_eq!(m, vec!["spec.clusterIPs[0]: Invalid value: \"10.96.0.300\": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)".to_string()]);
        let m = messages(&format!("{HEAD}spec:\n  sessionAffinity: ClientIP\n  sessionAffinityConfig: {{clientIP: {{timeoutSeconds: 0}}}}\n  ports: [{{port: 80}}]\n"));
        assert_eq!(m, vec!["spec.sessionAffinityConfig.clientIP.timeoutSeconds: Invalid value: 0: must be greater than 0 and less than 86400".to_string()]);
    }
}
