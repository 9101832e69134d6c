//! The session lifecycle: statuses and the transitions between them.
//!
//! | from      | action                  | to        |
//! |-----------|-------------------------|-----------|
//! | created   | resume, call, handoff   | active    |
//! | created   | end                     | completed |
//! | active    | pause                   | paused    |
//! | active    | end                     | completed |
//! | paused    | resume                  | active    |
//! | paused    | end                     | completed |
//! | paused    | archive                 | archived  |
//! | completed | archive                 | archived  |
//! | archived  | (none: final)           |           |
//!
//! Besides these, some events leave the status as it is: calls and handoffs in
//! an active session, a handoff written in a paused session (a note for whoever
//! resumes it), a handoff received by any live session, and the records of a
//! call already under way (decided, started, finished, interrupted) in any
//! status, since the call began while it was allowed. Renames, tags and notes
//! are refused only once a session is archived.

use std::fmt;

use serde::{Deserialize, Serialize};

/// Where a session is in its life.
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SessionStatus {
    Created,
    Active,
    Paused,
    Completed,
    Archived,
}

impl SessionStatus {
    pub const ALL: [SessionStatus; 5] = [
        SessionStatus::Created,
        SessionStatus::Active,
        SessionStatus::Paused,
        SessionStatus::Completed,
        SessionStatus::Archived,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            SessionStatus::Created => "created",
            SessionStatus::Active => "active",
            SessionStatus::Paused => "paused",
            SessionStatus::Completed => "completed",
            SessionStatus::Archived => "archived",
        }
    }

    /// Created, active or paused: the session holds its name and can still work.
    pub fn is_live(self) -> bool {
        matches!(
            self,
            SessionStatus::Created | SessionStatus::Active | SessionStatus::Paused
        )
    }

    /// The status-changing transitions allowed from here.
    pub fn transitions(self) -> Vec<Transition> {
        TRANSITIONS
            .iter()
            .filter(|(from, _)| *from == self)
            .map(|(_, t)| *t)
            .collect()
    }
}

glovebox_manifest::named_enum!(SessionStatus, "status");

/// An action that moves a session to another status.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Transition {
    pub action: &'static str,
    pub to: SessionStatus,
}

impl fmt::Display for Transition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} → {}", self.action, self.to)
    }
}

const fn t(action: &'static str, to: SessionStatus) -> Transition {
    Transition { action, to }
}

/// The lifecycle (see the module docs).
pub const TRANSITIONS: &[(SessionStatus, Transition)] = {
    use SessionStatus::*;
    &[
        (Created, t("resume", Active)),
        (Created, t("call", Active)),
        (Created, t("handoff", Active)),
        (Created, t("end", Completed)),
        (Active, t("pause", Paused)),
        (Active, t("end", Completed)),
        (Paused, t("resume", Active)),
        (Paused, t("end", Completed)),
        (Paused, t("archive", Archived)),
        (Completed, t("archive", Archived)),
    ]
};
