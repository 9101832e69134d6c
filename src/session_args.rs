//! What `glovebox session ...` takes: its subcommands ([`SessionCommand`])
//! and what `session start`, `session spawn` and `session handoff` take
//! besides their own flags (the new session's name, tags and budget, and a
//! handoff's notes).

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Result;
use clap::{Args, Subcommand};
use glovebox::budget::BudgetCaps;
use glovebox::session::{EndOutcome, HandoffKind, HandoffNotes, Role};

#[derive(Subcommand, serde::Serialize, serde::Deserialize)]
pub enum SessionCommand {
    /// Start a session.
    Start {
        /// orchestrator, supervisor or workagent.
        #[arg(long)]
        role: Role,
        #[arg(long)]
        project: String,
        #[command(flatten)]
        #[serde(flatten)]
        new: NewSessionArgs,
    },
    /// Report the brain's own usage (tokens, model cost) into a session; the
    /// cost counts toward its cost cap.
    Usage {
        session: String,
        #[arg(long, default_value_t = 0)]
        tokens_in: u64,
        #[arg(long, default_value_t = 0)]
        tokens_out: u64,
        /// Model cost, in the same units as the tools' `cost`.
        #[arg(long, default_value_t = 0.0)]
        cost: f64,
        #[arg(long)]
        model: Option<String>,
        /// The tokens in the brain's context now (with `--context-limit`).
        #[arg(long, requires = "context_limit")]
        context_tokens: Option<u64>,
        /// The context window's size in tokens (with `--context-tokens`).
        #[arg(long, requires = "context_tokens")]
        context_limit: Option<u64>,
    },
    /// Show a session's budget, or (operator) set its caps: logged as
    /// `cap_raised`; a session its budget paused resumes once within its caps.
    Budget {
        session: String,
        #[arg(long)]
        cost: Option<f64>,
        #[arg(long)]
        calls: Option<u64>,
        #[arg(long, value_parser = humantime::parse_duration)]
        wall: Option<Duration>,
        /// A cap on the model tokens (in plus out) the brain reports.
        #[arg(long)]
        tokens: Option<u64>,
    },
    /// List sessions, newest activity first.
    List(crate::session_list::ListArgs),
    /// Spawn a child session of PARENT: a role at or below the parent's, a
    /// task handoff, and caps carved out of the parent's budget (required for
    /// each cap the parent has). The child's agent resumes it to get the task.
    Spawn {
        parent: String,
        /// orchestrator, supervisor or workagent, at or below the parent's.
        #[arg(long)]
        role: Role,
        /// What the child is to do.
        #[arg(long)]
        objective: String,
        /// The task's notes, as a handoff takes them.
        #[command(flatten)]
        #[serde(flatten)]
        notes: NotesArgs,
        #[command(flatten)]
        #[serde(flatten)]
        new: NewSessionArgs,
    },
    /// From a judge session (role `judge`, yours), pass or fail WORKER's
    /// latest handoff, which its `completed` waits for when its condition
    /// asks for a judge. WORKER must belong to another principal.
    Verdict {
        worker: String,
        /// Your judge session.
        #[arg(long)]
        judge: String,
        /// Pass the handoff (else `--fail`).
        #[arg(long, conflicts_with = "fail", required_unless_present = "fail")]
        pass: bool,
        #[arg(long)]
        fail: bool,
        /// Why (repeatable; a failing verdict needs one).
        #[arg(long = "reason")]
        reasons: Vec<String>,
        /// The handoff judged (its seq); refused if it is no longer the latest.
        #[arg(long)]
        handoff_seq: Option<u64>,
    },
    /// Wait until every child of PARENT has posted a handoff to it or ended,
    /// up to the timeout (default 30s, at most 10m); exit 6 on timeout.
    Wait {
        parent: String,
        #[arg(long, value_parser = humantime::parse_duration)]
        timeout: Option<Duration>,
    },
    /// Show a session's state (its blocker flags and escalation step under `watch`).
    Show { session: String },
    /// Run the stuck-agent detector on a session now: raises the blocker
    /// flags that hold (a critical one pauses it) and shows the active ones.
    Check {
        session: String,
        #[arg(long)]
        json: bool,
    },
    /// Name (or rename) a session.
    Name { session: String, name: String },
    /// Add or remove tags.
    Tag {
        session: String,
        #[arg(long = "add")]
        add: Vec<String>,
        #[arg(long = "remove")]
        remove: Vec<String>,
    },
    /// Raise a blocker flag on a session: it is stuck on something it
    /// cannot fix itself (a critical flag pauses it until an operator
    /// resumes it). Notifications, triggers and `session list --blocked`
    /// see it.
    Flag {
        session: String,
        /// What blocks the session.
        #[arg(long)]
        reason: String,
        /// info, warning or critical.
        #[arg(long, default_value = "warning", value_parser = ["info", "warning", "critical"])]
        severity: String,
        /// What would unblock it.
        #[arg(long)]
        needs: Option<String>,
    },
    /// Pause a session; calls are refused until it is resumed.
    Pause {
        session: String,
        #[arg(long)]
        reason: String,
    },
    /// Resume a session: prints its state, its latest handoff and interrupted calls.
    Resume { session: String },
    /// End a session. One with live child sessions is refused unless
    /// `--cancel-children` ends them first (as interrupted).
    End {
        session: String,
        /// completed, interrupted or exit.
        #[arg(long, default_value = "completed")]
        outcome: EndOutcome,
        /// End the session's live children (and theirs) first, as interrupted.
        #[arg(long)]
        cancel_children: bool,
    },
    /// Archive an ended (or paused) session.
    Archive { session: String },
    /// Write a handoff: from flags, or a whole handoff as JSON with `--from-file`.
    Handoff {
        session: String,
        /// orchestrator_to_supervisor, supervisor_to_workagent, workagent_completion,
        /// supervisor_to_orchestrator or continuation.
        #[arg(long, required_unless_present = "from_file")]
        kind: Option<HandoffKind>,
        #[arg(long, required_unless_present = "from_file")]
        objective: Option<String>,
        /// The session that receives it (its resume returns it).
        #[arg(long)]
        to: Option<String>,
        #[command(flatten)]
        #[serde(flatten)]
        notes: NotesArgs,
        /// A JSON file with the whole handoff (the fields of `Handoff`).
        #[arg(long, conflicts_with_all = ["kind", "objective"])]
        from_file: Option<PathBuf>,
    },
    /// Re-run an interrupted call of an idempotent tool, with its idempotency key.
    Rerun { session: String, call_id: String },
}

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
