//! A real-kernel check of `ipvs_agent::kernel::nft` that needs no IPVS: run
//! it as root in a fresh network namespace (`ip netns exec NS nft_check`),
//! on the host or in the VM. It keeps table `inet svcnet` through the
//! transactions a node goes through and prints what each sync did and what
//! `nft list` should then show; exits 0 when every step went as expected.
//!
//!  1. a first sync creates the table (replacing any left over);
//!  2. the same ruleset again sends nothing;
//!  3. one element changed sends only that change;
//!  4. a new applier (an agent restart) replaces the table whole;
//!  5. a change of shape (`masqueradeAll`) replaces it;
//!  6. a refused transaction (an element for a set that is not there) is
//!     reported naming the set, and leaves the table as it was;
//!  7. cleanup deletes the table, twice (the second finds none);
//!  8. a transaction sent without CAP_NET_ADMIN is refused as a whole, on
//!     its batch-begin message (how the kernel also refuses one when it has
//!     no nf_tables subsystem), and is not taken for a kernel without
//!     nf_tables.

use std::net::IpAddr;
use std::process::ExitCode;

use ipvs_agent::kernel::nft::{NftApplier, NftError, NftSocket, NftSyncOutcome};
use ipvs_agent::nftables::{NftMessage, Operation};
use svcnet_core::proxy::nftables::empty_table;
use svcnet_core::proxy::nftables::model::{Element, Table, Value};
use svcnet_core::proxy::table::Protocol;
use svcnet_core::proxy::ProxyConfig;

fn config(masquerade_all: bool) -> ProxyConfig {
    ProxyConfig {
        cluster_cidrs: vec!["10.244.0.0/16".parse().expect("a CIDR")],
        masquerade_all,
        ..ProxyConfig::default()
    }
}

fn cluster_ip(ip: &str, port: u16) -> Element {
    vec![
        Value::Addr(ip.parse::<IpAddr>().expect("an address")),
        Value::Proto(Protocol::Tcp),
        Value::Port(port),
    ]
}

fn with(mut table: Table, set: &str, elements: &[Element]) -> Table {
    let set = table.sets.iter_mut().find(|s| s.name == set).expect("the set");
    set.elements.extend(elements.iter().cloned());
    table
}

fn step(ok: &mut bool, name: &str, got: Result<NftSyncOutcome, NftError>, want: NftSyncOutcome) {
    match got {
        Ok(outcome) if outcome == want => println!("PASS {name}: {outcome:?}"),
        other => {
            println!("FAIL {name}: {other:?}, expected {want:?}");
            *ok = false;
        }
    }
}

fn main() -> ExitCode {
    let mut ok = true;
    let one = with(
        empty_table(&config(false)),
        "cluster-ips-v4",
        &[cluster_ip("10.96.0.1", 443)],
    );
    let two = with(
        empty_table(&config(false)),
        "cluster-ips-v4",
        &[cluster_ip("10.96.0.2", 443)],
    );
    let two = with(
        two,
        "firewall-allow-v4",
        &[vec![
            Value::Addr("192.0.2.7".parse().expect("an address")),
            Value::Proto(Protocol::Tcp),
            Value::Port(443),
            Value::Prefix("203.0.113.0".parse().expect("an address"), 24),
        ]],
    );
    let mut applier = NftApplier::open().expect("a netfilter socket");
    step(&mut ok, "first sync", applier.sync(&one), NftSyncOutcome::Replaced);
    step(&mut ok, "same again", applier.sync(&one), NftSyncOutcome::Unchanged);
    step(
        &mut ok,
        "elements",
        applier.sync(&two),
        NftSyncOutcome::Elements { added: 2, removed: 1 },
    );
    let mut restarted = NftApplier::open().expect("a netfilter socket");
    step(&mut ok, "restart", restarted.sync(&two), NftSyncOutcome::Replaced);
    let shape = with(
        empty_table(&config(true)),
        "cluster-ips-v4",
        &[cluster_ip("10.96.0.2", 443)],
    );
    step(&mut ok, "shape", restarted.sync(&shape), NftSyncOutcome::Replaced);

    let mut missing = shape.clone();
    missing.sets[0].name = "no-such-set".into();
    let elements =
        NftMessage::set_elements(&missing, &missing.sets[0], None, true, &missing.sets[0].elements).expect("requests");
    let mut socket = NftSocket::open().expect("a netfilter socket");
    match socket.transact(elements) {
        Err(NftError::Refused(refusal)) if refusal.to_string().contains("set no-such-set") => {
            println!("PASS refused: {refusal}")
        }
        other => {
            println!("FAIL refused: {other:?}");
            ok = false;
        }
    }
    for name in ["cleanup", "cleanup again"] {
        match restarted.delete(&shape) {
            Ok(()) => println!("PASS {name}"),
            Err(e) => {
                println!("FAIL {name}: {e}");
                ok = false;
            }
        }
    }
    let unprivileged = std::thread::spawn(move || {
        // SAFETY: a plain syscall with integer arguments. Made raw, it
        // changes this thread's credentials alone (glibc's setresuid would
        // change every thread's): the thread becomes nobody, without
        // CAP_NET_ADMIN, and ends after this one transaction.
        let dropped = unsafe { libc::syscall(libc::SYS_setresuid, 65534, 65534, 65534) };
        if dropped != 0 {
            return Err(format!("setresuid: {}", std::io::Error::last_os_error()));
        }
        let mut applier = NftApplier::open().map_err(|e| e.to_string())?;
        Ok(applier.sync(&one))
    })
    .join();
    match unprivileged {
        Ok(Ok(Err(NftError::Refused(refusal))))
            if refusal.operation == Operation::Batch
                && refusal.errno == libc::EPERM
                && NftError::Refused(refusal.clone()).missing_nf_tables().is_none() =>
        {
            println!("PASS refused as a whole: {refusal}")
        }
        other => {
            println!("FAIL refused as a whole: {other:?}");
            ok = false;
        }
    }
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}
