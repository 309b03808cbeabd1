//! Service validation: every rule kube-apiserver checks on create and
//! update, reported as field errors with Kubernetes' wording.
//!
//! Runs after [`super::defaults`], so defaulted fields are present. Where
//! Kubernetes prints a Go struct in a message (duplicate ports), svcnet
//! prints the readable `"80/TCP"` instead.

use super::names::{dns1035_label, dns1123_label, dns1123_subdomain, iana_svc_name, parse_ip, IP_MSG};
use crate::api::service::{types, IntOrString, Service, ServicePort};
use crate::family::IpFamily;
use crate::field::{BadValue, FieldError, FieldPath};
use std::collections::BTreeSet;

const PORT_RANGE_MSG: &str = "must be between 1 and 65535, inclusive";
const PROTOCOLS: [&str; 3] = ["SCTP", "TCP", "UDP"];
const POLICIES: [&str; 3] = ["PreferDualStack", "RequireDualStack", "SingleStack"];
const MAX_AFFINITY_TIMEOUT: i64 = 86400;

/// Validates a (defaulted) Service for creation. Empty means valid.
pub fn validate_service(svc: &Service) -> Vec<FieldError> {
    let mut errs = Vec::new();
    validate_metadata(svc, &mut errs);
    validate_type(svc, &mut errs);
    validate_ports(svc, &mut errs);
    validate_cluster_ips(svc, &mut errs);
    validate_families(svc, &mut errs);
    validate_affinity(svc, &mut errs);
    validate_traffic_policies(svc, &mut errs);
    validate_external_ips(svc, &mut errs);
    errs
}

/// Validates an update of `old` into `new` (both defaulted): everything
/// [`validate_service`] checks, plus the immutable `clusterIP`.
pub fn validate_service_update(new: &Service, old: &Service) -> Vec<FieldError> {
    let mut errs = validate_service(new);
    let keeps_ip = new.service_type() != types::EXTERNAL_NAME && old.service_type() != types::EXTERNAL_NAME;
    if keeps_ip && !old.spec.cluster_ip.is_empty() && new.spec.cluster_ip != old.spec.cluster_ip {
        let path = FieldPath::new("spec").child("clusterIP");
        errs.push(FieldError::invalid(
            &path,
            new.spec.cluster_ip.as_str(),
            "field is immutable",
        ));
    }
    errs
}

fn validate_metadata(svc: &Service, errs: &mut Vec<FieldError>) {
    let meta = FieldPath::new("metadata");
    if svc.metadata.name.is_empty() {
        errs.push(FieldError::required(
            &meta.child("name"),
            "name or generateName is required",
        ));
    } else {
        for msg in dns1035_label(&svc.metadata.name) {
            errs.push(FieldError::invalid(
                &meta.child("name"),
                svc.metadata.name.as_str(),
                &msg,
            ));
        }
    }
    for msg in dns1123_label(svc.metadata.namespace_or_default()) {
        errs.push(FieldError::invalid(
            &meta.child("namespace"),
            svc.metadata.namespace.as_str(),
            &msg,
        ));
    }
}

fn validate_type(svc: &Service, errs: &mut Vec<FieldError>) {
    let spec = FieldPath::new("spec");
    let ty = svc.service_type();
    if !types::ALL.contains(&ty) {
        errs.push(FieldError::unsupported(&spec.child("type"), ty, &types::ALL));
        return;
    }
    if ty == types::EXTERNAL_NAME {
        let path = spec.child("externalName");
        match svc.spec.external_name.as_deref() {
            None | Some("") => errs.push(FieldError::required(&path, "")),
            Some(name) => {
                for msg in dns1123_subdomain(name.strip_suffix('.').unwrap_or(name)) {
                    errs.push(FieldError::invalid(&path, name, &msg));
                }
            }
        }
        if !svc.spec.cluster_ip.is_empty() {
            errs.push(FieldError::forbidden(
                &spec.child("clusterIP"),
                "may not be set for ExternalName services",
            ));
        }
    }
    if svc.is_headless() && (ty == types::NODE_PORT || ty == types::LOAD_BALANCER) {
        let detail = format!("may not be set to 'None' for {ty} services");
        errs.push(FieldError::invalid(&spec.child("clusterIPs").index(0), "None", &detail));
    }
    if svc.spec.allocate_load_balancer_node_ports.is_some() && ty != types::LOAD_BALANCER {
        let path = spec.child("allocateLoadBalancerNodePorts");
        errs.push(FieldError::forbidden(
            &path,
            "may only be used when `type` is 'LoadBalancer'",
        ));
    }
}

