//! A parent's children as the store's children index has them (see
//! `index.rs`): a page of them, all of them, whether any is still live (a
//! parent does not end before its children: `family.rs`), ending them, and
//! waking whoever waits on them (`session_wait`). Each index entry is
//! confirmed by the child's own state or record.

use std::sync::Arc;

use serde::Serialize;

use super::error::SessionError;
use super::event::Event;
use super::handoff::HandoffKind;
use super::index::{CHILDREN, PAGE, id_of, is_position};
use super::kind::{EndOutcome, EventKind, Role};
use super::lifecycle::SessionStatus;
use super::observers::ChildObserver;
use super::slots::lock;
use super::state::{ChildLink, HandoffRecord, SessionState};
use super::store::Sessions;
use crate::manifest::BudgetCaps;
use crate::page::{Page, PageRequest};

/// A child session as its parent sees it.
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ChildStatus {
    pub id: String,
    pub name: Option<String>,
    pub role: Role,
    pub status: SessionStatus,
    pub outcome: Option<EndOutcome>,
    pub spawned_at_ms: u64,
    /// The caps carved out of the parent's for it.
    pub budget: BudgetCaps,
    /// The latest handoff it wrote to its parent: its completion report.
    pub handoff: Option<HandoffRecord>,
    /// It posted a handoff to its parent, or it ended: `session_wait` is
    /// done with it.
    pub settled: bool,
}

impl Sessions {
    /// A page of the children of session `parent` (an id), oldest first:
    /// each index entry confirmed by the child's own state (its parent).
    pub fn children_page(
        &self,
        parent: &str,
        page: &PageRequest,
    ) -> Result<Page<ChildStatus>, SessionError> {
        let prefix = format!("{parent}/");
        let after = match &page.cursor {
            Some(cursor) => Some(check_child_cursor(cursor, &prefix)?),
            None => None,
        };
        let size = page.size();
        let entries = self
            .storage
            .scan_page(CHILDREN, &prefix, after.as_deref(), size)?;
        let next_cursor = (entries.len() == size)
            .then(|| entries.last().map(|(key, _)| key.clone()))
            .flatten();
        let mut items = Vec::with_capacity(entries.len());
        for (key, value) in entries {
            if let Some(child) = self.child_status(parent, &key, &value)? {
                items.push(child);
            }
        }
        Ok(Page { items, next_cursor })
    }

    /// Every child of session `parent` (an id), oldest first, a page of the
    /// index read at a time (at most `quotas.children_per_session`).
    pub fn children_of(&self, parent: &str) -> Result<Vec<ChildStatus>, SessionError> {
        let prefix = format!("{parent}/");
        let mut children = Vec::new();
        for entry in glovebox_store::pages(&*self.storage, CHILDREN, &prefix, PAGE) {
            let (key, value) = entry?;
            if let Some(child) = self.child_status(parent, &key, &value)? {
                children.push(child);
            }
        }
        Ok(children)
    }

    /// The child of index entry `key` (value `link`) as its parent sees it;
    /// `None` for a hint no child confirms (a start that failed).
    fn child_status(
        &self,
        parent: &str,
        key: &str,
        link: &[u8],
    ) -> Result<Option<ChildStatus>, SessionError> {
        let id = id_of(key);
        let state = match self.state_of(id) {
            Ok(state) => state,
            Err(SessionError::NotFound(_)) => return Ok(None),
            Err(e) => return Err(e),
        };
        if state.parent.as_deref() != Some(parent) {
            return Ok(None);
        }
        let link: ChildLink = serde_json::from_slice(link).unwrap_or_else(|_| ChildLink {
            role: state.header.role,
            name: state.header.name.clone(),
            budget: Default::default(),
            spawned_at_ms: state.header.created_at_ms,
            report: None,
        });
        // The child's own report; else, for a child from before reports
        // were the child's, what its parent's state held, or its latest
        // handoff when that was its report.
        let handoff = state.report.clone().or(link.report).or_else(|| {
            state.latest_handoff.clone().filter(|h| {
                h.from_session == state.header.id
                    && h.handoff.target_session.as_deref() == Some(parent)
                    && h.handoff.kind != HandoffKind::Continuation
            })
        });
        Ok(Some(ChildStatus {
            id: id.to_string(),
            name: state.header.name.clone(),
            role: link.role,
            status: state.header.status,
            outcome: state.outcome,
            spawned_at_ms: link.spawned_at_ms,
            budget: link.budget,
            settled: handoff.is_some() || !state.header.status.is_live(),
            handoff,
        }))
    }

