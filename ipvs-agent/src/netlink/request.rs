//! Typed request builders: what the agent wants done (a virtual server, a
//! real server, timeouts) turned into the exact attributes the kernel needs
//! for each command, so no caller assembles attributes by hand.

use std::net::IpAddr;

use super::attr::IpvsAttr;
use super::cmd::IpvsCmd;
use super::dest::DestAttr;
use super::message::IpvsMessage;
use super::service::ServiceAttr;
use super::types::{AddressFamily, ForwardMethod, InetAddr, Protocol, SchedulerName, ServiceFlags};

/// What identifies a virtual server to the kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ServiceKey {
    /// An (IP, port, protocol) service: `ipvsadm -t|-u|--sctp-service`.
    Addr {
        /// TCP, UDP or SCTP.
        protocol: Protocol,
        /// The virtual IP; its family is the service's.
        addr: IpAddr,
        /// The virtual port.
        port: u16,
    },
    /// A firewall-mark service: `ipvsadm -f`.
    Fwmark {
        /// The service's address family.
        af: AddressFamily,
        /// The mark.
        fwmark: u32,
    },
}

impl ServiceKey {
    /// The service's address family.
    pub fn af(&self) -> AddressFamily {
        match self {
            Self::Addr { addr, .. } => AddressFamily::of(*addr),
            Self::Fwmark { af, .. } => *af,
        }
    }

    /// The identifying attributes, in the order `ipvsadm` sends them.
    fn attrs(&self) -> Vec<ServiceAttr> {
        match *self {
            Self::Addr { protocol, addr, port } => vec![
                ServiceAttr::AddressFamily(AddressFamily::of(addr)),
                ServiceAttr::Protocol(protocol),
                ServiceAttr::Addr(InetAddr::from(addr)),
                ServiceAttr::Port(port),
            ],
            Self::Fwmark { af, fwmark } => vec![ServiceAttr::AddressFamily(af), ServiceAttr::Fwmark(fwmark)],
        }
    }
}

/// The netmask a service gets unless told otherwise: one client address per
/// persistence entry (`0xffffffff` for IPv4, prefix length 128 for IPv6).
pub fn default_netmask(af: AddressFamily) -> u32 {
    match af {
        AddressFamily::Inet6 => 128,
        AddressFamily::Inet | AddressFamily::Other(_) => 0xffff_ffff,
    }
}

/// A virtual server as the agent wants it programmed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VirtualServiceSpec {
    /// Which service.
    pub key: ServiceKey,
    /// Its scheduler (`rr`, `mh`, ...).
    pub scheduler: SchedulerName,
    /// Its flags, all of which are set (the mask sent is all ones, as
    /// `ipvsadm` does; the kernel adds HASHED itself).
    pub flags: ServiceFlags,
    /// Persistence timeout in seconds (0 when not persistent).
    pub timeout: u32,
    /// Persistence netmask; see [`ServiceAttr::Netmask`].
    pub netmask: u32,
}

impl VirtualServiceSpec {
    /// A non-persistent service with no flags and the default netmask.
    pub fn new(key: ServiceKey, scheduler: SchedulerName) -> Self {
        Self {
            key,
            scheduler,
            flags: ServiceFlags::default(),
            timeout: 0,
            netmask: default_netmask(key.af()),
        }
    }

    /// The same service, persistent for `timeout` seconds (`ipvsadm -p`;
    /// kube-proxy's `sessionAffinity: ClientIP`).
    pub fn persistent(mut self, timeout: u32) -> Self {
        self.flags = self.flags.union(ServiceFlags::PERSISTENT);
        self.timeout = timeout;
        self
    }

    /// The same service with these flags set as well (for example
    /// [`ServiceFlags::SCHED2`], `mh-port`).
    pub fn with_flags(mut self, flags: ServiceFlags) -> Self {
        self.flags = self.flags.union(flags);
        self
    }

    /// Every attribute NEW_SERVICE and SET_SERVICE require.
    fn attrs(&self) -> Vec<ServiceAttr> {
        let mut attrs = self.key.attrs();
        attrs.extend([
            ServiceAttr::SchedName(self.scheduler.as_str().to_owned()),
            ServiceAttr::Flags {
                flags: self.flags,
                mask: u32::MAX,
            },
            ServiceAttr::Timeout(self.timeout),
            ServiceAttr::Netmask(self.netmask),
        ]);
        attrs
    }
}

/// A real server as the agent wants it programmed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DestSpec {
    /// The real server's IP.
    pub addr: IpAddr,
    /// Its port.
    pub port: u16,
    /// How packets reach it.
    pub fwd_method: ForwardMethod,
    /// Its weight; 0 drains it.
    pub weight: u32,
    /// Upper connection threshold (0: none).
    pub u_thresh: u32,
    /// Lower connection threshold (0: none).
    pub l_thresh: u32,
}

