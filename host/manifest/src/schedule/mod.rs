//! `[[schedule]]` and `[[trigger]]`: work the host starts by itself, on a
//! cron expression or when something happens, so an agent system does not
//! run only while someone calls it.
//!
//! ```toml
//! [[schedule]]
//! name = "billing-watch"
//! cron = "0 */6 * * *"          # UTC; five fields (a sixth, first, for seconds)
//! catch_up = true               # a fire missed while the host was down runs once at start
//! action = "call"               # "start", "call" or "sweep"
//! session = "billing-watch"     # the session it works in; started when none is live
//! project = "billing"
//! role = "workagent"            # the default
//! tool = "report.overdue"
//! input = { days = 30 }
//! alert_if = "count > 0"        # a number (or array length) in the tool's JSON output
//! notify = ["ops"]              # `[[notify]]` targets told when the alert holds or the run fails
//!
//! [[trigger]]
//! name = "ci-failed"
//! on = "job_failed"             # any `[[notify]]` event, or "webhook"
//! from_project = "ci"           # only events of sessions of this project (default: any)
//! cooldown = "1m"               # at most one fire a minute (the default); "0s": every event
//! action = "start"
//! session = "ci-triage"
//! project = "ci"
//! objective = "find out why the CI job failed"
//! ```
//!
//! Who acts: a schedule is the agent principal `schedule:<name>`, a trigger
//! `trigger:<name>`, with the one role and project its entry names and
//! nothing else (see [`Run::principal`]). It owns the sessions it starts and
//! reaches no other principal's; its calls go through the hooks like any
//! agent's, and every event it causes carries its name. Nothing here is
//! granted that the operator did not write.

mod alert_if;
mod cron;
mod names;
mod raw;
mod run;
mod schedules;
mod triggers;

use super::detector::Severity;
use super::notify::NotifyKind;
use super::principal::{Principal, PrincipalKind};
use super::role::Role;

pub use alert_if::{AlertIf, AlertIfError, Cmp};
pub use cron::{CronExpr, CronExprError};
pub(crate) use raw::{RawSchedule, RawTrigger};
pub(crate) use schedules::validate_schedules;
pub(crate) use triggers::validate_triggers;

/// One `[[schedule]]`.
#[derive(Clone, Debug, PartialEq)]
pub struct ScheduleConfig {
    /// Unique among the schedules; the principal is `schedule:<name>`.
    pub name: String,
    pub cron: CronExpr,
    /// A fire missed while the host was down runs once at start (default
    /// true); false: missed fires are skipped.
    pub catch_up: bool,
    pub run: Run,
}

/// One `[[trigger]]`.
#[derive(Clone, PartialEq)]
pub struct TriggerConfig {
    /// Unique among the triggers; the principal is `trigger:<name>`, and a
    /// webhook trigger is `POST /hooks/<name>` on the admin listener.
    pub name: String,
    pub on: TriggerOn,
    /// Only events of sessions of this project (event triggers).
    pub from_project: Option<String>,
    /// The webhook's shared secret (`on = "webhook"` only): each request is
    /// signed with HMAC-SHA256 under it.
    pub secret: Option<String>,
    /// `cooldown` (event triggers): after a fire, events that would fire it
    /// again within this time are folded into one fire when it ends, so an
    /// agent that causes events in a loop (failing jobs, flags) starts at
    /// most one run per cooldown. Default [`DEFAULT_TRIGGER_COOLDOWN`];
    /// zero fires on every event. Webhooks have none (their sender signs
    /// each request, and a replay is refused).
    pub cooldown: std::time::Duration,
    pub run: Run,
}

/// An event trigger's `cooldown` when the config gives none.
pub const DEFAULT_TRIGGER_COOLDOWN: std::time::Duration = std::time::Duration::from_secs(60);

impl std::fmt::Debug for TriggerConfig {
    // The secret never reaches a log line.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TriggerConfig")
            .field("name", &self.name)
            .field("on", &self.on)
            .field("from_project", &self.from_project)
            .field("secret", &self.secret.as_ref().map(|_| "<set>"))
            .field("cooldown", &self.cooldown)
            .field("run", &self.run)
            .finish()
    }
}

