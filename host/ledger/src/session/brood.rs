//! What a parent's state keeps of its children: how many it spawned, the
//! caps it carved for them in all, and its newest few; and what a child's
//! state keeps for its parent: its latest report.
//!
//! Why bounded (threat 49): the parent's state used to hold every child ever
//! spawned with its last report (up to 64 KiB each), and a state is written
//! whole in every checkpoint and kept whole in memory, so a supervisor that
//! spawned thousands of workers made every checkpoint megabytes and every
//! load slower. Now a parent's state holds counts, sums and the newest
//! [`RECENT_CHILDREN`] children; every child is found through the store's
//! children index (`family.rs`), and a child's report lives in the child's
//! own log and state (`report`), where `session_wait` reads it.
//!
//! A checkpoint written before the bound holds every child, each with its
//! latest report: it loads as it was, its counts and sums made from that
//! list ([`SessionState::upgrade_children`]), and the next child spawned
//! trims the list to the newest.
//!
//! Here too, what two states tell of their family: whether one is the
//! other's parent or child, and whether a child may address a session
//! (the rules are `family.rs`'s).

use super::handoff::{Handoff, HandoffKind};
use super::kind::Role;
use super::state::{Carved, ChildLink, SessionState};
use crate::manifest::{Cap, HandoffsConfig};

/// The children a parent's state names (the newest spawned).
pub const RECENT_CHILDREN: usize = 16;

impl SessionState {
    /// The part of `cap` the session carved out for its children.
    pub fn carved(&self, cap: Cap) -> u64 {
        match cap {
            Cap::Cost => self.children_carved.cost_micros,
            Cap::Calls => self.children_carved.calls,
            Cap::Tokens => self.children_carved.tokens,
            Cap::Wall => 0,
        }
    }

    /// Folds a `child_spawned` of `child`.
    pub(super) fn child_spawned(&mut self, child: &str, link: ChildLink) {
        self.upgrade_children();
        self.children_spawned = self.children_spawned.saturating_add(1);
        self.children_carved.add(&link.budget);
        self.children.insert(child.to_string(), link);
        while self.children.len() > RECENT_CHILDREN {
            let oldest = self
                .children
                .iter()
                .min_by_key(|(id, link)| (link.spawned_at_ms, (*id).clone()))
                .map(|(id, _)| id.clone());
            match oldest {
                Some(id) => self.children.remove(&id),
                None => break,
            };
        }
    }

    /// Folds a handoff this session wrote (after `latest_handoff` took
    /// it): to its parent, and of any kind but a continuation, it is its
    /// report to the parent.
    pub(super) fn reported(&mut self, handoff: &Handoff) {
        if self.parent.is_some()
            && handoff.target_session == self.parent
            && handoff.kind != HandoffKind::Continuation
        {
            self.report = self.latest_handoff.clone();
        }
    }

    /// A state from a checkpoint written before children were counted holds
    /// every child it spawned: the counts and sums are made from that list.
    pub(crate) fn upgrade_children(&mut self) {
        let listed = self.children.len() as u64;
        if self.children_spawned < listed {
            self.children_spawned = listed;
            let mut carved = Carved::default();
            for link in self.children.values() {
                carved.add(&link.budget);
            }
            self.children_carved = carved;
        }
    }
}

/// Whether `a` and `b` are parent and child (either way).
pub(super) fn parent_or_child(a: &SessionState, b: &SessionState) -> bool {
    a.parent.as_deref() == Some(b.header.id.as_str())
        || b.parent.as_deref() == Some(a.header.id.as_str())
}

/// Whether session `from` may address `target`: a session that is not a
/// child reaches what ownership lets it; a child only its family (itself,
/// its parent, its siblings, its own children) or a session of a role a
/// `[handoffs] routes` entry leads to from its own. The error is the reason.
pub fn check_addressable(
    from: &SessionState,
    target: &SessionState,
    routes: &HandoffsConfig,
) -> Result<(), OutsideFamily> {
    let Some(parent) = from.parent.as_deref() else {
        return Ok(());
    };
    let family = target.header.id == from.header.id
        || target.header.id == parent
        || target.parent.as_deref() == Some(parent)
        || target.parent.as_deref() == Some(from.header.id.as_str());
    if family || routes.allows(from.header.role, target.header.role) {
        return Ok(());
    }
    Err(OutsideFamily {
        target: target.label(),
        child: from.label(),
        from_role: from.header.role,
        to_role: target.header.role,
    })
}

/// Why a child session may not address a session: it is outside the
/// child's family and no route leads to its role. Names both sessions and
/// the route that would allow it.
#[derive(Debug, Clone, thiserror::Error)]
#[error(
    "session {target} is outside the family of child session {child} (a child reaches its parent, its siblings and its own children): hand the work to the parent, or ask an operator for a route `\"{from_role} -> {to_role}\"` in `[handoffs] routes`"
)]
pub struct OutsideFamily {
    /// The addressed session's label.
    pub target: String,
    /// The child's label.
    pub child: String,
    pub from_role: Role,
    pub to_role: Role,
}
