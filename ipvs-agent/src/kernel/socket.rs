//! [`NetlinkSocket`]: the one batching netlink socket every kernel request
//! of the agent goes through: IPVS ([`super::genl`]), addresses on
//! `kube-ipvs0` ([`super::addresses`]), nf_tables ([`super::nft`]) and
//! conntrack ([`super::conntrack`]). Each of those frames its own requests,
//! many per `sendmsg`, and reads its own answers; this owns what they share:
//! opening the socket, the buffers, one `sendmsg` per batch, reading what
//! is queued without waiting, and the counters.
//!
//! One instance per netlink protocol: a netlink socket speaks only the
//! protocol it was opened with (`NETLINK_GENERIC` for IPVS, `NETLINK_ROUTE`
//! for addresses, `NETLINK_NETFILTER` for nf_tables and ctnetlink), so the
//! kernel cannot take IPVS and address requests on one socket.
//!
//! The socket is non-blocking and never waits. The kernel carries out a
//! netlink `sendmsg` synchronously: by the time it returns, every request in
//! it has been handled and its answer queued; a dump's next part is made
//! inside the `recvmsg` that reads the previous one. So once the queue is
//! empty (EAGAIN) no answer is still coming, and the protocol above reports
//! a request without one as lost instead of hanging the agent.

use std::io;
use std::os::fd::AsRawFd;

use netlink_sys::{Socket, SocketAddr};

/// At most this many bytes of requests per `sendmsg` (far below the socket's
/// default send buffer of 208 KiB).
pub const MAX_BATCH_BYTES: usize = 64 * 1024;

/// Receive-buffer bytes reserved per request of a batch: an ACK is a small
/// skb, but the kernel charges its whole allocation (under 1 KiB).
pub const ACK_BUDGET: usize = 1024;

/// The receive buffer asked for (with `SO_RCVBUFFORCE` as root, else capped
/// by `net.core.rmem_max`).
const RECEIVE_BUFFER: usize = 4 * 1024 * 1024;

/// Bytes read per `recvmsg`; a netlink dump part is at most 32 KiB.
const READ_SIZE: usize = 128 * 1024;

/// What a socket has done so far (for metrics).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SocketStats {
    /// `sendmsg` calls (batches sent).
    pub sendmsg_calls: u64,
    /// `recvmsg` calls that returned data.
    pub recvmsg_calls: u64,
    /// Requests sent.
    pub requests: u64,
    /// Requests the kernel refused.
    pub refused: u64,
    /// Requests that could not be sent, or whose answer was lost or
    /// unreadable.
    pub lost: u64,
    /// Receive-buffer overruns (ENOBUFS: the kernel dropped answers).
    pub overruns: u64,
}

/// Which acknowledgements the kernel sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Acks {
    /// Errors echo only the request's header (`NETLINK_CAP_ACK`): the
    /// request is known by its sequence number, and smaller answers leave
    /// room for bigger batches.
    Capped,
    /// Capped, and with the kernel's reason as text where it gives one
    /// (`NETLINK_EXT_ACK`): nf_tables and ctnetlink explain their refusals.
    CappedExtended,
}

/// A non-blocking netlink socket, bound and connected to the kernel.
#[derive(Debug)]
pub struct NetlinkSocket {
    socket: Socket,
    buf: Vec<u8>,
    receive_buffer: usize,
    send_buffer: usize,
    stats: SocketStats,
}

impl NetlinkSocket {
    /// Opens a socket of `protocol` (`netlink_sys::protocols`), with `acks`
    /// where the kernel has them (kernels before 4.3 lack capped ACKs; full
    /// echoes work as well) and the receive buffer grown.
    pub fn open(protocol: isize, acks: Acks) -> io::Result<Self> {
        let mut socket = Socket::new(protocol)?;
        socket.bind_auto()?;
        socket.connect(&SocketAddr::new(0, 0))?;
        if let Err(error) = socket.set_cap_ack(true) {
            log::debug!("NETLINK_CAP_ACK: {error}");
        }
        if acks == Acks::CappedExtended {
            if let Err(error) = socket.set_ext_ack(true) {
                log::debug!("NETLINK_EXT_ACK: {error}");
            }
        }
        let receive_buffer = grow_receive_buffer(&socket);
        socket.set_non_blocking(true)?;
        Ok(Self {
            socket,
            buf: Vec::with_capacity(READ_SIZE),
            receive_buffer,
            send_buffer: 0,
            stats: SocketStats::default(),
        })
    }