impl DestSpec {
    /// A NAT ("masq") real server without thresholds, as kube-proxy programs.
    pub fn masquerade(addr: IpAddr, port: u16, weight: u32) -> Self {
        Self {
            addr,
            port,
            fwd_method: ForwardMethod::Masquerade,
            weight,
            u_thresh: 0,
            l_thresh: 0,
        }
    }

    /// Every attribute NEW_DEST and SET_DEST require, plus the address
    /// family, in `ipvsadm`'s order (the family first).
    fn attrs(&self) -> Vec<DestAttr> {
        vec![
            DestAttr::AddressFamily(AddressFamily::of(self.addr)),
            DestAttr::Addr(InetAddr::from(self.addr)),
            DestAttr::Port(self.port),
            DestAttr::FwdMethod(self.fwd_method),
            DestAttr::Weight(self.weight),
            DestAttr::UThresh(self.u_thresh),
            DestAttr::LThresh(self.l_thresh),
        ]
    }
}

/// The connection timeouts of `ipvsadm --set tcp tcpfin udp`, in seconds.
/// In SET_CONFIG a 0 leaves that timeout unchanged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Timeouts {
    /// Established TCP connections.
    pub tcp: u32,
    /// TCP connections after a FIN.
    pub tcp_fin: u32,
    /// UDP "connections".
    pub udp: u32,
}

impl IpvsMessage {
    /// NEW_SERVICE: add a virtual server.
    pub fn new_service(spec: &VirtualServiceSpec) -> Self {
        Self::new(IpvsCmd::NewService, vec![IpvsAttr::Service(spec.attrs())])
    }

    /// SET_SERVICE: change a virtual server's scheduler, flags or persistence.
    pub fn set_service(spec: &VirtualServiceSpec) -> Self {
        Self::new(IpvsCmd::SetService, vec![IpvsAttr::Service(spec.attrs())])
    }

    /// DEL_SERVICE: delete a virtual server and its real servers.
    pub fn del_service(key: &ServiceKey) -> Self {
        Self::new(IpvsCmd::DelService, vec![IpvsAttr::Service(key.attrs())])
    }

    /// GET_SERVICE for one virtual server (answered by one NEW_SERVICE).
    pub fn get_service(key: &ServiceKey) -> Self {
        Self::new(IpvsCmd::GetService, vec![IpvsAttr::Service(key.attrs())])
    }

    /// GET_SERVICE as a dump of every virtual server.
    pub fn get_services_dump() -> Self {
        Self::new(IpvsCmd::GetService, Vec::new())
    }

    /// NEW_DEST: add a real server to a virtual server.
    pub fn new_dest(service: &ServiceKey, dest: &DestSpec) -> Self {
        Self::new(
            IpvsCmd::NewDest,
            vec![IpvsAttr::Service(service.attrs()), IpvsAttr::Dest(dest.attrs())],
        )
    }

    /// SET_DEST: change a real server's weight, thresholds or forwarding.
    pub fn set_dest(service: &ServiceKey, dest: &DestSpec) -> Self {
        Self::new(
            IpvsCmd::SetDest,
            vec![IpvsAttr::Service(service.attrs()), IpvsAttr::Dest(dest.attrs())],
        )
    }

    /// DEL_DEST: remove a real server from a virtual server.
    pub fn del_dest(service: &ServiceKey, addr: IpAddr, port: u16) -> Self {
        let dest = vec![
            DestAttr::AddressFamily(AddressFamily::of(addr)),
            DestAttr::Addr(InetAddr::from(addr)),
            DestAttr::Port(port),
        ];
        Self::new(
            IpvsCmd::DelDest,
            vec![IpvsAttr::Service(service.attrs()), IpvsAttr::Dest(dest)],
        )
    }

    /// GET_DEST: dump the real servers of one virtual server.
    pub fn get_dests_dump(service: &ServiceKey) -> Self {
        Self::new(IpvsCmd::GetDest, vec![IpvsAttr::Service(service.attrs())])
    }

    /// GET_INFO: the IPVS version and connection table size.
    pub fn get_info() -> Self {
        Self::new(IpvsCmd::GetInfo, Vec::new())
    }

    /// SET_CONFIG: set the timeouts (a 0 leaves that one unchanged).
    pub fn set_config(timeouts: &Timeouts) -> Self {
        Self::new(
            IpvsCmd::SetConfig,
            vec![
                IpvsAttr::TimeoutTcp(timeouts.tcp),
                IpvsAttr::TimeoutTcpFin(timeouts.tcp_fin),
                IpvsAttr::TimeoutUdp(timeouts.udp),
            ],
        )
    }

    /// GET_CONFIG: the current timeouts.
    pub fn get_config() -> Self {
        Self::new(IpvsCmd::GetConfig, Vec::new())
    }

    /// FLUSH: delete every virtual server, the agent's and everyone else's.
    /// The agent itself never sends this on start (it adopts what it finds).
    pub fn flush() -> Self {
        Self::new(IpvsCmd::Flush, Vec::new())
    }
}
