//! The ruleset as `nft` text, laid out as `nft list ruleset` prints it
//! (tabs, sets before chains, a blank line between them, one element per
//! line) and accepted by
//! `nft -f`. Deterministic: sets and chains in the table's order, elements
//! sorted (IPv4 before IPv6, numerically).

use super::model::{
    BaseChain, Chain, ChainType, CtState, Expr, Field, Hook, KeyType, MarkOp, Op, PriorityName, Right, Rule, Set,
    Table, Value, Verdict,
};
use crate::proxy::table::Protocol;
use std::fmt::Write;

/// `table inet svcnet { ... }`.
pub fn nft_text(table: &Table) -> String {
    let mut blocks: Vec<String> = Vec::new();
    for set in &table.sets {
        let mut block = String::new();
        write_set(&mut block, set);
        blocks.push(block);
    }
    for chain in &table.chains {
        let mut block = String::new();
        write_chain(&mut block, chain);
        blocks.push(block);
    }
    format!("table {} {} {{\n{}}}\n", table.family, table.name, blocks.join("\n"))
}

fn write_set(out: &mut String, set: &Set) {
    let key: Vec<&str> = set.key.iter().map(|k| key_type(*k)).collect();
    // Writing to a String cannot fail.
    let _ = writeln!(out, "\tset {} {{\n\t\ttype {}", set.name, key.join(" . "));
    if set.interval {
        out.push_str("\t\tflags interval\n");
    }
    let _ = writeln!(out, "\t\tcomment {}", quoted(set.comment));
    if !set.elements.is_empty() {
        let elements: Vec<String> = set.elements.iter().map(|e| element(e)).collect();
        let _ = writeln!(out, "\t\telements = {{ {} }}", elements.join(",\n\t\t\t     "));
    }
    out.push_str("\t}\n");
}

fn write_chain(out: &mut String, chain: &Chain) {
    let _ = writeln!(out, "\tchain {} {{", chain.name);
    let _ = writeln!(out, "\t\tcomment {}", quoted(chain.comment));
    if let Some(base) = &chain.base {
        let _ = writeln!(out, "\t\t{}", base_line(base));
    }
    for rule in &chain.rules {
        let _ = writeln!(out, "\t\t{}", rule_text(rule));
    }
    out.push_str("\t}\n");
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
