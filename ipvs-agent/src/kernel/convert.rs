//! Conversions between the core's IPVS vocabulary
//! (`svcnet_core::proxy::{VirtualServerKey, VirtualServerSettings,
//! RealServer, Operation, ...}`) and the netlink layer's
//! ([`ServiceKey`], [`VirtualServiceSpec`], [`DestSpec`], [`ServiceEntry`],
//! [`DestEntry`]). Pure functions.
//!
//! Two details differ between the two: the `hashed` flag, which the kernel
//! reports on every service but must never be sent (the kernel would then
//! refuse to hash the new service), and the IPv4 persistence netmask, which
//! the core holds as the mask's number (`0xffffff00` for 255.255.255.0) and
//! the wire as the host-order reading of the network-order bytes.
//!
//! What the core cannot represent (firewall-mark services, protocols other
//! than TCP/UDP/SCTP, address families other than IPv4/IPv6, unknown
//! forwarding methods) comes back as [`Unrepresentable`]; the dataplane
//! leaves those out of the observed table, so the plan never touches them.

use std::net::{IpAddr, SocketAddr};

use svcnet_core::proxy::{
    Flags, Forward, Operation, Protocol, RealServer, Scheduler, VirtualServerKey, VirtualServerSettings,
};
use thiserror::Error;

use crate::netlink::{
    self, DestEntry, DestSpec, ForwardMethod, IpvsMessage, NameError, SchedulerName, ServiceEntry, ServiceFlags,
    ServiceKey, VirtualServiceSpec,
};

/// Something the kernel reported that the core's table cannot hold.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum Unrepresentable {
    /// A firewall-mark virtual server (`ipvsadm -f`).
    #[error("firewall-mark virtual server (fwmark {0})")]
    Fwmark(u32),
    /// A transport protocol other than TCP, UDP or SCTP.
    #[error("virtual server with IP protocol {0}")]
    Protocol(u16),
    /// A forwarding method the kernel should not report.
    #[error("real server {0} with forwarding method {1}")]
    Forward(SocketAddr, u32),
}

/// The netlink protocol of a core protocol.
pub fn protocol(protocol: Protocol) -> netlink::Protocol {
    match protocol {
        Protocol::Tcp => netlink::Protocol::Tcp,
        Protocol::Udp => netlink::Protocol::Udp,
        Protocol::Sctp => netlink::Protocol::Sctp,
    }
}

/// The netlink forwarding method of a core one.
pub fn forward(forward: Forward) -> ForwardMethod {
    match forward {
        Forward::Masq => ForwardMethod::Masquerade,
        Forward::Local => ForwardMethod::Local,
        Forward::Tunnel => ForwardMethod::Tunnel,
        Forward::Route => ForwardMethod::DirectRoute,
    }
}

/// How the kernel identifies a core virtual server.
pub fn service_key(key: &VirtualServerKey) -> ServiceKey {
    ServiceKey::Addr {
        protocol: protocol(key.protocol),
        addr: key.address,
        port: key.port,
    }
}

/// The wire netmask (host-order reading of the network-order bytes for
/// IPv4, a prefix length for IPv6) of the core's netmask.
pub fn netmask_to_wire(address: IpAddr, netmask: u32) -> u32 {
    match address {
        IpAddr::V4(_) => u32::from_ne_bytes(netmask.to_be_bytes()),
        IpAddr::V6(_) => netmask,
    }
}

/// The core's netmask of a wire netmask; the inverse of
/// [`netmask_to_wire`].
pub fn netmask_from_wire(address: IpAddr, netmask: u32) -> u32 {
    match address {
        IpAddr::V4(_) => u32::from_be_bytes(netmask.to_ne_bytes()),
        IpAddr::V6(_) => netmask,
    }
}

/// What NEW_SERVICE / SET_SERVICE carry for a core virtual server. Fails
/// only for a scheduler name the kernel cannot take.
pub fn service_spec(key: &VirtualServerKey, settings: &VirtualServerSettings) -> Result<VirtualServiceSpec, NameError> {
    Ok(VirtualServiceSpec {
        key: service_key(key),
        scheduler: SchedulerName::new(settings.scheduler.name())?,
        flags: ServiceFlags(settings.flags.without(Flags::HASHED).0),
        timeout: settings.timeout,
        netmask: netmask_to_wire(key.address, settings.netmask),
    })
}

