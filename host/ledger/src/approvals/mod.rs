//! Pending approvals: calls a permission hook asked a human to approve.
//!
//! An approval records exactly the call it is for (session, call id, tool
//! digest, input and its hash), so approving it runs that call and nothing
//! else. Approvals live in the store, so they survive a host restart. Every
//! reader finds them through an index, a page at a time (`records.rs`);
//! a principal's pending ones are counted in the store against `[quotas]
//! approvals_per_principal`; a session that ends settles its pending ones
//! (`crate::session`'s `closing.rs`).

pub(crate) mod records;
#[cfg(test)]
mod tests;

use std::sync::Arc;

use crate::page::{Page, PageRequest};
use crate::session::SessionError;
use crate::storage::Storage;

pub use records::{Approval, ApprovalStatus};
use records::{PENDING, SETTLED};
pub(crate) use records::{Swapped, pending_of_session};

/// The approvals of a data dir.
pub struct Approvals {
    storage: Arc<dyn Storage>,
}

impl Approvals {
    pub fn new(storage: Arc<dyn Storage>) -> Approvals {
        Approvals { storage }
    }

    /// A new id: `ap-` and 12 hex digits.
    pub fn new_id() -> String {
        let id = uuid::Uuid::new_v4().simple().to_string();
        format!("ap-{}", &id[..12])
    }

    /// Stores `approval` (and indexes it).
    pub fn put(&self, approval: &Approval) -> Result<(), SessionError> {
        Ok(records::put(&*self.storage, approval)?)
    }

    pub fn get(&self, id: &str) -> Result<Approval, SessionError> {
        match records::get(&*self.storage, id) {
            Ok(Some(a)) => Ok(a),
            Ok(None) => Err(SessionError::InvalidInput(format!(
                "no approval `{id}`: `glovebox approvals` lists the pending ones"
            ))),
            Err(crate::storage::StorageError::Corrupt(why)) => Err(SessionError::InvalidInput(why)),
            Err(e) => Err(e.into()),
        }
    }

    /// Records `approval`'s settlement (its status, approved or denied),
    /// if it is still pending in the store: a compare-and-set over the
    /// pending record, so of two settlements racing (two operators, or two
    /// hosts on a shared store) exactly one is recorded, and the other gets
    /// the error [`Approvals::pending`] gives for a settled approval.
    pub fn settle(&self, approval: &Approval) -> Result<(), SessionError> {
        let id = &approval.id;
        match records::settle(&*self.storage, approval)? {
            Swapped::Done => Ok(()),
            Swapped::Was | Swapped::Missing => self.pending(id).map(|_| ()),
            // Settled (or changed) since the read: say how.
            Swapped::Changed => self.pending(id).and_then(|_| {
                Err(SessionError::InvalidInput(format!(
                    "approval `{id}` changed while it was being settled: try again"
                )))
            }),
        }
    }

    /// One page of the approvals: the pending ones oldest first, then, with
    /// `all`, the settled ones newest first. The cursor is where the
    /// previous page of the same listing ended.
    pub fn page(&self, all: bool, req: &PageRequest) -> Result<Page<Approval>, SessionError> {
        if all {
            self.page_of(&[PENDING, SETTLED], req)
        } else {
            self.page_of(&[PENDING], req)
        }
    }

    /// One page of the settled approvals alone, newest first.
    pub fn settled(&self, req: &PageRequest) -> Result<Page<Approval>, SessionError> {
        self.page_of(&[SETTLED], req)
    }

    /// One page of the index parts `parts`, one after the other.
    fn page_of(&self, parts: &[&str], req: &PageRequest) -> Result<Page<Approval>, SessionError> {
        let (mut part, mut after) = match &req.cursor {
            None => (0, None),
            Some(cursor) => match parts.iter().position(|p| cursor.starts_with(p)) {
                Some(i) => (i, Some(cursor.clone())),
                None => {
                    return Err(SessionError::InvalidInput(format!(
                        "the cursor `{cursor}` is not one of this listing's: pass the `next_cursor` the previous page of the same listing gave (a cursor of the listing with settled approvals needs `--all` again)"
                    )));
                }
            },
        };
        let size = req.size();
        let mut items = Vec::with_capacity(size);
        let mut last = None;
        while part < parts.len() && items.len() < size {
            let wanted = size - items.len();
            let keys = records::keys(&*self.storage, parts[part], after.as_deref(), wanted)?;
            let exhausted = keys.len() < wanted;
            for key in keys {
                if let Some(a) = records::confirm(&*self.storage, &key)? {
                    items.push(a);
                }
                after = Some(key.clone());
                last = Some(key);
            }
            if exhausted {
                part += 1;
                after = None;
            }
        }
        let next_cursor = if items.len() == size { last } else { None };
        Ok(Page { items, next_cursor })
    }

    /// Every pending approval, oldest first, read a page at a time.
    pub fn each_pending(&self) -> impl Iterator<Item = Result<Approval, SessionError>> + '_ {
        records::walk(&*self.storage, PENDING).map(|r| r.map_err(SessionError::from))
    }

    /// How many approvals are pending, counting up to `cap` (a badge, a
    /// gauge: the walk stops there).
    pub fn count_pending(&self, cap: usize) -> Result<usize, SessionError> {
        let mut n = 0;
        for approval in self.each_pending() {
            approval?;
            n += 1;
            if n >= cap {
                break;
            }
        }
        Ok(n)
    }

    /// The oldest pending approval of session `id`, if it has one.
    pub fn oldest_pending_of(&self, session: &str) -> Result<Option<Approval>, SessionError> {
        Ok(records::oldest_pending_of_session(&*self.storage, session)?)
    }

    /// Removes the approvals settled before `before_ms`; returns how many.
    /// Pending ones are never removed.
    pub fn collect(&self, before_ms: u64) -> Result<usize, SessionError> {
        Ok(records::collect(&*self.storage, before_ms)?)
    }

    /// Takes a place for approval `id` of agent `principal` against
    /// `[quotas] approvals_per_principal` = `limit`, in the store (so it
    /// holds across hosts): `Ok(Err(count))` when the principal already has
    /// `count` pending, and nothing is written.
    pub fn take_place(
        &self,
        principal: &str,
        id: &str,
        limit: u64,
        now_ms: u64,
    ) -> Result<Result<(), u64>, SessionError> {
        Ok(records::take_place(
            &*self.storage,
            principal,
            id,
            limit,
            now_ms,
        )?)
    }

    /// Gives back a place [`Approvals::take_place`] took for an approval
    /// that was never stored.
    pub fn give_back_place(&self, principal: &str, id: &str) -> Result<(), SessionError> {
        Ok(records::give_back_place(&*self.storage, principal, id)?)
    }

    /// Indexes a store's approvals written before the index existed (once;
    /// see `records.rs`). Whether there were any.
    pub fn index_old_records(&self) -> Result<bool, SessionError> {
        Ok(records::index_old_records(&*self.storage)?)
    }

    /// The pending approval `id`, or an error saying how it was settled.
    pub fn pending(&self, id: &str) -> Result<Approval, SessionError> {
        let approval = self.get(id)?;
        match &approval.status {
            ApprovalStatus::Pending => Ok(approval),
            ApprovalStatus::Approved { .. } => Err(SessionError::InvalidInput(format!(
                "approval `{id}` was already approved: its call ran"
            ))),
            ApprovalStatus::Denied { reason, .. } => Err(SessionError::InvalidInput(format!(
                "approval `{id}` was already denied ({reason})"
            ))),
        }
    }
}
