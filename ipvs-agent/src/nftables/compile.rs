//! The core's typed rules ([`model::Rule`]) as nf_tables expressions,
//! the way `nft` 1.0.6 compiles the same rule text, so that the agent's
//! bytes equal `nft -f`'s (checked against captures in
//! `ipvs-agent/tests/nft-captures/`):
//!
//! - In an `inet` table, the first match on an `ip`/`ip6` field is preceded
//!   by `meta nfproto ipv4|ipv6`; `reject` then answers with that family's
//!   ICMP port unreachable.
//! - Concatenated fields are loaded into consecutive 4-byte registers; a
//!   field starting on a 16-byte boundary is named by its 16-byte register.
//! - For a lookup in an interval set, `meta l4proto` gets a `byteorder`
//!   (`nft` does this for host-order fields of interval concatenations; on
//!   one byte it changes nothing).
//! - A prefix on whole bytes loads only those bytes; any other prefix loads
//!   the address and masks it.

use svcnet_core::proxy::nftables::model::{self, CtState, Expr, Field, MarkOp, Op, Right, Table, Value, Verdict};

use super::constants::*;
use super::error::NftBuildError;
use super::expr::{LowExpr, VerdictCode};
use super::key::proto_number;

/// The address family a field belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Family {
    V4,
    V6,
}

/// Where a field is read from and how many bytes it has.
struct Load {
    expr: fn(dreg: u32) -> LowExpr,
    len: u32,
    family: Option<Family>,
}

fn payload(base: u32, offset: u32, len: u32) -> impl Fn(u32) -> LowExpr {
    move |dreg| LowExpr::Payload {
        dreg,
        base,
        offset,
        len,
    }
}

fn load(field: Field) -> Load {
    let (expr, len, family): (fn(u32) -> LowExpr, u32, Option<Family>) = match field {
        Field::IpSaddr => (|r| payload(NFT_PAYLOAD_NETWORK_HEADER, 12, 4)(r), 4, Some(Family::V4)),
        Field::IpDaddr => (|r| payload(NFT_PAYLOAD_NETWORK_HEADER, 16, 4)(r), 4, Some(Family::V4)),
        Field::Ip6Saddr => (|r| payload(NFT_PAYLOAD_NETWORK_HEADER, 8, 16)(r), 16, Some(Family::V6)),
        Field::Ip6Daddr => (|r| payload(NFT_PAYLOAD_NETWORK_HEADER, 24, 16)(r), 16, Some(Family::V6)),
        Field::L4Proto => (
            |dreg| LowExpr::Meta {
                key: NFT_META_L4PROTO,
                dreg,
            },
            1,
            None,
        ),
        Field::ThDport => (|r| payload(NFT_PAYLOAD_TRANSPORT_HEADER, 2, 2)(r), 2, None),
        Field::CtState => (
            |dreg| LowExpr::Ct {
                key: NFT_CT_STATE,
                dreg,
            },
            4,
            None,
        ),
        Field::Mark { .. } => (
            |dreg| LowExpr::Meta {
                key: NFT_META_MARK,
                dreg,
            },
            4,
            None,
        ),
    };
    Load { expr, len, family }
}

/// The register holding the 4-byte word `word` of the registers' space.
fn register(word: u32) -> u32 {
    if word % 4 == 0 {
        NFT_REG_1 + word / 4
    } else {
        NFT_REG32_00 + word
    }
}

/// Compiles the rules of one table: sets are looked up by name, with the
/// id they get in the batch that creates them (their position, from 1, as
/// `nft` numbers them).
pub struct Compiler<'t> {
    table: &'t Table,
}

impl<'t> Compiler<'t> {
    /// A compiler for `table`'s rules.
    pub fn new(table: &'t Table) -> Self {
        Self { table }
    }