/// What NEW_DEST / SET_DEST carry for a core real server.
pub fn dest_spec(real_server: SocketAddr, method: Forward, weight: u32) -> DestSpec {
    DestSpec {
        addr: real_server.ip(),
        port: real_server.port(),
        fwd_method: forward(method),
        weight,
        u_thresh: 0,
        l_thresh: 0,
    }
}

/// The IPVS request an operation needs; `None` for the address operations,
/// which go over rtnetlink.
pub fn request(operation: &Operation) -> Result<Option<IpvsMessage>, NameError> {
    Ok(Some(match operation {
        Operation::BindAddress { .. } | Operation::UnbindAddress { .. } => return Ok(None),
        Operation::AddVirtualServer {
            virtual_server,
            settings,
        } => IpvsMessage::new_service(&service_spec(virtual_server, settings)?),
        Operation::UpdateVirtualServer {
            virtual_server,
            settings,
        } => IpvsMessage::set_service(&service_spec(virtual_server, settings)?),
        Operation::DeleteVirtualServer { virtual_server } => IpvsMessage::del_service(&service_key(virtual_server)),
        Operation::AddRealServer {
            virtual_server,
            real_server,
            forward,
            weight,
        } => IpvsMessage::new_dest(
            &service_key(virtual_server),
            &dest_spec(*real_server, *forward, *weight),
        ),
        Operation::UpdateRealServer {
            virtual_server,
            real_server,
            forward,
            weight,
        } => IpvsMessage::set_dest(
            &service_key(virtual_server),
            &dest_spec(*real_server, *forward, *weight),
        ),
        Operation::DeleteRealServer {
            virtual_server,
            real_server,
        } => IpvsMessage::del_dest(&service_key(virtual_server), real_server.ip(), real_server.port()),
    }))
}

/// A reported virtual server as the core's key and settings (flags as the
/// kernel reports them, `hashed` included).
pub fn virtual_server(entry: &ServiceEntry) -> Result<(VirtualServerKey, VirtualServerSettings), Unrepresentable> {
    let (protocol, address, port) = match entry.key {
        ServiceKey::Fwmark { fwmark, .. } => return Err(Unrepresentable::Fwmark(fwmark)),
        ServiceKey::Addr { protocol, addr, port } => (protocol, addr, port),
    };
    let protocol = match protocol {
        netlink::Protocol::Tcp => Protocol::Tcp,
        netlink::Protocol::Udp => Protocol::Udp,
        netlink::Protocol::Sctp => Protocol::Sctp,
        netlink::Protocol::Other(number) => return Err(Unrepresentable::Protocol(number)),
    };
    let settings = VirtualServerSettings {
        scheduler: Scheduler::from_name(&entry.scheduler),
        flags: Flags(entry.flags.0),
        timeout: entry.timeout,
        netmask: netmask_from_wire(address, entry.netmask),
    };
    Ok((VirtualServerKey::new(protocol, address, port), settings))
}

