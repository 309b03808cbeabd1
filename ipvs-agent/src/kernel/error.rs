//! Errors of the kernel side: [`GenlError`] (the IPVS generic-netlink socket
//! as a whole), [`RequestError`] (one request of a batch that got no good
//! answer) and [`LinkError`] (`kube-ipvs0` over rtnetlink), and how each
//! becomes a [`DataplaneError`] for the sync loop.

use std::io;

use thiserror::Error;

use crate::dataplane::DataplaneError;
use crate::netlink::{IpvsCmd, IpvsError, WireError};

/// The message for a kernel without the IPVS family.
pub const FAMILY_NOT_REGISTERED: &str =
    "the IPVS family is not registered: load the ip_vs kernel module (modprobe ip_vs)";

/// The IPVS socket could not be used.
#[derive(Debug, Error)]
pub enum GenlError {
    /// The genl controller does not know "IPVS": `ip_vs` is not loaded.
    #[error("{FAMILY_NOT_REGISTERED}")]
    FamilyNotRegistered,
    /// The genl controller answered something unusable.
    #[error("generic netlink controller: {0}")]
    Controller(String),
    /// The socket itself (open, bind, send, receive).
    #[error("netlink socket: {0}")]
    Io(#[from] io::Error),
    /// The request failed; used by the single-request helpers
    /// ([`super::IpvsSocket::info`], dumps, ...).
    #[error(transparent)]
    Request(#[from] RequestError),
}

/// Why one request of a batch has no successful answer.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum RequestError {
    /// The kernel refused it (its errno, typed).
    #[error(transparent)]
    Refused(#[from] IpvsError),
    /// The kernel's answer was lost or never came (the receive buffer
    /// overflowed, or an answer could not be parsed).
    #[error("{}: no answer from the kernel (sequence {seq}){}", cmd.describe(), .detail.as_deref().map(|d| format!(": {d}")).unwrap_or_default())]
    NoAnswer {
        /// The request's sequence number.
        seq: u32,
        /// Its command.
        cmd: IpvsCmd,
        /// What went wrong while reading, if known.
        detail: Option<String>,
    },
    /// The request was never handed to the kernel: `sendmsg` failed.
    #[error("{}: not sent: {reason}", cmd.describe())]
    NotSent {
        /// Its command.
        cmd: IpvsCmd,
        /// Why `sendmsg` failed.
        reason: String,
    },
    /// The answer arrived but does not say what its command promises.
    #[error(transparent)]
    Wire(#[from] WireError),
}

impl RequestError {
    /// The kernel's refusal, if that is what this is.
    pub fn ipvs(&self) -> Option<&IpvsError> {
        match self {
            Self::Refused(error) => Some(error),
            _ => None,
        }
    }
}

/// `kube-ipvs0` or one of its addresses could not be read or changed.
#[derive(Debug, Error)]
pub enum LinkError {
    /// Opening the rtnetlink connection failed.
    #[error("rtnetlink connection: {0}")]
    Connect(#[source] io::Error),
    /// The kernel refused a request.
    #[error("{what}: {message}")]
    Kernel {
        /// What was attempted (`add address 10.96.0.10/32 to kube-ipvs0`).
        what: String,
        /// The kernel's or rtnetlink's error.
        message: String,
    },
}

impl From<GenlError> for DataplaneError {
    fn from(error: GenlError) -> Self {
        match error {
            GenlError::Io(error) => DataplaneError::Io(error),
            GenlError::Request(error) => error.into(),
            other => DataplaneError::Io(io::Error::other(other.to_string())),
        }
    }
}

impl From<RequestError> for DataplaneError {
    fn from(error: RequestError) -> Self {
        match error {
            RequestError::Refused(error) => DataplaneError::Ipvs(error),
            other => DataplaneError::Io(io::Error::new(io::ErrorKind::InvalidData, other.to_string())),
        }
    }
}

impl From<LinkError> for DataplaneError {
    fn from(error: LinkError) -> Self {
        DataplaneError::Address(error.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_stay_typed_for_the_sync_loop() {
        let refused = RequestError::Refused(IpvsError::from_errno(-17, Some(IpvsCmd::NewService)));
        assert!(matches!(
            DataplaneError::from(refused),
            DataplaneError::Ipvs(IpvsError::AlreadyExists { .. })
        ));
        let lost = RequestError::NoAnswer {
            seq: 7,
            cmd: IpvsCmd::NewDest,
            detail: Some("receive buffer overrun".into()),
        };
        assert_eq!(
            lost.to_string(),
            "add real server: no answer from the kernel (sequence 7): receive buffer overrun"
        );
        assert!(matches!(DataplaneError::from(lost), DataplaneError::Io(_)));
        let missing = DataplaneError::from(GenlError::FamilyNotRegistered);
        assert!(missing.to_string().contains("modprobe ip_vs"));
    }
}
