//! Numeric constants of nf_tables over nfnetlink, transcribed from the
//! kernel's `include/uapi/linux/netfilter/nfnetlink.h`,
//! `include/uapi/linux/netfilter/nf_tables.h`, `netfilter.h` and
//! `nf_nat.h`, and the userdata tags of libnftnl's `udata.h` that `nft`
//! stores with sets and chains. Only what svcnet's table uses.

// nfnetlink.h
/// The nf_tables subsystem: the high byte of every message type, and the
/// `res_id` of a batch's begin and end messages.
pub const NFNL_SUBSYS_NFTABLES: u16 = 10;
/// Opens a transaction (`NLMSG_MIN_TYPE`).
pub const NFNL_MSG_BATCH_BEGIN: u16 = 0x10;
/// Closes and commits a transaction.
pub const NFNL_MSG_BATCH_END: u16 = 0x11;
/// `NFNETLINK_V0`, the only version.
pub const NFNETLINK_V0: u8 = 0;

// netfilter.h
/// `NFPROTO_UNSPEC`: the family of the batch messages.
pub const NFPROTO_UNSPEC: u8 = 0;
/// `NFPROTO_INET`: IPv4 and IPv6 in one table.
pub const NFPROTO_INET: u8 = 1;
/// `NFPROTO_IPV4`, as `meta nfproto` reads it.
pub const NFPROTO_IPV4: u8 = 2;
/// `NFPROTO_IPV6`, as `meta nfproto` reads it.
pub const NFPROTO_IPV6: u8 = 10;
/// `NF_DROP`.
pub const NF_DROP: i32 = 0;
/// `NF_ACCEPT`, also a base chain's policy.
pub const NF_ACCEPT: i32 = 1;
/// `NF_INET_PRE_ROUTING`.
pub const NF_INET_PRE_ROUTING: u32 = 0;
/// `NF_INET_LOCAL_IN`.
pub const NF_INET_LOCAL_IN: u32 = 1;
/// `NF_INET_FORWARD`.
pub const NF_INET_FORWARD: u32 = 2;
/// `NF_INET_LOCAL_OUT`.
pub const NF_INET_LOCAL_OUT: u32 = 3;
/// `NF_INET_POST_ROUTING`.
pub const NF_INET_POST_ROUTING: u32 = 4;

// nf_tables.h: messages (`enum nf_tables_msg_types`).
/// `NFT_MSG_NEWTABLE`.
pub const NFT_MSG_NEWTABLE: u8 = 0;
/// `NFT_MSG_DELTABLE`.
pub const NFT_MSG_DELTABLE: u8 = 2;
/// `NFT_MSG_NEWCHAIN`.
pub const NFT_MSG_NEWCHAIN: u8 = 3;
/// `NFT_MSG_NEWRULE`.
pub const NFT_MSG_NEWRULE: u8 = 6;
/// `NFT_MSG_NEWSET`.
pub const NFT_MSG_NEWSET: u8 = 9;
/// `NFT_MSG_NEWSETELEM`.
pub const NFT_MSG_NEWSETELEM: u8 = 12;
/// `NFT_MSG_DELSETELEM`.
pub const NFT_MSG_DELSETELEM: u8 = 14;

// Lists and tables.
/// `NFTA_LIST_ELEM`: one item of a list attribute.
pub const NFTA_LIST_ELEM: u16 = 1;
/// `NFTA_TABLE_NAME`.
pub const NFTA_TABLE_NAME: u16 = 1;
/// `NFTA_TABLE_FLAGS`.
pub const NFTA_TABLE_FLAGS: u16 = 2;

