//! kube-apiserver's defaulting and validation of a hand-written
//! `v1/Endpoints`, in its order and words: the name (an RFC 1123
//! subdomain), then per subset its addresses (IP, hostname, node name, no
//! special ranges) and its ports (a name when there are several, range,
//! protocol, app protocol).

use super::metadata::validate_object_meta;
use super::names::{dns1123_label, dns1123_subdomain, parse_ip, qualified_name, special_ip, IP_MSG};
use crate::api::endpoints::{EndpointAddress, EndpointPort};
use crate::api::Endpoints;
use crate::field::{FieldError, FieldPath};

/// The protocols an endpoint port may have.
const PROTOCOLS: [&str; 3] = ["SCTP", "TCP", "UDP"];

/// What kube-apiserver fills in: `TCP` for a port without a protocol.
pub fn default_endpoints(endpoints: &mut Endpoints) {
    for port in endpoints.subsets.iter_mut().flat_map(|s| s.ports.iter_mut()) {
        port.protocol.get_or_insert_with(|| "TCP".into());
    }
}

/// The problems kube-apiserver finds in a new or changed Endpoints.
pub fn validate_endpoints(endpoints: &Endpoints) -> Vec<FieldError> {
    let mut errs = validate_object_meta(&endpoints.metadata, true, dns1123_subdomain);
    let subsets = FieldPath::new("subsets");
    for (i, subset) in endpoints.subsets.iter().enumerate() {
        let path = subsets.index(i);
        if subset.addresses.is_empty() && subset.not_ready_addresses.is_empty() {
            errs.push(FieldError::required(
                &path,
                "must specify `addresses` or `notReadyAddresses`",
            ));
        }
        for (key, addresses) in [
            ("addresses", &subset.addresses),
            ("notReadyAddresses", &subset.not_ready_addresses),
        ] {
            for (a, address) in addresses.iter().enumerate() {
                errs.extend(validate_address(address, &path.child(key).index(a)));
            }
        }
        let name_required = subset.ports.len() > 1;
        for (p, port) in subset.ports.iter().enumerate() {
            errs.extend(validate_port(port, name_required, &path.child("ports").index(p)));
        }
    }
    errs
}

fn validate_address(address: &EndpointAddress, path: &FieldPath) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let ip = parse_ip(&address.ip);
    if ip.is_none() {
        errs.push(FieldError::invalid(&path.child("ip"), address.ip.as_str(), IP_MSG));
    }
    if let Some(hostname) = address.hostname.as_deref().filter(|h| !h.is_empty()) {
        for msg in dns1123_label(hostname) {
            errs.push(FieldError::invalid(&path.child("hostname"), hostname, &msg));
        }
    }
    if let Some(node) = address.node_name.as_deref().filter(|n| !n.is_empty()) {
        for msg in dns1123_subdomain(node) {
            errs.push(FieldError::invalid(&path.child("nodeName"), node, &msg));
        }
    }
    // The special-range check runs apart from the format check, so an
    // address that is no IP at all is named twice, as kube-apiserver does.
    let special = match ip {
        None => vec!["must be a valid IP address".to_string()],
        Some(ip) => special_ip(ip),
    };
    for msg in special {
        errs.push(FieldError::invalid(&path.child("ip"), address.ip.as_str(), &msg));
    }
    errs
}

fn validate_port(port: &EndpointPort, name_required: bool, path: &FieldPath) -> Vec<FieldError> {
    let mut errs = Vec::new();
    match port.name.as_deref().filter(|n| !n.is_empty()) {
        None if name_required => errs.push(FieldError::required(&path.child("name"), "")),
        None => {}
        Some(name) => {
            for msg in dns1123_label(name) {
                errs.push(FieldError::invalid(&path.child("name"), name, &msg));
            }
        }
    }
    if !(1..=65535).contains(&port.port) {
        errs.push(FieldError::invalid(
            &path.child("port"),
            port.port,
            "must be between 1 and 65535, inclusive",
        ));
    }
    match port.protocol.as_deref() {
        None => errs.push(FieldError::required(&path.child("protocol"), "")),
        Some(p) if !PROTOCOLS.contains(&p) => {
            errs.push(FieldError::unsupported(&path.child("protocol"), p, &PROTOCOLS));
        }
        Some(_) => {}
    }
    if let Some(app) = port.app_protocol.as_deref() {
        for msg in qualified_name(app) {
            errs.push(FieldError::invalid(&path.child("appProtocol"), app, &msg));
        }
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::manifest::{parse_manifests, Object};

    fn errors(yaml: &str) -> Vec<String> {
        let Object::Endpoints(mut e) = parse_manifests(yaml).unwrap().remove(0) else {
            panic!("not an Endpoints");
        };
        default_endpoints(&mut e);
        validate_endpoints(&e).iter().map(ToString::to_string).collect()
    }

    #[test]
    fn a_good_one_passes_and_ports_default_to_tcp() {
        let yaml = "apiVersion: v1\nkind: Endpoints\nmetadata: {name: ext.example}\nsubsets:\n- addresses: [{ip: 192.0.2.10, hostname: h1, nodeName: n1.example}]\n  ports: [{port: 80}]\n";
        assert!(errors(yaml).is_empty());
        let Object::Endpoints(mut e) = parse_manifests(yaml).unwrap().remove(0) else {
            panic!("not an Endpoints");
        };
        default_endpoints(&mut e);
        assert_eq!(e.subsets[0].ports[0].protocol.as_deref(), Some("TCP"));
    }

    #[test]
    fn addresses_and_ports_are_named_in_kube_apiservers_order() {
        let yaml = "apiVersion: v1\nkind: Endpoints\nmetadata: {name: e}\nsubsets:\n- addresses: [{ip: not-an-ip}, {ip: 169.254.1.1, hostname: Bad_Host}]\n  ports: [{name: http, port: 0}, {port: 80, protocol: FOO}]\n- ports: [{port: 80}]\n";
        assert_eq!(
            errors(yaml),
            vec![
                "subsets[0].addresses[0].ip: Invalid value: \"not-an-ip\": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)".to_string(),
                "subsets[0].addresses[0].ip: Invalid value: \"not-an-ip\": must be a valid IP address".to_string(),
                format!("subsets[0].addresses[1].hostname: Invalid value: \"Bad_Host\": {}", dns1123_label("Bad_Host")[0]),
                "subsets[0].addresses[1].ip: Invalid value: \"169.254.1.1\": may not be in the link-local range (169.254.0.0/16, fe80::/10)".to_string(),
                "subsets[0].ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive".to_string(),
                "subsets[0].ports[1].name: Required value".to_string(),
                "subsets[0].ports[1].protocol: Unsupported value: \"FOO\": supported values: \"SCTP\", \"TCP\", \"UDP\"".to_string(),
                "subsets[1]: Required value: must specify `addresses` or `notReadyAddresses`".to_string(),
            ]
        );
    }
}
