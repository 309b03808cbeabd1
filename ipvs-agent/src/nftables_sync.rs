//! `run`'s nftables side: table `inet svcnet` kept after each sync
//! ([`NftablesSync`]), on by default; what `--nftables` asked for
//! ([`NftablesMode`]); and a kernel without nf_tables: one warning that
//! says what is missing and what the node goes without, the
//! `svcnet_nftables_available` gauge at 0, and IPVS programmed as before
//! (an error instead when `--nftables` was given explicitly). Any other
//! failed transaction is logged and the next sync replaces the table.

use std::sync::Arc;
use std::time::Instant;

use svcnet_core::proxy::nftables::Table;
use thiserror::Error;

use crate::kernel::nft::{NftApplier, NftError, NftSyncOutcome};
use crate::metrics::Metrics;
use crate::nftables::error::MissingNfTables;

/// What `run --nftables[=BOOL]` asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NftablesMode {
    /// `--nftables=false`: IPVS alone; table `inet svcnet` is not touched.
    Off,
    /// No flag: keep the table; without nf_tables, warn and go on.
    ByDefault,
    /// `--nftables` or `--nftables=true`: keep the table; without
    /// nf_tables, stop with an error.
    Required,
}

impl NftablesMode {
    /// The mode of the flag's value (`None`: not given).
    pub fn from_flag(flag: Option<bool>) -> NftablesMode {
        match flag {
            None => NftablesMode::ByDefault,
            Some(true) => NftablesMode::Required,
            Some(false) => NftablesMode::Off,
        }
    }
}

/// Applies a ruleset to the kernel: [`NftApplier`], or a stand-in in tests.
pub trait TableApplier {
    /// Make the kernel's table `desired` (see [`NftApplier::sync`]).
    fn sync(&mut self, desired: &Table) -> Result<NftSyncOutcome, NftError>;
}

impl TableApplier for NftApplier {
    fn sync(&mut self, desired: &Table) -> Result<NftSyncOutcome, NftError> {
        NftApplier::sync(self, desired)
    }
}

/// Why `run` cannot go on with nftables as asked.
#[derive(Debug, Error)]
pub enum NftablesError {
    /// `--nftables` was given and the kernel has no nf_tables.
    #[error(
        "--nftables: this kernel has {missing}, so table inet svcnet cannot be kept ({error}); \
         without --nftables the agent warns and programs IPVS alone"
    )]
    Required {
        /// What the kernel lacks.
        missing: MissingNfTables,
        /// What it answered.
        error: NftError,
    },
    /// The netfilter netlink socket could not be opened for another reason.
    #[error("cannot program nftables: {0}")]
    Open(NftError),
}

/// Where the table stands.
#[derive(Debug)]
enum State<A> {
    /// `--nftables=false`.
    Off,
    /// Kept after each sync.
    Kept(A),
    /// The kernel has no nf_tables (warned once); nothing more is tried
    /// until the agent restarts.
    Unavailable,
}

/// Keeps table `inet svcnet` the ruleset the core keeps beside the desired
/// IPVS table (`SyncLoop::ruleset`), one transaction per change.
#[derive(Debug)]
pub struct NftablesSync<A = NftApplier> {
    state: State<A>,
    mode: NftablesMode,
    metrics: Arc<Metrics>,
}

impl<A: TableApplier> NftablesSync<A> {
    /// Starts in `mode`, opening the applier with `open` unless the mode is
    /// [`NftablesMode::Off`]. A kernel without netfilter netlink is
    /// an error when the mode is [`NftablesMode::Required`], else warned;
    /// any other failure to open is an error.
    pub fn start(
        mode: NftablesMode,
        metrics: Arc<Metrics>,
        open: impl FnOnce() -> Result<A, NftError>,
    ) -> Result<Self, NftablesError> {
        let mut sync = NftablesSync {
            state: State::Off,
            mode,
            metrics,
        };
        if mode == NftablesMode::Off {
            tracing::info!("--nftables=false: table inet svcnet is not kept (no masquerade or filter rules)");
            sync.metrics.set_nftables_available(false);
            return Ok(sync);
        }
        match open() {
            Ok(applier) => {
                sync.state = State::Kept(applier);
                sync.metrics.set_nftables_available(true);
                Ok(sync)
            }
            Err(error) => match error.missing_nf_tables() {
                Some(missing) => {
                    sync.unavailable(missing, error)?;
                    Ok(sync)
                }
                None => Err(NftablesError::Open(error)),
            },
        }
    }

    /// Whether the table is kept (so the sync loop should keep its
    /// ruleset): not when it is off, nor when the kernel has no nf_tables.
    pub fn kept(&self) -> bool {
        matches!(self.state, State::Kept(_))
    }

    /// After a sync: the table made `desired`, the ruleset the core keeps
    /// beside the desired IPVS table (`None` when it is not kept, and then
    /// nothing is done). False when the transaction failed (logged; the
    /// next sync replaces the table whole); true too when the table is off
    /// or nf_tables missing. An error when the kernel turns out to have no
    /// nf_tables and `--nftables` was given.
    pub fn sync(&mut self, desired: Option<&Table>) -> Result<bool, NftablesError> {
        let (State::Kept(applier), Some(table)) = (&mut self.state, desired) else {
            return Ok(true);
        };
        let started = Instant::now();
        match applier.sync(table) {
            Ok(NftSyncOutcome::Unchanged) => Ok(true),
            Ok(outcome) => {
                let duration_ms = started.elapsed().as_millis() as u64;
                tracing::info!(?outcome, duration_ms, "nftables table inet svcnet synced");
                Ok(true)
            }
            Err(error) => match error.missing_nf_tables() {
                Some(missing) => {
                    self.unavailable(missing, error)?;
                    Ok(true)
                }
                None => {
                    tracing::error!(%error, "nftables table inet svcnet not synced; the next sync replaces it");
                    Ok(false)
                }
            },
        }
    }

    /// The kernel has no nf_tables: an error if it was asked for, else
    /// the one warning, and nothing more is tried.
    fn unavailable(&mut self, missing: MissingNfTables, error: NftError) -> Result<(), NftablesError> {
        self.state = State::Unavailable;
        self.metrics.set_nftables_available(false);
        if self.mode == NftablesMode::Required {
            return Err(NftablesError::Required { missing, error });
        }
        tracing::warn!(
            %error,
            "nftables: this kernel has {missing}. Table inet svcnet is not kept, so this node goes without its \
             rules: no masquerading (hairpin traffic; NodePort, externalIP and LoadBalancer traffic with \
             externalTrafficPolicy Cluster; ClusterIP traffic from outside --cluster-cidr), no \
             loadBalancerSourceRanges filtering, no refusal of kube-ipvs0 addresses on ports no Service has. \
             IPVS is programmed as usual; svcnet_nftables_available is 0. Add what is missing and restart the \
             agent, or pass --nftables=false to run without these rules"
        );
        Ok(())
    }
}

#[cfg(test)]
mod tests;
