//! Fault injection for `tests/vm/faults.sh`: shrinks the receive buffer of
//! another process's netlink sockets, from outside, so that the kernel
//! drops the answers it cannot queue (ENOBUFS), as under memory pressure.
//!
//!     netlink_shrink PID PROTOCOL BYTES
//!
//! Every netlink socket of PID speaking PROTOCOL (16: generic netlink, as
//! IPVS; 0: rtnetlink; 12: netfilter) gets `SO_RCVBUF` BYTES (the kernel
//! doubles it and keeps its minimum): the socket is borrowed with
//! `pidfd_getfd` (Linux 5.6+, root), so the option lands on the very socket
//! the process reads. One line per socket: "fd N inode I: receive buffer A
//! -> B bytes". Exits 1 when PID has no such socket, 2 on a usage error.

use std::fs;
use std::os::fd::{FromRawFd, OwnedFd, RawFd};
use std::process::ExitCode;

const USAGE: &str = "usage: netlink_shrink PID PROTOCOL BYTES";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let parsed = match args.as_slice() {
        [pid, protocol, bytes] => (|| {
            Ok::<_, String>((
                pid.parse::<i32>()
                    .map_err(|_| format!("PID {pid:?} is not a process id"))?,
                protocol
                    .parse::<u32>()
                    .map_err(|_| format!("PROTOCOL {protocol:?} is not a netlink protocol number"))?,
                bytes
                    .parse::<i32>()
                    .map_err(|_| format!("BYTES {bytes:?} is not a size"))?,
            ))
        })(),
        _ => Err(USAGE.to_string()),
    };
    let (pid, protocol, bytes) = match parsed {
        Ok(p) => p,
        Err(message) => {
            eprintln!("netlink_shrink: {message}");
            return ExitCode::from(2);
        }
    };
    match shrink(pid, protocol, bytes) {
        Ok(0) => {
            eprintln!("netlink_shrink: process {pid} has no netlink socket of protocol {protocol}");
            ExitCode::FAILURE
        }
        Ok(_) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("netlink_shrink: {message}");
            ExitCode::FAILURE
        }
    }
}

/// The inodes of PID's netlink sockets of `protocol`, from
/// /proc/PID/net/netlink (columns: sk, Eth (the protocol), ..., Inode).
fn netlink_inodes(pid: i32, protocol: u32) -> Result<Vec<u64>, String> {
    let path = format!("/proc/{pid}/net/netlink");
    let table = fs::read_to_string(&path).map_err(|e| format!("{path}: {e}"))?;
    Ok(table
        .lines()
        .skip(1)
        .filter_map(|line| {
            let columns: Vec<&str> = line.split_whitespace().collect();
            let eth: u32 = columns.get(1)?.parse().ok()?;
            let inode: u64 = columns.last()?.parse().ok()?;
            (eth == protocol).then_some(inode)
        })
        .collect())
}

/// PID's descriptors that are sockets, with their inodes.
fn socket_fds(pid: i32) -> Result<Vec<(RawFd, u64)>, String> {
    let dir = format!("/proc/{pid}/fd");
    let entries = fs::read_dir(&dir).map_err(|e| format!("{dir}: {e}"))?;
    Ok(entries
        .flatten()
        .filter_map(|entry| {
            let fd: RawFd = entry.file_name().to_str()?.parse().ok()?;
            let target = fs::read_link(entry.path()).ok()?;
            let inode = target
                .to_str()?
                .strip_prefix("socket:[")?
                .strip_suffix(']')?
                .parse()
                .ok()?;
            Some((fd, inode))
        })
        .collect())
}

fn receive_buffer(fd: RawFd) -> i32 {
    let mut size: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: the pointers describe `size` and `len`, live locals.
    let rc = unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_RCVBUF,
            std::ptr::from_mut(&mut size).cast(),
            &mut len,
        )
    };
    if rc == 0 {
        size
    } else {
        -1
    }
}

/// Shrinks every matching socket; returns how many.
fn shrink(pid: i32, protocol: u32, bytes: i32) -> Result<usize, String> {
    let inodes = netlink_inodes(pid, protocol)?;
    // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor.
    let pidfd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if pidfd < 0 {
        return Err(format!("pidfd_open {pid}: {}", std::io::Error::last_os_error()));
    }
    // SAFETY: pidfd_open returned a descriptor we now own.
    let pidfd = unsafe { OwnedFd::from_raw_fd(pidfd as RawFd) };
    let mut shrunk = 0;
    for (fd, inode) in socket_fds(pid)? {
        if !inodes.contains(&inode) {
            continue;
        }
        // SAFETY: pidfd_getfd takes a pidfd, a descriptor number of that
        // process and flags, and returns a new descriptor of ours.
        let ours = unsafe { libc::syscall(libc::SYS_pidfd_getfd, std::os::fd::AsRawFd::as_raw_fd(&pidfd), fd, 0) };
        if ours < 0 {
            return Err(format!(
                "pidfd_getfd {pid} fd {fd}: {}",
                std::io::Error::last_os_error()
            ));
        }
        // SAFETY: pidfd_getfd returned a descriptor we now own.
        let ours = unsafe { OwnedFd::from_raw_fd(ours as RawFd) };
        let raw = std::os::fd::AsRawFd::as_raw_fd(&ours);
        let before = receive_buffer(raw);
        // SAFETY: the pointer and length describe `bytes`, a live i32.
        let rc = unsafe {
            libc::setsockopt(
                raw,
                libc::SOL_SOCKET,
                libc::SO_RCVBUF,
                std::ptr::from_ref(&bytes).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        if rc != 0 {
            return Err(format!("SO_RCVBUF on fd {fd}: {}", std::io::Error::last_os_error()));
        }
        println!(
            "fd {fd} inode {inode}: receive buffer {before} -> {} bytes",
            receive_buffer(raw)
        );
        shrunk += 1;
    }
    Ok(shrunk)
}
