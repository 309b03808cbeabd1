//! The plan-state file's writer, shared by both modes of `run`: it
//! remembers that the plan state changed since it was last written, writes
//! it when asked, and when a write fails (a full disk, a read-only file
//! system) counts it, logs it once and keeps it pending, so the next call
//! writes it again; the agent keeps serving from memory meanwhile.

use super::save_plan_state;
use crate::metrics::Metrics;
use std::path::PathBuf;
use svcnet_core::proxy::PlanState;

/// Pending writes of the plan-state file.
#[derive(Debug)]
pub struct PlanStateWriter {
    /// `<state-file>.plan.json`; `None` without a state file.
    path: Option<PathBuf>,
    /// Changed since the last successful write.
    unsaved: bool,
    /// The last write failed (so the next failure is not logged again).
    failing: bool,
}

impl PlanStateWriter {
    /// A writer for `path` (none: nothing is ever written), with nothing
    /// pending.
    pub fn new(path: Option<PathBuf>) -> PlanStateWriter {
        PlanStateWriter {
            path,
            unsaved: false,
            failing: false,
        }
    }

    /// Notes a change of the plan state (after a sync that made one).
    pub fn changed(&mut self, changed: bool) {
        self.unsaved |= changed && self.path.is_some();
    }

    /// Whether a change waits to be written.
    pub fn unsaved(&self) -> bool {
        self.unsaved
    }

    /// Writes `plan_state` if a change is pending.
    pub fn save(&mut self, plan_state: &PlanState, metrics: &Metrics) {
        let Some(path) = self.path.as_deref().filter(|_| self.unsaved) else {
            return;
        };
        match save_plan_state(path, plan_state) {
            Ok(()) => {
                if self.failing {
                    tracing::info!("plan state written again");
                }
                self.unsaved = false;
                self.failing = false;
            }
            Err(e) => {
                metrics.record_state_write_error();
                if !self.failing {
                    tracing::error!(error = %e, "cannot save the plan state; serving from memory and trying again");
                }
                self.failing = true;
            }
        }
    }
}
