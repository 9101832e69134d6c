//! Pending approvals: calls a permission hook asked a human to approve.
//!
//! An approval records exactly the call it is for (session, call id, tool
//! digest, input and its hash), so approving it runs that call and nothing
//! else. Approvals live in the store, so they survive a host restart.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::session::SessionError;
use crate::storage::{Storage, Swap};

const BUCKET: &str = "approvals";

/// Where an approval stands.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum ApprovalStatus {
    Pending,
    /// `by`: who approved it (a principal's name, or `cli:<uid>`); absent
    /// in approvals settled before it was recorded.
    Approved {
        at_ms: u64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        by: Option<String>,
    },
    Denied {
        at_ms: u64,
        reason: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        by: Option<String>,
    },
}

/// A call waiting for a human.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Approval {
    pub id: String,
    pub session: String,
    pub session_name: Option<String>,
    /// The call the hook judged.
    pub call_id: String,
    pub tool: String,
    /// The plugin's digest when the hook judged the call: a changed tool
    /// is not run on this approval.
    pub tool_digest: String,
    pub input_hash: String,
    pub input: String,
    pub action: String,
    pub hook: String,
    pub pattern: String,
    pub reason: String,
    pub requested_at_ms: u64,
    pub status: ApprovalStatus,
}

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

    pub fn put(&self, approval: &Approval) -> Result<(), SessionError> {
        let bytes = serde_json::to_vec(approval)
            .map_err(|e| SessionError::InvalidInput(format!("cannot encode approval: {e}")))?;
        Ok(self.storage.put(BUCKET, &approval.id, &bytes)?)
    }

    pub fn get(&self, id: &str) -> Result<Approval, SessionError> {
        let bytes = self.storage.get(BUCKET, id)?.ok_or_else(|| {
            SessionError::InvalidInput(format!(
                "no approval `{id}`: `glovebox approvals` lists the pending ones"
            ))
        })?;
        serde_json::from_slice(&bytes).map_err(|e| {
            SessionError::InvalidInput(format!("approval `{id}` does not decode: {e}"))
        })
    }

    /// Records `approval`'s settlement (its status, approved or denied),
    /// if it is still pending in the store: a compare-and-set over the
    /// pending record, so of two settlements racing (two operators, or two
    /// hosts on a shared store) exactly one is recorded, and the other gets
    /// the error [`Approvals::pending`] gives for a settled approval.
    pub fn settle(&self, approval: &Approval) -> Result<(), SessionError> {
        let bytes = serde_json::to_vec(approval)
            .map_err(|e| SessionError::InvalidInput(format!("cannot encode approval: {e}")))?;
        let id = &approval.id;
        let Some(stored) = self.storage.get(BUCKET, id)? else {
            return Err(self
                .get(id)
                .err()
                .unwrap_or_else(|| SessionError::InvalidInput(format!("no approval `{id}`"))));
        };
        let current: Approval = serde_json::from_slice(&stored).map_err(|e| {
            SessionError::InvalidInput(format!("approval `{id}` does not decode: {e}"))
        })?;
        if current.status != ApprovalStatus::Pending {
            return self.pending(id).map(|_| ());
        }
        if self
            .storage
            .put_if(BUCKET, id, Swap::new(Some(&stored), Some(&bytes)))?
        {
            return Ok(());
        }
        // Settled (or changed) since the read: say how.
        self.pending(id).and_then(|_| {
            Err(SessionError::InvalidInput(format!(
                "approval `{id}` changed while it was being settled: try again"
            )))
        })
    }

    /// Every approval, oldest first; only the pending ones unless `all`.
    pub fn list(&self, all: bool) -> Result<Vec<Approval>, SessionError> {
        let mut out: Vec<Approval> = self
            .storage
            .scan(BUCKET, "")?
            .into_iter()
            .filter_map(|(_, bytes)| serde_json::from_slice::<Approval>(&bytes).ok())
            .filter(|a| all || a.status == ApprovalStatus::Pending)
            .collect();
        out.sort_by_key(|a| a.requested_at_ms);
        Ok(out)
    }

    /// Removes the approvals settled before `before_ms`; returns how many.
    /// Pending ones are never removed.
    pub fn collect(&self, before_ms: u64) -> Result<usize, SessionError> {
        let mut removed = 0;
        for approval in self.list(true)? {
            let settled = match approval.status {
                ApprovalStatus::Pending => continue,
                ApprovalStatus::Approved { at_ms, .. } | ApprovalStatus::Denied { at_ms, .. } => {
                    at_ms
                }
            };
            if settled < before_ms {
                self.storage.delete(BUCKET, &approval.id)?;
                removed += 1;
            }
        }
        Ok(removed)
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