    /// At most this many requests that each get an ACK go in one `sendmsg`,
    /// so that every ACK fits the receive buffer (the kernel drops one it
    /// cannot queue).
    pub fn max_batch_requests(&self) -> usize {
        (self.receive_buffer / ACK_BUDGET).max(8)
    }

    /// Counters since the socket was opened.
    pub fn stats(&self) -> SocketStats {
        self.stats
    }

    /// The counters, for the protocol above to count requests, refusals and
    /// losses.
    pub fn stats_mut(&mut self) -> &mut SocketStats {
        &mut self.stats
    }

    /// Sends `bytes` (one batch of requests) in one `sendmsg`.
    pub fn send(&mut self, bytes: &[u8]) -> io::Result<()> {
        let sent = self.socket.send(bytes, 0)?;
        self.stats.sendmsg_calls += 1;
        if sent != bytes.len() {
            return Err(io::Error::new(
                io::ErrorKind::WriteZero,
                format!("sendmsg wrote {sent} of {} bytes", bytes.len()),
            ));
        }
        Ok(())
    }

    /// Reads one queued datagram (see [`Self::received`]): `Ok(false)` when
    /// nothing is queued. A datagram larger than the read buffer is an
    /// error, never half read.
    pub fn recv(&mut self) -> io::Result<bool> {
        loop {
            self.buf.clear();
            match self.socket.recv(&mut self.buf, libc::MSG_TRUNC) {
                Ok(len) if len > self.buf.len() => {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        format!("a {len}-byte netlink datagram did not fit {} bytes", self.buf.len()),
                    ))
                }
                Ok(_) => {
                    self.stats.recvmsg_calls += 1;
                    return Ok(true);
                }
                Err(error) if error.kind() == io::ErrorKind::WouldBlock => return Ok(false),
                Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
                Err(error) if error.raw_os_error() == Some(libc::ENOBUFS) => {
                    self.overrun();
                    return Err(error);
                }
                Err(error) => return Err(error),
            }
        }
    }

    /// After ENOBUFS: the buffer is asked for again (something may have
    /// shrunk it) and the batches sized to what the kernel grants now. The
    /// answers already dropped stay lost: the caller reports those
    /// requests as unanswered, and the sync loop reads the kernel's table
    /// again before it retries.
    fn overrun(&mut self) {
        self.stats.overruns += 1;
        let before = self.socket.get_rx_buf_sz().unwrap_or(0);
        self.receive_buffer = grow_receive_buffer(&self.socket);
        log::warn!(
            "netlink receive buffer overrun (ENOBUFS): answers were dropped; receive buffer {before} bytes before, \
             {} bytes now",
            self.receive_buffer
        );
    }

    /// The datagram the last successful [`Self::recv`] read.
    pub fn received(&self) -> &[u8] {
        &self.buf
    }

    /// A netlink message must fit the send buffer whole: grows it (as root,
    /// past `net.core.wmem_max`) before a batch of `len` bytes that may not
    /// (an nf_tables transaction is one message batch of any size).
    pub fn reserve_send_buffer(&mut self, len: usize) {
        let wanted = len.saturating_mul(2).max(256 * 1024);
        if wanted <= self.send_buffer {
            return;
        }
        let size = libc::c_int::try_from(wanted).unwrap_or(libc::c_int::MAX);
        // SAFETY: the pointer and length describe `size`, a live c_int, and
        // the descriptor belongs to `self.socket` for the whole call.
        let forced = unsafe {
            libc::setsockopt(
                self.socket.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_SNDBUFFORCE,
                std::ptr::from_ref(&size).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        if forced != 0 {
            log::debug!("SO_SNDBUFFORCE {size}: {}", io::Error::last_os_error());
        }
        self.send_buffer = wanted;
    }
}

/// Asks for a large receive buffer (`SO_RCVBUFFORCE` works as root, beyond
/// `rmem_max`; else `SO_RCVBUF`), and returns what the kernel granted.
fn grow_receive_buffer(socket: &Socket) -> usize {
    let size = libc::c_int::try_from(RECEIVE_BUFFER).unwrap_or(libc::c_int::MAX);
    // SAFETY: the pointer and length describe `size`, a live c_int, and the
    // descriptor belongs to `socket` for the whole call.
    let forced = unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVBUFFORCE,
            std::ptr::from_ref(&size).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if forced != 0 {
        if let Err(error) = socket.set_rx_buf_sz(size) {
            log::debug!("SO_RCVBUF {size}: {error}");
        }
    }
    socket.get_rx_buf_sz().unwrap_or(208 * 1024)
}
