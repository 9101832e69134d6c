//! What `session start`, `session spawn` and `session handoff` take besides
//! their own flags: the new session's name, tags and budget, and a
//! handoff's notes.

use std::time::Duration;

use anyhow::Result;
use clap::Args;
use glovebox::budget::BudgetCaps;
use glovebox::session::HandoffNotes;

/// The notes of a handoff, as `session handoff` and `session spawn` (its
/// task) both take them: every field of [`HandoffNotes`].
#[derive(Args, serde::Serialize, serde::Deserialize)]
pub struct NotesArgs {
    /// A requirement (repeatable).
    #[arg(long = "requirement")]
    pub requirements: Vec<String>,
    /// A file the work concerns (repeatable).
    #[arg(long = "file")]
    pub files: Vec<String>,
    /// How to tell the work is done (repeatable).
    #[arg(long = "success")]
    pub success_criteria: Vec<String>,
    /// Work done so far (repeatable).
    #[arg(long = "done")]
    pub work_completed: Vec<String>,
    /// The phase the work is in.
    #[arg(long)]
    pub phase: Option<String>,
    /// A next step (repeatable).
    #[arg(long = "next")]
    pub next_steps: Vec<String>,
    /// Something in the way (repeatable).
    #[arg(long = "blocker")]
    pub blockers: Vec<String>,
}

impl From<NotesArgs> for HandoffNotes {
    fn from(n: NotesArgs) -> HandoffNotes {
        HandoffNotes {
            requirements: n.requirements,
            files: n.files,
            success_criteria: n.success_criteria,
            work_completed: n.work_completed,
            current_phase: n.phase.unwrap_or_default(),
            next_steps: n.next_steps,
            blockers: n.blockers,
        }
    }
}

/// What `session start` and `session spawn` both say of the new session.
#[derive(Args, serde::Serialize, serde::Deserialize)]
pub struct NewSessionArgs {
    /// A name, unique among live sessions.
    #[arg(long)]
    pub name: Option<String>,
    /// A tag (repeatable).
    #[arg(long = "tag")]
    pub tags: Vec<String>,
    /// How long the work should take (e.g. `2h`): used to spot stuck agents.
    #[arg(long, value_parser = humantime::parse_duration)]
    pub expected_duration: Option<Duration>,
    /// Budget: a cap on cost (estimated tool cost plus reported model
    /// cost); the lower of this and the role's cap in the config holds, and
    /// a child's is carved out of its parent's.
    #[arg(long)]
    pub budget_cost: Option<f64>,
    /// Budget: a cap on the calls that run (a child's is carved out of its
    /// parent's).
    #[arg(long)]
    pub budget_calls: Option<u64>,
    /// Budget: a cap on the time since the session started (e.g. `30m`; a
    /// child's is within its parent's).
    #[arg(long, value_parser = humantime::parse_duration)]
    pub budget_wall: Option<Duration>,
    /// Budget: a cap on the model tokens (in plus out) the brain reports
    /// (a child's is carved out of its parent's).
    #[arg(long)]
    pub budget_tokens: Option<u64>,
    /// What must hold before it ends as `completed`, as JSON: `gates`
    /// (tool calls whose result must hold each `expect` field) and/or
    /// `"judge": true`. The config's `[[completion]]` is added.
    #[arg(long, value_name = "JSON")]
    pub completion: Option<String>,
    /// Offer the session (and every child it spawns) only tools annotated
    /// read-only, for good (`[tools.<tool>] read_only` in their manifests).
    #[arg(long)]
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub read_only: bool,
}

impl NewSessionArgs {
    /// The `--budget-*` caps, as the ledger takes them.
    pub fn budget(&self) -> Result<BudgetCaps> {
        BudgetCaps::new(self.budget_cost, self.budget_calls, self.budget_wall)
            .map(|caps| caps.with_tokens(self.budget_tokens))
            .map_err(|e| anyhow::anyhow!("--budget-cost: {e}"))
    }
}