/// A reported real server as the core's, with its weight and connection
/// counters.
pub fn real_server(entry: &DestEntry) -> Result<(SocketAddr, RealServer), Unrepresentable> {
    let addr = SocketAddr::new(entry.addr, entry.port);
    let forward = match entry.fwd_method {
        ForwardMethod::Masquerade => Forward::Masq,
        ForwardMethod::Local => Forward::Local,
        ForwardMethod::Tunnel => Forward::Tunnel,
        ForwardMethod::DirectRoute => Forward::Route,
        ForwardMethod::Other(number) => return Err(Unrepresentable::Forward(addr, number)),
    };
    Ok((
        addr,
        RealServer {
            forward,
            weight: entry.weight,
            active_connections: entry.active_conns,
            inactive_connections: entry.inact_conns,
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::netlink::{AddressFamily, IpvsAttr, IpvsCmd};

    fn key(text: &str) -> VirtualServerKey {
        let (protocol, rest) = text.split_once('/').unwrap();
        let addr: SocketAddr = rest.parse().unwrap();
        VirtualServerKey::new(Protocol::parse(protocol).unwrap(), addr.ip(), addr.port())
    }

    fn settings(scheduler: Scheduler, flags: Flags, timeout: u32, netmask: u32) -> VirtualServerSettings {
        VirtualServerSettings {
            scheduler,
            flags,
            timeout,
            netmask,
        }
    }

    fn entry_for(spec: &VirtualServiceSpec, reported_flags: ServiceFlags) -> ServiceEntry {
        ServiceEntry {
            key: spec.key,
            scheduler: spec.scheduler.to_string(),
            flags: reported_flags,
            timeout: spec.timeout,
            netmask: spec.netmask,
            pe_name: None,
            stats: None,
        }
    }

    #[test]
    fn virtual_servers_round_trip_through_the_wire_types() {
        let cases = [
            (
                key("TCP/10.96.0.10:80"),
                settings(Scheduler::Rr, Flags::NONE, 0, u32::MAX),
            ),
            (
                key("UDP/10.96.0.10:53"),
                settings(Scheduler::Rr, Flags::PERSISTENT, 10800, 0xffff_ff00),
            ),
            (
                key("TCP/[fd00:10:96::20]:80"),
                settings(Scheduler::Mh, Flags::SCHED2, 0, 128),
            ),
            (
                key("SCTP/[fd00:10:96::21]:9000"),
                settings(
                    Scheduler::Sh,
                    Flags::SCHED1.with(Flags::SCHED2).with(Flags::PERSISTENT),
                    60,
                    64,
                ),
            ),
        ];
        for (key, settings) in cases {
            let spec = service_spec(&key, &settings).unwrap();
            assert_eq!(spec.key.af(), AddressFamily::of(key.address));
            // The kernel reports what it was given plus HASHED.
            let reported = entry_for(&spec, spec.flags.union(ServiceFlags::HASHED));
            let (back_key, back) = virtual_server(&reported).unwrap();
            assert_eq!(back_key, key);
            assert!(back.same_as(&settings), "{back:?} vs {settings:?}");
            assert!(back.flags.contains(Flags::HASHED), "kept as the kernel reports it");
        }
    }

    #[test]
    fn hashed_is_never_sent() {
        let spec = service_spec(
            &key("TCP/10.96.0.1:443"),
            &settings(Scheduler::Rr, Flags::HASHED.with(Flags::PERSISTENT), 600, u32::MAX),
        )
        .unwrap();
        assert_eq!(spec.flags, ServiceFlags::PERSISTENT);
    }

    #[test]
    fn ipv4_netmask_bytes_are_network_order_on_the_wire() {
        let v4: IpAddr = "10.96.0.1".parse().unwrap();
        let wire = netmask_to_wire(v4, 0xffff_ff00);
        assert_eq!(wire.to_ne_bytes(), [255, 255, 255, 0]);
        assert_eq!(netmask_from_wire(v4, wire), 0xffff_ff00);
        assert_eq!(netmask_to_wire(v4, u32::MAX), u32::MAX);
        let v6: IpAddr = "fd00::1".parse().unwrap();
        assert_eq!(netmask_to_wire(v6, 64), 64);
    }

    #[test]
    fn operations_become_the_matching_commands() {
        let vs = key("TCP/10.96.0.10:80");
        let rs: SocketAddr = "10.244.1.11:8080".parse().unwrap();
        let ops = [
            (
                Operation::AddVirtualServer {
                    virtual_server: vs,
                    settings: settings(Scheduler::Rr, Flags::NONE, 0, u32::MAX),
                },
                Some(IpvsCmd::NewService),
            ),
            (
                Operation::UpdateVirtualServer {
                    virtual_server: vs,
                    settings: settings(Scheduler::Lc, Flags::NONE, 0, u32::MAX),
                },
                Some(IpvsCmd::SetService),
            ),
            (
                Operation::AddRealServer {
                    virtual_server: vs,
                    real_server: rs,
                    forward: Forward::Masq,
                    weight: 1,
                },
                Some(IpvsCmd::NewDest),
            ),
            (
                Operation::UpdateRealServer {
                    virtual_server: vs,
                    real_server: rs,
                    forward: Forward::Masq,
                    weight: 0,
                },
                Some(IpvsCmd::SetDest),
            ),
            (
                Operation::DeleteRealServer {
                    virtual_server: vs,
                    real_server: rs,
                },
                Some(IpvsCmd::DelDest),
            ),
            (
                Operation::DeleteVirtualServer { virtual_server: vs },
                Some(IpvsCmd::DelService),
            ),
            (Operation::BindAddress { address: vs.address }, None),
            (Operation::UnbindAddress { address: vs.address }, None),
        ];
        for (op, cmd) in ops {
            assert_eq!(request(&op).unwrap().map(|m| m.cmd), cmd, "{op:?}");
        }
        let add = request(&Operation::AddRealServer {
            virtual_server: vs,
            real_server: rs,
            forward: Forward::Masq,
            weight: 3,
        })
        .unwrap()
        .unwrap();
        assert_eq!(
            add,
            IpvsMessage::new_dest(&service_key(&vs), &DestSpec::masquerade(rs.ip(), 8080, 3))
        );
        assert!(matches!(add.attrs[0], IpvsAttr::Service(_)));
    }

    #[test]
    fn an_unsendable_scheduler_name_is_an_error() {
        let op = Operation::AddVirtualServer {
            virtual_server: key("TCP/10.96.0.10:80"),
            settings: settings(
                Scheduler::Other("a-very-long-scheduler".into()),
                Flags::NONE,
                0,
                u32::MAX,
            ),
        };
        assert!(matches!(request(&op), Err(NameError::TooLong(_))));
    }

    #[test]
    fn foreign_services_the_core_cannot_hold_are_reported_not_mangled() {
        let fwmark = ServiceEntry {
            key: ServiceKey::Fwmark {
                af: AddressFamily::Inet,
                fwmark: 7,
            },
            scheduler: "wlc".into(),
            flags: ServiceFlags::HASHED,
            timeout: 0,
            netmask: u32::MAX,
            pe_name: None,
            stats: None,
        };
        assert_eq!(virtual_server(&fwmark), Err(Unrepresentable::Fwmark(7)));
        let mut other = fwmark.clone();
        other.key = ServiceKey::Addr {
            protocol: netlink::Protocol::Other(50),
            addr: "10.0.0.1".parse().unwrap(),
            port: 0,
        };
        assert_eq!(virtual_server(&other), Err(Unrepresentable::Protocol(50)));
        // An unknown scheduler is kept by name.
        let mut unknown = fwmark;
        unknown.key = service_key(&key("SCTP/10.0.0.1:9"));
        unknown.scheduler = "weird".into();
        let (_, settings) = virtual_server(&unknown).unwrap();
        assert_eq!(settings.scheduler, Scheduler::Other("weird".into()));
    }

    #[test]
    fn real_servers_carry_weights_and_counters() {
        let entry = DestEntry {
            addr: "fd00:10:244::5".parse().unwrap(),
            port: 8080,
            fwd_method: ForwardMethod::Masquerade,
            weight: 0,
            u_thresh: 0,
            l_thresh: 0,
            active_conns: 2,
            inact_conns: 5,
            persist_conns: 1,
            addr_family: AddressFamily::Inet6,
            stats: None,
        };
        let (addr, rs) = real_server(&entry).unwrap();
        assert_eq!(addr, "[fd00:10:244::5]:8080".parse().unwrap());
        assert_eq!((rs.forward, rs.weight, rs.connections()), (Forward::Masq, 0, 7));
        let odd = DestEntry {
            fwd_method: ForwardMethod::Other(6),
            ..entry
        };
        assert!(matches!(real_server(&odd), Err(Unrepresentable::Forward(_, 6))));
    }
}
