//! Errors of the IPVS message layer: [`IpvsError`] is what the kernel refused
//! (the errno of an `NLMSG_ERROR`, mapped to what it means for IPVS), and
//! [`WireError`] is bytes that could not be understood.

use netlink_packet_core::DecodeError;
use thiserror::Error;

use super::cmd::IpvsCmd;
use super::constants::{EAFNOSUPPORT, EEXIST, EINVAL, ENOENT, EPERM, ERANGE, ESRCH};

/// The operation an error is about, for messages: the command when known.
fn op(cmd: &Option<IpvsCmd>) -> &'static str {
    cmd.map_or("IPVS request", IpvsCmd::describe)
}

/// A request the kernel refused, by errno, with what it means for IPVS.
/// `cmd` is the refused command when it is known (the kernel echoes the
/// request unless the socket asked for capped ACKs).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum IpvsError {
    /// EEXIST: NEW_SERVICE or NEW_DEST for something already there.
    #[error("{}: it already exists (EEXIST); edit it instead of adding it", op(.cmd))]
    AlreadyExists {
        /// The refused command, if known.
        cmd: Option<IpvsCmd>,
    },
    /// ESRCH: the virtual server named by the request does not exist.
    #[error("{}: no such virtual server (ESRCH)", op(.cmd))]
    NoSuchService {
        /// The refused command, if known.
        cmd: Option<IpvsCmd>,
    },
    /// ENOENT on a real-server command: the real server does not exist.
    #[error("{}: no such real server in this virtual server (ENOENT)", op(.cmd))]
    NoSuchDestination {
        /// The refused command, if known.
        cmd: Option<IpvsCmd>,
    },
    /// ENOENT on NEW/SET_SERVICE: the scheduler (or persistence engine) is
    /// not in the kernel.
    #[error(
        "{}: scheduler not found (ENOENT): load its kernel module, for example `modprobe ip_vs_rr`",
        op(.cmd)
    )]
    SchedulerNotFound {
        /// The refused command, if known.
        cmd: Option<IpvsCmd>,
    },
    /// ENOENT when the command is not known.
    #[error(
        "{}: not found (ENOENT): no such real server, or the scheduler's kernel module is not loaded",
        op(.cmd)
    )]
    NotFound {
        /// The refused command, if known.
        cmd: Option<IpvsCmd>,
    },
    /// ERANGE: a weight above 2147483647, or a lower threshold above the upper.
    #[error(
        "{}: weight or thresholds out of range (ERANGE): weight must be at most 2147483647 and the lower \
         threshold must not exceed the upper one",
        op(.cmd)
    )]
    OutOfRange {
        /// The refused command, if known.
        cmd: Option<IpvsCmd>,
    },
    /// EINVAL: a required attribute missing, a bad netmask or timeout, an
    /// address family mismatch, or a NAT real server the node cannot route to.
    #[error(
        "{}: invalid argument (EINVAL): a required attribute is missing, the netmask or timeout is invalid, or a \
         NAT real server's address is not routable from this node (add a default route or a route to the pod \
         network)",
        op(.cmd)
    )]
    InvalidArgument {
        /// The refused command, if known.
        cmd: Option<IpvsCmd>,
    },
    /// EAFNOSUPPORT: an address family the kernel's IPVS does not handle.
    #[error(
        "{}: address family not supported (EAFNOSUPPORT): this kernel's IPVS lacks IPv6 support, or the family \
         is neither IPv4 nor IPv6",
        op(.cmd)
    )]
    AddressFamilyNotSupported {
        /// The refused command, if known.
        cmd: Option<IpvsCmd>,
    },
    /// EPERM: the process lacks CAP_NET_ADMIN.
    #[error("{}: permission denied (EPERM): programming IPVS needs CAP_NET_ADMIN; run as root", op(.cmd))]
    PermissionDenied {
        /// The refused command, if known.
        cmd: Option<IpvsCmd>,
    },
    /// Any other errno.
    #[error("{}: the kernel refused it: {}", op(.cmd), std::io::Error::from_raw_os_error(*.errno))]
    Other {
        /// The refused command, if known.
        cmd: Option<IpvsCmd>,
        /// The positive errno.
        errno: i32,
    },
}

