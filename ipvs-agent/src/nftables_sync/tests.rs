//! The three modes against a stand-in applier whose answers are scripted:
//! a kernel without nf_tables (the socket refused, the transaction
//! refused, the inet family refused), one with it, and other refusals.

use std::cell::Cell;
use std::collections::VecDeque;
use std::rc::Rc;

use super::*;
use crate::nftables::error::{EAFNOSUPPORT, ENOENT, EOPNOTSUPP, EPERM};
use crate::nftables::{NftRefusal, Operation};
use svcnet_core::proxy::nftables::RulesetIndex;
use svcnet_core::proxy::{NodeInfo, ProxyConfig};

/// Answers each sync with the next scripted result (`Unchanged` once they
/// run out) and counts the syncs.
#[derive(Debug)]
struct Scripted {
    answers: VecDeque<Result<NftSyncOutcome, NftError>>,
    calls: Rc<Cell<usize>>,
}

impl TableApplier for Scripted {
    fn sync(&mut self, _desired: &Table) -> Result<NftSyncOutcome, NftError> {
        self.calls.set(self.calls.get() + 1);
        self.answers.pop_front().unwrap_or(Ok(NftSyncOutcome::Unchanged))
    }
}

fn refused(operation: Operation, errno: i32) -> NftError {
    NftError::Refused(NftRefusal {
        operation,
        errno,
        message: None,
    })
}

fn no_protocol() -> NftError {
    NftError::Io(std::io::Error::from_raw_os_error(libc::EPROTONOSUPPORT))
}

fn node() -> NodeInfo {
    NodeInfo {
        name: "node-a".into(),
        ips: vec!["192.168.0.10".parse().unwrap()],
        zone: None,
    }
}

/// What the applier answers its syncs, in order.
type Answers = Vec<Result<NftSyncOutcome, NftError>>;

/// What [`start`] gives: the start's result, the sync count, the metrics.
type Started = (
    Result<NftablesSync<Scripted>, NftablesError>,
    Rc<Cell<usize>>,
    Arc<Metrics>,
);

/// Starts in `mode` over a scripted applier (opened as `open` says: the
/// scripted answers, or the error).
fn start(mode: NftablesMode, open: Result<Answers, NftError>) -> Started {
    let calls = Rc::new(Cell::new(0));
    let metrics = Arc::new(Metrics::default());
    let counter = calls.clone();
    let sync = NftablesSync::start(mode, metrics.clone(), || {
        open.map(|answers| Scripted {
            answers: answers.into(),
            calls: counter,
        })
    });
    (sync, calls, metrics)
}

fn sync_once(sync: &mut NftablesSync<Scripted>) -> Result<bool, NftablesError> {
    sync.sync(Some(RulesetIndex::new(&node(), &ProxyConfig::default()).table()))
}

fn available(metrics: &Metrics) -> bool {
    metrics.render().lines().any(|l| l == "svcnet_nftables_available 1")
}

#[test]
fn the_flag_gives_the_mode() {
    assert_eq!(NftablesMode::from_flag(None), NftablesMode::ByDefault);
    assert_eq!(NftablesMode::from_flag(Some(true)), NftablesMode::Required);
    assert_eq!(NftablesMode::from_flag(Some(false)), NftablesMode::Off);
}

#[test]
fn off_opens_nothing_and_syncs_nothing() {
    let metrics = Arc::new(Metrics::default());
    let opened = Cell::new(false);
    let mut sync = NftablesSync::<Scripted>::start(NftablesMode::Off, metrics.clone(), || {
        opened.set(true);
        Err(no_protocol())
    })
    .unwrap();
    assert!(!opened.get());
    assert!(sync_once(&mut sync).unwrap());
    assert!(!available(&metrics));
}

