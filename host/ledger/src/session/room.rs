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

use super::actor;
use super::error::SessionError;
use super::event::EventKind;
use super::growth::{Growth, growth};
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

/// Whether `kind` closes a session or lifts its pause: a batch with one
/// goes through whatever else it carries (the notes of the approvals a
/// session's end, or an operator's denial, settles).
pub(super) fn settles(kind: &EventKind) -> bool {
    matches!(
        kind,
        EventKind::Ended { .. } | EventKind::Archived | EventKind::Resumed
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
