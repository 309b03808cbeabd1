//! Byte-level helpers the attribute types share: writing bytes and
//! NUL-terminated strings into an attribute's value, and parsing nested
//! attributes. Byte order is the caller's choice (host order for numbers, as
//! the kernel's `nla_put_u*`; network order for ports).

use netlink_packet_core::{DecodeError, ErrorContext, NlaBuffer, NlasIterator};

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