// Chains.
/// `NFTA_CHAIN_TABLE`.
pub const NFTA_CHAIN_TABLE: u16 = 1;
/// `NFTA_CHAIN_NAME`.
pub const NFTA_CHAIN_NAME: u16 = 3;
/// `NFTA_CHAIN_HOOK`: nested hook number and priority.
pub const NFTA_CHAIN_HOOK: u16 = 4;
/// `NFTA_CHAIN_POLICY`.
pub const NFTA_CHAIN_POLICY: u16 = 5;
/// `NFTA_CHAIN_TYPE`: `nat`, `filter`.
pub const NFTA_CHAIN_TYPE: u16 = 7;
/// `NFTA_CHAIN_USERDATA`: the comment.
pub const NFTA_CHAIN_USERDATA: u16 = 12;
/// `NFTA_HOOK_HOOKNUM`.
pub const NFTA_HOOK_HOOKNUM: u16 = 1;
/// `NFTA_HOOK_PRIORITY`.
pub const NFTA_HOOK_PRIORITY: u16 = 2;

// Rules and expressions.
/// `NFTA_RULE_TABLE`.
pub const NFTA_RULE_TABLE: u16 = 1;
/// `NFTA_RULE_CHAIN`.
pub const NFTA_RULE_CHAIN: u16 = 2;
/// `NFTA_RULE_EXPRESSIONS`: a list of expressions.
pub const NFTA_RULE_EXPRESSIONS: u16 = 4;
/// `NFTA_EXPR_NAME`.
pub const NFTA_EXPR_NAME: u16 = 1;
/// `NFTA_EXPR_DATA`.
pub const NFTA_EXPR_DATA: u16 = 2;
/// `NFTA_DATA_VALUE`.
pub const NFTA_DATA_VALUE: u16 = 1;
/// `NFTA_DATA_VERDICT`.
pub const NFTA_DATA_VERDICT: u16 = 2;
/// `NFTA_VERDICT_CODE`.
pub const NFTA_VERDICT_CODE: u16 = 1;
/// `NFTA_VERDICT_CHAIN`.
pub const NFTA_VERDICT_CHAIN: u16 = 2;
/// `NFT_JUMP`.
pub const NFT_JUMP: i32 = -3;
/// `NFT_RETURN`.
pub const NFT_RETURN: i32 = -5;
/// `NFT_REG_VERDICT`.
pub const NFT_REG_VERDICT: u32 = 0;
/// `NFT_REG_1`, the first 16-byte register.
pub const NFT_REG_1: u32 = 1;
/// `NFT_REG32_00`, the first 4-byte register.
pub const NFT_REG32_00: u32 = 8;

/// `NFTA_PAYLOAD_DREG`.
pub const NFTA_PAYLOAD_DREG: u16 = 1;
/// `NFTA_PAYLOAD_BASE`.
pub const NFTA_PAYLOAD_BASE: u16 = 2;
/// `NFTA_PAYLOAD_OFFSET`.
pub const NFTA_PAYLOAD_OFFSET: u16 = 3;
/// `NFTA_PAYLOAD_LEN`.
pub const NFTA_PAYLOAD_LEN: u16 = 4;
/// `NFT_PAYLOAD_NETWORK_HEADER`.
pub const NFT_PAYLOAD_NETWORK_HEADER: u32 = 1;
/// `NFT_PAYLOAD_TRANSPORT_HEADER`.
pub const NFT_PAYLOAD_TRANSPORT_HEADER: u32 = 2;

/// `NFTA_META_DREG`.
pub const NFTA_META_DREG: u16 = 1;
/// `NFTA_META_KEY`.
pub const NFTA_META_KEY: u16 = 2;
/// `NFTA_META_SREG`.
pub const NFTA_META_SREG: u16 = 3;
/// `NFT_META_MARK`.
pub const NFT_META_MARK: u32 = 3;
/// `NFT_META_NFPROTO`.
pub const NFT_META_NFPROTO: u32 = 15;
/// `NFT_META_L4PROTO`.
pub const NFT_META_L4PROTO: u32 = 16;

