//! The `kube-ipvs0` dummy link over rtnetlink (`rtnetlink` 0.24, tokio):
//! make sure it exists, list its addresses, delete it. Like kube-proxy's,
//! the link is created down and left so: the kernel gives every address
//! bound on it a local route all the same (a dummy link does no duplicate
//! address detection, so IPv6 addresses are usable at once), which is all
//! IPVS needs to see the Services' traffic, and a link that is down gets
//! no IPv6 link-local address. It is also cheaper: on a link that is up,
//! each IPv4 address bound walks every route through the link
//! (`fib_sync_up`), so binding N addresses costs N² steps; measured in the
//! VM, 5,000 addresses with `ip -batch` took 4.0 to 4.5 s on a link that
//! is up and 2.3 to 3.0 s on one that is down. A link someone else set up
//! is left up: taking it down would drop the local routes of the addresses
//! it holds. A link already there (or already missing) is not an error:
//! every call makes the kernel match what was asked, whatever it held
//! before. Binding and unbinding its /32 and /128 addresses, many at once,
//! is [`super::addresses`]'s.

use std::collections::BTreeSet;
use std::net::IpAddr;

use futures_util::TryStreamExt;
use rtnetlink::packet_route::address::{AddressAttribute, AddressMessage};
use rtnetlink::packet_route::link::{LinkFlags, LinkMessage};
use rtnetlink::{Handle, LinkDummy};

use super::error::LinkError;

/// The name kube-proxy gives the link.
pub const KUBE_IPVS0: &str = svcnet_core::proxy::DUMMY_INTERFACE;

const ENODEV: i32 = 19;
const EEXIST: i32 = 17;
/// The positive errno of an rtnetlink error, if the kernel sent one.
fn errno(error: &rtnetlink::Error) -> Option<i32> {
    match error {
        rtnetlink::Error::NetlinkError(message) => message.code.map(|code| code.get().abs()),
        _ => None,
    }
}

fn kernel(what: impl Into<String>, error: rtnetlink::Error) -> LinkError {
    let message = match &error {
        rtnetlink::Error::NetlinkError(message) => message.to_io().to_string(),
        other => other.to_string(),
    };
    LinkError::Kernel {
        what: what.into(),
        message,
    }
}

/// The prefix length of a host address: /32 or /128.
pub fn host_prefix(address: IpAddr) -> u8 {
    match address {
        IpAddr::V4(_) => 32,
        IpAddr::V6(_) => 128,
    }
}

/// A dummy link (by default `kube-ipvs0`) and an rtnetlink connection.
#[derive(Debug, Clone)]
pub struct KubeIpvs0 {
    handle: Handle,
    name: String,
}

impl KubeIpvs0 {
    /// Open an rtnetlink connection for the link `name`. Its task is
    /// spawned on the current tokio runtime, which must have I/O enabled;
    /// outside a runtime this is an error.
    pub fn connect(name: &str) -> Result<Self, LinkError> {
        let runtime = tokio::runtime::Handle::try_current()
            .map_err(|error| LinkError::Connect(std::io::Error::other(error.to_string())))?;
        let (connection, handle, _) = rtnetlink::new_connection().map_err(LinkError::Connect)?;
        runtime.spawn(connection);
        Ok(Self {
            handle,
            name: name.to_owned(),
        })
    }

