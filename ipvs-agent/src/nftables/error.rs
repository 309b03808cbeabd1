//! Errors of the nf_tables message layer: [`NftBuildError`] is a ruleset
//! the messages cannot express, [`NftRefusal`] is a request the kernel
//! refused (its errno, what it means, and the request it was: which
//! table, chain, set or elements), and [`NftWireError`] is an answer that
//! could not be read.

use thiserror::Error;

use super::message::Operation;

/// The core's ruleset holds something these messages cannot say.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum NftBuildError {
    /// A rule looks up a set the table does not have.
    #[error("chain {chain}: a rule looks up set {set}, which the table does not have")]
    UnknownSet {
        /// The chain of the rule.
        chain: String,
        /// The missing set.
        set: String,
    },
    /// An element whose values do not fit its set's key type.
    #[error("set {set}: element {element} does not match the set's key type")]
    ElementMismatch {
        /// The set.
        set: String,
        /// The element, as data.
        element: String,
    },
    /// A match the netlink encoder does not know how to send.
    #[error("chain {chain}: {what} cannot be sent over netlink yet")]
    Unsupported {
        /// The chain of the rule.
        chain: String,
        /// What the rule matches.
        what: String,
    },
    /// A comment longer than the 255 bytes nft's userdata can hold.
    #[error("{what}: comment longer than 254 bytes")]
    CommentTooLong {
        /// The chain or set.
        what: String,
    },
    /// A request too large for one netlink attribute (64 KiB).
    #[error("{operation}: more than 64 KiB in one attribute")]
    TooLarge {
        /// The request.
        operation: Operation,
    },
}

/// `ENOENT`.
pub const ENOENT: i32 = 2;
/// `EPERM`.
pub const EPERM: i32 = 1;
/// `EEXIST`.
pub const EEXIST: i32 = 17;
/// `EINVAL`.
pub const EINVAL: i32 = 22;
/// `EOPNOTSUPP`.
pub const EOPNOTSUPP: i32 = 95;

/// A request of a transaction the kernel refused; the whole transaction
/// was then rolled back.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("nftables: {operation}: {}{}", meaning(*.errno), .message.as_ref().map(|m| format!(" (kernel: {m})")).unwrap_or_default())]
pub struct NftRefusal {
    /// The refused request.
    pub operation: Operation,
    /// The positive errno.
    pub errno: i32,
    /// The kernel's extended-ACK message, when it gave one.
    pub message: Option<String>,
}

/// What an errno means for an nf_tables request.
fn meaning(errno: i32) -> String {
    match errno {
        ENOENT => "not found (ENOENT): the table, chain or set it names does not exist, or a kernel module it needs \
                   (nf_tables, nft_chain_nat, nft_ct, nft_masq, nft_reject_inet) is not loaded"
            .to_string(),
        EEXIST => "it already exists (EEXIST)".to_string(),
        EINVAL => "invalid argument (EINVAL)".to_string(),
        EOPNOTSUPP => "not supported by this kernel (EOPNOTSUPP)".to_string(),
        EPERM => "permission denied (EPERM): nftables needs CAP_NET_ADMIN; run as root".to_string(),
        errno => format!("the kernel refused it: {}", std::io::Error::from_raw_os_error(errno)),
    }
}

/// An answer that could not be read.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum NftWireError {
    /// Bytes that do not form netlink messages.
    #[error("malformed nfnetlink answer: {0}")]
    Malformed(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_name_the_request_and_the_errno() {
        let refusal = NftRefusal {
            operation: Operation::AddChain("nat-postrouting".into()),
            errno: ENOENT,
            message: None,
        };
        assert!(refusal
            .to_string()
            .starts_with("nftables: add chain nat-postrouting: not found (ENOENT)"));
        let other = NftRefusal {
            operation: Operation::DeleteTable,
            errno: 16,
            message: Some("busy".into()),
        };
        let text = other.to_string();
        assert!(text.starts_with("nftables: delete table inet svcnet: the kernel refused it: "));
        assert!(text.ends_with("(os error 16) (kernel: busy)"), "{text}");
    }
}