#[test]
fn by_default_a_kernel_without_netfilter_netlink_leaves_ipvs_alone() {
    let (sync, calls, metrics) = start(NftablesMode::ByDefault, Err(no_protocol()));
    let mut sync = sync.unwrap();
    for _ in 0..3 {
        assert!(sync_once(&mut sync).unwrap(), "a sync of IPVS alone is no failure");
    }
    assert_eq!(calls.get(), 0);
    assert!(!available(&metrics));
}

#[test]
fn by_default_a_transaction_refused_for_want_of_nf_tables_is_tried_once() {
    for (operation, errno) in [
        (Operation::Batch, EOPNOTSUPP),
        (Operation::AddTable, EOPNOTSUPP),
        (Operation::AddTable, EAFNOSUPPORT),
        (Operation::AddChain("nat-prerouting".into()), EOPNOTSUPP),
    ] {
        let (sync, calls, metrics) = start(NftablesMode::ByDefault, Ok(vec![Err(refused(operation, errno))]));
        let mut sync = sync.unwrap();
        assert!(available(&metrics), "the socket opened");
        for _ in 0..3 {
            assert!(sync_once(&mut sync).unwrap());
        }
        assert_eq!(
            calls.get(),
            1,
            "nothing tried after the kernel said it has no nf_tables"
        );
        assert!(!available(&metrics));
    }
}

#[test]
fn asked_for_a_kernel_without_nf_tables_is_an_error_naming_what_is_missing() {
    let (sync, _, metrics) = start(NftablesMode::Required, Err(no_protocol()));
    let err = sync.unwrap_err();
    assert!(
        matches!(
            err,
            NftablesError::Required {
                missing: MissingNfTables::Nfnetlink,
                ..
            }
        ),
        "{err:?}"
    );
    let text = err.to_string();
    assert!(
        text.starts_with(
            "--nftables: this kernel has no netfilter netlink (a NETLINK_NETFILTER socket cannot be opened"
        ),
        "{text}"
    );
    assert!(
        text.ends_with("without --nftables the agent warns and programs IPVS alone"),
        "{text}"
    );
    assert!(!available(&metrics));

    let (sync, calls, metrics) = start(
        NftablesMode::Required,
        Ok(vec![Err(refused(Operation::Batch, EOPNOTSUPP))]),
    );
    let err = sync_once(&mut sync.unwrap()).unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("this kernel has no nf_tables (netfilter netlink refused the transaction"),
        "{text}"
    );
    assert!(
        text.contains("(nftables: the transaction (its batch-begin message): not supported"),
        "{text}"
    );
    assert_eq!(calls.get(), 1);
    assert!(!available(&metrics));
}

#[test]
fn other_refusals_fail_the_sync_and_are_tried_again() {
    for mode in [NftablesMode::ByDefault, NftablesMode::Required] {
        let (sync, calls, metrics) = start(
            mode,
            Ok(vec![
                Err(refused(Operation::Batch, EPERM)),
                Err(refused(Operation::AddChain("nat-prerouting".into()), ENOENT)),
                Ok(NftSyncOutcome::Replaced),
            ]),
        );
        let mut sync = sync.unwrap();
        assert!(!sync_once(&mut sync).unwrap(), "{mode:?}: EPERM");
        assert!(
            !sync_once(&mut sync).unwrap(),
            "{mode:?}: a chain type's module missing"
        );
        assert!(sync_once(&mut sync).unwrap(), "{mode:?}");
        assert!(sync_once(&mut sync).unwrap(), "{mode:?}");
        assert_eq!(calls.get(), 4);
        assert!(available(&metrics), "{mode:?}: nf_tables is there");
    }
}

#[test]
fn a_socket_that_fails_to_open_for_another_reason_is_an_error() {
    let emfile = NftError::Io(std::io::Error::from_raw_os_error(libc::EMFILE));
    let (sync, _, _) = start(NftablesMode::ByDefault, Err(emfile));
    let err = sync.unwrap_err();
    assert!(matches!(err, NftablesError::Open(_)), "{err:?}");
    assert!(
        err.to_string()
            .starts_with("cannot program nftables: nftables socket: "),
        "{err}"
    );
}