/// What fires a trigger.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TriggerOn {
    /// An event of a session log, as `[[notify]]` names them (flags at or
    /// above `min_severity`).
    Event {
        kind: NotifyKind,
        min_severity: Severity,
    },
    /// A signed `POST /hooks/<name>` on the admin listener.
    Webhook,
}

impl TriggerOn {
    /// Whether an event of `kind` (a flag's `severity`) fires it.
    pub fn fires_on(&self, kind: NotifyKind, severity: Option<Severity>) -> bool {
        match *self {
            TriggerOn::Event {
                kind: k,
                min_severity,
            } => k == kind && severity.is_none_or(|s| s >= min_severity),
            TriggerOn::Webhook => false,
        }
    }
}

/// What a schedule or trigger does, and whom it tells.
#[derive(Clone, Debug, PartialEq)]
pub struct Run {
    pub action: Action,
    /// When the result calls for a person (`call` only).
    pub alert_if: Option<AlertIf>,
    /// The `[[notify]]` targets told of an alert or a failed run.
    pub notify: Vec<String>,
}

/// The session an action works in: the live one of this name it owns, or a
/// new one it starts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionTarget {
    pub name: String,
    pub project: String,
    pub role: Role,
}

/// The handoff a `start` action posts into its session.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HandoffNote {
    pub objective: String,
    pub success_criteria: Vec<String>,
    pub next_steps: Vec<String>,
}

/// The action of a schedule or trigger.
#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    /// Start the session (or resume it) and post a handoff into it, for the
    /// agent that picks it up.
    Start {
        session: SessionTarget,
        handoff: HandoffNote,
    },
    /// Call a tool in the session, through the whole pipeline.
    Call {
        session: SessionTarget,
        tool: String,
        input: serde_json::Value,
    },
    /// One pass of the stuck-agent detector over the live sessions.
    Sweep,
}

impl Action {
    pub fn as_str(&self) -> &'static str {
        match self {
            Action::Start { .. } => "start",
            Action::Call { .. } => "call",
            Action::Sweep => "sweep",
        }
    }

    pub fn session(&self) -> Option<&SessionTarget> {
        match self {
            Action::Start { session, .. } | Action::Call { session, .. } => Some(session),
            Action::Sweep => None,
        }
    }
}

impl Run {
    /// Who a schedule or trigger acts as: the agent `<prefix>:<name>`
    /// (`schedule`, `trigger`), with its session's role as its ceiling and
    /// its project as its only one (a sweep: none), no pinned tags. The `:`
    /// keeps it apart from every declared principal's name.
    pub fn principal(&self, prefix: &str, name: &str) -> Principal {
        let (roles, projects) = match self.action.session() {
            Some(s) => (vec![s.role], vec![s.project.clone()]),
            None => (Vec::new(), Vec::new()),
        };
        Principal {
            name: format!("{prefix}:{name}"),
            kind: PrincipalKind::Agent,
            roles,
            projects,
            tags: Vec::new(),
            approve_by: Default::default(),
            card: Default::default(),
            toolsets: Vec::new(),
            read_only: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_schedule_is_an_agent_within_its_session_only() {
        let run = Run {
            action: Action::Call {
                session: SessionTarget {
                    name: "w".into(),
                    project: "billing".into(),
                    role: Role::Workagent,
                },
                tool: "t".into(),
                input: serde_json::json!({}),
            },
            alert_if: None,
            notify: vec![],
        };
        let p = run.principal("schedule", "w");
        assert_eq!(p.name, "schedule:w");
        assert!(!p.is_operator());
        assert!(p.may_act_as(Role::Workagent) && !p.may_act_as(Role::Supervisor));
        assert!(p.may_touch("billing") && !p.may_touch("other"));
        let sweep = Run {
            action: Action::Sweep,
            alert_if: None,
            notify: vec![],
        };
        let p = sweep.principal("trigger", "s");
        assert!(!p.may_touch("billing") && !p.may_act_as(Role::Workagent));
    }
}