    /// The link's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    async fn get(&self) -> Result<Option<LinkMessage>, LinkError> {
        let mut links = self.handle.link().get().match_name(self.name.clone()).execute();
        match links.try_next().await {
            Ok(link) => Ok(link),
            Err(error) if errno(&error) == Some(ENODEV) => Ok(None),
            Err(error) => Err(kernel(format!("look up link {}", self.name), error)),
        }
    }

    /// The link's index, or `None` when it does not exist.
    pub async fn index(&self) -> Result<Option<u32>, LinkError> {
        Ok(self.get().await?.map(|link| link.header.index))
    }

    /// Whether the link is administratively up; `None` when it does not
    /// exist.
    pub async fn is_up(&self) -> Result<Option<bool>, LinkError> {
        Ok(self.get().await?.map(|link| link.header.flags.contains(LinkFlags::Up)))
    }

    /// Make sure the link exists (a dummy link, created down if missing,
    /// as kube-proxy creates it); returns its index.
    pub async fn ensure(&self) -> Result<u32, LinkError> {
        if let Some(link) = self.get().await? {
            return Ok(link.header.index);
        }
        self.create().await?;
        let link = self.get().await?.ok_or_else(|| LinkError::Kernel {
            what: format!("create dummy link {}", self.name),
            message: "it was created but cannot be found".into(),
        })?;
        Ok(link.header.index)
    }

    /// Creates the dummy link, down.
    async fn create(&self) -> Result<(), LinkError> {
        let add = self.handle.link().add(LinkDummy::new(&self.name).build());
        match add.execute().await {
            Ok(()) => Ok(()),
            // Created meanwhile by someone else: fine.
            Err(error) if errno(&error) == Some(EEXIST) => Ok(()),
            Err(error) => Err(kernel(format!("create dummy link {}", self.name), error)),
        }
    }

    /// Every address bound on the link (empty when the link does not
    /// exist), without the IPv6 link-local address the kernel gives a link
    /// someone set up: it is no service's, and unbinding it would be churn.
    pub async fn addresses(&self) -> Result<BTreeSet<IpAddr>, LinkError> {
        let Some(index) = self.index().await? else {
            return Ok(BTreeSet::new());
        };
        let mut messages = self.handle.address().get().set_link_index_filter(index).execute();
        let mut addresses = BTreeSet::new();
        loop {
            match messages.try_next().await {
                Ok(Some(message)) => addresses.extend(address_of(&message).filter(|a| !is_link_local(*a))),
                Ok(None) => return Ok(addresses),
                Err(error) => return Err(kernel(format!("list the addresses of {}", self.name), error)),
            }
        }
    }

    /// Delete the link (and with it its addresses); returns whether it
    /// existed.
    pub async fn delete(&self) -> Result<bool, LinkError> {
        let Some(index) = self.index().await? else {
            return Ok(false);
        };
        match self.handle.link().del(index).execute().await {
            Ok(()) => Ok(true),
            Err(error) if errno(&error) == Some(ENODEV) => Ok(false),
            Err(error) => Err(kernel(format!("delete link {}", self.name), error)),
        }
    }
}

/// An IPv6 link-local unicast address (fe80::/10).
fn is_link_local(address: IpAddr) -> bool {
    matches!(address, IpAddr::V6(v6) if v6.segments()[0] & 0xffc0 == 0xfe80)
}

/// The address an address message carries (IFA_LOCAL for IPv4, as `ip`
/// shows it, else IFA_ADDRESS).
pub fn address_of(message: &AddressMessage) -> Option<IpAddr> {
    let find = |local: bool| {
        message.attributes.iter().find_map(|attr| match attr {
            AddressAttribute::Local(addr) if local => Some(*addr),
            AddressAttribute::Address(addr) if !local => Some(*addr),
            _ => None,
        })
    };
    find(true).or_else(|| find(false))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connecting_outside_a_runtime_is_an_error_not_a_panic() {
        let error = KubeIpvs0::connect(KUBE_IPVS0).unwrap_err();
        assert!(error.to_string().starts_with("rtnetlink connection: "), "{error}");
    }

    #[test]
    fn host_addresses_get_host_prefixes() {
        assert_eq!(host_prefix("10.96.0.10".parse().unwrap()), 32);
        assert_eq!(host_prefix("fd00:10:96::a".parse().unwrap()), 128);
    }

    #[test]
    fn only_ipv6_link_local_addresses_are_left_out() {
        assert!(is_link_local("fe80::1896:e2ff:fe39:da6b".parse().unwrap()));
        assert!(is_link_local("febf::1".parse().unwrap()));
        assert!(!is_link_local("fec0::1".parse().unwrap()));
        assert!(!is_link_local("fd00:10:96::20".parse().unwrap()));
        assert!(!is_link_local("169.254.1.1".parse().unwrap()));
    }

    #[test]
    fn the_local_address_wins_for_ipv4() {
        let mut message = AddressMessage::default();
        message.attributes = vec![
            AddressAttribute::Address("10.0.0.2".parse().unwrap()),
            AddressAttribute::Local("10.96.0.10".parse().unwrap()),
        ];
        assert_eq!(address_of(&message), Some("10.96.0.10".parse().unwrap()));
        message.attributes = vec![AddressAttribute::Address("fd00::a".parse().unwrap())];
        assert_eq!(address_of(&message), Some("fd00::a".parse().unwrap()));
        message.attributes.clear();
        assert_eq!(address_of(&message), None);
    }
}
