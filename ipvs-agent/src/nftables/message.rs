//! The nf_tables requests svcnet sends, built from the core's model:
//! [`NftMessage`] is one request (message type, flags, attributes) with
//! the [`Operation`] it performs, which names the table, chain, set or
//! elements in any error the kernel answers with.
//!
//! Flags are those `nft` 1.0.6 sends (`NLM_F_CREATE` for chains, sets and
//! elements, `NLM_F_APPEND` too for rules), plus `NLM_F_ACK` on every
//! request so that each one is answered, matched by sequence number.

use std::fmt;

use netlink_packet_core::{NLM_F_ACK, NLM_F_APPEND, NLM_F_CREATE, NLM_F_REQUEST};
use svcnet_core::proxy::nftables::model::{self, Chain, ChainType, Element, Hook, Set, Table};

use super::attr::Attr;
use super::compile::Compiler;
use super::constants::*;
use super::error::NftBuildError;
use super::key::{concat_type, element_key, field_len, key_len, type_id};

/// What a request does, for logs and errors.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Operation {
    /// The transaction as a whole: the kernel answers its batch-begin
    /// message only to refuse all of it (no `CAP_NET_ADMIN`; no nf_tables
    /// subsystem).
    Batch,
    /// Create the table (or leave an existing one as it is).
    AddTable,
    /// Delete the table and everything in it.
    DeleteTable,
    /// Create a chain.
    AddChain(String),
    /// Create a set.
    AddSet(String),
    /// Append a rule (its position in the chain, from 0).
    AddRule {
        /// The chain.
        chain: String,
        /// The rule's position.
        index: usize,
    },
    /// Add elements to a set: the set, how many, and the first one.
    AddElements {
        /// The set.
        set: String,
        /// How many elements the request holds.
        count: usize,
        /// The first of them, as data.
        first: String,
    },
    /// Remove elements from a set.
    DeleteElements {
        /// The set.
        set: String,
        /// How many elements the request holds.
        count: usize,
        /// The first of them, as data.
        first: String,
    },
}

impl fmt::Display for Operation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Batch => write!(f, "the transaction (its batch-begin message)"),
            Self::AddTable => write!(f, "add table inet svcnet"),
            Self::DeleteTable => write!(f, "delete table inet svcnet"),
            Self::AddChain(chain) => write!(f, "add chain {chain}"),
            Self::AddSet(set) => write!(f, "add set {set}"),
            Self::AddRule { chain, index } => write!(f, "add rule {index} of chain {chain}"),
            Self::AddElements { set, count, first } => {
                write!(f, "add {count} element(s) to set {set} (the first: {first})")
            }
            Self::DeleteElements { set, count, first } => {
                write!(f, "delete {count} element(s) from set {set} (the first: {first})")
            }
        }
    }
}

/// One nf_tables request, ready to be framed in a batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NftMessage {
    /// `NFT_MSG_*`.
    pub msg_type: u8,
    /// `nlmsg_flags`.
    pub flags: u16,
    /// The attributes after the `nfgenmsg` header.
    pub attrs: Vec<Attr>,
    /// What it does.
    pub operation: Operation,
}

/// Attribute values above this many bytes are cut into several requests
/// (elements) or refused: an attribute's length is 16 bits.
pub const MAX_ATTR_VALUE: usize = 60_000;

const CREATE: u16 = NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE;

impl NftMessage {
    /// `NFT_MSG_NEWTABLE`: the table, with no flags.
    pub fn new_table(table: &Table) -> Self {
        Self {
            msg_type: NFT_MSG_NEWTABLE,
            flags: NLM_F_REQUEST | NLM_F_ACK,
            attrs: vec![
                Attr::string(NFTA_TABLE_NAME, table.name),
                Attr::be32(NFTA_TABLE_FLAGS, 0),
            ],
            operation: Operation::AddTable,
        }
    }

    /// `NFT_MSG_DELTABLE`.
    pub fn delete_table(table: &Table) -> Self {
        Self {
            msg_type: NFT_MSG_DELTABLE,
            flags: NLM_F_REQUEST | NLM_F_ACK,
            attrs: vec![Attr::string(NFTA_TABLE_NAME, table.name)],
            operation: Operation::DeleteTable,
        }
    }

