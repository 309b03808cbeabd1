//! The ruleset as plain data: one table of named sets and chains, each
//! rule a short list of typed expressions (never a string), so that the
//! agent can emit them as nf_tables netlink messages and diff set elements,
//! and [`render`](super::render) can print them as `nft` text.

use crate::collections::SortedSet;
use crate::proxy::table::Protocol;
use std::net::IpAddr;

/// One nftables table, with its sets and chains in the order they are
/// created and listed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Table {
    /// The address family: `inet`, both IPv4 and IPv6.
    pub family: &'static str,
    /// The table's name.
    pub name: &'static str,
    /// Named sets, in listing order.
    pub sets: Vec<Set>,
    /// Chains, base chains first, in listing order.
    pub chains: Vec<Chain>,
}

impl Table {
    /// The set called `name`.
    pub fn set(&self, name: &str) -> Option<&Set> {
        self.sets.iter().find(|s| s.name == name)
    }

    #[cfg(test)]
    pub(crate) fn set_mut(&mut self, name: &str) -> Option<&mut Set> {
        self.sets.iter_mut().find(|s| s.name == name)
    }
}

/// A named set: its key type (a concatenation of one or more data
/// types), whether elements may be ranges, and its elements.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Set {
    /// The set's name, referred to as `@name` in rules.
    pub name: String,
    /// The key, one data type per concatenated field.
    pub key: Vec<KeyType>,
    /// `flags interval`: elements may hold prefixes.
    pub interval: bool,
    /// What the set holds, and which kube-proxy ipset it replaces.
    pub comment: &'static str,
    /// The elements, sorted.
    pub elements: SortedSet<Element>,
}

/// One field of a set key, as nftables names its data types.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyType {
    /// `ipv4_addr`.
    Ipv4Addr,
    /// `ipv6_addr`.
    Ipv6Addr,
    /// `inet_proto`: the transport protocol number.
    InetProto,
    /// `inet_service`: a port.
    InetService,
}

/// A set element: one value per key field.
pub type Element = Vec<Value>;

/// A value in a set element or a rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Value {
    /// An address.
    Addr(IpAddr),
    /// An address prefix: network address and length (interval sets).
    Prefix(IpAddr, u8),
    /// A transport protocol.
    Proto(Protocol),
    /// A port.
    Port(u16),
}

/// A chain: a base chain attached to a netfilter hook, or a regular chain
/// reached by `jump`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Chain {
    /// The chain's name.
    pub name: &'static str,
    /// Type, hook and priority of a base chain; `None` for a regular one.
    pub base: Option<BaseChain>,
    /// What the chain is for, and which kube-proxy chain it stands for.
    pub comment: &'static str,
    /// The rules, in order.
    pub rules: Vec<Rule>,
}

/// Where a base chain attaches. Its policy is always `accept`: svcnet's
/// table drops only what a rule drops, and leaves the rest to other tables.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BaseChain {
    /// `nat` or `filter`.
    pub kind: ChainType,
    /// The netfilter hook.
    pub hook: Hook,
    /// The priority: a standard name plus an offset.
    pub priority: Priority,
}

/// A base chain's type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChainType {
    /// `nat`: sees the first packet of each connection; may masquerade.
    Nat,
    /// `filter`: sees every packet.
    Filter,
}

/// A netfilter hook.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hook {
    /// Packets arriving, before routing.
    Prerouting,
    /// Packets for this host, after routing.
    Input,
    /// Packets routed through this host.
    Forward,
    /// Packets this host sends, before routing is final.
    Output,
    /// Every packet leaving, last.
    Postrouting,
}

/// A standard priority name and an offset from it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Priority {
    /// `dstnat` (-100), `filter` (0) or `srcnat` (100).
    pub name: PriorityName,
    /// Added to the named value.
    pub offset: i32,
}

/// The standard priorities svcnet's chains use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PriorityName {
    /// -100, where iptables' nat PREROUTING and OUTPUT run.
    Dstnat,
    /// 0, where iptables' filter INPUT, FORWARD and OUTPUT run.
    Filter,
    /// 100, where iptables' nat POSTROUTING runs.
    Srcnat,
}

impl Priority {
    /// The numeric priority.
    pub fn value(self) -> i32 {
        let base = match self.name {
            PriorityName::Dstnat => -100,
            PriorityName::Filter => 0,
            PriorityName::Srcnat => 100,
        };
        base + self.offset
    }
}

/// A rule: expressions evaluated in order; the first that does not match
/// ends the rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rule {
    /// Matches, then statements, then at most one verdict.
    pub exprs: Vec<Expr>,
    /// What the rule is for, in plain words (shown beside it in the
    /// playground; not sent to the kernel).
    pub purpose: &'static str,
}

/// One expression of a rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Expr {
    /// Compares packet fields (concatenated when several) with a set or
    /// literal values.
    Match {
        /// The fields read, concatenated in order.
        fields: Vec<Field>,
        /// Equal (member) or not equal (not a member).
        op: Op,
        /// What they are compared with.
        right: Right,
    },
    /// `meta mark set meta mark | bits` or `^ bits`.
    SetMark {
        /// Or (set the bits) or xor (clear bits known to be set).
        op: MarkOp,
        /// The bits.
        bits: u32,
    },
    /// Source NAT to the outgoing interface's address.
    Masquerade {
        /// `fully-random`: random source ports, as kube-proxy's
        /// `--random-fully`.
        fully_random: bool,
    },
    /// The verdict that ends the rule when everything before matched.
    Verdict(Verdict),
}

/// A packet field a rule reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Field {
    /// `ip saddr`.
    IpSaddr,
    /// `ip daddr`.
    IpDaddr,
    /// `ip6 saddr`.
    Ip6Saddr,
    /// `ip6 daddr`.
    Ip6Daddr,
    /// `meta l4proto`: the transport protocol.
    L4Proto,
    /// `th dport`: the transport destination port.
    ThDport,
    /// `ct state`.
    CtState,
    /// `meta mark & mask`.
    Mark {
        /// The bits compared.
        mask: u32,
    },
}

/// Equal or not.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// Equal, or a member of the set.
    Eq,
    /// Not equal, or not a member.
    Ne,
}

/// The right-hand side of a match.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Right {
    /// A named set of the table.
    Set(String),
    /// Literal values; more than one make an anonymous set.
    Values(Vec<Value>),
    /// Connection tracking states.
    CtStates(Vec<CtState>),
    /// A mark value (after the mask).
    Mark(u32),
}

/// A connection tracking state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CtState {
    /// The first packet of a connection.
    New,
    /// A packet of a connection seen both ways.
    Established,
    /// A packet related to a known connection (ICMP errors, FTP data).
    Related,
}

/// How [`Expr::SetMark`] changes the mark.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MarkOp {
    /// `|`.
    Or,
    /// `^`.
    Xor,
}

/// What happens to a packet when a rule matches.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Ends this base chain; other tables still see the packet.
    Accept,
    /// Dropped, silently.
    Drop,
    /// Dropped with an ICMP port unreachable (TCP: connection refused).
    Reject,
    /// Back to the calling chain.
    Return,
    /// Into a regular chain, then back.
    Jump(&'static str),
}
