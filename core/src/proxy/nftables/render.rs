//! The ruleset as `nft` text, laid out as `nft list ruleset` prints it
//! (tabs, sets before chains, a blank line between them, one element per
//! line) and accepted by
//! `nft -f`. Deterministic: sets and chains in the table's order, elements
//! sorted (IPv4 before IPv6, numerically).

use super::model::{
    BaseChain, Chain, ChainType, CtState, Element, Expr, Field, Hook, KeyType, MarkOp, Op, PriorityName, Right, Rule,
    Set, Table, Value, Verdict,
};
use crate::collections::SortedSet;
use crate::proxy::table::Protocol;
use serde::Serialize;

/// One line of the ruleset's text, with what the playground shows beside
/// it: whether it belongs to the Service picked (a set element of it), and
/// for a rule what the rule is for.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct NftLine {
    /// The line, without its line break.
    pub text: String,
    /// A set element of the Service picked.
    pub highlight: bool,
    /// For a rule: what it is for, in plain words.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub purpose: Option<&'static str>,
}

/// `table inet svcnet { ... }`.
pub fn nft_text(table: &Table) -> String {
    let lines = nft_lines(table, &SortedSet::new());
    lines.into_iter().map(|l| l.text + "\n").collect()
}

/// The lines of [`nft_text`], each element of `highlight` (set name and
/// element) marked.
pub fn nft_lines(table: &Table, highlight: &SortedSet<(String, Element)>) -> Vec<NftLine> {
    let mut lines = vec![plain(format!("table {} {} {{", table.family, table.name))];
    for (i, set) in table.sets.iter().enumerate() {
        if i > 0 {
            lines.push(plain(String::new()));
        }
        write_set(&mut lines, set, highlight);
    }
    for (i, chain) in table.chains.iter().enumerate() {
        if i > 0 || !table.sets.is_empty() {
            lines.push(plain(String::new()));
        }
        write_chain(&mut lines, chain);
    }
    lines.push(plain("}".into()));
    lines
}

fn plain(text: String) -> NftLine {
    NftLine {
        text,
        highlight: false,
        purpose: None,
    }
}

fn write_set(out: &mut Vec<NftLine>, set: &Set, highlight: &SortedSet<(String, Element)>) {
    let key: Vec<&str> = set.key.iter().map(|k| key_type(*k)).collect();
    out.push(plain(format!("\tset {} {{", set.name)));
    out.push(plain(format!("\t\ttype {}", key.join(" . "))));
    if set.interval {
        out.push(plain("\t\tflags interval".into()));
    }
    out.push(plain(format!("\t\tcomment {}", quoted(set.comment))));
    let last = set.elements.len().saturating_sub(1);
    for (i, e) in set.elements.iter().enumerate() {
        let lead = if i == 0 { "\t\telements = { " } else { "\t\t\t     " };
        let end = if i == last { " }" } else { "," };
        out.push(NftLine {
            text: format!("{lead}{}{end}", element(e)),
            highlight: highlight.contains(&(set.name.clone(), e.clone())),
            purpose: None,
        });
    }
    out.push(plain("\t}".into()));
}

fn write_chain(out: &mut Vec<NftLine>, chain: &Chain) {
    out.push(plain(format!("\tchain {} {{", chain.name)));
    out.push(plain(format!("\t\tcomment {}", quoted(chain.comment))));
    if let Some(base) = &chain.base {
        out.push(plain(format!("\t\t{}", base_line(base))));
    }
    for rule in &chain.rules {
        out.push(NftLine {
            text: format!("\t\t{}", rule_text(rule)),
            highlight: false,
            purpose: Some(rule.purpose),
        });
    }
    out.push(plain("\t}".into()));
}

fn base_line(base: &BaseChain) -> String {
    let kind = match base.kind {
        ChainType::Nat => "nat",
        ChainType::Filter => "filter",
    };
    let hook = match base.hook {
        Hook::Prerouting => "prerouting",
        Hook::Input => "input",
        Hook::Forward => "forward",
        Hook::Output => "output",
        Hook::Postrouting => "postrouting",
    };
    let name = match base.priority.name {
        PriorityName::Dstnat => "dstnat",
        PriorityName::Filter => "filter",
        PriorityName::Srcnat => "srcnat",
    };
    // nft (1.0.6) takes the nat names only on the hooks iptables' nat
    // chains of that name use: a number elsewhere.
    let named = match base.priority.name {
        PriorityName::Dstnat => base.hook == Hook::Prerouting,
        PriorityName::Srcnat => base.hook == Hook::Postrouting,
        PriorityName::Filter => true,
    };
    let priority = match base.priority.offset {
        _ if !named => base.priority.value().to_string(),
        0 => name.to_string(),
        o if o > 0 => format!("{name} + {o}"),
        o => format!("{name} - {}", -o),
    };
    format!("type {kind} hook {hook} priority {priority}; policy accept;")
}

