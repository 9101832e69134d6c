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

use serde::{Deserialize, Serialize};

use super::handoff::{Handoff, HandoffKind};
use super::state::{ChildLink, SessionState};
use crate::manifest::{BudgetCaps, Cap};

/// The children a parent's state names (the newest spawned).
pub const RECENT_CHILDREN: usize = 16;

/// The caps a parent carved for all its children together: what its own
/// budget counts as spent for them (see `budget::Used`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Carved {
    pub cost_micros: u64,
    pub calls: u64,
}

impl Carved {
    pub fn is_empty(&self) -> bool {
        *self == Carved::default()
    }

    fn add(&mut self, caps: &BudgetCaps) {
        let add = |to: &mut u64, cap: Cap| *to = to.saturating_add(caps.get(cap).unwrap_or(0));
        add(&mut self.cost_micros, Cap::Cost);
        add(&mut self.calls, Cap::Calls);
    }
}

impl SessionState {
    /// The part of `cap` the session carved out for its children.
    pub fn carved(&self, cap: Cap) -> u64 {
        match cap {
            Cap::Cost => self.children_carved.cost_micros,
            Cap::Calls => self.children_carved.calls,
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
