//! Callers waiting for an approval to be settled. A call a permission hook
//! asked a human about waits (up to `[approvals] wait`) for an operator's
//! `glovebox approve` or `deny`, which reach this process through the
//! control socket; whoever settles the approval hands the outcome here and
//! every waiter of that approval gets it. Nothing here is durable: the
//! approval itself is in the store, and a waiter that gives up (or a host
//! that restarts) leaves it pending for `approval_status`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::oneshot;

use crate::approvals::{Approval, ApprovalStatus, Approvals};
use crate::call::CallReport;

/// How an approval was settled.
#[derive(Clone, Debug)]
pub enum Settled {
    /// Approved: the call ran, and this is its report.
    Ran(CallReport),
    /// Approved by someone whose report did not reach this waiter (it was
    /// settled before the waiter asked): the call ran for them; its outcome
    /// is in the session's log.
    RanElsewhere(Approval),
    /// Denied, with the approval's reason and who denied it.
    Denied(Approval),
}

/// The waiters, by approval id.
#[derive(Clone, Default)]
pub(crate) struct Waiters {
    by_id: Arc<Mutex<HashMap<String, Vec<oneshot::Sender<Settled>>>>>,
}

impl std::fmt::Debug for Waiters {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Waiters").finish_non_exhaustive()
    }
}

/// A denial the ledger made (a session's end settles its pending
/// approvals): its waiters hear it at once.
impl crate::session::ApprovalObserver for Waiters {
    fn settled(&self, approval: &Approval) {
        self.settle(&approval.id, &Settled::Denied(approval.clone()));
    }
}

impl Waiters {
    /// Waits up to `within` for approval `id` to be settled. `None`: it is
    /// still pending (or cannot be read), and stays so.
    pub(crate) async fn wait(
        &self,
        approvals: &Approvals,
        id: &str,
        within: Duration,
    ) -> Option<Settled> {
        let (tx, rx) = oneshot::channel();
        self.lock().entry(id.to_string()).or_default().push(tx);
        // Settled before this waiter was registered: the store says how.
        if let Some(settled) = approvals.get(id).ok().and_then(settled_in_store) {
            self.forget(id);
            return Some(settled);
        }
        let answer = tokio::time::timeout(within, rx).await;
        self.forget(id);
        match answer {
            Ok(Ok(settled)) => Some(settled),
            _ => None,
        }
    }

    /// Hands how approval `id` was settled to everyone waiting for it.
    pub(crate) fn settle(&self, id: &str, settled: &Settled) {
        let waiting = self.lock().remove(id).unwrap_or_default();
        for tx in waiting {
            let _ = tx.send(settled.clone());
        }
    }

    /// Drops the waiters of `id` that stopped waiting.
    fn forget(&self, id: &str) {
        let mut by_id = self.lock();
        if let Some(list) = by_id.get_mut(id) {
            list.retain(|tx| !tx.is_closed());
            if list.is_empty() {
                by_id.remove(id);
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Vec<oneshot::Sender<Settled>>>> {
        self.by_id.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

fn settled_in_store(approval: Approval) -> Option<Settled> {
    match approval.status {
        ApprovalStatus::Pending => None,
        ApprovalStatus::Approved { .. } => Some(Settled::RanElsewhere(approval)),
        ApprovalStatus::Denied { .. } => Some(Settled::Denied(approval)),
    }
}
