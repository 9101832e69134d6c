//! Listing sessions a page at a time, newest first, from the indexes
//! (`index.rs`): an operator's listing walks every session, an agent's its
//! own only.
//!
//! The order is the time each session started, newest first. Why not the
//! last activity, as before: a session's last activity changes with each of
//! its events, so a listing by it cannot page (a session busy between two
//! pages moves to the top: one page misses it, another shows it twice), and
//! an index by it would be written again at every event. A start time never
//! changes, so each key stays where it is: sessions started after the first
//! page appear only before it, and following `next_cursor` never skips or
//! repeats one. (Each item still carries the time of its last event.)
//!
//! A filter is applied to the sessions of each page as it is read, and a
//! request looks at [`LOOK_AT_MOST`] index entries at most: when a filter
//! passes over many sessions, a page may hold fewer items than asked (even
//! none) with a `next_cursor` to go on from, so no request costs more than
//! that however many sessions there are.

use super::error::SessionError;
use super::event::Event;
use super::index::{BY_OWNER, BY_START, LIVE, PAGE, id_of};
use super::ops::SessionFilter;
use super::state::SessionInfo;
use super::store::Sessions;
use crate::page::{Page, PageRequest};

/// Index entries one listing request looks at, at most.
pub const LOOK_AT_MOST: usize = 2000;

impl SessionFilter {
    /// Whether `info` passes the filter (all but `inactive_for`, which
    /// needs the time of the session's last event).
    fn passes(&self, info: &SessionInfo) -> bool {
        self.status.is_none_or(|s| s == info.header.status)
            && self.role.is_none_or(|r| r == info.header.role)
            && self
                .project
                .as_ref()
                .is_none_or(|p| *p == info.header.project)
            && self.tags.iter().all(|t| info.header.tags.contains(t))
    }
}

impl Sessions {
    /// A page of the sessions matching `filter`, newest first (every
    /// owner's, or `filter.owner`'s: the operators' listing; an agent's is
    /// [`SessionScope::list`](super::SessionScope::list)).
    pub fn list(
        &self,
        filter: &SessionFilter,
        page: &PageRequest,
    ) -> Result<Page<SessionInfo>, SessionError> {
        self.ensure_indexed()?;
        let owner = filter.owner.as_deref();
        let (bucket, prefix) = match owner {
            None => (BY_START, String::new()),
            Some(owner) => (BY_OWNER, format!("{owner}/")),
        };
        let mut after = match &page.cursor {
            Some(cursor) => Some(check_cursor(cursor, &prefix)?),
            None => None,
        };
        let want = page.size();
        let now = self.now();
        let idle = filter
            .inactive_for
            .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        let mut items = Vec::new();
        let mut looked = 0;
        while looked < LOOK_AT_MOST {
            let ask = (LOOK_AT_MOST - looked).min(want.max(PAGE));
            let keys = self
                .storage
                .scan_page(bucket, &prefix, after.as_deref(), ask)?;
            let end = keys.len() < ask;
            for (key, _) in keys {
                looked += 1;
                if let Some(mut info) = self.confirmed(id_of(&key), owner)
                    && filter.passes(&info)
                {
                    info.header.updated_at_ms = self
                        .last_event_at(&info.header.id)
                        .unwrap_or(info.header.updated_at_ms);
                    if idle.is_none_or(|idle| now.saturating_sub(info.header.updated_at_ms) >= idle)
                    {
                        items.push(info);
                    }
                }
                after = Some(key);
                if items.len() == want {
                    return Ok(Page {
                        items,
                        next_cursor: after,
                    });
                }
            }
            if end {
                return Ok(Page::last(items));
            }
        }
        Ok(Page {
            items,
            next_cursor: after,
        })
    }

    /// Every session, newest first, read a page at a time (what a sweep or
    /// a report walks: it holds one page, however many sessions there are).
    pub fn walk(
        &self,
    ) -> Result<impl Iterator<Item = Result<SessionInfo, SessionError>> + '_, SessionError> {
        self.ensure_indexed()?;
        Ok(
            glovebox_store::pages(&*self.storage, BY_START, "", PAGE).filter_map(
                |entry| match entry {
                    Ok((key, _)) => self.confirmed(id_of(&key), None).map(Ok),
                    Err(e) => Some(Err(e.into())),
                },
            ),
        )
    }

    /// The live sessions, read a page at a time, by owner.
    pub fn walk_live(
        &self,
    ) -> Result<impl Iterator<Item = Result<SessionInfo, SessionError>> + '_, SessionError> {
        self.ensure_indexed()?;
        Ok(
            glovebox_store::pages(&*self.storage, LIVE, "", PAGE).filter_map(|entry| match entry {
                Ok((key, _)) => {
                    let owner = key.split('/').next();
                    self.confirmed(id_of(&key), owner)
                        .filter(|info| info.header.status.is_live())
                        .map(Ok)
                }
                Err(e) => Some(Err(e.into())),
            }),
        )
    }

    /// The time of the session's last event (one read).
    pub(crate) fn last_event_at(&self, id: &str) -> Option<u64> {
        let last = self.storage.last_seq(id).ok()?;
        let (_, bytes) = self.storage.read(id, last, 1).ok()?.into_iter().next()?;
        Event::from_bytes(&bytes).ok().map(|e| e.at_ms)
    }
}

/// `cursor` if it is a position in the listing whose keys start with
/// `prefix` (`<20 digits>/<id>` after it); else why not.
fn check_cursor(cursor: &str, prefix: &str) -> Result<String, SessionError> {
    if super::index::is_position(cursor, prefix) {
        Ok(cursor.to_string())
    } else {
        Err(SessionError::InvalidInput(format!(
            "the cursor `{cursor}` is not one of this listing's: pass the `next_cursor` of the previous page as it came (with the same filters), or none for the first page"
        )))
    }
}
