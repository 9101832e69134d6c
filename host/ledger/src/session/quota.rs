//! The `[quotas]` the sessions enforce: tags per session, the size of a
//! handoff, live sessions per agent principal, children per session. Each
//! check runs before anything is written, so a refused request changes
//! nothing; the error names the key to raise (see
//! `glovebox_manifest::QuotasConfig`).

use super::error::SessionError;
use super::handoff::Handoff;
use super::index::{LIVE, PAGE, id_of};
use super::state::SessionState;
use super::store::Sessions;
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
