//! Binding and unbinding many addresses on `kube-ipvs0` at once:
//! [`AddressSocket`] sends RTM_NEWADDR and RTM_DELADDR requests (built with
//! `rtnetlink`'s [`AddressMessageBuilder`], /32 or /128) many per `sendmsg`
//! on a `NETLINK_ROUTE` [`NetlinkSocket`], and matches every ACK or error to
//! its request by sequence number: programming 5,000 ClusterIPs from empty
//! takes a few `sendmsg` calls instead of 5,000 round trips.
//!
//! It works like the IPVS socket ([`super::genl`]): an answer still missing
//! once the queue is empty was lost, and is reported so instead of hanging
//! the agent. Batches are cut by bytes and by the receive buffer's room for
//! answers ([`MAX_BATCH_BYTES`], [`NetlinkSocket::max_batch_requests`]).
//!
//! Like `ip address add` and `del`, binding an address already bound
//! (EEXIST) and unbinding one not bound (EADDRNOTAVAIL, or ENODEV when the
//! link itself is gone) succeed: the kernel then holds what was asked.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use netlink_packet_core::{
    DecodeError, ErrorBuffer, NetlinkBuffer, NetlinkMessage, NLMSG_ALIGNTO, NLMSG_ERROR, NLM_F_ACK, NLM_F_CREATE,
    NLM_F_EXCL, NLM_F_REQUEST,
};
use netlink_sys::protocols::NETLINK_ROUTE;
use rtnetlink::packet_route::RouteNetlinkMessage;
use rtnetlink::AddressMessageBuilder;

use super::error::LinkError;
use super::link::host_prefix;
use super::socket::{Acks, NetlinkSocket, SocketStats, MAX_BATCH_BYTES};

const ENODEV: i32 = 19;
const EEXIST: i32 = 17;
const EADDRNOTAVAIL: i32 = 99;

/// One change to the addresses bound on `kube-ipvs0`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AddressChange {
    /// Bind the address (/32 or /128).
    Bind(IpAddr),
    /// Unbind the address.
    Unbind(IpAddr),
}

impl AddressChange {
    /// The request for the link with index `index`, numbered `seq`.
    pub fn request(self, index: u32, seq: u32) -> NetlinkMessage<RouteNetlinkMessage> {
        let (address, flags) = match self {
            Self::Bind(address) => (address, NLM_F_REQUEST | NLM_F_ACK | NLM_F_EXCL | NLM_F_CREATE),
            Self::Unbind(address) => (address, NLM_F_REQUEST | NLM_F_ACK),
        };
        let prefix = host_prefix(address);
        let body = match address {
            IpAddr::V4(v4) => AddressMessageBuilder::<Ipv4Addr>::new()
                .index(index)
                .address(v4, prefix)
                .build(),
            IpAddr::V6(v6) => AddressMessageBuilder::<Ipv6Addr>::new()
                .index(index)
                .address(v6, prefix)
                .build(),
        };
        let mut message = NetlinkMessage::from(match self {
            Self::Bind(_) => RouteNetlinkMessage::NewAddress(body),
            Self::Unbind(_) => RouteNetlinkMessage::DelAddress(body),
        });
        message.header.flags = flags;
        message.header.sequence_number = seq;
        message.finalize();
        message
    }

    /// What the kernel's errno (positive, 0 for an ACK) means for this
    /// change on `link`.
    fn outcome(self, errno: i32, link: &str) -> Result<(), LinkError> {
        match (self, errno) {
            (_, 0) | (Self::Bind(_), EEXIST) | (Self::Unbind(_), EADDRNOTAVAIL | ENODEV) => Ok(()),
            _ => Err(self.failed(link, std::io::Error::from_raw_os_error(errno).to_string())),
        }
    }

    fn failed(self, link: &str, message: String) -> LinkError {
        let what = match self {
            Self::Bind(address) => format!("add {address}/{} to {link}", host_prefix(address)),
            Self::Unbind(address) => format!("remove {address}/{} from {link}", host_prefix(address)),
        };
        LinkError::Kernel { what, message }
    }
}

/// A `NETLINK_ROUTE` socket that binds and unbinds addresses in batches.
#[derive(Debug)]
pub struct AddressSocket {
    socket: NetlinkSocket,
    link: String,
    next_seq: u32,
}

impl AddressSocket {
    /// Open the socket for the link named `link` (the name is for error
    /// messages; requests name the link by index).
    pub fn open(link: &str) -> Result<Self, LinkError> {
        Ok(Self {
            socket: NetlinkSocket::open(NETLINK_ROUTE, Acks::Capped).map_err(LinkError::Connect)?,
            link: link.to_owned(),
            next_seq: 1,
        })
    }