    /// The expressions of `rule` of chain `chain`.
    pub fn rule(&self, chain: &str, rule: &model::Rule) -> Result<Vec<LowExpr>, NftBuildError> {
        let mut out = Vec::new();
        let mut family = None;
        for expr in &rule.exprs {
            match expr {
                Expr::Match { fields, op, right } => {
                    let wanted = fields.iter().find_map(|&f| load(f).family);
                    if let (Some(wanted), None) = (wanted, family) {
                        out.extend(nfproto(wanted));
                        family = Some(wanted);
                    }
                    out.extend(self.match_expr(chain, fields, *op, right)?);
                }
                Expr::SetMark { op, bits } => {
                    let (mask, xor) = match op {
                        MarkOp::Or => (!bits, *bits),
                        MarkOp::Xor => (u32::MAX, *bits),
                    };
                    out.extend([
                        LowExpr::Meta {
                            key: NFT_META_MARK,
                            dreg: NFT_REG_1,
                        },
                        LowExpr::Bitwise {
                            reg: NFT_REG_1,
                            explicit_op: true,
                            mask: mask.to_ne_bytes().to_vec(),
                            xor: xor.to_ne_bytes().to_vec(),
                        },
                        LowExpr::MetaSet {
                            key: NFT_META_MARK,
                            sreg: NFT_REG_1,
                        },
                    ]);
                }
                Expr::Masquerade { fully_random } => out.push(LowExpr::Masq {
                    flags: if *fully_random {
                        NF_NAT_RANGE_PROTO_RANDOM_FULLY
                    } else {
                        0
                    },
                }),
                Expr::Verdict(verdict) => out.push(verdict_expr(verdict, family)),
            }
        }
        Ok(out)
    }

    fn match_expr(&self, chain: &str, fields: &[Field], op: Op, right: &Right) -> Result<Vec<LowExpr>, NftBuildError> {
        let unsupported = |what: String| NftBuildError::Unsupported {
            chain: chain.to_string(),
            what,
        };
        let cmp_op = match op {
            Op::Eq => NFT_CMP_EQ,
            Op::Ne => NFT_CMP_NEQ,
        };
        match (right, fields) {
            (Right::Set(name), _) => {
                let (index, set) = (self.table.sets.iter().enumerate())
                    .find(|(_, s)| &s.name == name)
                    .ok_or_else(|| NftBuildError::UnknownSet {
                        chain: chain.to_string(),
                        set: name.clone(),
                    })?;
                let mut out = Vec::new();
                let mut word = 0;
                for &field in fields {
                    let load = load(field);
                    let reg = register(word);
                    out.push((load.expr)(reg));
                    if set.interval && fields.len() > 1 && field == Field::L4Proto {
                        out.push(LowExpr::Byteorder { reg, len: 1, size: 2 });
                    }
                    word += load.len.div_ceil(4);
                }
                out.push(LowExpr::Lookup {
                    sreg: NFT_REG_1,
                    set: name.clone(),
                    // At most a few dozen sets: the index fits.
                    set_id: Some(u32::try_from(index + 1).unwrap_or(u32::MAX)),
                    inverted: op == Op::Ne,
                });
                Ok(out)
            }
            (Right::Values(values), [field]) => match values.as_slice() {
                [value] => value_match(*field, *value, cmp_op).ok_or_else(|| unsupported(format!("{value:?}"))),
                _ => Err(unsupported(format!(
                    "a match on {} values (an anonymous set)",
                    values.len()
                ))),
            },
            (Right::CtStates(states), [Field::CtState]) => {
                let bits = states.iter().fold(0u32, |acc, state| {
                    acc | match state {
                        CtState::New => CT_STATE_NEW,
                        CtState::Established => CT_STATE_ESTABLISHED,
                        CtState::Related => CT_STATE_RELATED,
                    }
                });
                // "state is one of": some bit set; "none of": no bit set.
                let op = if op == Op::Eq { NFT_CMP_NEQ } else { NFT_CMP_EQ };
                Ok(masked(load(Field::CtState).expr, false, bits, op, 0))
            }
            (Right::Mark(value), [Field::Mark { mask }]) => Ok(masked(
                load(Field::Mark { mask: *mask }).expr,
                true,
                *mask,
                cmp_op,
                *value,
            )),
            _ => Err(unsupported(format!("{fields:?} compared with {right:?}"))),
        }
    }
}

