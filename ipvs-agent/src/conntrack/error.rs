//! Errors of the ctnetlink message layer: [`CtWireError`] is an answer
//! that could not be read, [`CtRefusal`] a request the kernel refused.

use thiserror::Error;

/// `ENOENT`: for a delete, the entry is gone already (expired, or deleted
/// by someone else, or replaced by a newer one with another id).
pub const ENOENT: i32 = 2;
/// `EPERM`.
pub const EPERM: i32 = 1;
/// `EINVAL`.
pub const EINVAL: i32 = 22;
/// `EOPNOTSUPP`.
pub const EOPNOTSUPP: i32 = 95;

/// An answer that could not be read.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum CtWireError {
    /// Bytes that do not form netlink messages or conntrack attributes.
    #[error("malformed ctnetlink answer: {0}")]
    Malformed(String),
}

/// What a ctnetlink request was, for errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CtOperation {
    /// The dump of one family's UDP entries.
    Dump,
    /// The deletion of one entry.
    Delete,
}

/// A request the kernel refused.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("conntrack: {}: {}{}", match .operation { CtOperation::Dump => "dump", CtOperation::Delete => "delete" },
    meaning(*.errno), .message.as_ref().map(|m| format!(" (kernel: {m})")).unwrap_or_default())]
pub struct CtRefusal {
    /// The refused request.
    pub operation: CtOperation,
    /// The positive errno.
    pub errno: i32,
    /// The kernel's extended-ACK message, when it gave one.
    pub message: Option<String>,
}

fn meaning(errno: i32) -> String {
    match errno {
        ENOENT => "no such entry (ENOENT)".to_string(),
        EINVAL => "invalid argument (EINVAL); nfnetlink answers so when nf_conntrack_netlink is not loaded \
                   (modprobe nf_conntrack_netlink)"
            .to_string(),
        EPERM => "permission denied (EPERM): conntrack needs CAP_NET_ADMIN; run as root".to_string(),
        EOPNOTSUPP => {
            "not supported by this kernel (EOPNOTSUPP): load nf_conntrack_netlink (modprobe nf_conntrack_netlink)"
                .to_string()
        }
        errno => format!("the kernel refused it: {}", std::io::Error::from_raw_os_error(errno)),
    }
}
