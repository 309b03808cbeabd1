//! The IPVS generic-netlink socket: [`IpvsSocket`] opens a
//! `NETLINK_GENERIC` [`NetlinkSocket`], resolves the "IPVS" family id, and
//! runs requests in batches: many requests per `sendmsg`, every answer
//! matched to its request by sequence number. A request without an answer
//! once the queue is empty is reported as lost ([`RequestError::NoAnswer`])
//! instead of hanging the agent.
//!
//! Batches are cut so that the answers fit the receive buffer (the kernel
//! drops an ACK it cannot queue): at most [`MAX_BATCH_BYTES`] of requests,
//! and at most one request per [`ACK_BUDGET`](super::socket::ACK_BUDGET) bytes of receive buffer. A
//! dump ends its batch: a socket runs one dump at a time and the kernel
//! refuses a second one with EBUSY while the first is unread.

use std::collections::HashMap;

use netlink_packet_core::Emitable;
use netlink_sys::protocols::NETLINK_GENERIC;

use super::error::{GenlError, RequestError};
use super::family;
use super::socket::{Acks, NetlinkSocket, SocketStats, MAX_BATCH_BYTES};
use crate::netlink::{
    parse_replies, Batch, DestEntry, IpvsError, IpvsInfo, IpvsMessage, ReplyBody, SentRequest, ServiceEntry,
    ServiceKey, Timeouts,
};

/// `struct nlmsghdr` plus `struct genlmsghdr`.
const HEADERS_LEN: usize = 16 + 4;

/// The answer to one request: the reply messages it got (dump entries, or
/// the one reply of GET_INFO/GET_CONFIG; none for a plain ACK), or why it
/// has none.
pub type Answer = Result<Vec<IpvsMessage>, RequestError>;

/// One virtual server as the kernel reports it, with its real servers.
pub type ServiceWithDests = (ServiceEntry, Vec<DestEntry>);

/// A generic-netlink socket bound to the IPVS family.
#[derive(Debug)]
pub struct IpvsSocket {
    socket: NetlinkSocket,
    family_id: u16,
    next_seq: u32,
}

impl IpvsSocket {
    /// Open the socket and resolve the IPVS family. Fails with
    /// [`GenlError::FamilyNotRegistered`] when `ip_vs` is not loaded.
    pub fn open() -> Result<Self, GenlError> {
        let mut this = Self {
            socket: NetlinkSocket::open(NETLINK_GENERIC, Acks::Capped)?,
            family_id: 0,
            next_seq: 1,
        };
        this.family_id = this.resolve_family()?;
        Ok(this)
    }

    /// The IPVS family id the controller gave.
    pub fn family_id(&self) -> u16 {
        self.family_id
    }

    /// At most this many requests go in one `sendmsg`.
    pub fn max_batch_requests(&self) -> usize {
        self.socket.max_batch_requests()
    }

    /// Counters since the socket was opened.
    pub fn stats(&self) -> SocketStats {
        self.socket.stats()
    }

    fn take_seq(&mut self) -> u32 {
        let seq = self.next_seq;
        self.next_seq = self.next_seq.wrapping_add(1).max(1);
        seq
    }

    fn resolve_family(&mut self) -> Result<u16, GenlError> {
        let seq = self.take_seq();
        self.socket.send(&family::request(seq))?;
        while self.socket.recv()? {
            if let Some(id) = family::parse_reply(self.socket.received(), seq)? {
                return Ok(id);
            }
        }
        Err(GenlError::Controller("no answer to CTRL_CMD_GETFAMILY".into()))
    }

    /// Run `requests` in order, in as few `sendmsg` calls as the limits
    /// allow, and return one [`Answer`] per request, in the same order. A
    /// refused request does not stop the others (the kernel goes on with the
    /// next message), and neither does a batch the socket failed to send or
    /// to read: its requests get [`RequestError::NotSent`] or
    /// [`RequestError::NoAnswer`], and the next batch is tried.
    pub fn execute(&mut self, requests: Vec<IpvsMessage>) -> Vec<Answer> {
        let mut sizes = Vec::new();
        let mut rest = requests.as_slice();
        while !rest.is_empty() {
            let take = next_batch_len(rest, MAX_BATCH_BYTES, self.max_batch_requests());
            sizes.push(take);
            rest = &rest[take..];
        }
        let mut answers = Vec::with_capacity(requests.len());
        let mut requests = requests.into_iter();
        for take in sizes {
            let mut batch = Batch::new(self.family_id, self.next_seq);
            for message in requests.by_ref().take(take) {
                batch.push(message);
            }
            self.next_seq = batch.next_seq().max(1);
            answers.extend(self.run_batch(batch));
        }
        answers
    }