    /// `NFT_MSG_NEWCHAIN`: a base chain with its type, policy `accept` and
    /// hook, or a regular chain; the comment as `nft` stores it.
    pub fn new_chain(table: &Table, chain: &Chain) -> Result<Self, NftBuildError> {
        let mut attrs = vec![
            Attr::string(NFTA_CHAIN_TABLE, table.name),
            Attr::string(NFTA_CHAIN_NAME, chain.name),
        ];
        if let Some(base) = chain.base {
            let kind = match base.kind {
                ChainType::Nat => "nat",
                ChainType::Filter => "filter",
            };
            let hook = match base.hook {
                Hook::Prerouting => NF_INET_PRE_ROUTING,
                Hook::Input => NF_INET_LOCAL_IN,
                Hook::Forward => NF_INET_FORWARD,
                Hook::Output => NF_INET_LOCAL_OUT,
                Hook::Postrouting => NF_INET_POST_ROUTING,
            };
            attrs.extend([
                Attr::string(NFTA_CHAIN_TYPE, kind),
                Attr::bytes(NFTA_CHAIN_POLICY, NF_ACCEPT.to_be_bytes()),
                Attr::nested(
                    NFTA_CHAIN_HOOK,
                    vec![
                        Attr::be32(NFTA_HOOK_HOOKNUM, hook),
                        Attr::bytes(NFTA_HOOK_PRIORITY, base.priority.value().to_be_bytes()),
                    ],
                ),
            ]);
        }
        let comment = udata(NFTNL_UDATA_CHAIN_COMMENT, &nul_terminated(chain.comment), || {
            format!("chain {}", chain.name)
        })?;
        attrs.push(Attr::bytes(NFTA_CHAIN_USERDATA, comment));
        Ok(Self {
            msg_type: NFT_MSG_NEWCHAIN,
            flags: CREATE,
            attrs,
            operation: Operation::AddChain(chain.name.to_string()),
        })
    }

    /// `NFT_MSG_NEWSET`: a named set, `id` its number in the batch (from 1).
    /// An interval set with a concatenated key also describes its fields'
    /// lengths (the kernel then picks the pipapo backend). Userdata as `nft`
    /// writes it: the key's byte order, the concatenation's `typeof`, the
    /// comment.
    pub fn new_set(table: &Table, set: &Set, id: u32) -> Result<Self, NftBuildError> {
        let concat = set.key.len() > 1;
        let mut flags = 0;
        if set.interval {
            flags |= NFT_SET_INTERVAL;
            if concat {
                flags |= NFT_SET_CONCAT;
            }
        }
        let key_type = match set.key.as_slice() {
            [single] => type_id(*single),
            key => concat_type(key),
        };
        let mut attrs = vec![
            Attr::string(NFTA_SET_TABLE, table.name),
            Attr::string(NFTA_SET_NAME, &set.name),
            Attr::be32(NFTA_SET_FLAGS, flags),
            Attr::be32(NFTA_SET_KEY_TYPE, key_type),
            Attr::be32(NFTA_SET_KEY_LEN, key_len(&set.key)),
            Attr::be32(NFTA_SET_ID, id),
        ];
        if set.interval && concat {
            let fields = (set.key.iter())
                .map(|&f| Attr::nested(NFTA_LIST_ELEM, vec![Attr::be32(NFTA_SET_FIELD_LEN, field_len(f))]))
                .collect();
            attrs.push(Attr::nested(
                NFTA_SET_DESC,
                vec![Attr::nested(NFTA_SET_DESC_CONCAT, fields)],
            ));
        }
        let what = || format!("set {}", set.name);
        let mut userdata = if concat {
            // Byte order "invalid" (mixed), and the typeof of a
            // concatenation (`nft` writes the same ten bytes for each).
            let mut u = udata(NFTNL_UDATA_SET_KEYBYTEORDER, &0u32.to_ne_bytes(), what)?;
            u.extend(udata(NFTNL_UDATA_SET_KEY_TYPEOF, &[0, 4, 13, 0, 0, 0, 1, 0], what)?);
            u
        } else {
            // Addresses and ports: big endian.
            udata(NFTNL_UDATA_SET_KEYBYTEORDER, &2u32.to_ne_bytes(), what)?
        };
        userdata.extend(udata(NFTNL_UDATA_SET_COMMENT, &nul_terminated(set.comment), what)?);
        attrs.push(Attr::bytes(NFTA_SET_USERDATA, userdata));
        Ok(Self {
            msg_type: NFT_MSG_NEWSET,
            flags: CREATE,
            attrs,
            operation: Operation::AddSet(set.name.clone()),
        })
    }

