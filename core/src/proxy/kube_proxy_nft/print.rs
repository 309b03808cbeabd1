//! How `nft list table` prints kube-proxy's sets, maps and chains: the
//! order `nft` sorts set elements in and where it breaks their lines.

use std::fmt::Write as _;
use std::net::IpAddr;

/// One part of a set element's key (`10.96.0.1 . tcp . 80`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Atom {
    /// `ipv4_addr` or `ipv6_addr`.
    Ip(IpAddr),
    /// `inet_proto`: `tcp`, `udp` or `sctp`.
    Proto(&'static str),
    /// `inet_service`: a port.
    Port(u16),
}

impl Atom {
    /// The bytes the kernel keeps, each part padded to 4 bytes as the
    /// registers of a concatenation are.
    fn register_bytes(&self, out: &mut Vec<u8>) {
        match self {
            Atom::Ip(IpAddr::V4(ip)) => out.extend(ip.octets()),
            Atom::Ip(IpAddr::V6(ip)) => out.extend(ip.octets()),
            Atom::Proto(name) => out.extend([proto_number(name), 0, 0, 0]),
            Atom::Port(port) => out.extend(port.to_be_bytes().into_iter().chain([0, 0])),
        }
    }
}

fn proto_number(name: &str) -> u8 {
    match name {
        "tcp" => 6,
        "udp" => 17,
        _ => 132,
    }
}

impl std::fmt::Display for Atom {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Atom::Ip(ip) => write!(f, "{ip}"),
            Atom::Proto(name) => f.write_str(name),
            Atom::Port(port) => write!(f, "{port}"),
        }
    }
}

/// One element of a set or map.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Element {
    pub key: Vec<Atom>,
    /// The Service port it is for (`default/web:http`), printed after the key.
    pub comment: Option<String>,
    /// A map's value (`goto service-...`, `drop`).
    pub value: Option<String>,
}

/// The order `nft` lists elements in: a single value by its value (an
/// address numerically); a concatenation by its register bytes read as
/// one little-endian number, so the last part (the port) weighs most and
/// an address counts from its last byte.
fn sort_elements(elements: &mut [Element]) {
    let single = elements.first().is_some_and(|e| e.key.len() == 1);
    crate::sort::sort_by_key(elements, |e| {
        if single {
            let mut bytes = Vec::new();
            for atom in &e.key {
                match atom {
                    Atom::Ip(IpAddr::V4(ip)) => bytes.extend(ip.octets()),
                    Atom::Ip(IpAddr::V6(ip)) => bytes.extend(ip.octets()),
                    Atom::Proto(name) => bytes.push(proto_number(name)),
                    Atom::Port(port) => bytes.extend(port.to_be_bytes()),
                }
            }
            bytes
        } else {
            let mut bytes = Vec::new();
            for atom in &e.key {
                atom.register_bytes(&mut bytes);
            }
            bytes.reverse();
            bytes
        }
    });
}

/// A set (`value: None`) or verdict map, as `nft list table` prints it.
pub(super) fn set_block(
    out: &mut String,
    kind: &str,
    name: &str,
    type_text: &str,
    comment: &str,
    mut elements: Vec<Element>,
) {
    let _ = write!(
        out,
        "\t{kind} {name} {{\n\t\ttype {type_text}\n\t\tcomment \"{comment}\"\n"
    );
    if !elements.is_empty() {
        sort_elements(&mut elements);
        // nft puts two addresses per line, five ports or protocols, and one
        // concatenation or IPv6 address.
        let per_line = match elements[0].key.as_slice() {
            [Atom::Ip(IpAddr::V4(_))] => 2,
            [Atom::Proto(_)] | [Atom::Port(_)] => 5,
            _ => 1,
        };
        out.push_str("\t\telements = { ");
        for (i, element) in elements.iter().enumerate() {
            if i > 0 {
                out.push_str(if i % per_line == 0 { ",\n\t\t\t     " } else { ", " });
            }
            let key: Vec<String> = element.key.iter().map(Atom::to_string).collect();
            out.push_str(&key.join(" . "));
            if let Some(comment) = &element.comment {
                let _ = write!(out, " comment \"{comment}\"");
            }
            if let Some(value) = &element.value {
                let _ = write!(out, " : {value}");
            }
        }
        out.push_str(" }\n");
    }
    out.push_str("\t}\n");
}

/// A chain: its `type ... hook ...` line for a base chain, its comment,
/// then its rules.
pub(super) fn chain_block(out: &mut String, name: &str, header: Option<&str>, rules: &[String]) {
    let _ = writeln!(out, "\tchain {name} {{");
    if let Some(header) = header {
        let _ = writeln!(out, "\t\t{header}");
    }
    for rule in rules {
        let _ = writeln!(out, "\t\t{rule}");
    }
    out.push_str("\t}\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn element(ip: &str, proto: &'static str, port: u16) -> Element {
        Element {
            key: vec![Atom::Ip(ip.parse().unwrap()), Atom::Proto(proto), Atom::Port(port)],
            comment: None,
            value: None,
        }
    }

    #[test]
    fn concatenations_sort_from_their_last_byte() {
        // As nft 1.0.6 listed them from kube-proxy v1.37.2's service-ips.
        let mut elements = vec![
            element("10.96.0.1", "tcp", 443),
            element("10.96.0.50", "tcp", 80),
            element("198.51.100.9", "tcp", 80),
            element("10.96.0.54", "udp", 53),
            element("203.0.113.7", "tcp", 80),
            element("198.51.100.9", "udp", 53),
        ];
        sort_elements(&mut elements);
        let order: Vec<String> = elements.iter().map(|e| e.key[0].to_string()).collect();
        assert_eq!(
            order,
            [
                "198.51.100.9",
                "10.96.0.54",
                "203.0.113.7",
                "198.51.100.9",
                "10.96.0.50",
                "10.96.0.1"
            ]
        );
    }

    #[test]
    fn single_addresses_sort_by_value_and_wrap_in_pairs() {
        let mut out = String::new();
        let ips = ["fd00::a", "2001:db8::1", "fd00::1"];
        let elements = ips
            .iter()
            .map(|ip| Element {
                key: vec![Atom::Ip(ip.parse().unwrap())],
                comment: None,
                value: None,
            })
            .collect();
        set_block(&mut out, "set", "s", "ipv6_addr", "c", elements);
        assert_eq!(
            out,
            "\tset s {\n\t\ttype ipv6_addr\n\t\tcomment \"c\"\n\t\telements = { 2001:db8::1,\n\t\t\t     fd00::1,\n\t\t\t     fd00::a }\n\t}\n"
        );
    }
}