impl IpvsError {
    /// Map an errno (either sign, as netlink carries it negative) for the
    /// given command to what it means for IPVS.
    pub fn from_errno(errno: i32, cmd: Option<IpvsCmd>) -> Self {
        let errno = errno.checked_abs().unwrap_or(i32::MAX);
        match errno {
            EEXIST => Self::AlreadyExists { cmd },
            ESRCH => Self::NoSuchService { cmd },
            ENOENT => match cmd {
                Some(IpvsCmd::NewDest | IpvsCmd::SetDest | IpvsCmd::DelDest) => Self::NoSuchDestination { cmd },
                Some(IpvsCmd::NewService | IpvsCmd::SetService) => Self::SchedulerNotFound { cmd },
                _ => Self::NotFound { cmd },
            },
            ERANGE => Self::OutOfRange { cmd },
            EINVAL => Self::InvalidArgument { cmd },
            EAFNOSUPPORT => Self::AddressFamilyNotSupported { cmd },
            EPERM => Self::PermissionDenied { cmd },
            errno => Self::Other { cmd, errno },
        }
    }

    /// The positive errno this error came from.
    pub fn errno(&self) -> i32 {
        match self {
            Self::AlreadyExists { .. } => EEXIST,
            Self::NoSuchService { .. } => ESRCH,
            Self::NoSuchDestination { .. } | Self::SchedulerNotFound { .. } | Self::NotFound { .. } => ENOENT,
            Self::OutOfRange { .. } => ERANGE,
            Self::InvalidArgument { .. } => EINVAL,
            Self::AddressFamilyNotSupported { .. } => EAFNOSUPPORT,
            Self::PermissionDenied { .. } => EPERM,
            Self::Other { errno, .. } => *errno,
        }
    }
}

/// Bytes from the kernel that could not be understood, or a reply that lacks
/// what its command promises. Never a panic.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum WireError {
    /// The bytes do not form valid netlink / IPVS messages.
    #[error("malformed IPVS netlink message: {0}")]
    Malformed(String),
    /// A message of another netlink family arrived on the IPVS socket.
    #[error("unexpected netlink message type {message_type} (sequence {seq}); IPVS is family {family_id}")]
    UnexpectedMessageType {
        /// The message's sequence number.
        seq: u32,
        /// Its `nlmsg_type`.
        message_type: u16,
        /// The IPVS family id it was expected to carry.
        family_id: u16,
    },
    /// The kernel dropped messages (`NLMSG_OVERRUN`): the caller must re-dump.
    #[error("netlink overrun (sequence {seq}): messages were lost, re-read the table")]
    Overrun {
        /// The sequence number of the overrun message.
        seq: u32,
    },
    /// A reply lacks an attribute its command always carries.
    #[error("IPVS reply is missing {0}")]
    MissingAttribute(&'static str),
    /// A reply names an address family that is neither IPv4 nor IPv6.
    #[error("IPVS reply has address family {0}, which is neither IPv4 (2) nor IPv6 (10)")]
    UnknownAddressFamily(u16),
}

impl From<DecodeError> for WireError {
    fn from(error: DecodeError) -> Self {
        Self::Malformed(error.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errno_maps_both_signs_and_round_trips() {
        for errno in [EPERM, ENOENT, ESRCH, EEXIST, EINVAL, ERANGE, EAFNOSUPPORT, 16] {
            assert_eq!(IpvsError::from_errno(-errno, None).errno(), errno);
            assert_eq!(IpvsError::from_errno(errno, None).errno(), errno);
        }
        assert_eq!(IpvsError::from_errno(i32::MIN, None).errno(), i32::MAX);
    }

    #[test]
    fn enoent_depends_on_the_command() {
        let dest = IpvsError::from_errno(-ENOENT, Some(IpvsCmd::DelDest));
        assert!(matches!(dest, IpvsError::NoSuchDestination { .. }));
        assert_eq!(
            dest.to_string(),
            "delete real server: no such real server in this virtual server (ENOENT)"
        );
        let sched = IpvsError::from_errno(-ENOENT, Some(IpvsCmd::NewService));
        assert!(sched.to_string().contains("modprobe ip_vs_rr"));
        assert!(matches!(
            IpvsError::from_errno(-ENOENT, None),
            IpvsError::NotFound { cmd: None }
        ));
    }

    #[test]
    fn other_errnos_name_the_system_message() {
        let busy = IpvsError::from_errno(-16, Some(IpvsCmd::Flush));
        assert!(busy
            .to_string()
            .starts_with("flush IPVS table: the kernel refused it: "));
        assert!(busy.to_string().ends_with("(os error 16)"));
    }
}