    /// Counters since the socket was opened.
    pub fn stats(&self) -> SocketStats {
        self.socket.stats()
    }

    /// Carry out `changes` on the link with index `index`, in order, in as
    /// few `sendmsg` calls as the limits allow; one result per change, in
    /// the same order. A refused change does not stop the others.
    pub fn execute(&mut self, index: u32, changes: &[AddressChange]) -> Vec<Result<(), LinkError>> {
        let mut results = Vec::with_capacity(changes.len());
        let mut rest = changes;
        while !rest.is_empty() {
            let mut bytes = Vec::new();
            let mut count = 0;
            for change in rest {
                let request = change.request(index, self.next_seq.wrapping_add(count as u32));
                if count > 0
                    && (bytes.len() + request.buffer_len() > MAX_BATCH_BYTES
                        || count >= self.socket.max_batch_requests())
                {
                    break;
                }
                append(&mut bytes, &request);
                count += 1;
            }
            let (batch, after) = rest.split_at(count);
            results.extend(self.run_batch(&bytes, batch));
            rest = after;
        }
        results
    }

    /// Send one batch (`changes`, numbered from `self.next_seq`) and read
    /// every answer to it.
    fn run_batch(&mut self, bytes: &[u8], changes: &[AddressChange]) -> Vec<Result<(), LinkError>> {
        let first_seq = self.next_seq;
        self.next_seq = first_seq.wrapping_add(changes.len() as u32);
        if let Err(error) = self.socket.send(bytes) {
            self.socket.stats_mut().lost += changes.len() as u64;
            let message = format!("not sent: {error}");
            return (changes.iter())
                .map(|c| Err(c.failed(&self.link, message.clone())))
                .collect();
        }
        self.socket.stats_mut().requests += changes.len() as u64;
        let mut errnos: Vec<Option<i32>> = vec![None; changes.len()];
        let mut pending = changes.len();
        let mut trouble: Option<String> = None;
        while pending > 0 {
            match self.socket.recv() {
                Ok(true) => {}
                Ok(false) => break,
                // ENOBUFS: the kernel dropped answers; read what is queued.
                Err(error) if error.raw_os_error() == Some(libc::ENOBUFS) => {
                    trouble = Some("receive buffer overrun (ENOBUFS): answers were dropped".into());
                    continue;
                }
                Err(error) => {
                    trouble = Some(error.to_string());
                    break;
                }
            }
            let answers = match acks(self.socket.received()) {
                Ok(answers) => answers,
                Err(error) => {
                    log::debug!("unreadable rtnetlink answer: {error}");
                    trouble = Some(error.to_string());
                    continue;
                }
            };
            for (seq, errno) in answers {
                let i = seq.wrapping_sub(first_seq) as usize;
                match errnos.get_mut(i) {
                    Some(slot @ None) => {
                        *slot = Some(errno);
                        pending -= 1;
                    }
                    Some(Some(_)) => {}
                    None => log::debug!("rtnetlink answer for sequence {seq} matches no request in flight"),
                }
            }
        }
        let mut results = Vec::with_capacity(changes.len());
        for (change, errno) in changes.iter().zip(errnos) {
            let result = match errno {
                Some(errno) => change.outcome(errno, &self.link),
                None => {
                    self.socket.stats_mut().lost += 1;
                    let detail = trouble.as_deref().map(|d| format!(": {d}")).unwrap_or_default();
                    Err(change.failed(&self.link, format!("no answer from the kernel{detail}")))
                }
            };
            if errno.is_some() && result.is_err() {
                self.socket.stats_mut().refused += 1;
            }
            results.push(result);
        }
        results
    }
}

/// Serialize `request` at the end of `bytes` (rtnetlink messages are
/// multiples of 4 bytes long, so the next one starts aligned).
fn append(bytes: &mut Vec<u8>, request: &NetlinkMessage<RouteNetlinkMessage>) {
    let start = bytes.len();
    bytes.resize(start + request.buffer_len(), 0);
    request.serialize(&mut bytes[start..]);
}

