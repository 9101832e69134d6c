//! The `[quotas]` the sessions enforce: tags per session, the size of a
//! handoff, live sessions per agent principal, children per session, the
//! events and bytes of one session's log. Each check runs before anything
//! is written, so a refused request changes nothing; the error names the
//! key to raise (see `glovebox_manifest::QuotasConfig`).
//!
//! The log's quotas (`session_events`, `session_bytes`): why. One session's
//! log is read whole to resume it, verify it or replay it, and lives on the
//! disk every tenant shares; a loop of notes or calls in one session grew it
//! without end (threats 42, 49). They count what actors wrote
//! ([`Written`](super::state::Written): every event an agent or operator
//! caused, not the host's own; kept in the state and its checkpoints, so a
//! restart counts nothing again) and are checked in the one batch append
//! every event takes, beside the disk watermark and the principal's daily
//! counts. Only new content an actor asks for is refused ([`grows`]): a
//! record of it that would take the log past a quota. Whatever closes,
//! pauses or settles a session, and what follows a call already admitted,
//! is counted and goes through, so a session at its quota still ends and
//! nothing acknowledged is lost. A write that leaves a record in another
//! session's log (a handoff's receipt, a verdict's copy in the judge's log,
//! a child's record in its parent), or that does work before its append (a
//! call's admission, a usage report's charge), checks the log first
//! ([`Sessions::check_log_room`]), so a refusal writes and charges nothing.
//! That check and the one of live sessions per principal ask the store or
//! the thread's actor, so they are in `room.rs`; the checks here are of
//! what is at hand.
//!
//! [`Sessions::check_log_room`]: super::Sessions::check_log_room

use super::error::SessionError;
use super::event::Event;
use super::growth::{Growth, growth, settles};
use super::handoff::Handoff;
use super::kind::EventKind;
use super::state::{SessionState, written_by_actor};
use crate::manifest::QuotasConfig;

/// The tags a session would have with `add` added and `remove` removed,
/// against `quotas.tags_per_session`.
pub(super) fn check_tags(
    quotas: &QuotasConfig,
    current: &[String],
    add: &[String],
    remove: &[String],
) -> Result<(), SessionError> {
    let mut after: Vec<&String> = current.iter().filter(|t| !remove.contains(t)).collect();
    for tag in add {
        if !after.contains(&tag) {
            after.push(tag);
        }
    }
    let limit = quotas.limit("tags_per_session");
    if after.len() as u64 > limit.value {
        return Err(SessionError::Quota {
            limit,
            what: format!("the session would carry {} tags", after.len()),
            fix: "remove tags it no longer needs, or ask an operator to raise the quota".into(),
        });
    }
    Ok(())
}

/// One handoff's size (its JSON, every field) and the entries of each of
/// its lists, against `quotas.handoff_bytes` and `quotas.handoff_items`.
pub(super) fn check_handoff(quotas: &QuotasConfig, handoff: &Handoff) -> Result<(), SessionError> {
    let lists = [
        ("requirements", &handoff.notes.requirements),
        ("files", &handoff.notes.files),
        ("success_criteria", &handoff.notes.success_criteria),
        ("work_completed", &handoff.notes.work_completed),
        ("next_steps", &handoff.notes.next_steps),
        ("blockers", &handoff.notes.blockers),
    ];
    let limit = quotas.limit("handoff_items");
    if let Some((field, list)) = lists.iter().find(|(_, l)| l.len() as u64 > limit.value) {
        return Err(SessionError::Quota {
            limit,
            what: format!("the handoff's `{field}` has {} entries", list.len()),
            fix: "summarize: put the details in a file in the scratch dir and list the file".into(),
        });
    }
    let bytes = serde_json::to_vec(handoff).map_or(u64::MAX, |v| v.len() as u64);
    let limit = quotas.limit("handoff_bytes");
    if bytes > limit.value {
        return Err(SessionError::Quota {
            limit,
            what: format!("the handoff is {bytes} bytes"),
            fix: "summarize: put the details in a file in the scratch dir and list the file".into(),
        });
    }
    Ok(())
}

/// A child more for `parent`, against `quotas.children_per_session` (in
/// all: ended children count, since each stays in its parent's family).
pub(super) fn check_children(
    quotas: &QuotasConfig,
    parent: &SessionState,
) -> Result<(), SessionError> {
    let limit = quotas.limit("children_per_session");
    if parent.children_spawned >= limit.value {
        return Err(SessionError::Quota {
            limit,
            what: format!(
                "session {} has spawned {} children",
                parent.label(),
                parent.children_spawned
            ),
            fix: "give the rest of the work to the children it has, or hand it off to a new session of its own (`session_handoff`), or ask an operator to raise the quota".into(),
        });
    }
    Ok(())
}

/// Whether an actor's event of `kind` is new content, refused past the
/// log's quotas: receipts and openings are checked on the log they land in
/// before the write (`check_log_room`), the rest settles.
fn grows(kind: &EventKind) -> bool {
    matches!(growth(kind), Growth::Call | Growth::Work | Growth::Report)
}

/// Session `state`'s log with `events` more events and `bytes` more bytes
/// of new content from actors, against `quotas.session_events` and
/// `quotas.session_bytes`.
pub(super) fn check_log(
    quotas: &QuotasConfig,
    state: &SessionState,
    events: u64,
    bytes: u64,
) -> Result<(), SessionError> {
    let written = state.written;
    let checks = [
        (
            "session_events",
            written.events.saturating_add(events),
            "events",
        ),
        (
            "session_bytes",
            written.bytes.saturating_add(bytes),
            "bytes",
        ),
    ];
    for (key, after, unit) in checks {
        let limit = quotas.limit(key);
        if after > limit.value {
            return Err(SessionError::Quota {
                limit,
                what: format!(
                    "session {} would hold {after} {unit} written by its actors",
                    state.label()
                ),
                fix: "end this session (`session_end` still works) and go on in a new one (a `session_handoff` to it first carries the work over, if it fits), or ask an operator to raise the quota".into(),
            });
        }
    }
    Ok(())
}

/// The batch `events` (stored as `bytes`) about to follow `state`, against
/// the log's quotas: refused when the new content actors ask for in it
/// ([`grows`]) would take the log past one. The rest of the batch is
/// counted (by the append) but never refused, and a batch that closes the
/// session or lifts its pause goes through whatever it carries (see
/// `room.rs`).
pub(super) fn check_batch(
    quotas: &QuotasConfig,
    state: &SessionState,
    events: &[Event],
    bytes: &[Vec<u8>],
) -> Result<(), SessionError> {
    if events.iter().any(|e| settles(&e.kind)) {
        return Ok(());
    }
    let (mut n, mut size) = (0u64, 0u64);
    for (event, stored) in events.iter().zip(bytes) {
        if written_by_actor(event) && grows(&event.kind) {
            n += 1;
            size = size.saturating_add(stored.len() as u64);
        }
    }
    if n == 0 {
        return Ok(());
    }
    check_log(quotas, state, n, size)
}

/// The most bytes one event of `kind` by `by` takes in session `state`'s
/// log: the event sealed with the widest sequence and time there are.
pub(super) fn stored_bound(state: &SessionState, by: &str, kind: &EventKind) -> u64 {
    let hash = "0".repeat(state.last_hash.len().max(64));
    let widest = Event {
        session: state.header.id.clone(),
        seq: u64::MAX,
        at_ms: u64::MAX,
        prev_hash: hash.clone(),
        by: Some(by.to_string()),
        hash,
        kind: kind.clone(),
    };
    widest.to_bytes().len() as u64
}
