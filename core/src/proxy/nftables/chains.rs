//! The chains of svcnet's table and their rules. They depend only on the
//! proxy's settings (`masqueradeAll`, the cluster CIDRs), never on
//! Services or endpoints: those only add and remove set elements.
//!
//! Each base chain sits where the iptables chain it replaces runs, so that
//! packets meet IPVS in the same state:
//!
//! - `nat-prerouting` and `nat-output`: `type nat`, priority `dstnat`
//!   (-100), iptables' nat PREROUTING and OUTPUT, which jump to
//!   KUBE-SERVICES. Both run before IPVS (LOCAL_IN at 99, LOCAL_OUT at -98)
//!   while the destination is still the Service's address. They only mark
//!   packets for masquerading (the mark 0x4000 kube-proxy uses, so that
//!   other tools reading it keep working).
//! - `nat-postrouting`: `type nat`, priority `srcnat` (100), iptables' nat
//!   POSTROUTING (KUBE-POSTROUTING). IPVS has rewritten the destination to
//!   the endpoint by then: hairpin traffic is recognised by its endpoint,
//!   everything else by the mark.
//! - `filter-input` and `filter-forward`: `type filter`, priority `filter`
//!   (0), iptables' filter INPUT (KUBE-IPVS-FILTER, KUBE-PROXY-FIREWALL) and
//!   FORWARD (KUBE-PROXY-FIREWALL, KUBE-FORWARD). INPUT at 0 runs before
//!   IPVS takes the packet at LOCAL_IN, so the destination is still the
//!   Service's.
//! - `filter-output`: `type filter`, priority `dstnat - 10` (-110), for
//!   KUBE-IPVS-OUT-FILTER. kube-proxy's rule sits in filter OUTPUT (0),
//!   after IPVS has rewritten the destination, and finds the Service's
//!   address with the `ipvs` match, which nftables lacks; run before IPVS
//!   instead, where the destination is still that address.
//!
//! Regular chains: `services` (KUBE-SERVICES with KUBE-LOAD-BALANCER and
//! the nat half of KUBE-NODE-PORT), `mark-for-masquerade` (KUBE-MARK-MASQ)
//! and `firewall` (KUBE-PROXY-FIREWALL with KUBE-SOURCE-RANGES-FIREWALL).

use super::model::{
    BaseChain, Chain, ChainType, CtState, Expr, Field, Hook, MarkOp, Op, Priority, PriorityName, Right, Rule, Value,
    Verdict,
};
use super::sets::{daddr, saddr, SetKind, FAMILIES};
use crate::family::IpFamily;
use crate::proxy::desired::ProxyConfig;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// The bit marking a packet for masquerading: kube-proxy's default
/// `masqueradeBit` 14.
pub const MASQUERADE_MARK: u32 = 0x4000;

/// Every chain, base chains first.
pub fn chains(config: &ProxyConfig) -> Vec<Chain> {
    vec![
        base(
            "nat-prerouting",
            ChainType::Nat,
            Hook::Prerouting,
            PriorityName::Dstnat,
            0,
            "Service traffic arriving (iptables nat PREROUTING -> KUBE-SERVICES)",
            vec![rule(
                "send arriving packets through the services chain while their destination is still the Service's address",
                vec![Expr::Verdict(Verdict::Jump("services"))],
            )],
        ),
        base(
            "nat-output",
            ChainType::Nat,
            Hook::Output,
            PriorityName::Dstnat,
            0,
            "Service traffic from this node (iptables nat OUTPUT -> KUBE-SERVICES)",
            vec![rule(
                "send this node's own packets through the services chain too",
                vec![Expr::Verdict(Verdict::Jump("services"))],
            )],
        ),
        base(
            "nat-postrouting",
            ChainType::Nat,
            Hook::Postrouting,
            PriorityName::Srcnat,
            0,
            "masquerade hairpin and marked traffic (KUBE-POSTROUTING)",
            postrouting(),
        ),
        base(
            "filter-input",
            ChainType::Filter,
            Hook::Input,
            PriorityName::Filter,
            0,
            "refuse kube-ipvs0 addresses on ports no Service has (KUBE-IPVS-FILTER), then source ranges",
            input(),
        ),
        base(
            "filter-forward",
            ChainType::Filter,
            Hook::Forward,
            PriorityName::Filter,
            0,
            "source ranges, then accept marked and established traffic (KUBE-PROXY-FIREWALL, KUBE-FORWARD)",
            forward(),
        ),
        base(
            "filter-output",
            ChainType::Filter,
            Hook::Output,
            PriorityName::Dstnat,
            -10,
            "this node may not reach LoadBalancers whose source ranges leave it out (KUBE-IPVS-OUT-FILTER)",
            FAMILIES
                .iter()
                .map(|&f| {
                    let fields = vec![saddr(f), daddr(f), Field::L4Proto, Field::ThDport];
                    rule(
                        "drop this node's packets to a LoadBalancer IP whose source ranges leave the node out",
                        vec![in_set(fields, SetKind::NoNodeAccess, f), Expr::Verdict(Verdict::Drop)],
                    )
                })
                .collect(),
        ),
        Chain {
            name: "services",
            base: None,
            comment: "mark Service traffic that must be masqueraded (KUBE-SERVICES)",
            rules: services(config),
        },
        Chain {
            name: "mark-for-masquerade",
            base: None,
            comment: "KUBE-MARK-MASQ",
            rules: vec![rule(
                "set the masquerade bit; nat-postrouting masquerades what carries it",
                vec![Expr::SetMark {
                    op: MarkOp::Or,
                    bits: MASQUERADE_MARK,
                }],
            )],
        },
        Chain {
            name: "firewall",
            base: None,
            comment:
                "drop LoadBalancer traffic from outside its loadBalancerSourceRanges (KUBE-SOURCE-RANGES-FIREWALL)",
            rules: FAMILIES
                .iter()
                .map(|&f| {
                    let frontend = vec![daddr(f), Field::L4Proto, Field::ThDport];
                    let with_source = vec![daddr(f), Field::L4Proto, Field::ThDport, saddr(f)];
                    rule(
                        "drop packets to a LoadBalancer IP with source ranges when their source is outside them",
                        vec![
                            in_set(frontend, SetKind::Firewall, f),
                            not_in_set(with_source, SetKind::FirewallAllow, f),
                            Expr::Verdict(Verdict::Drop),
                        ],
                    )
                })
                .collect(),
        },
    ]
}

