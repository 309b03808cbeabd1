//! DNS records for Services, per the Kubernetes DNS specification 1.1.0
//! (<https://github.com/kubernetes/dns/blob/master/docs/specification.md>).
//!
//! This module owns the records cluster DNS (CoreDNS's `kubernetes` plugin)
//! serves for Services, as plain data, and their zone-file text:
//!
//! - ClusterIP, NodePort and LoadBalancer Services: `A`/`AAAA` per ClusterIP
//!   at `<svc>.<ns>.svc.<zone>.`, `SRV` per named port at
//!   `_<port>._<proto>.<svc>.<ns>.svc.<zone>.`, and `PTR` per ClusterIP.
//! - ExternalName Services: `CNAME <externalName>.`
//! - Always: `dns-version.<zone>. IN TXT "1.1.0"`.
//!
//! Headless Services (`clusterIP: None`) get their records from the ready
//! endpoints of their EndpointSlices ([`headless`]): one `A`/`AAAA` per
//! endpoint at the service name, `<hostname>.<svc>.<ns>.svc.<zone>.`, SRV
//! records targeting those names and PTR records back to them. No ready
//! endpoint, no record (NXDOMAIN). [`service_records`] covers what needs no
//! endpoints; [`cluster_records`] is the whole zone, both merged through
//! [`sort_records`].
//!
//! DNS names compare case-insensitively, so every name is lowercased and
//! written absolute (with the trailing dot).

pub mod headless;

use crate::api::service::types;
use crate::api::{EndpointSlice, Service};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// The version of the Kubernetes DNS specification served in
/// `dns-version.<zone>.`.
pub const SPEC_VERSION: &str = "1.1.0";

/// SRV priority for a Service's named ports (one target, so the lowest).
const SRV_PRIORITY: u16 = 0;

/// SRV weight for a Service's named ports (one target takes all of it).
const SRV_WEIGHT: u16 = 100;

/// Cluster DNS settings.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct DnsConfig {
    /// The cluster domain (kubelet's `--cluster-domain`), `cluster.local` by
    /// default. Case and a trailing dot are ignored.
    pub zone: String,
    /// TTL of every record, in seconds; 5 by default, as in CoreDNS.
    pub ttl: u32,
}

impl Default for DnsConfig {
    fn default() -> Self {
        DnsConfig {
            zone: "cluster.local".to_string(),
            ttl: 5,
        }
    }
}

/// The data of one record, by type.
///
/// In JSON the type and data sit beside the record's name and TTL:
/// `{"name": "...", "ttl": 5, "type": "A", "data": "10.96.0.10"}`. `type` is
/// the DNS mnemonic (`A`, `AAAA`, `SRV`, `PTR`, `CNAME`, `TXT`); `data` is a
/// string for every type except SRV, whose data is
/// `{"priority": 0, "weight": 100, "port": 443, "target": "..."}`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(tag = "type", content = "data")]
pub enum RecordData {
    /// An IPv4 address.
    A(Ipv4Addr),
    /// An IPv6 address.
    #[serde(rename = "AAAA")]
    Aaaa(Ipv6Addr),
    /// A service location: the port of a named Service port and the name
    /// that serves it.
    #[serde(rename = "SRV")]
    Srv {
        /// Lower is tried first.
        priority: u16,
        /// Relative share among targets of equal priority.
        weight: u16,
        /// The port number.
        port: u16,
        /// The name serving the port (absolute, with the trailing dot).
        target: String,
    },
    /// The name an address maps back to (absolute, with the trailing dot).
    #[serde(rename = "PTR")]
    Ptr(String),
    /// The canonical name this one aliases (absolute, with the trailing dot).
    #[serde(rename = "CNAME")]
    Cname(String),
    /// Free text, written quoted in zone files.
    #[serde(rename = "TXT")]
    Txt(String),
}

impl RecordData {
    /// The record type mnemonic: `A`, `AAAA`, `SRV`, `PTR`, `CNAME`, `TXT`.
    pub fn record_type(&self) -> &'static str {
        match self {
            RecordData::A(_) => "A",
            RecordData::Aaaa(_) => "AAAA",
            RecordData::Srv { .. } => "SRV",
            RecordData::Ptr(_) => "PTR",
            RecordData::Cname(_) => "CNAME",
            RecordData::Txt(_) => "TXT",
        }
    }
}