/// `NFTA_CT_DREG`.
pub const NFTA_CT_DREG: u16 = 1;
/// `NFTA_CT_KEY`.
pub const NFTA_CT_KEY: u16 = 2;
/// `NFT_CT_STATE`.
pub const NFT_CT_STATE: u32 = 0;
/// `NF_CT_STATE_BIT(IP_CT_ESTABLISHED)`.
pub const CT_STATE_ESTABLISHED: u32 = 1 << 1;
/// `NF_CT_STATE_BIT(IP_CT_RELATED)`.
pub const CT_STATE_RELATED: u32 = 1 << 2;
/// `NF_CT_STATE_BIT(IP_CT_NEW)`.
pub const CT_STATE_NEW: u32 = 1 << 3;

/// `NFTA_CMP_SREG`.
pub const NFTA_CMP_SREG: u16 = 1;
/// `NFTA_CMP_OP`.
pub const NFTA_CMP_OP: u16 = 2;
/// `NFTA_CMP_DATA`.
pub const NFTA_CMP_DATA: u16 = 3;
/// `NFT_CMP_EQ`.
pub const NFT_CMP_EQ: u32 = 0;
/// `NFT_CMP_NEQ`.
pub const NFT_CMP_NEQ: u32 = 1;

/// `NFTA_BITWISE_SREG`.
pub const NFTA_BITWISE_SREG: u16 = 1;
/// `NFTA_BITWISE_DREG`.
pub const NFTA_BITWISE_DREG: u16 = 2;
/// `NFTA_BITWISE_LEN`.
pub const NFTA_BITWISE_LEN: u16 = 3;
/// `NFTA_BITWISE_MASK`.
pub const NFTA_BITWISE_MASK: u16 = 4;
/// `NFTA_BITWISE_XOR`.
pub const NFTA_BITWISE_XOR: u16 = 5;
/// `NFTA_BITWISE_OP`.
pub const NFTA_BITWISE_OP: u16 = 6;
/// `NFT_BITWISE_BOOL` (mask and xor).
pub const NFT_BITWISE_BOOL: u32 = 0;

/// `NFTA_BYTEORDER_SREG`.
pub const NFTA_BYTEORDER_SREG: u16 = 1;
/// `NFTA_BYTEORDER_DREG`.
pub const NFTA_BYTEORDER_DREG: u16 = 2;
/// `NFTA_BYTEORDER_OP`.
pub const NFTA_BYTEORDER_OP: u16 = 3;
/// `NFTA_BYTEORDER_LEN`.
pub const NFTA_BYTEORDER_LEN: u16 = 4;
/// `NFTA_BYTEORDER_SIZE`.
pub const NFTA_BYTEORDER_SIZE: u16 = 5;
/// `NFT_BYTEORDER_HTON`.
pub const NFT_BYTEORDER_HTON: u32 = 1;

/// `NFTA_LOOKUP_SET`.
pub const NFTA_LOOKUP_SET: u16 = 1;
/// `NFTA_LOOKUP_SREG`.
pub const NFTA_LOOKUP_SREG: u16 = 2;
/// `NFTA_LOOKUP_SET_ID`.
pub const NFTA_LOOKUP_SET_ID: u16 = 4;
/// `NFTA_LOOKUP_FLAGS`.
pub const NFTA_LOOKUP_FLAGS: u16 = 5;
/// `NFT_LOOKUP_F_INV`: match when the key is not in the set.
pub const NFT_LOOKUP_F_INV: u32 = 1;

/// `NFTA_IMMEDIATE_DREG`.
pub const NFTA_IMMEDIATE_DREG: u16 = 1;
/// `NFTA_IMMEDIATE_DATA`.
pub const NFTA_IMMEDIATE_DATA: u16 = 2;

/// `NFTA_MASQ_FLAGS`.
pub const NFTA_MASQ_FLAGS: u16 = 1;
/// `NF_NAT_RANGE_PROTO_RANDOM_FULLY` (nf_nat.h).
pub const NF_NAT_RANGE_PROTO_RANDOM_FULLY: u32 = 1 << 4;

