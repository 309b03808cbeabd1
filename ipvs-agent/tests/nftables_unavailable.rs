//! A kernel without nf_tables, as `run` meets it by default: one warning
//! naming what is missing and what the node goes without, however many
//! syncs follow, and `svcnet_nftables_available 0`. Checked in a process
//! of its own, as `sync_log.rs` is: tracing's callsite caches are global.
//! The kernel's answers are stood in for (this host has nf_tables); what
//! a real kernel answers is in `ipvs_agent::nftables::error` and
//! `nftables::tests::replies`.

mod common;

use common::LogCapture;
use ipvs_agent::kernel::nft::{NftError, NftSyncOutcome};
use ipvs_agent::metrics::Metrics;
use ipvs_agent::nftables::{NftRefusal, Operation};
use ipvs_agent::nftables_sync::{NftablesMode, NftablesSync, TableApplier};
use std::sync::Arc;
use svcnet_core::proxy::nftables::{RulesetIndex, Table};
use svcnet_core::proxy::{NodeInfo, ProxyConfig};

/// A kernel whose netfilter netlink has no nf_tables subsystem: every
/// transaction refused on its batch-begin message with EOPNOTSUPP.
#[derive(Debug)]
struct NoSubsystem;

impl TableApplier for NoSubsystem {
    fn sync(&mut self, _desired: &Table) -> Result<NftSyncOutcome, NftError> {
        Err(NftError::Refused(NftRefusal {
            operation: Operation::Batch,
            errno: 95,
            message: None,
        }))
    }
}

#[test]
fn a_kernel_without_nf_tables_is_warned_about_once() {
    let log = LogCapture::start();
    let node = NodeInfo {
        name: "node-a".into(),
        ips: vec!["192.168.0.10".parse().unwrap()],
        zone: None,
    };

    // No netfilter netlink: the socket does not open.
    let metrics = Arc::new(Metrics::default());
    let mut no_protocol = NftablesSync::<NoSubsystem>::start(NftablesMode::ByDefault, metrics.clone(), || {
        Err(NftError::Io(std::io::Error::from_raw_os_error(libc::EPROTONOSUPPORT)))
    })
    .unwrap();
    // No nf_tables subsystem: the first transaction is refused.
    let mut no_subsystem = NftablesSync::start(NftablesMode::ByDefault, metrics.clone(), || Ok(NoSubsystem)).unwrap();
    let ruleset = RulesetIndex::new(&node, &ProxyConfig::default());
    for _ in 0..5 {
        assert!(no_protocol.sync(Some(ruleset.table())).unwrap());
        assert!(no_subsystem.sync(Some(ruleset.table())).unwrap());
    }

    let text = log.text();
    let warnings: Vec<&str> = text.lines().filter(|l| l.contains(" WARN ")).collect();
    assert_eq!(warnings.len(), 2, "one per agent:\n{text}");
    assert!(
        warnings[0].contains("nftables: this kernel has no netfilter netlink (a NETLINK_NETFILTER socket cannot be opened: EPROTONOSUPPORT; module nfnetlink)"),
        "{}",
        warnings[0]
    );
    assert!(
        warnings[1].contains("nftables: this kernel has no nf_tables (netfilter netlink refused the transaction: EOPNOTSUPP; module nf_tables)"),
        "{}",
        warnings[1]
    );
    for warning in &warnings {
        for what in [
            "Table inet svcnet is not kept",
            "no masquerading",
            "no loadBalancerSourceRanges filtering",
            "IPVS is programmed as usual",
            "--nftables=false",
        ] {
            assert!(warning.contains(what), "{what} missing from {warning}");
        }
    }
    assert!(!text.contains(" ERROR "), "{text}");
    assert!(metrics.render().lines().any(|l| l == "svcnet_nftables_available 0"));
}