/// Zone-file presentation of the data (RDATA): `10.96.0.1`,
/// `0 100 443 kubernetes.default.svc.cluster.local.`, `"1.1.0"`.
impl fmt::Display for RecordData {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RecordData::A(ip) => write!(f, "{ip}"),
            RecordData::Aaaa(ip) => write!(f, "{ip}"),
            RecordData::Srv {
                priority,
                weight,
                port,
                target,
            } => {
                write!(f, "{priority} {weight} {port} {target}")
            }
            RecordData::Ptr(name) | RecordData::Cname(name) => f.write_str(name),
            RecordData::Txt(text) => write_txt(f, text),
        }
    }
}

/// Writes `text` as a quoted zone-file character string: `"` and `\` are
/// escaped with a backslash, bytes outside printable ASCII as `\DDD`.
fn write_txt(f: &mut fmt::Formatter<'_>, text: &str) -> fmt::Result {
    f.write_str("\"")?;
    for byte in text.bytes() {
        match byte {
            b'"' | b'\\' => write!(f, "\\{}", char::from(byte))?,
            b' '..=b'~' => write!(f, "{}", char::from(byte))?,
            _ => write!(f, "\\{byte:03}")?,
        }
    }
    f.write_str("\"")
}

/// One DNS record. Serialises flat, with the data's `type` and `data`
/// beside `name` and `ttl` (see [`RecordData`]).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct DnsRecord {
    /// The owner name, lowercase and absolute (with the trailing dot).
    pub name: String,
    /// Time to live, in seconds.
    pub ttl: u32,
    /// Type and data.
    #[serde(flatten)]
    pub data: RecordData,
}

/// One zone-file line, without the newline:
/// `kubernetes.default.svc.cluster.local. 5 IN A 10.96.0.1`.
impl fmt::Display for DnsRecord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {} IN {} {}",
            self.name,
            self.ttl,
            self.data.record_type(),
            self.data
        )
    }
}

/// The ClusterIP and ExternalName part of cluster DNS for `services`, which
/// are already admitted (ClusterIPs filled in), plus the
/// `dns-version.<zone>.` TXT record. Sorted and without duplicates (see
/// [`sort_records`]).
///
/// - ClusterIP, NodePort, LoadBalancer: `A`/`AAAA` per address in
///   `spec.clusterIPs` (`spec.clusterIP` when the list is empty), `SRV`
///   `0 100 <port> <svc>.<ns>.svc.<zone>.` per named port (unnamed ports get
///   none), `PTR` per address.
/// - ExternalName: `CNAME` to `spec.externalName`, made absolute.
/// - Headless: nothing here; their records need endpoints (see
///   [`cluster_records`]).
///
/// Values admission would have rejected (an address that does not parse, a
/// port outside 0-65535, an unknown type) produce no record rather than an
/// error.
pub fn service_records(services: &[Service], config: &DnsConfig) -> Vec<DnsRecord> {
    let zone = normalize_zone(&config.zone);
    let ttl = config.ttl;
    let mut records = vec![DnsRecord {
        name: absolute(&format!("dns-version.{zone}")),
        ttl,
        data: RecordData::Txt(SPEC_VERSION.to_string()),
    }];
    for service in services {
        let name = fqdn(service, &zone);
        match service.service_type() {
            types::EXTERNAL_NAME => {
                if let Some(target) = service.spec.external_name.as_deref().map(str::trim) {
                    if !target.is_empty() {
                        records.push(DnsRecord {
                            name,
                            ttl,
                            data: RecordData::Cname(absolute(&target.to_ascii_lowercase())),
                        });
                    }
                }
            }
            types::CLUSTER_IP | types::NODE_PORT | types::LOAD_BALANCER if !service.is_headless() => {
                cluster_ip_records(service, &name, ttl, &mut records);
            }
            _ => {}
        }
    }
    sort_records(&mut records);
    records
}

/// The whole cluster zone: [`service_records`] for `services`, plus the
/// [`headless::headless_records`] of every headless Service from the
/// `slices` labelled with its name in its namespace. Sorted, without
/// duplicates.
pub fn cluster_records(services: &[Service], slices: &[EndpointSlice], config: &DnsConfig) -> Vec<DnsRecord> {
    let mut records = service_records(services, config);
    for service in services.iter().filter(|s| s.is_headless()) {
        let namespace = service.metadata.namespace_or_default();
        let own: Vec<&EndpointSlice> = slices
            .iter()
            .filter(|s| s.metadata.namespace_or_default() == namespace)
            .filter(|s| s.service_name() == Some(service.metadata.name.as_str()))
            .collect();
        records.extend(headless::headless_records(service, &own, config));
    }
    sort_records(&mut records);
    records
}