fn base(
    name: &'static str,
    kind: ChainType,
    hook: Hook,
    priority: PriorityName,
    offset: i32,
    comment: &'static str,
    rules: Vec<Rule>,
) -> Chain {
    Chain {
        name,
        base: Some(BaseChain {
            kind,
            hook,
            priority: Priority { name: priority, offset },
        }),
        comment,
        rules,
    }
}

fn rule(purpose: &'static str, exprs: Vec<Expr>) -> Rule {
    Rule { exprs, purpose }
}

fn set_match(fields: Vec<Field>, op: Op, kind: SetKind, family: IpFamily) -> Expr {
    Expr::Match {
        fields,
        op,
        right: Right::Set(kind.name(family)),
    }
}

fn in_set(fields: Vec<Field>, kind: SetKind, family: IpFamily) -> Expr {
    set_match(fields, Op::Eq, kind, family)
}

fn not_in_set(fields: Vec<Field>, kind: SetKind, family: IpFamily) -> Expr {
    set_match(fields, Op::Ne, kind, family)
}

/// `daddr . meta l4proto . th dport`.
fn frontend(family: IpFamily) -> Vec<Field> {
    vec![daddr(family), Field::L4Proto, Field::ThDport]
}

fn mark_is(op: Op) -> Expr {
    Expr::Match {
        fields: vec![Field::Mark { mask: MASQUERADE_MARK }],
        op,
        right: Right::Mark(MASQUERADE_MARK),
    }
}

fn to_masquerade() -> Expr {
    Expr::Verdict(Verdict::Jump("mark-for-masquerade"))
}

/// KUBE-SERVICES: loopback sources left alone; external and LoadBalancer
/// addresses with policy Cluster marked; ClusterIPs marked as
/// `masqueradeAll` and the cluster CIDRs say; NodePorts with policy Cluster
/// marked on the NodePort addresses.
fn services(config: &ProxyConfig) -> Vec<Rule> {
    let mut rules = Vec::new();
    for family in FAMILIES {
        let loopback = match family {
            IpFamily::IPv4 => Value::Prefix(IpAddr::V4(Ipv4Addr::new(127, 0, 0, 0)), 8),
            IpFamily::IPv6 => Value::Prefix(IpAddr::V6(Ipv6Addr::LOCALHOST), 128),
        };
        rules.push(rule(
            "leave loopback sources alone: a node process reaching a Service on localhost keeps its address",
            vec![
                Expr::Match {
                    fields: vec![saddr(family)],
                    op: Op::Eq,
                    right: Right::Values(vec![loopback]),
                },
                Expr::Verdict(Verdict::Return),
            ],
        ));
    }
    for family in FAMILIES {
        rules.push(rule(
            "mark traffic to an externalIP or LoadBalancer IP of a policy-Cluster Service: the endpoint may be on another node, so replies must come back here",
            vec![in_set(frontend(family), SetKind::ExternalIps, family), to_masquerade()],
        ));
    }
    for family in FAMILIES {
        rules.push(cluster_ip_rule(config, family));
    }
    for family in FAMILIES {
        rules.push(rule(
            "mark traffic to a NodePort of a policy-Cluster Service on a node address, for the same reason",
            vec![
                in_set(vec![daddr(family)], SetKind::NodePortIps, family),
                in_set(vec![Field::L4Proto, Field::ThDport], SetKind::NodePorts, family),
                to_masquerade(),
            ],
        ));
    }
    rules
}

