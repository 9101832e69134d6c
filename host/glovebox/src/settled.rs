//! Callers waiting for an approval to be settled. A call a permission hook
//! asked a human about waits (up to `[approvals] wait`) for an operator's
//! `glovebox approve` or `deny`, which reach this process through the
//! control socket; whoever settles the approval hands the outcome here and
//! every waiter of that approval gets it. Nothing here is durable: the
//! approval itself is in the store, and a waiter that gives up (or a host
//! that restarts) leaves it pending for `approval_status`.
//!
//! A background job whose call a hook sent to a human does not wait here:
//! it holds no task while it waits. The settlement of an approval that
//! names a job is handed to the jobs runners listening ([`JobListener`]),
//! which give the job the approved call's result (or the denial). A
//! settlement made where no runner listens (a host that stopped first) is
//! found by the runner's recovery pass.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use tokio::sync::oneshot;

use crate::approvals::{Approval, ApprovalStatus, Approvals};
use crate::call::CallReport;
use crate::error::CallError;

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

/// Who hears how an approval a background job waits for was settled: the
/// jobs runners of this process. It must not block (it is called where the
/// settlement was recorded, maybe inside the ledger's work).
pub(crate) trait JobListener: Send + Sync {
    fn settled(&self, approval: &Approval, settled: &Settled);
}

/// The waiters, by approval id, and the jobs runners listening.
#[derive(Clone, Default)]
pub(crate) struct Waiters {
    by_id: Arc<Mutex<HashMap<String, Vec<oneshot::Sender<Settled>>>>>,
    jobs: Arc<Mutex<Vec<Weak<dyn JobListener>>>>,
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
        self.settle(approval, &Settled::Denied(approval.clone()));
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

    /// Hands how `approval` was settled to everyone waiting for it, and to
    /// the jobs runners when a job waits for it.
    pub(crate) fn settle(&self, approval: &Approval, settled: &Settled) {
        let waiting = self.lock().remove(&approval.id).unwrap_or_default();
        for tx in waiting {
            let _ = tx.send(settled.clone());
        }
        if approval.job.is_some() {
            let listeners: Vec<_> = {
                let mut jobs = self.jobs.lock().unwrap_or_else(PoisonError::into_inner);
                jobs.retain(|l| l.strong_count() > 0);
                jobs.iter().filter_map(Weak::upgrade).collect()
            };
            for listener in listeners {
                listener.settled(approval, settled);
            }
        }
    }

    /// Hands the settlements of approvals that name a job to `listener`
    /// from now on, for as long as it lives.
    pub(crate) fn listen(&self, listener: Weak<dyn JobListener>) {
        self.jobs
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(listener);
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

/// How `approval`, as the store holds it, was settled; `None` while it
/// is pending.
pub(crate) fn settled_in_store(approval: Approval) -> Option<Settled> {
    match approval.status {
        ApprovalStatus::Pending => None,
        ApprovalStatus::Approved { .. } => Some(Settled::RanElsewhere(approval)),
        ApprovalStatus::Denied { .. } => Some(Settled::Denied(approval)),
    }
}

/// A denied approval as its call's refusal: who denied it and why (the
/// approval's hook and reason named).
pub fn denied_call(approval: &Approval) -> CallError {
    let (why, by) = match &approval.status {
        ApprovalStatus::Denied { reason, by, .. } => (reason.as_str(), by.as_deref()),
        _ => ("", None),
    };
    CallError::Denied {
        tool: approval.tool.clone(),
        hook: "operator".to_string(),
        pattern: approval.pattern.clone(),
        reason: format!(
            "approval {} ({}: {}) denied by {}: {why}",
            approval.id,
            approval.hook,
            approval.reason,
            by.unwrap_or("an operator")
        ),
        alternatives: Vec::new(),
    }
}