    /// Ends the live children of `parent`, each after its own children, as
    /// `interrupted`, adding their ids to `ended`.
    pub(super) fn cancel_children_of(
        &self,
        parent: &SessionState,
        ended: &mut Vec<String>,
    ) -> Result<(), SessionError> {
        for child in self.children_of(&parent.header.id)? {
            let state = self.state_of(&child.id)?;
            self.cancel_children_of(&state, ended)?;
            if state.header.status.is_live() {
                self.end(&child.id, EndOutcome::Interrupted)?;
                ended.push(child.id);
            }
        }
        Ok(())
    }

    /// Refuses to end `state` while it has live children, naming them and
    /// the ways out.
    pub(super) fn check_no_live_children(&self, state: &SessionState) -> Result<(), SessionError> {
        if state.children_spawned == 0 {
            return Ok(());
        }
        // From the children's records: an ended child's record says so once
        // its end is durable.
        let prefix = format!("{}/", state.header.id);
        let mut live = Vec::new();
        let mut more = 0;
        for entry in glovebox_store::pages(&*self.storage, CHILDREN, &prefix, PAGE) {
            let (key, _) = entry?;
            let id = id_of(&key);
            let Some(info) = self.confirmed(id, None) else {
                continue;
            };
            if info.parent.as_deref() == Some(state.header.id.as_str())
                && info.header.status.is_live()
            {
                if live.len() < 10 {
                    live.push(self.label_of(id));
                } else {
                    more += 1;
                }
            }
        }
        if live.is_empty() {
            return Ok(());
        }
        if more > 0 {
            live.push(format!("and {more} more"));
        }
        Err(SessionError::NotAllowed(format!(
            "session {} has live children: {}; a parent does not end before its children: end them, wait for them (`session_wait`), or end it with `cancel_children` (`glovebox session end {} --cancel-children`), which ends them as interrupted",
            state.label(),
            live.join(", "),
            state.header.id
        )))
    }

    /// Registers `observer`, told whenever a child of some session may
    /// have settled.
    pub fn observe_children(&self, observer: Arc<dyn ChildObserver>) {
        lock(&self.observers).push(observer);
    }

    /// After `event` was applied to `state`: tells the observers when it
    /// may settle a child (the child ended, or the parent received its
    /// handoff).
    pub(super) fn wake_parents(&self, state: &SessionState, event: &Event) {
        let parent = match &event.kind {
            EventKind::Ended { .. } | EventKind::Archived => state.parent.as_deref(),
            // The child's report, in its own log (the parent receives a
            // copy just after).
            EventKind::Handoff(handoff)
                if state.parent.is_some() && handoff.target_session == state.parent =>
            {
                state.parent.as_deref()
            }
            _ => None,
        };
        if let Some(parent) = parent {
            for observer in lock(&self.observers).iter() {
                observer.changed(parent);
            }
        }
    }
}

/// `cursor` if it is a position among the children whose keys start with
/// `prefix` (`<20 digits>/<id>` after it); else why not.
fn check_child_cursor(cursor: &str, prefix: &str) -> Result<String, SessionError> {
    if is_position(cursor, prefix) {
        Ok(cursor.to_string())
    } else {
        Err(SessionError::InvalidInput(format!(
            "the cursor `{cursor}` is not one of this session's children: pass the `next_cursor` of the previous page as it came, or none for the first page"
        )))
    }
}
