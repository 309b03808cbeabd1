//! Errors of the nf_tables message layer: [`NftBuildError`] is a ruleset
//! the messages cannot express, [`NftRefusal`] is a request the kernel
//! refused (its errno, what it means, and the request it was: which
//! table, chain, set or elements), [`NftWireError`] is an answer that
//! could not be read, and [`MissingNfTables`] is what a refusal says the
//! kernel lacks when it has no nf_tables for svcnet's table at all.

use std::fmt;

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
/// `EAFNOSUPPORT`.
pub const EAFNOSUPPORT: i32 = 97;

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

impl NftRefusal {
    /// What the kernel lacks when this refusal says it has no nf_tables
    /// for table `inet svcnet` at all; `None` for any other refusal. As
    /// Linux answers (`nfnetlink.c`, `nf_tables_api.c`; checked on 6.18
    /// in a network namespace): the batch refused with `EOPNOTSUPP` when
    /// the nf_tables subsystem is not there even after the kernel tried to
    /// load it; `add table inet` refused with `EOPNOTSUPP` when the inet
    /// family is not built in (with `EAFNOSUPPORT` before Linux 4.17);
    /// kernels between the two create the table and refuse its first base
    /// chain with `EOPNOTSUPP`. (A chain refused with `EOPNOTSUPP` could
    /// also be one whose type does not take its hook, which svcnet's
    /// chains never are: the golden tests hold them to what `nft -f`
    /// sends.)
    pub fn missing_nf_tables(&self) -> Option<MissingNfTables> {
        match (&self.operation, self.errno) {
            (Operation::Batch, EOPNOTSUPP) => Some(MissingNfTables::Subsystem),
            (Operation::AddTable, EOPNOTSUPP | EAFNOSUPPORT) | (Operation::AddChain(_), EOPNOTSUPP) => {
                Some(MissingNfTables::InetFamily)
            }
            _ => None,
        }
    }
}

/// What of nf_tables a kernel lacks, so that svcnet's table cannot exist.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MissingNfTables {
    /// No netfilter netlink: opening a `NETLINK_NETFILTER` socket failed
    /// with `EPROTONOSUPPORT` (module `nfnetlink`).
    Nfnetlink,
    /// No nf_tables subsystem in netfilter netlink: the transaction was
    /// refused with `EOPNOTSUPP` (module `nf_tables`).
    Subsystem,
    /// nf_tables without its inet family (`CONFIG_NF_TABLES_INET`).
    InetFamily,
}

impl fmt::Display for MissingNfTables {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Nfnetlink => {
                "no netfilter netlink (a NETLINK_NETFILTER socket cannot be opened: EPROTONOSUPPORT; module nfnetlink)"
            }
            Self::Subsystem => "no nf_tables (netfilter netlink refused the transaction: EOPNOTSUPP; module nf_tables)",
            Self::InetFamily => "nf_tables without the inet family (table inet svcnet refused; CONFIG_NF_TABLES_INET)",
        })
    }
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
        EAFNOSUPPORT => "address family not supported by this kernel's nf_tables (EAFNOSUPPORT)".to_string(),
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

    fn refusal(operation: Operation, errno: i32) -> NftRefusal {
        NftRefusal {
            operation,
            errno,
            message: None,
        }
    }

    #[test]
    fn a_kernel_without_nf_tables_is_told_from_other_refusals() {
        let chain = || Operation::AddChain("nat-prerouting".into());
        let set = || Operation::AddSet("cluster-ips-v4".into());
        let rule = || Operation::AddRule {
            chain: "filter-input".into(),
            index: 0,
        };
        for (operation, errno, missing) in [
            (Operation::Batch, EOPNOTSUPP, Some(MissingNfTables::Subsystem)),
            (Operation::AddTable, EOPNOTSUPP, Some(MissingNfTables::InetFamily)),
            (Operation::AddTable, EAFNOSUPPORT, Some(MissingNfTables::InetFamily)),
            (chain(), EOPNOTSUPP, Some(MissingNfTables::InetFamily)),
            // No CAP_NET_ADMIN: nf_tables is there, the agent may not use it.
            (Operation::Batch, EPERM, None),
            // A missing module of one chain type or expression (nft_chain_nat,
            // nft_masq, ...): nf_tables is there, its message names them.
            (chain(), ENOENT, None),
            (rule(), ENOENT, None),
            (rule(), EOPNOTSUPP, None),
            (set(), EOPNOTSUPP, None),
            (Operation::DeleteTable, EOPNOTSUPP, None),
            (Operation::AddTable, EINVAL, None),
        ] {
            let refusal = refusal(operation, errno);
            assert_eq!(refusal.missing_nf_tables(), missing, "{refusal}");
        }
        let text = refusal(Operation::Batch, EOPNOTSUPP).to_string();
        assert_eq!(
            text,
            "nftables: the transaction (its batch-begin message): not supported by this kernel (EOPNOTSUPP)"
        );
        assert!(MissingNfTables::Subsystem.to_string().contains("module nf_tables"));
    }
}