    /// Send one batch and read every answer to it.
    fn run_batch(&mut self, batch: Batch) -> Vec<Answer> {
        let (bytes, sent) = batch.into_parts();
        if let Err(error) = self.socket.send(&bytes) {
            let reason = GenlError::Io(error).to_string();
            self.socket.stats_mut().lost += sent.len() as u64;
            return (sent.iter())
                .map(|request| {
                    Err(RequestError::NotSent {
                        cmd: request.cmd,
                        reason: reason.clone(),
                    })
                })
                .collect();
        }
        self.socket.stats_mut().requests += sent.len() as u64;
        let index: HashMap<u32, usize> = sent.iter().enumerate().map(|(i, r)| (r.seq, i)).collect();
        let mut messages: Vec<Vec<IpvsMessage>> = vec![Vec::new(); sent.len()];
        let mut finals: Vec<Option<Result<(), RequestError>>> = vec![None; sent.len()];
        let mut pending = sent.len();
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
                    trouble = Some(GenlError::Io(error).to_string());
                    break;
                }
            }
            for reply in parse_replies(self.socket.received(), self.family_id) {
                let reply = match reply {
                    Ok(reply) => reply,
                    Err(error) => {
                        log::debug!("unreadable IPVS netlink answer: {error}");
                        trouble = Some(error.to_string());
                        continue;
                    }
                };
                let Some(&i) = index.get(&reply.seq) else {
                    log::debug!("IPVS answer for sequence {} matches no request in flight", reply.seq);
                    continue;
                };
                if finals[i].is_some() {
                    continue;
                }
                let outcome = match reply.body {
                    Ok(ReplyBody::Message(message)) => {
                        messages[i].push(message);
                        continue;
                    }
                    Ok(ReplyBody::Ack | ReplyBody::Done) => Ok(()),
                    // Capped ACKs carry no command: name it from the request.
                    Err(error) => Err(RequestError::Refused(IpvsError::from_errno(
                        error.errno(),
                        Some(sent[i].cmd),
                    ))),
                };
                finals[i] = Some(outcome);
                pending -= 1;
            }
        }
        self.collect(&sent, messages, finals, trouble)
    }

    fn collect(
        &mut self,
        sent: &[SentRequest],
        messages: Vec<Vec<IpvsMessage>>,
        finals: Vec<Option<Result<(), RequestError>>>,
        trouble: Option<String>,
    ) -> Vec<Answer> {
        let mut answers = Vec::with_capacity(sent.len());
        for ((request, messages), outcome) in sent.iter().zip(messages).zip(finals) {
            let answer = match outcome {
                Some(Ok(())) => Ok(messages),
                Some(Err(error)) => {
                    self.socket.stats_mut().refused += 1;
                    Err(error)
                }
                None => {
                    self.socket.stats_mut().lost += 1;
                    Err(RequestError::NoAnswer {
                        seq: request.seq,
                        cmd: request.cmd,
                        detail: trouble.clone(),
                    })
                }
            };
            answers.push(answer);
        }
        answers
    }

    /// Run one request and return its answer.
    pub fn execute_one(&mut self, request: IpvsMessage) -> Result<Vec<IpvsMessage>, GenlError> {
        let answer = self.execute(vec![request]).pop();
        Ok(answer.unwrap_or_else(|| Ok(Vec::new()))?)
    }

    /// Every virtual server (GET_SERVICE dump).
    pub fn services(&mut self) -> Result<Vec<ServiceEntry>, GenlError> {
        let messages = self.execute_one(IpvsMessage::get_services_dump())?;
        (messages.iter())
            .map(|message| ServiceEntry::from_message(message).map_err(|e| GenlError::from(RequestError::from(e))))
            .collect()
    }

    /// The real servers of one virtual server (GET_DEST dump).
    pub fn dests(&mut self, service: &ServiceKey) -> Result<Vec<DestEntry>, GenlError> {
        let messages = self.execute_one(IpvsMessage::get_dests_dump(service))?;
        (messages.iter())
            .map(|message| {
                DestEntry::from_message(message, service.af()).map_err(|e| GenlError::from(RequestError::from(e)))
            })
            .collect()
    }

    /// Some virtual servers, each with its real servers: for each of `keys`,
    /// a GET_SERVICE and a GET_DEST dump in one `sendmsg` (a dump ends its
    /// batch: the kernel runs one dump per socket at a time). `None` for a
    /// virtual server the kernel does not have (ESRCH); answers in the order
    /// of `keys`.
    pub fn services_with_dests(&mut self, keys: &[ServiceKey]) -> Result<Vec<Option<ServiceWithDests>>, GenlError> {
        let requests = (keys.iter())
            .flat_map(|key| [IpvsMessage::get_service(key), IpvsMessage::get_dests_dump(key)])
            .collect();
        // `execute` answers every request: two answers per key.
        let answers = self.execute(requests);
        let mut found = Vec::with_capacity(keys.len());
        for (key, answer) in keys.iter().zip(answers.chunks_exact(2)) {
            let service = match &answer[0] {
                Ok(messages) => messages,
                Err(RequestError::Refused(IpvsError::NoSuchService { .. } | IpvsError::NotFound { .. })) => {
                    found.push(None);
                    continue;
                }
                Err(error) => return Err(error.clone().into()),
            };
            let entry = (service.first())
                .ok_or(RequestError::Wire(crate::netlink::WireError::MissingAttribute(
                    "the GET_SERVICE reply",
                )))
                .and_then(|message| ServiceEntry::from_message(message).map_err(RequestError::from))?;
            let dests = (answer[1].as_ref().map_err(Clone::clone)?.iter())
                .map(|message| DestEntry::from_message(message, key.af()).map_err(RequestError::from))
                .collect::<Result<Vec<_>, _>>()?;
            found.push(Some((entry, dests)));
        }
        Ok(found)
    }

    /// GET_INFO: the IPVS version and connection table size.
    pub fn info(&mut self) -> Result<IpvsInfo, GenlError> {
        let messages = self.execute_one(IpvsMessage::get_info())?;
        let message = messages
            .first()
            .ok_or(RequestError::Wire(crate::netlink::WireError::MissingAttribute(
                "the GET_INFO reply",
            )))?;
        Ok(IpvsInfo::from_message(message).map_err(RequestError::from)?)
    }

    /// GET_CONFIG: the TCP, TCP FIN and UDP timeouts.
    pub fn timeouts(&mut self) -> Result<Timeouts, GenlError> {
        let messages = self.execute_one(IpvsMessage::get_config())?;
        let message = messages
            .first()
            .ok_or(RequestError::Wire(crate::netlink::WireError::MissingAttribute(
                "the GET_CONFIG reply",
            )))?;
        Ok(Timeouts::from_message(message))
    }

    /// SET_CONFIG: set the timeouts (a 0 leaves that one unchanged).
    pub fn set_timeouts(&mut self, timeouts: &Timeouts) -> Result<(), GenlError> {
        self.execute_one(IpvsMessage::set_config(timeouts)).map(drop)
    }

    /// FLUSH: delete every virtual server, everyone's. The agent never does
    /// this on its own; it is here for tests and explicit operator requests.
    pub fn flush(&mut self) -> Result<(), GenlError> {
        self.execute_one(IpvsMessage::flush()).map(drop)
    }
}

