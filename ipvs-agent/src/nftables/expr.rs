//! The nf_tables expressions svcnet's rules are made of, as the kernel
//! runs them (registers, loads, compares, lookups, verdicts), and their
//! attributes in the order `nft` 1.0.6 sends them. [`super::compile`]
//! turns the core's typed rules into these.

use super::attr::Attr;
use super::constants::*;

/// A verdict, as `NFTA_VERDICT_CODE` (and the chain of a jump).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VerdictCode {
    /// `NF_ACCEPT`.
    Accept,
    /// `NF_DROP`.
    Drop,
    /// `NFT_RETURN`.
    Return,
    /// `NFT_JUMP` to the named chain.
    Jump(String),
}

/// One expression of a rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LowExpr {
    /// `payload load LEN @ BASE + OFFSET => reg DREG`.
    Payload {
        /// Destination register.
        dreg: u32,
        /// `NFT_PAYLOAD_*_HEADER`.
        base: u32,
        /// Offset in the header.
        offset: u32,
        /// Bytes loaded.
        len: u32,
    },
    /// `meta load KEY => reg DREG`.
    Meta {
        /// `NFT_META_*`.
        key: u32,
        /// Destination register.
        dreg: u32,
    },
    /// `meta set KEY with reg SREG`.
    MetaSet {
        /// `NFT_META_*`.
        key: u32,
        /// Source register.
        sreg: u32,
    },
    /// `ct load KEY => reg DREG`.
    Ct {
        /// `NFT_CT_*`.
        key: u32,
        /// Destination register.
        dreg: u32,
    },
    /// `cmp OP reg SREG DATA`.
    Cmp {
        /// Source register.
        sreg: u32,
        /// `NFT_CMP_*`.
        op: u32,
        /// The constant.
        data: Vec<u8>,
    },
    /// `bitwise reg = (reg & MASK) ^ XOR`, in place.
    Bitwise {
        /// Source and destination register.
        reg: u32,
        /// Whether `NFTA_BITWISE_OP` is sent: `nft` sends it for marks
        /// and leaves it out for `ct state` and prefixes (the kernel
        /// defaults to the same boolean operation).
        explicit_op: bool,
        /// The mask.
        mask: Vec<u8>,
        /// The xor, as long as the mask.
        xor: Vec<u8>,
    },
    /// `byteorder reg = hton(reg, SIZE, LEN)`, in place.
    Byteorder {
        /// Source and destination register.
        reg: u32,
        /// Bytes converted.
        len: u32,
        /// Width of each converted word.
        size: u32,
    },
    /// `lookup reg SREG set NAME`.
    Lookup {
        /// First register of the key.
        sreg: u32,
        /// The set.
        set: String,
        /// The set's id in the batch that creates it, if it does.
        set_id: Option<u32>,
        /// Match when the key is absent.
        inverted: bool,
    },
    /// `immediate reg 0 VERDICT`.
    Verdict(VerdictCode),
    /// `masq`, with `NF_NAT_RANGE_*` flags when non-zero.
    Masq {
        /// `NF_NAT_RANGE_PROTO_RANDOM_FULLY` or 0.
        flags: u32,
    },
    /// `reject type TYPE code CODE`.
    Reject {
        /// `NFT_REJECT_*`.
        kind: u32,
        /// ICMP, ICMPv6 or ICMPX code.
        code: u8,
    },
}