/// A, AAAA, SRV and PTR records of a Service with ClusterIPs, whose FQDN is
/// `name`.
fn cluster_ip_records(service: &Service, name: &str, ttl: u32, records: &mut Vec<DnsRecord>) {
    let spec = &service.spec;
    let addresses = if spec.cluster_ips.is_empty() {
        std::slice::from_ref(&spec.cluster_ip)
    } else {
        spec.cluster_ips.as_slice()
    };
    for ip in addresses.iter().filter_map(|text| text.parse::<IpAddr>().ok()) {
        let data = match ip {
            IpAddr::V4(v4) => RecordData::A(v4),
            IpAddr::V6(v6) => RecordData::Aaaa(v6),
        };
        records.push(DnsRecord {
            name: name.to_string(),
            ttl,
            data,
        });
        records.push(DnsRecord {
            name: reverse_name(ip),
            ttl,
            data: RecordData::Ptr(name.to_string()),
        });
    }
    for port in spec.ports.iter().filter(|port| !port.name.is_empty()) {
        let Ok(number) = u16::try_from(port.port) else {
            continue;
        };
        let protocol = if port.protocol.is_empty() {
            "tcp".to_string()
        } else {
            port.protocol.to_ascii_lowercase()
        };
        records.push(DnsRecord {
            name: format!("_{}._{}.{}", port.name.to_ascii_lowercase(), protocol, name),
            ttl,
            data: RecordData::Srv {
                priority: SRV_PRIORITY,
                weight: SRV_WEIGHT,
                port: number,
                target: name.to_string(),
            },
        });
    }
}

/// Sorts records by name, then type mnemonic, then data (addresses
/// numerically, SRV by priority, weight, port, target), and drops exact
/// duplicates. Names are compared as stored, so they should already be
/// lowercase, as every name built here is.
pub fn sort_records(records: &mut Vec<DnsRecord>) {
    crate::sort::sort_by(records, |a, b| {
        a.name
            .cmp(&b.name)
            .then_with(|| a.data.record_type().cmp(b.data.record_type()))
            .then_with(|| a.data.cmp(&b.data))
            .then_with(|| a.ttl.cmp(&b.ttl))
    });
    records.dedup();
}

/// The absolute, lowercase DNS name of `service`: `<svc>.<ns>.svc.<zone>.`
pub fn service_fqdn(service: &Service, config: &DnsConfig) -> String {
    fqdn(service, &normalize_zone(&config.zone))
}

/// `<svc>.<ns>.svc.<zone>.` for an already normalised `zone`.
fn fqdn(service: &Service, zone: &str) -> String {
    let name = format!(
        "{}.{}.svc.{}",
        service.metadata.name,
        service.metadata.namespace_or_default(),
        zone
    );
    absolute(&name.to_ascii_lowercase())
}

/// The zone without surrounding whitespace or dots, lowercased.
fn normalize_zone(zone: &str) -> String {
    zone.trim().trim_matches('.').to_ascii_lowercase()
}

/// `name` with a trailing dot.
fn absolute(name: &str) -> String {
    if name.ends_with('.') {
        name.to_string()
    } else {
        format!("{name}.")
    }
}

/// The reverse-lookup name of `ip`: `d.c.b.a.in-addr.arpa.` for IPv4, the
/// 32 nibbles in reverse order under `ip6.arpa.` for IPv6.
pub fn reverse_name(ip: IpAddr) -> String {
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, c, d] = v4.octets();
            format!("{d}.{c}.{b}.{a}.in-addr.arpa.")
        }
        IpAddr::V6(v6) => {
            let nibbles: String = v6
                .octets()
                .iter()
                .rev()
                .map(|byte| format!("{:x}.{:x}.", byte & 0x0f, byte >> 4))
                .collect();
            format!("{nibbles}ip6.arpa.")
        }
    }
}

