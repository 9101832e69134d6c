//! The disk watermark on what is written into a session's log: below
//! `storage.min_free`, new content (a note, a handoff, a usage report, a
//! memory proposal or search, a verdict, tags, a name, a child) is refused
//! with `low_disk`, and nothing is written.
//!
//! Why: the pipeline refuses new calls, jobs and sessions below the
//! watermark, but an agent writes without calling a tool too; left open,
//! notes and handoffs (each with a checkpoint) fill the disk, and the store
//! then fails for every tenant (threat 49). The check sits in the one
//! append path every event takes ([`Sessions`]' batch append), not at the
//! surfaces, so no tool or command that writes can forget it.
//!
//! What still goes through: the host's own writes (no actor named: the
//! sweep, recovery, an expiry), whatever closes a session or settles what
//! was admitted (`ended`, `archived`, `resumed` in a batch, the call
//! records of a call already admitted, pauses, flags, budget records), since
//! refusing those would leave work half done. Which kind is which is said
//! once for every limit on what actors write (`growth.rs`).
//!
//! Beside it, the two `[quotas]` checks that ask the store or the thread's
//! actor rather than the batch alone: a new session against its owner's
//! live sessions, and a record bound for another log (or work done before
//! an append) against that log's quotas, checked ahead of the write (see
//! `quota.rs` for why).

use super::actor;
use super::error::SessionError;
use super::growth::{Growth, growth, settles};
use super::index::{LIVE, PAGE, id_of};
use super::kind::EventKind;
use super::quota::{check_log, stored_bound};
use super::state::SessionState;
use super::store::Sessions;

/// Whether an event of `kind` is new content (refused below the watermark):
/// a call is checked by the pipeline before it is recorded, and what
/// follows it settles it.
fn is_content(kind: &EventKind) -> bool {
    matches!(
        growth(kind),
        Growth::Opening | Growth::Work | Growth::Report | Growth::Receipt
    )
}

impl Sessions {
    /// Refuses `kinds` with [`SessionError::LowDisk`] while the disk is
    /// below the watermark and they are new content an actor asked for
    /// (see the module docs). Called before anything of them is written,
    /// by the batch append and by whoever writes beside the log first (a
    /// memory proposal's record).
    pub fn check_room(&self, kinds: &[EventKind]) -> Result<(), SessionError> {
        let Some(disk) = &self.config.disk else {
            return Ok(());
        };
        if actor::named().is_none() || !kinds.iter().any(is_content) || kinds.iter().any(settles) {
            return Ok(());
        }
        disk.check().map_err(SessionError::LowDisk)
    }
}

impl Sessions {
    /// Refuses a new session for `owner` when it already owns
    /// `quotas.sessions_per_principal` live ones. Called with the names lock
    /// held, which every start takes, so two starts cannot both pass. Reads
    /// the owner's entries of the live index (`index.rs`), each confirmed by
    /// its session's record, and stops at the quota: a start costs as much
    /// as the quota, not as the sessions the owner ever had.
    pub(super) fn check_session_quota(&self, owner: &str) -> Result<(), SessionError> {
        let limit = self.config.quotas.limit("sessions_per_principal");
        let mut live = 0u64;
        let prefix = format!("{owner}/");
        for entry in glovebox_store::pages(&*self.storage, LIVE, &prefix, PAGE) {
            let (key, _) = entry?;
            // A stale entry (its session ended, a crash came before the
            // entry went) is passed over; the recovery at start removes it.
            if self
                .confirmed(id_of(&key), Some(owner))
                .is_some_and(|info| info.header.status.is_live())
            {
                live += 1;
            }
            if live >= limit.value {
                return Err(SessionError::Quota {
                    limit,
                    what: format!("principal `{owner}` already has {live} live sessions"),
                    fix: "end or archive sessions it is done with (`session_end`), or ask an operator to raise the quota".into(),
                });
            }
        }
        Ok(())
    }
}

impl Sessions {
    /// Whether session `state`'s log has room, under its quotas, for one
    /// more record of `kind` from the actor named on this thread (its size
    /// bounded from above, so a record that passes here passes the
    /// append's own check of the sealed record). For a write that lands in
    /// another log first (a handoff's receipt, a verdict's copy, a child's
    /// record in its parent) or that does work before its append (a usage
    /// report charged to the ceilings, a call's admission): checked before
    /// either, so a refusal writes and charges nothing. The host's own
    /// records pass.
    pub fn check_log_room(
        &self,
        state: &SessionState,
        kind: &EventKind,
    ) -> Result<(), SessionError> {
        let Some(by) = actor::named().filter(|by| &**by != actor::HOST) else {
            return Ok(());
        };
        let size = stored_bound(state, &by, kind);
        check_log(&self.config.quotas, state, 1, size)
    }
}
