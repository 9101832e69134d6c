//! Ending a session settles its pending approvals (threat 50).
//!
//! Why: a call waiting for approval in a session that ended can never run
//! (an ended session takes no call), yet its approval stayed pending: in the
//! operators' queue, and holding one of its principal's places under
//! `[quotas] approvals_per_principal`. An agent that asks, ends its session
//! and starts another piles them up, and a client waiting on one waits for
//! nothing.
//!
//! What: every append that closes a session (`ended`, `archived`: whoever
//! asks for it, the agent, an operator, the host's sweep, a parent ending
//! its children) first denies the session's pending approvals, by `host`,
//! with the reason, under the session's lock and only once the batch is
//! known to be accepted; the batch then carries, before the closing event,
//! a note per denial worded as an operator's denial is. Observers (the
//! gateway's waiting clients) hear each denial at once. Pending approvals
//! of sessions that ended before this existed, or on a host that did not
//! settle them, are settled by [`Sessions::settle_orphaned_approvals`] (at
//! open, when the store is first indexed, and at each sweep).

use std::sync::Arc;

use super::actor::HOST;
use super::error::SessionError;
use super::kind::EventKind;
use super::lifecycle::SessionStatus;
use super::observers::ApprovalObserver;
use super::slots::lock;
use super::store::{Commit, Sessions};
use crate::approvals::{self, Approval, ApprovalStatus, Swapped};

/// Why the closing event among `kinds`, if there is one, settles what waits.
fn closing_reason(kinds: &[EventKind]) -> Option<(usize, String)> {
    kinds.iter().enumerate().find_map(|(i, kind)| match kind {
        EventKind::Ended { outcome, .. } => Some((
            i,
            format!("the session ended ({outcome}) while the call waited for approval"),
        )),
        EventKind::Archived => Some((
            i,
            "the session was archived while the call waited for approval".to_string(),
        )),
        _ => None,
    })
}

/// The note a denial leaves in the session's log, worded as an operator's.
pub fn denial_note(approval: &Approval, by: &str, reason: &str) -> EventKind {
    EventKind::Note {
        text: format!(
            "approval {} of call {} ({}) denied by {by}: {reason}",
            approval.id, approval.call_id, approval.tool
        ),
    }
}

impl Sessions {
    /// Registers `observer`, told of every approval the sessions deny.
    pub fn observe_approvals(&self, observer: Arc<dyn ApprovalObserver>) {
        lock(&self.approval_observers).push(observer);
    }

    fn tell_settled(&self, approval: &Approval) {
        for observer in lock(&self.approval_observers).iter() {
            observer.settled(approval);
        }
    }

    /// For a batch `kinds` that closes session `id` (see the module docs):
    /// `accepted` checks the batch against the session as it stands (the
    /// caller holds its lock); if it passes, the session's pending
    /// approvals are denied and the batch comes back with their notes
    /// before the closing event. Any other batch comes back as it was.
    pub(super) fn settle_on_close(
        &self,
        id: &str,
        kinds: Vec<EventKind>,
        accepted: impl FnOnce(&[EventKind]) -> Result<(), SessionError>,
    ) -> Result<Vec<EventKind>, SessionError> {
        let Some((at, reason)) = closing_reason(&kinds) else {
            return Ok(kinds);
        };
        let pending = approvals::pending_of_session(&*self.storage, id)?;
        if pending.is_empty() {
            return Ok(kinds);
        }
        accepted(&kinds)?;
        let now = self.now();
        let mut notes = Vec::new();
        for approval in pending {
            if let Some(denied) = self.deny_by_host(approval, &reason, now)? {
                notes.push(denial_note(&denied, HOST, &reason));
            }
        }
        let mut kinds = kinds;
        kinds.splice(at..at, notes);
        Ok(kinds)
    }

    /// Denies `approval` by the host for `reason`, if it is still pending
    /// (an operator may have settled it meanwhile: then `None`), and tells
    /// the observers.
    fn deny_by_host(
        &self,
        approval: Approval,
        reason: &str,
        now: u64,
    ) -> Result<Option<Approval>, SessionError> {
        let mut denied = approval;
        denied.status = ApprovalStatus::Denied {
            at_ms: now,
            reason: reason.to_string(),
            by: Some(HOST.to_string()),
        };
        match approvals::records::settle(&*self.storage, &denied)? {
            Swapped::Done => {
                tracing::info!(approval = %denied.id, session = %denied.session, reason, "pending approval denied by the host");
                self.tell_settled(&denied);
                Ok(Some(denied))
            }
            Swapped::Was | Swapped::Missing | Swapped::Changed => Ok(None),
        }
    }

    /// Denies every pending approval whose session is no longer live (it
    /// ended before ending settled them, or on a host that did not), with
    /// a note in its log when the log still takes one (an archived log is
    /// closed). Returns the approvals denied. A session that cannot be
    /// read is left for the next pass.
    pub fn settle_orphaned_approvals(&self) -> Result<Vec<Approval>, SessionError> {
        let mut settled = Vec::new();
        let orphans = approvals::records::walk(&*self.storage, approvals::records::PENDING)
            .filter_map(|approval| match approval {
                Ok(a) => match self.state_of(&a.session) {
                    Ok(state) if state.header.status.is_live() => None,
                    Ok(state) => Some(Ok((a, Some(state.header.status)))),
                    Err(SessionError::NotFound(_)) => Some(Ok((a, None))),
                    Err(e) => {
                        tracing::warn!(approval = %a.id, session = %a.session, error = %e, "cannot read the session of a pending approval: left for the next pass");
                        None
                    }
                },
                Err(e) => Some(Err(e)),
            });
        for orphan in orphans {
            let (approval, status) = orphan?;
            let reason = match status {
                Some(status) => {
                    format!("the session was already {status} while the call waited for approval")
                }
                None => "the session no longer exists".to_string(),
            };
            let now = self.now();
            let Some(denied) = self.deny_by_host(approval, &reason, now)? else {
                continue;
            };
            if status.is_some_and(|s| s != SessionStatus::Archived) {
                let note = denial_note(&denied, HOST, &reason);
                if let Err(e) = self.append(&denied.session, note) {
                    tracing::warn!(approval = %denied.id, error = %e, "could not note an orphaned approval's denial in its session's log");
                }
            }
            settled.push(denied);
        }
        Ok(settled)
    }
}

impl Sessions {
    /// After `approval` was denied by `by` for `reason` (an operator, or
    /// the host's expiry): resumes its session (paused for it) and notes
    /// the denial there, in one write. The resume lets the write through
    /// below the disk watermark (see `room.rs`): a settlement is never
    /// refused for want of disk. A session that was active already gets
    /// the note alone, when there is room for it.
    pub fn record_denial(
        &self,
        approval: &Approval,
        by: &str,
        reason: &str,
    ) -> Result<(), SessionError> {
        let note = denial_note(approval, by, reason);
        let written = self.with_slot(&approval.session, |this, slot, id| {
            this.ensure_lease(slot, id)?;
            let status = this.loaded(slot, id)?.header.status;
            let mut kinds = Vec::new();
            if status.is_live() && status != SessionStatus::Active {
                kinds.push(EventKind::Resumed);
            }
            kinds.push(note);
            this.append_batch_locked(slot, id, kinds, Commit::Durable)
        });
        match written {
            Ok(_) => Ok(()),
            Err(SessionError::LowDisk(why)) => {
                tracing::warn!(approval = %approval.id, error = %why, "the denial of an approval is recorded in the approval, not noted in its session's log (low disk)");
                Ok(())
            }
            Err(e) => Err(e),
        }
    }
}
