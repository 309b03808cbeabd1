//! What to send for one sync: the decision ([`Transaction`]) from the
//! ruleset last applied and the desired one, and the requests of each
//! kind of transaction. Only table `inet svcnet` is ever named.
//!
//! - Nothing applied yet (first sync, or after a failure) or a change of
//!   shape (a setting that alters sets or chains): replace the table
//!   whole. "Add table, delete table, then create it" in one batch: the
//!   add makes the delete succeed when no table is there, and the delete
//!   drops whatever an earlier run or another tool left in it.
//! - Same shape: only the set elements that changed, removals first (an
//!   interval set refuses an added range that overlaps one still there).
//! - Nothing changed: nothing is sent.

use svcnet_core::proxy::nftables::{element_changes, ElementChanges, Table};

use super::compile::Compiler;
use super::error::NftBuildError;
use super::message::NftMessage;

/// What one sync sends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transaction {
    /// The kernel already has the desired ruleset.
    Nothing,
    /// Delete the table if it is there and create it whole.
    Replace,
    /// Remove and add these set elements.
    Elements(ElementChanges),
}

/// Decide what turns `applied` (the ruleset the last successful transaction
/// left, `None` if none did) into `desired`.
pub fn decide(applied: Option<&Table>, desired: &Table) -> Transaction {
    match applied.and_then(|applied| element_changes(applied, desired)) {
        None => Transaction::Replace,
        Some(changes) if changes.is_empty() => Transaction::Nothing,
        Some(changes) => Transaction::Elements(changes),
    }
}

/// The requests of `transaction` towards `desired`, in order.
pub fn requests(transaction: &Transaction, desired: &Table) -> Result<Vec<NftMessage>, NftBuildError> {
    match transaction {
        Transaction::Nothing => Ok(Vec::new()),
        Transaction::Replace => {
            let mut out = delete_table(desired);
            out.extend(create_table(desired)?);
            Ok(out)
        }
        Transaction::Elements(changes) => element_requests(desired, changes),
    }
}

/// Delete the table whether or not it exists (`cleanup`): add, then delete.
pub fn delete_table(table: &Table) -> Vec<NftMessage> {
    vec![NftMessage::new_table(table), NftMessage::delete_table(table)]
}

/// Create the table whole, in the order `nft -f` sends a table block: the
/// table, every chain, each set followed by its elements, then the rules
/// chain by chain.
pub fn create_table(table: &Table) -> Result<Vec<NftMessage>, NftBuildError> {
    let mut out = vec![NftMessage::new_table(table)];
    for chain in &table.chains {
        out.push(NftMessage::new_chain(table, chain)?);
    }
    for (index, set) in table.sets.iter().enumerate() {
        // A table has a few dozen sets: the id fits.
        let id = u32::try_from(index + 1).unwrap_or(u32::MAX);
        out.push(NftMessage::new_set(table, set, id)?);
        out.extend(NftMessage::set_elements(table, set, Some(id), true, &set.elements)?);
    }
    let compiler = Compiler::new(table);
    for chain in &table.chains {
        for (index, rule) in chain.rules.iter().enumerate() {
            out.push(NftMessage::new_rule(table, &compiler, chain, index, rule)?);
        }
    }
    Ok(out)
}

/// Removals, then additions, set by set in the table's order.
fn element_requests(table: &Table, changes: &ElementChanges) -> Result<Vec<NftMessage>, NftBuildError> {
    let mut out = Vec::new();
    for (add, list) in [(false, &changes.removed), (true, &changes.added)] {
        for set in &table.sets {
            let elements: Vec<_> = list
                .iter()
                .filter(|(name, _)| *name == set.name)
                .map(|(_, e)| e)
                .collect();
            if !elements.is_empty() {
                out.extend(NftMessage::set_elements(table, set, None, add, elements)?);
            }
        }
    }
    Ok(out)
}
