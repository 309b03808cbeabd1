//! The agent's state files, from bytes: the state file (a control plane
//! snapshot, `ipvs_agent::state::parse`, what `state::load` does once the
//! file is read) and the plan-state file (`state::parse_plan_state`). The
//! first byte picks which; the rest is the file's text.
//!
//! Asserts: nothing panics (a corrupt file is an error, never a panic); a
//! snapshot that decodes either restores or is refused with an error, and
//! one that restores gives a control plane whose own snapshot, written and
//! read back as the agent does, restores to an equal control plane; a
//! ClusterIP held by two restored Services is reported by the repair loop
//! (such snapshots are restored on purpose, for repair to find); a plan
//! state that decodes writes and reads back equal.
#![no_main]

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

use ipvs_agent::state;
use libfuzzer_sys::fuzz_target;
use svcnet_core::controlplane::ControlPlane;

fn check_snapshot(text: &str) {
    let Ok(snapshot) = state::parse(text) else {
        return;
    };
    let Ok(cp) = ControlPlane::restore(snapshot) else {
        return;
    };
    // A snapshot may hold Services that share a ClusterIP (an edited file,
    // or a state the repair loop is meant to find, as Kubernetes' repair
    // controller does: tests/vectors/repair.yaml restores one on purpose).
    // What is checked is that repair reports every one of them.
    let mut holders: BTreeMap<String, usize> = BTreeMap::new();
    // Headless and ExternalName Services hold no ClusterIP, whatever their
    // clusterIPs say (Kubernetes' repair controller skips them too).
    for svc in cp
        .services()
        .filter(|s| !s.is_headless() && s.service_type() != "ExternalName")
    {
        let own: BTreeSet<&String> = svc
            .spec
            .cluster_ips
            .iter()
            .filter(|ip| ip.parse::<IpAddr>().is_ok())
            .collect();
        for ip in own {
            *holders.entry(ip.clone()).or_default() += 1;
        }
    }
    let shared = holders.values().filter(|n| **n > 1).count();
    let mut repaired = cp.clone();
    let events = repaired.repair();
    assert!(
        shared == 0 || !events.is_empty(),
        "{shared} ClusterIPs held twice and repair found nothing"
    );
    for written in [cp.snapshot(), cp.allocation_snapshot()] {
        let json = serde_json::to_string_pretty(&written).expect("a snapshot serialises");
        let read = state::parse(&json).expect("a written state file reads back");
        assert_eq!(read, written, "state file round trip");
        let again = ControlPlane::restore(read).expect("a written state file restores");
        if written == cp.snapshot() {
            assert_eq!(again, cp, "restore(snapshot(cp)) != cp");
        }
    }
}

fn check_plan_state(text: &str) {
    let Ok(plan_state) = state::parse_plan_state(text) else {
        return;
    };
    let json = serde_json::to_string_pretty(&plan_state).expect("a plan state serialises");
    let read = state::parse_plan_state(&json).expect("a written plan state reads back");
    assert_eq!(read, plan_state, "plan state round trip");
}

fuzz_target!(|data: &[u8]| {
    let Some((&which, rest)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    if which.is_multiple_of(2) {
        check_snapshot(text);
    } else {
        check_plan_state(text);
    }
});
