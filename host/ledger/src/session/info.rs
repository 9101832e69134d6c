//! Each session's record in the `sessions` bucket ([`SessionInfo`]): what a
//! listing shows and what confirms every index entry (`index.rs`). It is
//! written after the log, so it may fall behind it (a crash between the two
//! writes) and is made right again at the next load; a keyed session's
//! record carries a MAC of its log's head, which the load checks
//! (`verify.rs`).

use super::state::{SessionInfo, SessionState};
use super::store::Sessions;
use crate::storage::StorageError;

pub(crate) const SESSIONS_BUCKET: &str = "sessions";

impl Sessions {
    /// The index entry of the session in `state`: with a MAC of its head
    /// when it is keyed.
    pub(crate) fn info_of(&self, state: &SessionState) -> SessionInfo {
        let mut info = SessionInfo::from(state);
        if let Ok(chain) = self.chain_of(state)
            && let Some(mac) = chain.head_mac(&state.header.id, state.last_seq, &state.last_hash)
        {
            info.head_mac = mac;
        }
        info
    }

    /// Records the head of `after` (the state the append left) in the
    /// session's index entry, ordered after the append: a crash can leave
    /// the recorded head behind the log, never ahead of it. An entry whose
    /// listed fields changed is written durably; otherwise the next flush
    /// carries it. A failure costs only the check, and is logged.
    pub(super) fn record_head(&self, after: &SessionState, before: &SessionState) {
        let info = serde_json::to_vec(&self.info_of(after)).unwrap_or_default();
        let listed_changed = before.header.status != after.header.status
            || before.header.name != after.header.name
            || before.header.tags != after.header.tags;
        let written = if listed_changed {
            self.storage.put(SESSIONS_BUCKET, &after.header.id, &info)
        } else {
            self.storage
                .put_unsynced(SESSIONS_BUCKET, &after.header.id, &info)
        };
        if let Err(e) = written {
            tracing::warn!(session = %after.header.id, error = %e, "could not record the log's head in the session index");
        }
    }

    pub(crate) fn put_info(&self, state: &SessionState) -> Result<(), StorageError> {
        let info = serde_json::to_vec(&self.info_of(state)).unwrap_or_default();
        self.storage.put(SESSIONS_BUCKET, &state.header.id, &info)
    }

    pub(crate) fn get_info(&self, id: &str) -> Result<Option<SessionInfo>, StorageError> {
        Ok(self
            .storage
            .get(SESSIONS_BUCKET, id)?
            .and_then(|bytes| serde_json::from_slice(&bytes).ok()))
    }

    /// Rewrites the listing entry when it fell behind the log (a crash between the two writes).
    pub(crate) fn reconcile_info(&self, state: &SessionState) {
        let stored = self.get_info(&state.header.id).ok().flatten();
        let fresh = SessionInfo::from(state);
        let stale = stored.is_none_or(|s| {
            s.header.status != fresh.header.status
                || s.header.name != fresh.header.name
                || s.header.tags != fresh.header.tags
                || s.header.project != fresh.header.project
        });
        if stale && let Err(e) = self.put_info(state) {
            tracing::warn!(session = %state.header.id, error = %e, "could not update the session index");
        }
    }

    /// How errors name session `id`: with its name when the index knows it.
    pub(crate) fn label_of(&self, id: &str) -> String {
        match self.get_info(id).ok().flatten().and_then(|i| i.header.name) {
            Some(name) => format!("`{name}` ({id})"),
            None => format!("`{id}`"),
        }
    }
}