/// One rule, as `nft` writes it.
pub fn rule_text(rule: &Rule) -> String {
    rule.exprs.iter().map(expr).collect::<Vec<_>>().join(" ")
}

fn expr(e: &Expr) -> String {
    match e {
        Expr::Match { fields, op, right } => {
            let left: Vec<String> = fields.iter().map(|f| field(*f)).collect();
            let masked = matches!(fields.as_slice(), [Field::Mark { .. }]);
            let op = match (op, masked) {
                (Op::Eq, false) => "",
                (Op::Eq, true) => "== ",
                (Op::Ne, _) => "!= ",
            };
            format!("{} {op}{}", left.join(" . "), right_text(right))
        }
        Expr::SetMark { op, bits } => {
            let op = match op {
                MarkOp::Or => '|',
                MarkOp::Xor => '^',
            };
            format!("meta mark set meta mark {op} {bits:#010x}")
        }
        Expr::Masquerade { fully_random } => {
            if *fully_random {
                "masquerade fully-random".into()
            } else {
                "masquerade".into()
            }
        }
        Expr::Verdict(v) => match v {
            Verdict::Accept => "accept".into(),
            Verdict::Drop => "drop".into(),
            Verdict::Reject => "reject".into(),
            Verdict::Return => "return".into(),
            Verdict::Jump(chain) => format!("jump {chain}"),
        },
    }
}

fn field(f: Field) -> String {
    match f {
        Field::IpSaddr => "ip saddr".into(),
        Field::IpDaddr => "ip daddr".into(),
        Field::Ip6Saddr => "ip6 saddr".into(),
        Field::Ip6Daddr => "ip6 daddr".into(),
        Field::L4Proto => "meta l4proto".into(),
        Field::ThDport => "th dport".into(),
        Field::CtState => "ct state".into(),
        Field::Mark { mask } => format!("meta mark & {mask:#010x}"),
    }
}

fn right_text(right: &Right) -> String {
    match right {
        Right::Set(name) => format!("@{name}"),
        Right::Values(values) => match values.as_slice() {
            [one] => value(one),
            many => format!("{{ {} }}", many.iter().map(value).collect::<Vec<_>>().join(", ")),
        },
        Right::CtStates(states) => states
            .iter()
            .map(|s| match s {
                CtState::New => "new",
                CtState::Established => "established",
                CtState::Related => "related",
            })
            .collect::<Vec<_>>()
            .join(","),
        Right::Mark(mark) => format!("{mark:#010x}"),
    }
}

fn element(values: &[Value]) -> String {
    values.iter().map(value).collect::<Vec<_>>().join(" . ")
}

/// A value as `nft` prints it; a prefix as long as the address is the
/// address alone.
fn value(v: &Value) -> String {
    match v {
        Value::Addr(ip) => ip.to_string(),
        Value::Prefix(ip, len) => {
            let full = if ip.is_ipv4() { 32 } else { 128 };
            if *len == full {
                ip.to_string()
            } else {
                format!("{ip}/{len}")
            }
        }
        Value::Proto(p) => match p {
            Protocol::Tcp => "tcp",
            Protocol::Udp => "udp",
            Protocol::Sctp => "sctp",
        }
        .into(),
        Value::Port(port) => port.to_string(),
    }
}

fn key_type(k: KeyType) -> &'static str {
    match k {
        KeyType::Ipv4Addr => "ipv4_addr",
        KeyType::Ipv6Addr => "ipv6_addr",
        KeyType::InetProto => "inet_proto",
        KeyType::InetService => "inet_service",
    }
}

/// A double-quoted string; the comments are svcnet's own text, without
/// quotes inside.
fn quoted(text: &str) -> String {
    format!("\"{text}\"")
}