/// How many requests from the front of `requests` go in the next batch: at
/// least one, at most `max_requests` and `max_bytes` of requests, and a dump
/// is always the batch's last request.
pub fn next_batch_len(requests: &[IpvsMessage], max_bytes: usize, max_requests: usize) -> usize {
    let mut bytes = 0;
    for (i, message) in requests.iter().enumerate() {
        let len = message.buffer_len() + HEADERS_LEN;
        if i > 0 && (bytes + len > max_bytes || i >= max_requests) {
            return i;
        }
        bytes += len;
        if message.is_dump() {
            return i + 1;
        }
    }
    requests.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dest(i: u8) -> IpvsMessage {
        let service = ServiceKey::Addr {
            protocol: crate::netlink::Protocol::Tcp,
            addr: "10.96.0.10".parse().unwrap(),
            port: 80,
        };
        let addr = std::net::IpAddr::from([10, 244, 1, i]);
        IpvsMessage::new_dest(&service, &crate::netlink::DestSpec::masquerade(addr, 8080, 1))
    }

    #[test]
    fn batches_are_cut_by_bytes_count_and_dumps() {
        let requests: Vec<IpvsMessage> = (1..=10).map(dest).collect();
        let one = requests[0].buffer_len() + HEADERS_LEN;
        assert_eq!(next_batch_len(&requests, MAX_BATCH_BYTES, 1000), 10);
        assert_eq!(next_batch_len(&requests, MAX_BATCH_BYTES, 4), 4);
        assert_eq!(next_batch_len(&requests, 3 * one, 1000), 3);
        assert_eq!(next_batch_len(&requests, 3 * one - 1, 1000), 2);
        assert_eq!(next_batch_len(&requests, 1, 1000), 1, "always at least one");
        let mut with_dump = requests[..3].to_vec();
        with_dump.insert(1, IpvsMessage::get_services_dump());
        assert_eq!(
            next_batch_len(&with_dump, MAX_BATCH_BYTES, 1000),
            2,
            "a dump ends its batch"
        );
        assert_eq!(next_batch_len(&[], MAX_BATCH_BYTES, 1000), 0);
    }

    /// Runs against the machine's own kernel: without IPVS (no
    /// `/proc/net/ip_vs`) opening must say how to fix it; with IPVS it must
    /// resolve the family.
    #[test]
    fn open_resolves_the_family_or_says_to_load_ip_vs() {
        let has_ipvs = std::path::Path::new("/proc/net/ip_vs").exists();
        match IpvsSocket::open() {
            Ok(socket) => assert!(has_ipvs && socket.family_id() > 0),
            Err(GenlError::FamilyNotRegistered) => assert!(!has_ipvs),
            Err(other) => panic!("unexpected: {other}"),
        }
        if !has_ipvs {
            assert_eq!(
                IpvsSocket::open().unwrap_err().to_string(),
                "the IPVS family is not registered: load the ip_vs kernel module (modprobe ip_vs)"
            );
        }
    }
}