/// Zone-file text for `records`, one per line in the order given
/// ([`service_records`] returns them sorted):
///
/// ```text
/// 1.0.96.10.in-addr.arpa. 5 IN PTR kubernetes.default.svc.cluster.local.
/// _https._tcp.kubernetes.default.svc.cluster.local. 5 IN SRV 0 100 443 kubernetes.default.svc.cluster.local.
/// dns-version.cluster.local. 5 IN TXT "1.1.0"
/// kubernetes.default.svc.cluster.local. 5 IN A 10.96.0.1
/// ```
pub fn zone_text(records: &[DnsRecord]) -> String {
    records.iter().map(|record| format!("{record}\n")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::service::ServicePort;

    fn service(name: &str, namespace: &str, service_type: &str, ips: &[&str], ports: &[(&str, &str, i64)]) -> Service {
        let mut svc = Service::default();
        svc.metadata.name = name.to_string();
        svc.metadata.namespace = namespace.to_string();
        svc.spec.service_type = service_type.to_string();
        svc.spec.cluster_ip = ips.first().map(|ip| ip.to_string()).unwrap_or_default();
        svc.spec.cluster_ips = ips.iter().map(|ip| ip.to_string()).collect();
        svc.spec.ports = ports
            .iter()
            .map(|(name, protocol, port)| ServicePort {
                name: name.to_string(),
                protocol: protocol.to_string(),
                port: *port,
                ..ServicePort::default()
            })
            .collect();
        svc
    }

    fn text(services: &[Service]) -> String {
        zone_text(&service_records(services, &DnsConfig::default()))
    }

    const VERSION: &str = "dns-version.cluster.local. 5 IN TXT \"1.1.0\"\n";

    #[test]
    fn kubernetes_service() {
        let kubernetes = service("kubernetes", "default", "", &["10.96.0.1"], &[("https", "TCP", 443)]);
        assert_eq!(
            text(&[kubernetes]),
            "1.0.96.10.in-addr.arpa. 5 IN PTR kubernetes.default.svc.cluster.local.\n\
             _https._tcp.kubernetes.default.svc.cluster.local. 5 IN SRV 0 100 443 kubernetes.default.svc.cluster.local.\n\
             dns-version.cluster.local. 5 IN TXT \"1.1.0\"\n\
             kubernetes.default.svc.cluster.local. 5 IN A 10.96.0.1\n"
        );
    }

    #[test]
    fn dns_version_alone() {
        assert_eq!(text(&[]), VERSION);
        let config = DnsConfig {
            zone: "Example.ORG.".to_string(),
            ttl: 30,
        };
        assert_eq!(
            zone_text(&service_records(&[], &config)),
            "dns-version.example.org. 30 IN TXT \"1.1.0\"\n"
        );
    }

    #[test]
    fn dual_stack_service() {
        let web = service(
            "web",
            "shop",
            "NodePort",
            &["10.96.0.20", "fd00:10:96::14"],
            &[("http", "TCP", 80)],
        );
        assert_eq!(
            text(&[web]),
            "20.0.96.10.in-addr.arpa. 5 IN PTR web.shop.svc.cluster.local.\n\
             4.1.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.6.9.0.0.0.1.0.0.0.0.d.f.ip6.arpa. 5 IN PTR web.shop.svc.cluster.local.\n\
             _http._tcp.web.shop.svc.cluster.local. 5 IN SRV 0 100 80 web.shop.svc.cluster.local.\n\
             dns-version.cluster.local. 5 IN TXT \"1.1.0\"\n\
             web.shop.svc.cluster.local. 5 IN A 10.96.0.20\n\
             web.shop.svc.cluster.local. 5 IN AAAA fd00:10:96::14\n"
        );
    }

    #[test]
    fn ipv6_reverse_name_has_32_nibbles() {
        let ip: IpAddr = "2001:db8:85a3::8a2e:370:7334".parse().unwrap();
        let name = reverse_name(ip);
        assert_eq!(
            name,
            "4.3.3.7.0.7.3.0.e.2.a.8.0.0.0.0.0.0.0.0.3.a.5.8.8.b.d.0.1.0.0.2.ip6.arpa."
        );
        let nibbles: Vec<&str> = name
            .trim_end_matches("ip6.arpa.")
            .trim_end_matches('.')
            .split('.')
            .collect();
        assert_eq!(nibbles.len(), 32);
        assert!(nibbles
            .iter()
            .all(|n| n.len() == 1 && n.chars().all(|c| c.is_ascii_hexdigit())));
        assert_eq!(
            reverse_name("::1".parse().unwrap()),
            format!("1.{}ip6.arpa.", "0.".repeat(31))
        );
        assert_eq!(reverse_name("10.96.0.10".parse().unwrap()), "10.0.96.10.in-addr.arpa.");
    }

    #[test]
    fn multi_port_service_with_an_unnamed_port() {
        // Unnamed ports cannot coexist with others after admission, but the
        // records must still skip them.
        let api = service(
            "api",
            "default",
            "LoadBalancer",
            &["10.96.5.7"],
            &[("http", "TCP", 80), ("", "TCP", 8080), ("grpc", "", 9090)],
        );
        assert_eq!(
            text(&[api]),
            "7.5.96.10.in-addr.arpa. 5 IN PTR api.default.svc.cluster.local.\n\
             _grpc._tcp.api.default.svc.cluster.local. 5 IN SRV 0 100 9090 api.default.svc.cluster.local.\n\
             _http._tcp.api.default.svc.cluster.local. 5 IN SRV 0 100 80 api.default.svc.cluster.local.\n\
             api.default.svc.cluster.local. 5 IN A 10.96.5.7\n\
             dns-version.cluster.local. 5 IN TXT \"1.1.0\"\n"
        );
    }

    #[test]
    fn udp_srv() {
        let dns = service(
            "kube-dns",
            "kube-system",
            "ClusterIP",
            &["10.96.0.10"],
            &[("dns", "UDP", 53), ("dns-tcp", "TCP", 53)],
        );
        assert_eq!(
            text(&[dns]),
            "10.0.96.10.in-addr.arpa. 5 IN PTR kube-dns.kube-system.svc.cluster.local.\n\
             _dns-tcp._tcp.kube-dns.kube-system.svc.cluster.local. 5 IN SRV 0 100 53 kube-dns.kube-system.svc.cluster.local.\n\
             _dns._udp.kube-dns.kube-system.svc.cluster.local. 5 IN SRV 0 100 53 kube-dns.kube-system.svc.cluster.local.\n\
             dns-version.cluster.local. 5 IN TXT \"1.1.0\"\n\
             kube-dns.kube-system.svc.cluster.local. 5 IN A 10.96.0.10\n"
        );
    }

    #[test]
    fn external_name() {
        let mut db = service("db", "prod", "ExternalName", &[], &[("pg", "TCP", 5432)]);
        db.spec.external_name = Some("DB.Example.com".to_string());
        let mut dotted = service("cache", "prod", "ExternalName", &[], &[]);
        dotted.spec.external_name = Some("cache.example.com.".to_string());
        assert_eq!(
            text(&[db, dotted]),
            "cache.prod.svc.cluster.local. 5 IN CNAME cache.example.com.\n\
             db.prod.svc.cluster.local. 5 IN CNAME db.example.com.\n\
             dns-version.cluster.local. 5 IN TXT \"1.1.0\"\n"
        );
    }

    #[test]
    fn headless_and_unknown_services_produce_nothing_without_endpoints() {
        let mut headless = service("db", "default", "ClusterIP", &["None"], &[("pg", "TCP", 5432)]);
        headless.spec.cluster_ip = "None".to_string();
        let mut missing_name = service("alias", "default", "ExternalName", &[], &[]);
        missing_name.spec.external_name = None;
        let unknown = service("odd", "default", "Mystery", &["10.96.0.9"], &[]);
        assert_eq!(text(&[headless, missing_name, unknown]), VERSION);
    }

    #[test]
    fn names_are_lowercased() {
        let svc = service("My-Svc", "Team-A", "ClusterIP", &["10.96.0.30"], &[("HTTP", "TCP", 80)]);
        let config = DnsConfig {
            zone: "Cluster.Local".to_string(),
            ttl: 5,
        };
        assert_eq!(
            zone_text(&service_records(std::slice::from_ref(&svc), &config)),
            "30.0.96.10.in-addr.arpa. 5 IN PTR my-svc.team-a.svc.cluster.local.\n\
             _http._tcp.my-svc.team-a.svc.cluster.local. 5 IN SRV 0 100 80 my-svc.team-a.svc.cluster.local.\n\
             dns-version.cluster.local. 5 IN TXT \"1.1.0\"\n\
             my-svc.team-a.svc.cluster.local. 5 IN A 10.96.0.30\n"
        );
        assert_eq!(service_fqdn(&svc, &config), "my-svc.team-a.svc.cluster.local.");
    }

    #[test]
    fn empty_namespace_means_default_and_cluster_ip_is_the_fallback() {
        let mut svc = service("web", "", "", &[], &[]);
        svc.spec.cluster_ip = "10.96.0.40".to_string();
        assert_eq!(
            text(&[svc]),
            "40.0.96.10.in-addr.arpa. 5 IN PTR web.default.svc.cluster.local.\n\
             dns-version.cluster.local. 5 IN TXT \"1.1.0\"\n\
             web.default.svc.cluster.local. 5 IN A 10.96.0.40\n"
        );
    }

    #[test]
    fn duplicates_are_dropped_and_addresses_sort_numerically() {
        let a = service("a", "default", "", &["10.96.0.10"], &[]);
        let b = service("a", "default", "", &["10.96.0.9"], &[]);
        let records = service_records(&[a.clone(), b, a], &DnsConfig::default());
        let addresses: Vec<String> = records
            .iter()
            .filter(|r| r.data.record_type() == "A")
            .map(|r| r.data.to_string())
            .collect();
        assert_eq!(addresses, ["10.96.0.9", "10.96.0.10"]);
        assert_eq!(records.len(), 5);
    }

    #[test]
    fn txt_is_quoted_and_escaped() {
        let record = DnsRecord {
            name: "t.".to_string(),
            ttl: 1,
            data: RecordData::Txt("a \"b\" \\ é".to_string()),
        };
        assert_eq!(record.to_string(), "t. 1 IN TXT \"a \\\"b\\\" \\\\ \\195\\169\"");
    }

    #[test]
    fn json_is_flat() {
        let a = DnsRecord {
            name: "kube-dns.kube-system.svc.cluster.local.".to_string(),
            ttl: 5,
            data: RecordData::A(Ipv4Addr::new(10, 96, 0, 10)),
        };
        let json = serde_json::to_string(&a).unwrap();
        assert_eq!(
            json,
            r#"{"name":"kube-dns.kube-system.svc.cluster.local.","ttl":5,"type":"A","data":"10.96.0.10"}"#
        );
        assert_eq!(serde_json::from_str::<DnsRecord>(&json).unwrap(), a);

        let srv = DnsRecord {
            name: "_dns._udp.kube-dns.kube-system.svc.cluster.local.".to_string(),
            ttl: 5,
            data: RecordData::Srv {
                priority: 0,
                weight: 100,
                port: 53,
                target: "kube-dns.kube-system.svc.cluster.local.".to_string(),
            },
        };
        let json = serde_json::to_string(&srv).unwrap();
        assert_eq!(
            json,
            r#"{"name":"_dns._udp.kube-dns.kube-system.svc.cluster.local.","ttl":5,"type":"SRV","data":{"priority":0,"weight":100,"port":53,"target":"kube-dns.kube-system.svc.cluster.local."}}"#
        );
        assert_eq!(serde_json::from_str::<DnsRecord>(&json).unwrap(), srv);

        let aaaa = DnsRecord {
            name: "x.".to_string(),
            ttl: 5,
            data: RecordData::Aaaa("fd00::a".parse().unwrap()),
        };
        assert_eq!(
            serde_json::to_string(&aaaa).unwrap(),
            r#"{"name":"x.","ttl":5,"type":"AAAA","data":"fd00::a"}"#
        );
    }

    #[test]
    fn config_json_is_camel_case_with_defaults() {
        assert_eq!(serde_json::from_str::<DnsConfig>("{}").unwrap(), DnsConfig::default());
        let config: DnsConfig = serde_json::from_str(r#"{"zone":"corp.internal","ttl":30}"#).unwrap();
        assert_eq!(
            config,
            DnsConfig {
                zone: "corp.internal".to_string(),
                ttl: 30
            }
        );
    }

    proptest::proptest! {
        #[test]
        fn never_panics(
            name in "\\PC{0,12}",
            namespace in "\\PC{0,12}",
            service_type in "(ClusterIP|NodePort|LoadBalancer|ExternalName|\\PC{0,6})",
            ip in "\\PC{0,16}|10\\.96\\.0\\.[0-9]{1,3}|fd00::[0-9a-f]{1,4}",
            port_name in "\\PC{0,8}",
            protocol in "\\PC{0,4}",
            port in proptest::num::i64::ANY,
            zone in "\\PC{0,12}",
            external_name in proptest::option::of("\\PC{0,12}"),
        ) {
            let mut svc = service(&name, &namespace, &service_type, &[&ip], &[(&port_name, &protocol, port)]);
            svc.spec.external_name = external_name;
            let config = DnsConfig { zone, ttl: 5 };
            let records = service_records(&[svc], &config);
            let _ = zone_text(&records);
        }

        #[test]
        fn ipv6_reverse_name_round_trips(bits in proptest::num::u128::ANY) {
            let name = reverse_name(IpAddr::V6(Ipv6Addr::from(bits)));
            let hex: String = name.trim_end_matches(".ip6.arpa.").split('.').rev().collect();
            proptest::prop_assert_eq!(hex, format!("{bits:032x}"));
        }
    }
}
