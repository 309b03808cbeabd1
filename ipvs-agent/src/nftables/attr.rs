//! The attribute tree every nf_tables message is made of: a value (bytes)
//! or nested attributes, emitted through netlink-packet-core's [`Nla`].
//! Numbers go in network byte order (`nla_put_be32`), as the kernel reads
//! nf_tables attributes; nests carry `NLA_F_NESTED` (from [`Nla::is_nested`]),
//! as libmnl sets it.

use netlink_packet_core::{Emitable, Nla};

/// One attribute.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attr {
    kind: u16,
    value: Value,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Value {
    Bytes(Vec<u8>),
    Nested(Vec<Attr>),
}

impl Attr {
    /// Raw bytes.
    pub fn bytes(kind: u16, bytes: impl Into<Vec<u8>>) -> Self {
        Self {
            kind,
            value: Value::Bytes(bytes.into()),
        }
    }

    /// A NUL-terminated string.
    pub fn string(kind: u16, s: &str) -> Self {
        let mut bytes = Vec::with_capacity(s.len() + 1);
        bytes.extend_from_slice(s.as_bytes());
        bytes.push(0);
        Self::bytes(kind, bytes)
    }

    /// A 32-bit number in network byte order.
    pub fn be32(kind: u16, value: u32) -> Self {
        Self::bytes(kind, value.to_be_bytes())
    }

    /// Nested attributes.
    pub fn nested(kind: u16, attrs: Vec<Attr>) -> Self {
        Self {
            kind,
            value: Value::Nested(attrs),
        }
    }

    /// `NFTA_DATA_VALUE` nested in `kind`: how nf_tables wraps constants.
    pub fn data(kind: u16, bytes: impl Into<Vec<u8>>) -> Self {
        Self::nested(kind, vec![Self::bytes(super::constants::NFTA_DATA_VALUE, bytes)])
    }

    /// The largest value, nested ones included: an attribute's length is a
    /// `u16` that counts its 4-byte header.
    pub fn largest_value(&self) -> usize {
        match &self.value {
            Value::Bytes(bytes) => bytes.len(),
            Value::Nested(attrs) => attrs.iter().map(Attr::largest_value).fold(self.value_len(), usize::max),
        }
    }
}

impl Nla for Attr {
    fn value_len(&self) -> usize {
        match &self.value {
            Value::Bytes(bytes) => bytes.len(),
            Value::Nested(attrs) => attrs.as_slice().buffer_len(),
        }
    }

    fn kind(&self) -> u16 {
        self.kind
    }

    fn is_nested(&self) -> bool {
        matches!(self.value, Value::Nested(_))
    }

    fn emit_value(&self, buffer: &mut [u8]) {
        match &self.value {
            Value::Bytes(bytes) => buffer[..bytes.len()].copy_from_slice(bytes),
            Value::Nested(attrs) => attrs.as_slice().emit(buffer),
        }
    }
}
