//! `sessions.flag`: an agent says it is blocked. The flag is raised as the
//! stuck-agent detector raises its own (`glovebox_ledger::detect::raise`),
//! so it takes the same road to a person: the escalation ladder, the
//! `[[notify]]` targets and `[[trigger]]`s that take `flag`, and
//! `session list --blocked`; a critical one pauses the session until an
//! operator resumes it.
//!
//! Why an operation of its own and not a note: a note is progress and
//! reaches nobody; a blocker is the one thing an agent cannot fix itself.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::sizes::{FLAG_TEXT_MAX, SESSION_REF_MAX};
use super::{Audience, Operation, OperationError, Route, target_session};
use crate::detect::EscalationStep;
use crate::manifest::Severity;
use crate::scope::Scope;
use crate::session::{Flag, SessionInfo};

pub struct FlagSession;

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FlagSessionArgs {
    /// Session id or name; the bound session when absent.
    #[schemars(length(max = SESSION_REF_MAX))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// What blocks the session: who reads the flag acts on it.
    #[schemars(length(min = 1, max = FLAG_TEXT_MAX))]
    pub reason: String,
    /// `info`, `warning` (the default) or `critical` (pauses the session
    /// until an operator resumes it).
    #[serde(default = "warning")]
    pub severity: Severity,
    /// What would unblock it (an answer, a grant, a decision).
    #[schemars(length(max = FLAG_TEXT_MAX))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub needs: Option<String>,
}

fn warning() -> Severity {
    Severity::Warning
}

/// The flag raised, what it did, and the session now.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct FlagSessionOutput {
    pub flag: Flag,
    /// The escalation ladder's new step, when it moved.
    pub escalation: Option<EscalationStep>,
    /// Whether the flag paused the session now (a critical one).
    pub paused: bool,
    pub session: SessionInfo,
}

impl Operation for FlagSession {
    const NAME: &'static str = "sessions.flag";
    const SUMMARY: &'static str =
        "Raises a blocker flag: the session is stuck on something it cannot fix itself.";
    const DESCRIPTION: &'static str = "The flag (rule `agent`) is logged as the stuck-agent detector's are: it reaches the notification targets and triggers that take `flag`, `session list --blocked` and the dashboard, and a `critical` one pauses the session until an operator resumes it. A newer flag replaces the session's earlier one; a resume or the session's next handoff clears it. Another principal's session is not found.";
    const AUDIENCE: Audience = Audience::Anyone;
    // Its session is the bound one when not named, which no HTTP path
    // says: operators use `glovebox session flag` (or `glovebox operation`).
    const HTTP: Option<Route> = None;
    const MCP: Option<&'static str> = Some("session_flag");
    type Args = FlagSessionArgs;
    type Output = FlagSessionOutput;

    async fn run(
        scope: Scope<'_>,
        args: FlagSessionArgs,
    ) -> Result<FlagSessionOutput, OperationError> {
        OperationError::unless_given(
            &args.reason,
            "a blocker flag needs a reason: say what blocks the session, for whoever unblocks it",
        )?;
        let key = target_session::<Self>(scope, args.session).await?;
        let flag = Flag {
            rule: "agent".into(),
            severity: args.severity,
            reason: args.reason,
            suggested_action: args.needs.unwrap_or_else(|| {
                "read the reason and unblock the session, then resume it".into()
            }),
            call_id: None,
        };
        let check = scope.flag_session(&key, flag).await?;
        let flag = check
            .raised
            .into_iter()
            .next()
            .ok_or_else(|| OperationError::failed("the flag was not logged"))?;
        Ok(FlagSessionOutput {
            flag,
            escalation: check.escalation,
            paused: check.paused,
            session: SessionInfo::from(&check.state),
        })
    }
}