/// `NFTA_REJECT_TYPE`.
pub const NFTA_REJECT_TYPE: u16 = 1;
/// `NFTA_REJECT_ICMP_CODE`.
pub const NFTA_REJECT_ICMP_CODE: u16 = 2;
/// `NFT_REJECT_ICMP_UNREACH`: ICMP or ICMPv6 of the packet's family.
pub const NFT_REJECT_ICMP_UNREACH: u32 = 0;
/// `NFT_REJECT_ICMPX_UNREACH`: family-independent codes.
pub const NFT_REJECT_ICMPX_UNREACH: u32 = 2;
/// `ICMP_PORT_UNREACH`.
pub const ICMP_PORT_UNREACH: u8 = 3;
/// `ICMPV6_PORT_UNREACH`.
pub const ICMPV6_PORT_UNREACH: u8 = 4;
/// `NFT_REJECT_ICMPX_PORT_UNREACH`.
pub const NFT_REJECT_ICMPX_PORT_UNREACH: u8 = 1;

// Sets.
/// `NFTA_SET_TABLE`.
pub const NFTA_SET_TABLE: u16 = 1;
/// `NFTA_SET_NAME`.
pub const NFTA_SET_NAME: u16 = 2;
/// `NFTA_SET_FLAGS`.
pub const NFTA_SET_FLAGS: u16 = 3;
/// `NFTA_SET_KEY_TYPE`.
pub const NFTA_SET_KEY_TYPE: u16 = 4;
/// `NFTA_SET_KEY_LEN`.
pub const NFTA_SET_KEY_LEN: u16 = 5;
/// `NFTA_SET_DESC`.
pub const NFTA_SET_DESC: u16 = 9;
/// `NFTA_SET_ID`: names the set within its batch.
pub const NFTA_SET_ID: u16 = 10;
/// `NFTA_SET_USERDATA`.
pub const NFTA_SET_USERDATA: u16 = 13;
/// `NFTA_SET_DESC_CONCAT`.
pub const NFTA_SET_DESC_CONCAT: u16 = 2;
/// `NFTA_SET_FIELD_LEN`.
pub const NFTA_SET_FIELD_LEN: u16 = 1;
/// `NFT_SET_INTERVAL`.
pub const NFT_SET_INTERVAL: u32 = 0x4;
/// `NFT_SET_CONCAT`.
pub const NFT_SET_CONCAT: u32 = 0x80;

/// `NFTA_SET_ELEM_LIST_TABLE`.
pub const NFTA_SET_ELEM_LIST_TABLE: u16 = 1;
/// `NFTA_SET_ELEM_LIST_SET`.
pub const NFTA_SET_ELEM_LIST_SET: u16 = 2;
/// `NFTA_SET_ELEM_LIST_ELEMENTS`.
pub const NFTA_SET_ELEM_LIST_ELEMENTS: u16 = 3;
/// `NFTA_SET_ELEM_LIST_SET_ID`.
pub const NFTA_SET_ELEM_LIST_SET_ID: u16 = 4;
/// `NFTA_SET_ELEM_KEY`.
pub const NFTA_SET_ELEM_KEY: u16 = 1;
/// `NFTA_SET_ELEM_KEY_END`: the last key of a range.
pub const NFTA_SET_ELEM_KEY_END: u16 = 10;

// libnftnl udata.h: the TLVs `nft` keeps in userdata (type, length, value).
/// `NFTNL_UDATA_SET_KEYBYTEORDER`.
pub const NFTNL_UDATA_SET_KEYBYTEORDER: u8 = 0;
/// `NFTNL_UDATA_SET_KEY_TYPEOF`.
pub const NFTNL_UDATA_SET_KEY_TYPEOF: u8 = 3;
/// `NFTNL_UDATA_SET_COMMENT`.
pub const NFTNL_UDATA_SET_COMMENT: u8 = 7;
/// `NFTNL_UDATA_CHAIN_COMMENT`.
pub const NFTNL_UDATA_CHAIN_COMMENT: u8 = 0;