fn validate_ports(svc: &Service, errs: &mut Vec<FieldError>) {
    let ports_path = FieldPath::new("spec").child("ports");
    let ty = svc.service_type();
    if svc.spec.ports.is_empty() && ty != types::EXTERNAL_NAME && !svc.is_headless() {
        errs.push(FieldError::required(&ports_path, ""));
    }
    let multiple = svc.spec.ports.len() > 1;
    let mut names = BTreeSet::new();
    let mut port_keys = BTreeSet::new();
    let mut node_ports = BTreeSet::new();
    for (i, port) in svc.spec.ports.iter().enumerate() {
        let path = ports_path.index(i);
        validate_port(port, &path, multiple, ty, errs);
        if !port.name.is_empty() && !names.insert(port.name.clone()) {
            errs.push(FieldError::duplicate(&path.child("name"), port.name.as_str()));
        }
        if !port_keys.insert((port.port, port.protocol.clone())) {
            errs.push(FieldError::duplicate(&path, format!("{}/{}", port.port, port.protocol)));
        }
        if let Some(np) = port.node_port.filter(|np| *np != 0) {
            if !node_ports.insert((np, port.protocol.clone())) {
                errs.push(FieldError::duplicate(&path.child("nodePort"), np));
            }
        }
    }
}

fn validate_port(port: &ServicePort, path: &FieldPath, multiple: bool, ty: &str, errs: &mut Vec<FieldError>) {
    if port.name.is_empty() {
        if multiple {
            errs.push(FieldError::required(&path.child("name"), ""));
        }
    } else {
        for msg in dns1123_label(&port.name) {
            errs.push(FieldError::invalid(&path.child("name"), port.name.as_str(), &msg));
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
    if let Some(np) = port.node_port.filter(|np| *np != 0) {
        if ty != types::NODE_PORT && ty != types::LOAD_BALANCER {
            let detail = format!("may not be used when `type` is '{ty}'");
            errs.push(FieldError::forbidden(&path.child("nodePort"), &detail));
        } else if !(1..=65535).contains(&np) {
            errs.push(FieldError::invalid(&path.child("nodePort"), np, PORT_RANGE_MSG));
        }
    }
}

fn validate_cluster_ips(svc: &Service, errs: &mut Vec<FieldError>) {
    let spec = FieldPath::new("spec");
    let ips = &svc.spec.cluster_ips;
    if !svc.spec.cluster_ip.is_empty() && ips.first() != Some(&svc.spec.cluster_ip) {
        let detail = "must match `clusterIP`";
        errs.push(FieldError::invalid(
            &spec.child("clusterIPs").index(0),
            BadValue::StrList(ips.clone()),
            detail,
        ));
    }
    if ips.len() > 2 {
        let detail = "may only hold up to 2 values";
        errs.push(FieldError::invalid(
            &spec.child("clusterIPs"),
            BadValue::StrList(ips.clone()),
            detail,
        ));
    }
    let mut families = Vec::new();
    for (i, ip) in ips.iter().enumerate() {
        let path = spec.child("clusterIPs").index(i);
        if ip == "None" {
            if i > 0 {
                errs.push(FieldError::invalid(&path, "None", "must be a valid IP address"));
            }
            continue;
        }
        match parse_ip(ip) {
            Some(addr) => families.push((i, IpFamily::of(addr))),
            None => errs.push(FieldError::invalid(&path, ip.as_str(), IP_MSG)),
        }
    }
    if let [(_, a), (i, b)] = families.as_slice() {
        if a == b {
            let detail = "may not have the same family as clusterIPs[0]";
            errs.push(FieldError::invalid(
                &spec.child("clusterIPs").index(*i),
                ips[*i].as_str(),
                detail,
            ));
        }
    }
    for (i, fam) in &families {
        if let Some(requested) = svc.spec.ip_families.get(*i) {
            if requested != fam.as_str() && IpFamily::parse(requested).is_some() {
                let detail = format!("expected an {requested} value as indicated by `ipFamilies[{i}]`");
                errs.push(FieldError::invalid(
                    &spec.child("clusterIPs").index(*i),
                    ips[*i].as_str(),
                    &detail,
                ));
            }
        }
    }
}

fn validate_families(svc: &Service, errs: &mut Vec<FieldError>) {
    let spec = FieldPath::new("spec");
    if let Some(policy) = svc.spec.ip_family_policy.as_deref() {
        if !POLICIES.contains(&policy) {
            errs.push(FieldError::unsupported(
                &spec.child("ipFamilyPolicy"),
                policy,
                &POLICIES,
            ));
        }
    }
    let fams = &svc.spec.ip_families;
    if fams.len() > 2 {
        let detail = "may specify no more than one IP for each IP family";
        errs.push(FieldError::invalid(
            &spec.child("ipFamilies"),
            BadValue::StrList(fams.clone()),
            detail,
        ));
    }
    let mut seen = BTreeSet::new();
    for (i, fam) in fams.iter().enumerate() {
        let path = spec.child("ipFamilies").index(i);
        if IpFamily::parse(fam).is_none() {
            errs.push(FieldError::unsupported(&path, fam.as_str(), &["IPv4", "IPv6"]));
        } else if !seen.insert(fam.clone()) {
            errs.push(FieldError::duplicate(&path, fam.as_str()));
        }
    }
    if svc.service_type() == types::EXTERNAL_NAME && !fams.is_empty() {
        errs.push(FieldError::forbidden(
            &spec.child("ipFamilies"),
            "may not be set for ExternalName services",
        ));
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

fn validate_traffic_policies(svc: &Service, errs: &mut Vec<FieldError>) {
    let spec = FieldPath::new("spec");
    let ty = svc.service_type();
    let externally_accessible =
        ty == types::NODE_PORT || ty == types::LOAD_BALANCER || !svc.spec.external_ips.is_empty();
    if let Some(p) = svc.spec.external_traffic_policy.as_deref() {
        let path = spec.child("externalTrafficPolicy");
        if p != "Cluster" && p != "Local" {
            errs.push(FieldError::unsupported(&path, p, &["Cluster", "Local"]));
        } else if !externally_accessible {
            errs.push(FieldError::invalid(
                &path,
                p,
                "may only be set for externally-accessible services",
            ));
        }
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
    if let Some(hc) = svc.spec.health_check_node_port.filter(|hc| *hc != 0) {
        let path = spec.child("healthCheckNodePort");
        if !svc.needs_health_check_node_port() {
            let detail = "may only be set when `type` is 'LoadBalancer' and `externalTrafficPolicy` is 'Local'";
            errs.push(FieldError::invalid(&path, hc, detail));
        } else if !(1..=65535).contains(&hc) {
            errs.push(FieldError::invalid(&path, hc, PORT_RANGE_MSG));
        }
    }
}

fn validate_external_ips(svc: &Service, errs: &mut Vec<FieldError>) {
    let spec = FieldPath::new("spec");
    for (i, ip) in svc.spec.external_ips.iter().enumerate() {
        if parse_ip(ip).is_none() {
            errs.push(FieldError::invalid(
                &spec.child("externalIPs").index(i),
                ip.as_str(),
                IP_MSG,
            ));
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
            vec!["spec.clusterIP: Invalid value: \"10.96.0.6\": field is immutable".to_string()]
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