/// ClusterIP traffic is marked always with `masqueradeAll`; else when it
/// comes from outside the family's cluster CIDRs; else, with no CIDR of
/// the family to tell, when it comes from a ClusterIP itself (a process
/// on this node whose source address the kernel took from kube-ipvs0).
fn cluster_ip_rule(config: &ProxyConfig, family: IpFamily) -> Rule {
    let cidrs: Vec<Value> = (config.cluster_cidrs.iter())
        .filter(|c| IpFamily::of(c.ip()) == family)
        .map(|c| Value::Prefix(c.network(), c.prefix()))
        .collect();
    let mut exprs = Vec::new();
    let purpose = if config.masquerade_all {
        "mark all ClusterIP traffic (masqueradeAll)"
    } else if !cidrs.is_empty() {
        "mark ClusterIP traffic from outside the cluster CIDR: the pod's reply must come back through this node to be un-DNATed"
    } else {
        "mark ClusterIP traffic a node process sends from a ClusterIP (no cluster CIDR of this family says what is outside)"
    };
    if config.masquerade_all {
        exprs.push(in_set(frontend(family), SetKind::ClusterIps, family));
    } else if !cidrs.is_empty() {
        exprs.push(Expr::Match {
            fields: vec![saddr(family)],
            op: Op::Ne,
            right: Right::Values(cidrs),
        });
        exprs.push(in_set(frontend(family), SetKind::ClusterIps, family));
    } else {
        let from_cluster_ip = vec![saddr(family), Field::L4Proto, Field::ThDport];
        exprs.push(in_set(from_cluster_ip, SetKind::ClusterIps, family));
    }
    exprs.push(to_masquerade());
    rule(purpose, exprs)
}

/// KUBE-POSTROUTING: hairpin traffic masqueraded; marked traffic has its
/// mark cleared (so it is not masqueraded twice) and is masqueraded with
/// random source ports.
fn postrouting() -> Vec<Rule> {
    let mut rules: Vec<Rule> =
        FAMILIES
            .iter()
            .map(|&f| {
                let fields = vec![daddr(f), Field::L4Proto, Field::ThDport, saddr(f)];
                rule(
                "masquerade a pod reaching itself through its Service (hairpin), or its reply would skip the un-DNAT",
                vec![in_set(fields, SetKind::Hairpin, f), Expr::Masquerade { fully_random: false }],
            )
            })
            .collect();
    rules.push(rule(
        "leave unmarked packets as they are",
        vec![mark_is(Op::Ne), Expr::Verdict(Verdict::Return)],
    ));
    rules.push(rule(
        "clear the mark, so the packet is not masqueraded twice",
        vec![Expr::SetMark {
            op: MarkOp::Xor,
            bits: MASQUERADE_MARK,
        }],
    ));
    rules.push(rule(
        "masquerade: the source becomes this node's address, with a random source port",
        vec![Expr::Masquerade { fully_random: true }],
    ));
    rules
}

/// KUBE-IPVS-FILTER: a new connection to a kube-ipvs0 address is refused
/// unless it is for a Service's address, port and protocol (any policy) or
/// a health check port; then the source ranges.
fn input() -> Vec<Rule> {
    let mut rules: Vec<Rule> = FAMILIES
        .iter()
        .map(|&f| {
            rule(
                "refuse a new connection to a kube-ipvs0 address on a port no Service has there (the ClusterIP is bound to the node, so without this any host port would answer)",
                vec![
                Expr::Match {
                    fields: vec![Field::CtState],
                    op: Op::Eq,
                    right: Right::CtStates(vec![CtState::New]),
                },
                in_set(vec![daddr(f)], SetKind::IpvsAddresses, f),
                not_in_set(frontend(f), SetKind::ClusterIps, f),
                not_in_set(frontend(f), SetKind::ExternalIps, f),
                not_in_set(frontend(f), SetKind::ExternalIpsLocal, f),
                not_in_set(vec![Field::ThDport], SetKind::HealthCheckNodePorts, f),
                Expr::Verdict(Verdict::Reject),
                ],
            )
        })
        .collect();
    rules.push(rule(
        "then the LoadBalancer source ranges",
        vec![Expr::Verdict(Verdict::Jump("firewall"))],
    ));
    rules
}

/// KUBE-PROXY-FIREWALL, then KUBE-FORWARD: marked traffic and the rest of
/// its connections accepted.
fn forward() -> Vec<Rule> {
    vec![
        rule(
            "the LoadBalancer source ranges first",
            vec![Expr::Verdict(Verdict::Jump("firewall"))],
        ),
        rule(
            "accept forwarded Service traffic marked for masquerading, whatever the host's FORWARD policy",
            vec![mark_is(Op::Eq), Expr::Verdict(Verdict::Accept)],
        ),
        rule(
            "and the rest of those connections",
            vec![
                Expr::Match {
                    fields: vec![Field::CtState],
                    op: Op::Eq,
                    right: Right::CtStates(vec![CtState::Established, CtState::Related]),
                },
                Expr::Verdict(Verdict::Accept),
            ],
        ),
    ]
}