/// The ACKs and errors in `buf` (what one `recvmsg` returned), as
/// (sequence number, positive errno or 0 for an ACK); other messages are
/// skipped. Never panics on malformed bytes.
pub fn acks(buf: &[u8]) -> Result<Vec<(u32, i32)>, DecodeError> {
    let align = usize::from(NLMSG_ALIGNTO);
    let mut answers = Vec::new();
    let mut offset = 0;
    while let Some(rest) = buf.get(offset..).filter(|rest| !rest.is_empty()) {
        let message = NetlinkBuffer::new_checked(rest)?;
        // `new_checked` proved 16 <= length <= rest.len().
        let length = message.length() as usize;
        if message.message_type() == NLMSG_ERROR {
            let code = ErrorBuffer::new_checked(message.payload())?.code();
            answers.push((message.sequence_number(), code.map_or(0, |c| c.get().saturating_abs())));
        }
        offset += length.div_ceil(align) * align;
    }
    Ok(answers)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bind_and_unbind_are_the_requests_ip_address_sends() {
        let mut bytes = Vec::new();
        append(
            &mut bytes,
            &AddressChange::Bind("10.96.0.10".parse().unwrap()).request(7, 42),
        );
        #[rustfmt::skip]
        let bind: [u8; 40] = [
            40, 0, 0, 0, 20, 0, 0x05, 0x06, 42, 0, 0, 0, 0, 0, 0, 0, // nlmsghdr: RTM_NEWADDR, REQUEST|ACK|EXCL|CREATE
            2, 32, 0, 0, 7, 0, 0, 0,                                  // ifaddrmsg: AF_INET, /32, link 7
            8, 0, 1, 0, 10, 96, 0, 10,                                // IFA_ADDRESS
            8, 0, 2, 0, 10, 96, 0, 10,                                // IFA_LOCAL
        ];
        assert_eq!(bytes, bind);

        bytes.clear();
        append(
            &mut bytes,
            &AddressChange::Unbind("fd00::a".parse().unwrap()).request(7, 43),
        );
        let v6 = [0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x0a];
        let mut unbind = vec![64, 0, 0, 0, 21, 0, 0x05, 0, 43, 0, 0, 0, 0, 0, 0, 0]; // RTM_DELADDR, REQUEST|ACK
        unbind.extend([10, 128, 0, 0, 7, 0, 0, 0]); // AF_INET6, /128, link 7
        unbind.extend([20, 0, 1, 0]);
        unbind.extend(v6);
        unbind.extend([20, 0, 2, 0]);
        unbind.extend(v6);
        assert_eq!(bytes, unbind);
    }

    /// An `NLMSG_ERROR` answer to `seq` with `code` (0: an ACK), its
    /// request's header echoed as NETLINK_CAP_ACK does.
    fn answer(seq: u32, code: i32) -> Vec<u8> {
        let mut bytes = vec![36, 0, 0, 0, 2, 0, 0, 1];
        bytes.extend(seq.to_ne_bytes());
        bytes.extend([0; 4]);
        bytes.extend(code.to_ne_bytes());
        bytes.extend([0; 16]);
        bytes
    }

    #[test]
    fn answers_are_read_by_sequence_number() {
        let mut buf = answer(5, 0);
        buf.extend(answer(6, -EEXIST));
        // A dump's end is no answer to these requests.
        buf.extend([20, 0, 0, 0, 3, 0, 2, 0, 9, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        buf.extend(answer(7, -EADDRNOTAVAIL));
        assert_eq!(acks(&buf).unwrap(), vec![(5, 0), (6, EEXIST), (7, EADDRNOTAVAIL)]);
        assert!(acks(&buf[..10]).is_err(), "a truncated header");
        assert!(acks(&[]).unwrap().is_empty());
    }

    proptest::proptest! {
        #[test]
        fn answers_never_panic_on_random_or_damaged_bytes(
            bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..200),
            at in 0usize..80,
            value in proptest::prelude::any::<u8>(),
        ) {
            let _ = acks(&bytes);
            let mut damaged = answer(5, -EEXIST);
            damaged.extend(answer(6, 0));
            let at = at % damaged.len();
            damaged[at] = value;
            let _ = acks(&damaged);
            let _ = acks(&damaged[..at]);
        }
    }

    #[test]
    fn already_bound_and_not_bound_are_successes() {
        let bind = AddressChange::Bind("10.96.0.10".parse().unwrap());
        let unbind = AddressChange::Unbind("10.96.0.10".parse().unwrap());
        assert!(bind.outcome(0, "kube-ipvs0").is_ok());
        assert!(bind.outcome(EEXIST, "kube-ipvs0").is_ok());
        assert!(unbind.outcome(EADDRNOTAVAIL, "kube-ipvs0").is_ok());
        assert!(unbind.outcome(ENODEV, "kube-ipvs0").is_ok());
        assert_eq!(
            bind.outcome(ENODEV, "kube-ipvs0").unwrap_err().to_string(),
            "add 10.96.0.10/32 to kube-ipvs0: No such device (os error 19)"
        );
        assert_eq!(
            unbind.outcome(libc::EPERM, "kube-ipvs0").unwrap_err().to_string(),
            "remove 10.96.0.10/32 from kube-ipvs0: Operation not permitted (os error 1)"
        );
    }
}
