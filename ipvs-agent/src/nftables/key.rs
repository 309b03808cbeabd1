//! Set keys on the wire: a single field as it is, and each field of a
//! concatenation in whole 4-byte registers (an address 4 or 16 bytes, a protocol 1 byte and a port 2
//! bytes, each padded to 4), as `nft` lays them out and the rule's loads
//! fill the registers. A prefix in an interval set becomes a range: the
//! key holds the network address, `KEY_END` the last address.

use std::net::IpAddr;

use svcnet_core::proxy::nftables::model::{Element, KeyType, Value};
use svcnet_core::proxy::table::Protocol;

use super::error::NftBuildError;

/// The bytes a key field's value takes, before padding.
pub fn field_len(key: KeyType) -> u32 {
    match key {
        KeyType::Ipv4Addr => 4,
        KeyType::Ipv6Addr => 16,
        KeyType::InetProto => 1,
        KeyType::InetService => 2,
    }
}

/// `nft`'s data type number of a key field (`enum datatypes` in nft's
/// `datatype.h`).
pub fn type_id(key: KeyType) -> u32 {
    match key {
        KeyType::Ipv4Addr => 7,
        KeyType::Ipv6Addr => 8,
        KeyType::InetProto => 12,
        KeyType::InetService => 13,
    }
}

/// `nft`'s type of a concatenation: each field's type number appended in
/// 6 bits (`concat_subtype_add`).
pub fn concat_type(key: &[KeyType]) -> u32 {
    key.iter().fold(0, |acc, &field| (acc << 6) | type_id(field))
}

/// Bytes rounded up to whole 4-byte registers.
pub fn padded(len: u32) -> u32 {
    len.div_ceil(4) * 4
}

/// The key length of a set: one field's own length, or a concatenation's
/// fields padded and added up.
pub fn key_len(key: &[KeyType]) -> u32 {
    match key {
        [single] => field_len(*single),
        fields => fields.iter().map(|&field| padded(field_len(field))).sum(),
    }
}

/// An element's key and, for an interval set, the end of its range.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ElementKey {
    /// `NFTA_SET_ELEM_KEY`.
    pub key: Vec<u8>,
    /// `NFTA_SET_ELEM_KEY_END`: the range's last key (the key itself when
    /// no field is a prefix).
    pub key_end: Option<Vec<u8>>,
}

/// Encode `element` for a set keyed by `key`.
pub fn element_key(set: &str, key: &[KeyType], interval: bool, element: &Element) -> Result<ElementKey, NftBuildError> {
    let mismatch = || NftBuildError::ElementMismatch {
        set: set.to_string(),
        element: format!("{element:?}"),
    };
    if key.len() != element.len() {
        return Err(mismatch());
    }
    let (mut start, mut end) = (Vec::new(), Vec::new());
    for (&field, value) in key.iter().zip(element) {
        let (first, last) = field_bytes(field, *value, interval).ok_or_else(mismatch)?;
        let pad = if key.len() > 1 {
            padded(field_len(field)) as usize - first.len()
        } else {
            0
        };
        start.extend(first.iter().copied().chain(std::iter::repeat_n(0, pad)));
        end.extend(last.iter().copied().chain(std::iter::repeat_n(0, pad)));
    }
    Ok(ElementKey {
        key: start,
        key_end: interval.then_some(end),
    })
}

/// The first and last value bytes of one field, or `None` when the value
/// does not fit the field's type.
fn field_bytes(field: KeyType, value: Value, interval: bool) -> Option<(Vec<u8>, Vec<u8>)> {
    let same = |bytes: Vec<u8>| Some((bytes.clone(), bytes));
    match (field, value) {
        (KeyType::Ipv4Addr, Value::Addr(IpAddr::V4(addr))) => same(addr.octets().to_vec()),
        (KeyType::Ipv6Addr, Value::Addr(IpAddr::V6(addr))) => same(addr.octets().to_vec()),
        (KeyType::Ipv4Addr, Value::Prefix(IpAddr::V4(addr), len)) if interval && len <= 32 => {
            let bits = u32::from(addr);
            let host = u32::MAX.checked_shr(u32::from(len)).unwrap_or(0);
            Some((
                (bits & !host).to_be_bytes().to_vec(),
                (bits | host).to_be_bytes().to_vec(),
            ))
        }
        (KeyType::Ipv6Addr, Value::Prefix(IpAddr::V6(addr), len)) if interval && len <= 128 => {
            let bits = u128::from(addr);
            let host = u128::MAX.checked_shr(u32::from(len)).unwrap_or(0);
            Some((
                (bits & !host).to_be_bytes().to_vec(),
                (bits | host).to_be_bytes().to_vec(),
            ))
        }
        (KeyType::InetProto, Value::Proto(proto)) => same(vec![proto_number(proto)]),
        (KeyType::InetService, Value::Port(port)) => same(port.to_be_bytes().to_vec()),
        _ => None,
    }
}

/// The IP protocol number (`IPPROTO_*`).
pub fn proto_number(proto: Protocol) -> u8 {
    match proto {
        Protocol::Tcp => 6,
        Protocol::Udp => 17,
        Protocol::Sctp => 132,
    }
}