    /// `NFT_MSG_NEWSETELEM` (`add`) or `NFT_MSG_DELSETELEM`: `elements` of
    /// `set`, cut into as many requests as the 16-bit attribute length
    /// needs. `set_id` is the set's number when the same batch creates it.
    pub fn set_elements<'e>(
        table: &Table,
        set: &Set,
        set_id: Option<u32>,
        add: bool,
        elements: impl IntoIterator<Item = &'e Element>,
    ) -> Result<Vec<Self>, NftBuildError> {
        let mut messages = Vec::new();
        let mut chunk: Vec<(Vec<Attr>, &Element)> = Vec::new();
        let mut chunk_len = 0;
        for element in elements {
            let key = element_key(&set.name, &set.key, set.interval, element)?;
            let mut attrs = vec![Attr::data(NFTA_SET_ELEM_KEY, key.key)];
            if let Some(end) = key.key_end {
                attrs.push(Attr::data(NFTA_SET_ELEM_KEY_END, end));
            }
            let len = netlink_packet_core::Emitable::buffer_len(&Attr::nested(NFTA_LIST_ELEM, attrs.clone()));
            if chunk_len + len > MAX_ATTR_VALUE && !chunk.is_empty() {
                messages.push(Self::element_message(
                    table,
                    set,
                    set_id,
                    add,
                    std::mem::take(&mut chunk),
                ));
                chunk_len = 0;
            }
            chunk_len += len;
            chunk.push((attrs, element));
        }
        if !chunk.is_empty() {
            messages.push(Self::element_message(table, set, set_id, add, chunk));
        }
        Ok(messages)
    }

    fn element_message(
        table: &Table,
        set: &Set,
        set_id: Option<u32>,
        add: bool,
        chunk: Vec<(Vec<Attr>, &Element)>,
    ) -> Self {
        let count = chunk.len();
        let first = chunk.first().map(|(_, e)| element_text(e)).unwrap_or_default();
        let mut attrs = vec![
            Attr::string(NFTA_SET_ELEM_LIST_TABLE, table.name),
            Attr::string(NFTA_SET_ELEM_LIST_SET, &set.name),
        ];
        if let Some(id) = set_id {
            attrs.push(Attr::be32(NFTA_SET_ELEM_LIST_SET_ID, id));
        }
        // libnftnl numbers the items of the list 1, 2, 3... where other
        // lists use NFTA_LIST_ELEM; the kernel reads neither. Fewer than
        // 4,000 items fit in one request (MAX_ATTR_VALUE).
        let elements = (chunk.into_iter().enumerate())
            .map(|(i, (attrs, _))| Attr::nested(u16::try_from(i + 1).unwrap_or(u16::MAX), attrs))
            .collect();
        attrs.push(Attr::nested(NFTA_SET_ELEM_LIST_ELEMENTS, elements));
        let set = set.name.clone();
        let (msg_type, flags, operation) = if add {
            (NFT_MSG_NEWSETELEM, CREATE, Operation::AddElements { set, count, first })
        } else {
            (
                NFT_MSG_DELSETELEM,
                NLM_F_REQUEST | NLM_F_ACK,
                Operation::DeleteElements { set, count, first },
            )
        };
        Self {
            msg_type,
            flags,
            attrs,
            operation,
        }
    }

    /// `NFT_MSG_NEWRULE`: rule `index` of `chain`, appended.
    pub fn new_rule(
        table: &Table,
        compiler: &Compiler<'_>,
        chain: &Chain,
        index: usize,
        rule: &model::Rule,
    ) -> Result<Self, NftBuildError> {
        let exprs = compiler.rule(chain.name, rule)?;
        Ok(Self {
            msg_type: NFT_MSG_NEWRULE,
            flags: CREATE | NLM_F_APPEND,
            attrs: vec![
                Attr::string(NFTA_RULE_TABLE, table.name),
                Attr::string(NFTA_RULE_CHAIN, chain.name),
                Attr::nested(NFTA_RULE_EXPRESSIONS, exprs.iter().map(|e| e.to_attr()).collect()),
            ],
            operation: Operation::AddRule {
                chain: chain.name.to_string(),
                index,
            },
        })
    }
}

/// An element as `nft` prints it: fields joined by ` . `.
pub fn element_text(element: &Element) -> String {
    let fields: Vec<String> = element
        .iter()
        .map(|value| match value {
            model::Value::Addr(addr) => addr.to_string(),
            model::Value::Prefix(addr, len) => format!("{addr}/{len}"),
            model::Value::Proto(proto) => proto.as_str().to_ascii_lowercase(),
            model::Value::Port(port) => port.to_string(),
        })
        .collect();
    fields.join(" . ")
}

fn nul_terminated(s: &str) -> Vec<u8> {
    let mut bytes = s.as_bytes().to_vec();
    bytes.push(0);
    bytes
}

/// One userdata TLV: a type byte, a length byte, the value.
fn udata(kind: u8, value: &[u8], what: impl Fn() -> String) -> Result<Vec<u8>, NftBuildError> {
    let len = u8::try_from(value.len()).map_err(|_| NftBuildError::CommentTooLong { what: what() })?;
    let mut out = vec![kind, len];
    out.extend_from_slice(value);
    Ok(out)
}