/// Load a 4-byte host-order field, mask it, compare it. `nft` names the
/// bitwise operation for `meta mark & MASK` and not for `ct state`.
fn masked(expr: fn(u32) -> LowExpr, explicit_op: bool, mask: u32, op: u32, value: u32) -> Vec<LowExpr> {
    vec![
        expr(NFT_REG_1),
        LowExpr::Bitwise {
            reg: NFT_REG_1,
            explicit_op,
            mask: mask.to_ne_bytes().to_vec(),
            xor: vec![0; 4],
        },
        LowExpr::Cmp {
            sreg: NFT_REG_1,
            op,
            data: value.to_ne_bytes().to_vec(),
        },
    ]
}

/// `meta nfproto ipv4|ipv6`.
fn nfproto(family: Family) -> [LowExpr; 2] {
    let proto = match family {
        Family::V4 => NFPROTO_IPV4,
        Family::V6 => NFPROTO_IPV6,
    };
    [
        LowExpr::Meta {
            key: NFT_META_NFPROTO,
            dreg: NFT_REG_1,
        },
        LowExpr::Cmp {
            sreg: NFT_REG_1,
            op: NFT_CMP_EQ,
            data: vec![proto],
        },
    ]
}

/// One field compared with one value; `None` when they do not fit.
fn value_match(field: Field, value: Value, op: u32) -> Option<Vec<LowExpr>> {
    let load = load(field);
    let cmp = |data: Vec<u8>| LowExpr::Cmp {
        sreg: NFT_REG_1,
        op,
        data,
    };
    let bytes = match value {
        Value::Addr(addr) | Value::Prefix(addr, _) => match addr {
            std::net::IpAddr::V4(a) => a.octets().to_vec(),
            std::net::IpAddr::V6(a) => a.octets().to_vec(),
        },
        Value::Proto(proto) => vec![proto_number(proto)],
        Value::Port(port) => port.to_be_bytes().to_vec(),
    };
    if bytes.len() != load.len as usize {
        return None;
    }
    let prefix = match value {
        Value::Prefix(_, len) if u32::from(len) < load.len * 8 => u32::from(len),
        _ => return Some(vec![(load.expr)(NFT_REG_1), cmp(bytes)]),
    };
    if prefix % 8 == 0 {
        // Only the prefix's bytes, as `nft` loads `ip saddr 127.0.0.0/8`.
        let len = prefix / 8;
        let mut head = (load.expr)(NFT_REG_1);
        if let LowExpr::Payload { len: l, .. } = &mut head {
            *l = len;
        }
        return Some(vec![head, cmp(bytes[..len as usize].to_vec())]);
    }
    let mask: Vec<u8> = (0..load.len)
        .map(|i| {
            let bits = prefix.saturating_sub(i * 8).min(8);
            (0xffu16 << (8 - bits)) as u8
        })
        .collect();
    let network = bytes.iter().zip(&mask).map(|(b, m)| b & m).collect();
    Some(vec![
        (load.expr)(NFT_REG_1),
        LowExpr::Bitwise {
            reg: NFT_REG_1,
            explicit_op: false,
            xor: vec![0; mask.len()],
            mask,
        },
        cmp(network),
    ])
}

fn verdict_expr(verdict: &Verdict, family: Option<Family>) -> LowExpr {
    match verdict {
        Verdict::Accept => LowExpr::Verdict(VerdictCode::Accept),
        Verdict::Drop => LowExpr::Verdict(VerdictCode::Drop),
        Verdict::Return => LowExpr::Verdict(VerdictCode::Return),
        Verdict::Jump(chain) => LowExpr::Verdict(VerdictCode::Jump(chain.to_string())),
        Verdict::Reject => match family {
            Some(Family::V4) => LowExpr::Reject {
                kind: NFT_REJECT_ICMP_UNREACH,
                code: ICMP_PORT_UNREACH,
            },
            Some(Family::V6) => LowExpr::Reject {
                kind: NFT_REJECT_ICMP_UNREACH,
                code: ICMPV6_PORT_UNREACH,
            },
            None => LowExpr::Reject {
                kind: NFT_REJECT_ICMPX_UNREACH,
                code: NFT_REJECT_ICMPX_PORT_UNREACH,
            },
        },
    }
}
