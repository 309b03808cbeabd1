//! The attribute tree every nf_tables message is made of: a value (bytes)
//! or nested attributes, emitted through netlink-packet-core's [`Nla`].
//! Numbers go in network byte order (`nla_put_be32`), as the kernel reads
//! nf_tables attributes; nests carry `NLA_F_NESTED` (from [`Nla::is_nested`]),
//! as libmnl sets it.
//!
//! A nest keeps its value's length, computed once from its children's when
//! it is made: netlink-packet-core asks for lengths again at every level
//! (twice per attribute of a list, and again while emitting), so a length
//! computed on each call took time doubling with every level of nesting,
//! and rule expressions nest five or six deep.

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
    /// The attributes, and the length of their emitted list.
    Nested(Vec<Attr>, usize),
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
        let len = attrs.as_slice().buffer_len();
        Self {
            kind,
            value: Value::Nested(attrs, len),
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
            Value::Nested(attrs, _) => attrs.iter().map(Attr::largest_value).fold(self.value_len(), usize::max),
        }
    }
}

impl Nla for Attr {
    fn value_len(&self) -> usize {
        match &self.value {
            Value::Bytes(bytes) => bytes.len(),
            Value::Nested(_, len) => *len,
        }
    }

    fn kind(&self) -> u16 {
        self.kind
    }

    fn is_nested(&self) -> bool {
        matches!(self.value, Value::Nested(..))
    }

    fn emit_value(&self, buffer: &mut [u8]) {
        match &self.value {
            Value::Bytes(bytes) => buffer[..bytes.len()].copy_from_slice(bytes),
            Value::Nested(attrs, _) => attrs.as_slice().emit(buffer),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use netlink_packet_core::{NlaBuffer, NlasIterator};

    /// The length a nest's value emits to, counted afresh from the leaves.
    fn counted(attr: &Attr) -> usize {
        match &attr.value {
            Value::Bytes(bytes) => bytes.len(),
            Value::Nested(attrs, _) => attrs.iter().map(|a| (4 + counted(a)).next_multiple_of(4)).sum(),
        }
    }

    #[test]
    fn a_nest_keeps_the_length_it_emits_to_at_any_depth() {
        let mut attr = Attr::be32(1, 7);
        for depth in 0..12u16 {
            attr = Attr::nested(
                2 + depth,
                vec![attr, Attr::string(40, "odd"), Attr::bytes(41, [1, 2, 3, 4, 5])],
            );
            assert_eq!(attr.value_len(), counted(&attr));
        }
        let mut buffer = vec![0xff; attr.buffer_len()];
        attr.emit(&mut buffer);
        // Read back level by level: each nest's value parses to its exact end.
        let mut value = NlaBuffer::new_checked(&buffer[..]).unwrap().value().to_vec();
        for depth in (0..12u16).rev() {
            let children: Vec<_> = NlasIterator::new(&value[..]).collect::<Result<_, _>>().unwrap();
            assert_eq!(children.len(), 3);
            let first = children[0].value().to_vec();
            assert_eq!(
                children
                    .iter()
                    .map(|c| (c.length() as usize).next_multiple_of(4))
                    .sum::<usize>(),
                value.len()
            );
            assert_eq!(children[0].kind(), 1 + depth);
            value = first;
        }
        assert_eq!(value, 7u32.to_be_bytes());
    }
}
