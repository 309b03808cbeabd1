//! Byte-level helpers the attribute types share: writing bytes and
//! NUL-terminated strings into an attribute's value, appending attributes
//! to a request in one pass, and parsing nested attributes. Byte order is
//! the caller's choice (host order for numbers, as the kernel's
//! `nla_put_u*`; network order for ports).

use netlink_packet_core::{
    DecodeError, ErrorContext, Nla, NlaBuffer, NlasIterator, NLA_ALIGNTO, NLA_F_NESTED, NLA_F_NET_BYTEORDER,
    NLA_HEADER_SIZE, NLA_TYPE_MASK,
};

/// Write `bytes` at the start of an attribute value. The `Emitable` contract
/// sizes `buf` from `value_len`, so it is always long enough.
pub(crate) fn put(buf: &mut [u8], bytes: &[u8]) {
    buf[..bytes.len()].copy_from_slice(bytes);
}

/// Write a string and its terminating NUL (`value_len` is `s.len() + 1`).
pub(crate) fn put_string(buf: &mut [u8], s: &str) {
    put(buf, s.as_bytes());
    buf[s.len()] = 0;
}

/// Append `nla` (header, value, zero padding) to `out`: the bytes
/// `Emitable::emit` writes for it, flags included (a nested one keeps only
/// `NLA_F_NESTED`, as there), in one pass. For attributes whose length is
/// cheap to know; a nest of them goes through [`append_nested`].
pub(crate) fn append_nla<T: Nla>(out: &mut Vec<u8>, nla: &T) {
    let value_len = nla.value_len();
    let kind = nla.kind() & NLA_TYPE_MASK;
    let kind = if nla.is_nested() {
        kind | NLA_F_NESTED
    } else if nla.is_network_byteorder() {
        kind | NLA_F_NET_BYTEORDER
    } else {
        kind
    };
    let start = out.len();
    // Cut to 16 bits as `Emitable` cuts it.
    out.extend_from_slice(&((NLA_HEADER_SIZE + value_len) as u16).to_ne_bytes());
    out.extend_from_slice(&kind.to_ne_bytes());
    out.resize(start + NLA_HEADER_SIZE + value_len.next_multiple_of(NLA_ALIGNTO), 0);
    nla.emit_value(&mut out[start + NLA_HEADER_SIZE..start + NLA_HEADER_SIZE + value_len]);
}

/// Append nested attribute `kind` (with `NLA_F_NESTED`) holding
/// `children`, computing its length once, after writing them, instead of
/// asking every level for it again (`Emitable` for nested attributes
/// computes a nest's length at each level it is asked at).
pub(crate) fn append_nested<T: Nla>(out: &mut Vec<u8>, kind: u16, children: &[T]) {
    let start = out.len();
    out.extend_from_slice(&[0; NLA_HEADER_SIZE]);
    for child in children {
        append_nla(out, child);
    }
    // Every child is padded to 4 bytes, so the nest needs no padding. The
    // length is cut to 16 bits as `Emitable` cuts it; a request's nest is
    // a few dozen bytes.
    let len = (out.len() - start) as u16;
    out[start..start + 2].copy_from_slice(&len.to_ne_bytes());
    out[start + 2..start + 4].copy_from_slice(&(kind | NLA_F_NESTED).to_ne_bytes());
}

/// Parse every attribute nested in `bytes` with `parse`, naming `what` in the
/// error of the first one that fails.
pub(crate) fn parse_nested<T>(
    bytes: &[u8],
    what: &str,
    parse: impl Fn(&NlaBuffer<&[u8]>) -> Result<T, DecodeError>,
) -> Result<Vec<T>, DecodeError> {
    NlasIterator::new(bytes)
        .map(|nla| nla.and_then(|nla| parse(&nla)))
        .collect::<Result<Vec<_>, _>>()
        .with_context(|| format!("failed to parse the attributes nested in {what}"))
}