impl LowExpr {
    /// The expression's name, `NFTA_EXPR_NAME`.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Payload { .. } => "payload",
            Self::Meta { .. } | Self::MetaSet { .. } => "meta",
            Self::Ct { .. } => "ct",
            Self::Cmp { .. } => "cmp",
            Self::Bitwise { .. } => "bitwise",
            Self::Byteorder { .. } => "byteorder",
            Self::Lookup { .. } => "lookup",
            Self::Verdict(_) => "immediate",
            Self::Masq { .. } => "masq",
            Self::Reject { .. } => "reject",
        }
    }

    /// The expression's attributes, `NFTA_EXPR_DATA`.
    pub fn data(&self) -> Vec<Attr> {
        match self {
            Self::Payload {
                dreg,
                base,
                offset,
                len,
            } => vec![
                Attr::be32(NFTA_PAYLOAD_DREG, *dreg),
                Attr::be32(NFTA_PAYLOAD_BASE, *base),
                Attr::be32(NFTA_PAYLOAD_OFFSET, *offset),
                Attr::be32(NFTA_PAYLOAD_LEN, *len),
            ],
            Self::Meta { key, dreg } => vec![Attr::be32(NFTA_META_KEY, *key), Attr::be32(NFTA_META_DREG, *dreg)],
            Self::MetaSet { key, sreg } => vec![Attr::be32(NFTA_META_KEY, *key), Attr::be32(NFTA_META_SREG, *sreg)],
            Self::Ct { key, dreg } => vec![Attr::be32(NFTA_CT_KEY, *key), Attr::be32(NFTA_CT_DREG, *dreg)],
            Self::Cmp { sreg, op, data } => vec![
                Attr::be32(NFTA_CMP_SREG, *sreg),
                Attr::be32(NFTA_CMP_OP, *op),
                Attr::data(NFTA_CMP_DATA, data.clone()),
            ],
            Self::Bitwise {
                reg,
                explicit_op,
                mask,
                xor,
            } => {
                let mut attrs = vec![Attr::be32(NFTA_BITWISE_SREG, *reg), Attr::be32(NFTA_BITWISE_DREG, *reg)];
                if *explicit_op {
                    attrs.push(Attr::be32(NFTA_BITWISE_OP, NFT_BITWISE_BOOL));
                }
                // Mask and xor are built the same length (`compile`).
                let len = u32::try_from(mask.len()).unwrap_or(u32::MAX);
                attrs.extend([
                    Attr::be32(NFTA_BITWISE_LEN, len),
                    Attr::data(NFTA_BITWISE_MASK, mask.clone()),
                    Attr::data(NFTA_BITWISE_XOR, xor.clone()),
                ]);
                attrs
            }
            Self::Byteorder { reg, len, size } => vec![
                Attr::be32(NFTA_BYTEORDER_SREG, *reg),
                Attr::be32(NFTA_BYTEORDER_DREG, *reg),
                Attr::be32(NFTA_BYTEORDER_OP, NFT_BYTEORDER_HTON),
                Attr::be32(NFTA_BYTEORDER_LEN, *len),
                Attr::be32(NFTA_BYTEORDER_SIZE, *size),
            ],
            Self::Lookup {
                sreg,
                set,
                set_id,
                inverted,
            } => {
                let mut attrs = vec![Attr::be32(NFTA_LOOKUP_SREG, *sreg), Attr::string(NFTA_LOOKUP_SET, set)];
                if let Some(id) = set_id {
                    attrs.push(Attr::be32(NFTA_LOOKUP_SET_ID, *id));
                }
                if *inverted {
                    attrs.push(Attr::be32(NFTA_LOOKUP_FLAGS, NFT_LOOKUP_F_INV));
                }
                attrs
            }
            Self::Verdict(verdict) => {
                let (code, chain) = match verdict {
                    VerdictCode::Accept => (NF_ACCEPT, None),
                    VerdictCode::Drop => (NF_DROP, None),
                    VerdictCode::Return => (NFT_RETURN, None),
                    VerdictCode::Jump(chain) => (NFT_JUMP, Some(chain)),
                };
                let mut verdict = vec![Attr::bytes(NFTA_VERDICT_CODE, code.to_be_bytes())];
                if let Some(chain) = chain {
                    verdict.push(Attr::string(NFTA_VERDICT_CHAIN, chain));
                }
                vec![
                    Attr::be32(NFTA_IMMEDIATE_DREG, NFT_REG_VERDICT),
                    Attr::nested(NFTA_IMMEDIATE_DATA, vec![Attr::nested(NFTA_DATA_VERDICT, verdict)]),
                ]
            }
            Self::Masq { flags: 0 } => vec![],
            Self::Masq { flags } => vec![Attr::be32(NFTA_MASQ_FLAGS, *flags)],
            Self::Reject { kind, code } => {
                vec![
                    Attr::be32(NFTA_REJECT_TYPE, *kind),
                    Attr::bytes(NFTA_REJECT_ICMP_CODE, [*code]),
                ]
            }
        }
    }

    /// The expression as one item of `NFTA_RULE_EXPRESSIONS`.
    pub fn to_attr(&self) -> Attr {
        Attr::nested(
            NFTA_LIST_ELEM,
            vec![
                Attr::string(NFTA_EXPR_NAME, self.name()),
                Attr::nested(NFTA_EXPR_DATA, self.data()),
            ],
        )
    }
}
