//! The IPVS generic-netlink family itself: [`IpvsMessage`] is the payload of
//! a `GenlMessage`, modelled on netlink-packet-generic's `ctrl` module, and
//! its framing into a complete netlink request.

use netlink_packet_core::{
    DecodeError, Emitable, ErrorContext, NlasIterator, ParseableParametrized, NLM_F_ACK, NLM_F_DUMP, NLM_F_REQUEST,
};
use netlink_packet_generic::{GenlFamily, GenlHeader};

use super::attr::IpvsAttr;
use super::cmd::IpvsCmd;
use super::constants::{IPVS_GENL_NAME, IPVS_GENL_VERSION};

/// An IPVS message: a command and its top-level attributes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IpvsMessage {
    /// The command (`genlmsghdr.cmd`).
    pub cmd: IpvsCmd,
    /// The top-level attributes, in wire order.
    pub attrs: Vec<IpvsAttr>,
}

impl IpvsMessage {
    /// A message with the given command and attributes.
    pub fn new(cmd: IpvsCmd, attrs: Vec<IpvsAttr>) -> Self {
        Self { cmd, attrs }
    }

    /// Whether this request is answered by a dump (a run of messages ending in
    /// `NLMSG_DONE`) rather than by one reply and an ACK: GET_DEST always,
    /// GET_SERVICE when it names no service.
    pub fn is_dump(&self) -> bool {
        match self.cmd {
            IpvsCmd::GetDest => true,
            IpvsCmd::GetService => !self.attrs.iter().any(|attr| matches!(attr, IpvsAttr::Service(_))),
            _ => false,
        }
    }

    /// Append this message to `out` as a complete netlink request
    /// (`nlmsghdr`, `genlmsghdr`, attributes) for the family id the
    /// generic-netlink controller resolved for "IPVS", written in one pass.
    /// Flags: `NLM_F_REQUEST` plus `NLM_F_DUMP` for a dump, else
    /// `NLM_F_ACK`, so every request gets exactly one final answer
    /// (`NLMSG_DONE`, an ACK, or an error). The bytes are those
    /// `NetlinkMessage::serialize` writes for it (a test holds them equal).
    pub fn append_request(&self, family_id: u16, seq: u32, out: &mut Vec<u8>) {
        let flags = NLM_F_REQUEST | if self.is_dump() { NLM_F_DUMP } else { NLM_F_ACK };
        let start = out.len();
        out.extend_from_slice(&[0; 4]); // nlmsg_len, written last
        out.extend_from_slice(&family_id.to_ne_bytes());
        out.extend_from_slice(&flags.to_ne_bytes());
        out.extend_from_slice(&seq.to_ne_bytes());
        out.extend_from_slice(&0u32.to_ne_bytes()); // nlmsg_pid: the kernel
        out.extend_from_slice(&[self.cmd.into(), IPVS_GENL_VERSION, 0, 0]);
        for attr in &self.attrs {
            attr.append(out);
        }
        // Every attribute is padded to 4 bytes, so the message is NLMSG_ALIGNed.
        let len = (out.len() - start) as u32;
        out[start..start + 4].copy_from_slice(&len.to_ne_bytes());
    }
}

impl GenlFamily for IpvsMessage {
    fn family_name() -> &'static str {
        IPVS_GENL_NAME
    }

    fn command(&self) -> u8 {
        self.cmd.into()
    }

    fn version(&self) -> u8 {
        IPVS_GENL_VERSION
    }
}

impl Emitable for IpvsMessage {
    fn buffer_len(&self) -> usize {
        self.attrs.as_slice().buffer_len()
    }

    fn emit(&self, buffer: &mut [u8]) {
        self.attrs.as_slice().emit(buffer)
    }
}

impl ParseableParametrized<[u8], GenlHeader> for IpvsMessage {
    fn parse_with_param(buf: &[u8], header: GenlHeader) -> Result<Self, DecodeError> {
        let cmd = IpvsCmd::try_from(header.cmd)?;
        let attrs = NlasIterator::new(buf)
            .map(|nla| nla.and_then(|nla| IpvsAttr::parse_with_param(&nla, cmd)))
            .collect::<Result<Vec<_>, _>>()
            .with_context(|| format!("failed to parse the attributes of IPVS command {}", header.cmd))?;
        Ok(Self { cmd, attrs })
    }
}
