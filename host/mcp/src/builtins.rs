//! The built-in tools: sessions, background jobs, the context index and
//! the memory bank.

use std::str::FromStr;
use std::time::Duration;

use rmcp::ErrorData;
use rmcp::model::{CallToolResult, JsonObject};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::Connection;
use super::results::{self, bad_arguments};
use super::tools::*;
use glovebox::Principal;
use glovebox::budget::{BudgetCaps, UsageReport};
use glovebox::jobs::{JobError, JobStatus, WaitMode};
use glovebox::manifest::Completion;
use glovebox::memory::MemoryError;
use glovebox::session::{
    EndOutcome, Handoff, HandoffKind, Role, SessionFilter, SessionStatus, SpawnChild, StartSession,
    VerdictInput,
};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct StartArgs {
    role: String,
    project: String,
    name: Option<String>,
    #[serde(default)]
    tags: Vec<String>,
    /// Humantime text: "2h", "45m".
    expected_duration: Option<String>,
    #[serde(default)]
    budget: CapsArgs,
    completion: Option<Completion>,
}

/// A session's own caps; the role's caps (`[budgets.role.<role>]`) still
/// hold, so these can only tighten them.
#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct CapsArgs {
    cost: Option<f64>,
    calls: Option<u64>,
    wall: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NoteArgs {
    text: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct UsageArgs {
    #[serde(default)]
    tokens_in: u64,
    #[serde(default)]
    tokens_out: u64,
    model: Option<String>,
    #[serde(default)]
    cost: f64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PauseArgs {
    reason: String,
    session: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SessionListArgs {
    status: Option<String>,
    #[serde(default)]
    tags: Vec<String>,
    #[serde(default)]
    children: bool,
    session: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SessionSpawnArgs {
    role: String,
    name: Option<String>,
    #[serde(default)]
    tags: Vec<String>,
    expected_duration: Option<String>,
    #[serde(default)]
    budget: CapsArgs,
    objective: String,
    #[serde(default)]
    success_criteria: Vec<String>,
    #[serde(default)]
    requirements: Vec<String>,
    #[serde(default)]
    files: Vec<String>,
    #[serde(default)]
    next_steps: Vec<String>,
    #[serde(default)]
    current_phase: String,
    session: Option<String>,
    completion: Option<Completion>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct VerdictArgs {
    session: String,
    verdict: String,
    #[serde(default)]
    reasons: Vec<String>,
    handoff_seq: Option<u64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SessionWaitArgs {
    timeout_ms: Option<u64>,
    session: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LogArgs {
    session: Option<String>,
    from_seq: Option<u64>,
    limit: Option<usize>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RerunArgs {
    call_id: String,
    session: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SessionArg {
    session: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct OptionalSessionArg {
    session: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct HandoffArgs {
    kind: String,
    objective: String,
    #[serde(default)]
    requirements: Vec<String>,
    #[serde(default)]
    files: Vec<String>,
    #[serde(default)]
    success_criteria: Vec<String>,
    #[serde(default)]
    work_completed: Vec<String>,
    #[serde(default)]
    current_phase: String,
    #[serde(default)]
    next_steps: Vec<String>,
    #[serde(default)]
    blockers: Vec<String>,
    to: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EndArgs {
    outcome: Option<String>,
    #[serde(default)]
    cancel_children: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SpawnArgs {
    tool: String,
    input: Value,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WaitArgs {
    ids: Vec<String>,
    mode: Option<String>,
    timeout_ms: Option<u64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct IdArg {
    id: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ContextSearchArgs {
    query: String,
    project: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MemoryProposeArgs {
    scope: String,
    text: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MemorySearchArgs {
    query: String,
    limit: Option<usize>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ListArgs {
    session: Option<String>,
    status: Option<String>,
}

fn parse<T: DeserializeOwned>(tool: &str, args: JsonObject) -> Result<T, ErrorData> {
    serde_json::from_value(Value::Object(args)).map_err(|e| bad_arguments(tool, e))
}

fn parse_enum<T: FromStr<Err = String>>(tool: &str, field: &str, v: &str) -> Result<T, ErrorData> {
    v.parse()
        .map_err(|e: String| bad_arguments(tool, format!("`{field}`: {e}")))
}

/// A job operation that failed, as a tool error. (The tool and its input
/// were checked before `job_spawn` got here, so what the jobs service still
/// refuses is the session's state.)
fn job_failure(e: &JobError) -> Result<CallToolResult, ErrorData> {
    Ok(match e {
        JobError::BadRequest(_) => results::failure("job_refused", e.to_string()),
        JobError::NotFound(_) => results::failure("job_not_found", e.to_string()),
        JobError::Session(s) => results::session_failure(s),
        JobError::Storage(_) => results::failure("job_storage", e.to_string()),
    })
}

/// The most events one `session_log` page holds.
pub(crate) const LOG_PAGE_MAX: usize = 500;
/// The longest note or pause reason.
const TEXT_MAX: usize = 16 * 1024;

fn text_arg(tool: &str, field: &str, text: &str) -> Result<(), ErrorData> {
    if text.trim().is_empty() {
        return Err(bad_arguments(
            tool,
            format!("`{field}` is empty: say something"),
        ));
    }
    if text.len() > TEXT_MAX {
        return Err(bad_arguments(
            tool,
            format!(
                "`{field}` is {} bytes, over the {TEXT_MAX}-byte limit: shorten it",
                text.len()
            ),
        ));
    }
    Ok(())
}

/// What `session_start` and `session_spawn` are given besides role,
/// project, name and tags: the expected duration and the caps.
fn start_extras(
    tool: &str,
    expected_duration: Option<&str>,
    budget: &CapsArgs,
) -> Result<(Option<Duration>, BudgetCaps), ErrorData> {
    let expected = match expected_duration {
        None => None,
        Some(t) => Some(glovebox::manifest::parse_duration(t).map_err(|e| {
            bad_arguments(
                tool,
                format!("`expected_duration`: {e} (write e.g. \"45m\" or \"2h\")"),
            )
        })?),
    };
    let wall = match budget.wall.as_deref() {
        None => None,
        Some(t) => Some(glovebox::manifest::parse_duration(t).map_err(|e| {
            bad_arguments(tool, format!("`budget.wall`: {e} (write e.g. \"30m\")"))
        })?),
    };
    let caps = BudgetCaps::new(budget.cost, budget.calls, wall)
        .map_err(|e| bad_arguments(tool, format!("`budget.cost`: {e}")))?;
    Ok((expected, caps))
}

/// A memory bank refusal, as a tool error: its own words name the rule
/// and the fix; nothing was written.
fn memory_failure(e: &MemoryError) -> CallToolResult {
    match e {
        MemoryError::NotAllowed(_) => results::failure("memory_not_allowed", e.to_string()),
        MemoryError::NotFound(_) => results::failure("memory_not_found", e.to_string()),
        MemoryError::InvalidInput(_) => results::failure("memory_invalid_input", e.to_string()),
        MemoryError::Session(s) => results::session_failure(s),
        MemoryError::Storage(_) => results::failure("memory_storage", e.to_string()),
    }
}

fn not_bound(tool: &str) -> CallToolResult {
    results::failure(
        "no_session",
        format!(
            "`{tool}` needs a session: this connection is bound to none; call `session_start` or `session_resume` first"
        ),
    )
}

impl Connection {
    /// A refusal (as the tool's result) when the bound session is a child and
    /// `key` is a session outside its family and every route (see
    /// `glovebox_ledger::session::check_addressable`).
    async fn family_guard(&self, caller: &Principal, key: &str) -> Option<CallToolResult> {
        let bound = self.bound().await?;
        if bound == key {
            return None;
        }
        match self
            .shared()
            .gateway
            .check_addressable_as(caller, &bound, key)
            .await
        {
            // "Not found" is the action's own answer to give.
            Ok(()) | Err(glovebox::session::SessionError::NotFound(_)) => None,
            Err(e) => Some(results::session_failure(&e)),
        }
    }

    /// The session a built-in acts on: the one it names, else the bound one.
    /// `Err` holds the answer when there is none, or when the caller's family
    /// may not reach it (see [`Self::family_guard`]).
    async fn target(
        &self,
        caller: &Principal,
        tool: &str,
        named: Option<String>,
    ) -> Result<String, CallToolResult> {
        let Some(key) = named.or(self.bound().await) else {
            return Err(not_bound(tool));
        };
        match self.family_guard(caller, &key).await {
            Some(refused) => Err(refused),
            None => Ok(key),
        }
    }

    /// A built-in tool, on behalf of `caller`: the gateway enforces what is
    /// the caller's (another's session or job is "not found").
    pub(super) async fn builtin(
        &self,
        caller: &Principal,
        tool: &str,
        args: JsonObject,
    ) -> Result<CallToolResult, ErrorData> {
        let gateway = &self.shared().gateway;
        let jobs = &self.shared().jobs;
        match tool {
            SESSION_START => {
                let a: StartArgs = parse(tool, args)?;
                let (expected_duration, budget) =
                    start_extras(tool, a.expected_duration.as_deref(), &a.budget)?;
                let completion = a.completion.unwrap_or_default();
                if let Err(e) = gateway.check_completion(&completion) {
                    return Ok(results::session_failure(&e));
                }
                let start = StartSession {
                    role: parse_enum::<Role>(tool, "role", &a.role)?,
                    project: a.project,
                    name: a.name,
                    tags: a.tags,
                    expected_duration,
                    budget,
                    completion,
                };
                Ok(match gateway.start_session_as(caller, start).await {
                    Ok(state) => {
                        self.bind(Some(state.id.clone())).await;
                        results::ok(&state)
                    }
                    Err(e) => results::session_failure(&e),
                })
            }
            SESSION_RESUME => {
                let a: SessionArg = parse(tool, args)?;
                if let Some(refused) = self.family_guard(caller, &a.session).await {
                    return Ok(refused);
                }
                Ok(match gateway.resume_session_as(caller, &a.session).await {
                    Ok(resumed) => {
                        self.bind(Some(resumed.state.id.clone())).await;
                        results::ok(&resumed)
                    }
                    Err(e) => results::session_failure(&e),
                })
            }
            SESSION_STATUS => {
                let a: OptionalSessionArg = parse(tool, args)?;
                let key = match self.target(caller, tool, a.session).await {
                    Ok(key) => key,
                    Err(answer) => return Ok(answer),
                };
                let bound = self.bound().await;
                Ok(match gateway.session_as(caller, &key).await {
                    Ok(state) => {
                        let mut v = serde_json::to_value(&state).unwrap_or(Value::Null);
                        if let Value::Object(o) = &mut v {
                            o.insert(
                                "bound".into(),
                                json!(bound.as_deref() == Some(state.id.as_str())),
                            );
                        }
                        results::ok_value(v)
                    }
                    Err(e) => results::session_failure(&e),
                })
            }
            SESSION_HANDOFF => {
                let a: HandoffArgs = parse(tool, args)?;
                let kind = parse_enum::<HandoffKind>(tool, "kind", &a.kind)?;
                let Some(id) = self.bound().await else {
                    return Ok(not_bound(tool));
                };
                let result = match gateway.session_as(caller, &id).await {
                    Ok(state) => {
                        let mut h = Handoff::new(kind, state.role, a.objective);
                        h.requirements = a.requirements;
                        h.files = a.files;
                        h.success_criteria = a.success_criteria;
                        h.work_completed = a.work_completed;
                        h.current_phase = a.current_phase;
                        h.next_steps = a.next_steps;
                        h.blockers = a.blockers;
                        h.target_session = a.to;
                        gateway.handoff_as(caller, &state.id, h).await
                    }
                    Err(e) => Err(e),
                };
                Ok(match result {
                    Ok(event) => results::ok(&event),
                    Err(e) => results::session_failure(&e),
                })
            }
            SESSION_END => {
                let a: EndArgs = parse(tool, args)?;
                let outcome = match a.outcome.as_deref() {
                    None => EndOutcome::Completed,
                    Some(o) => parse_enum::<EndOutcome>(tool, "outcome", o)?,
                };
                let Some(id) = self.bound().await else {
                    return Ok(not_bound(tool));
                };
                let cancelled = if a.cancel_children {
                    match gateway.cancel_children_as(caller, &id).await {
                        Ok(ids) => ids,
                        Err(e) => return Ok(results::session_failure(&e)),
                    }
                } else {
                    Vec::new()
                };
                Ok(match gateway.end_checked_as(caller, &id, outcome).await {
                    Ok(ended) => {
                        self.bind(None).await;
                        // The state, with a `warning` when jobs of the
                        // session's own were left unwaited (`glovebox doctor`).
                        let mut value =
                            serde_json::to_value(&ended.state).unwrap_or(serde_json::Value::Null);
                        if let (Some(warning), Some(map)) = (ended.warning(), value.as_object_mut())
                        {
                            map.insert("warning".into(), warning.into());
                        }
                        if let (false, Some(map)) = (cancelled.is_empty(), value.as_object_mut()) {
                            map.insert("cancelled_children".into(), json!(cancelled));
                        }
                        results::ok(&value)
                    }
                    Err(e) => results::session_failure(&e),
                })
            }
            JOB_SPAWN => {
                let a: SpawnArgs = parse(tool, args)?;
                if !a.input.is_object() {
                    return Err(bad_arguments(tool, "`input` must be a JSON object"));
                }
                let call = self.admit(&a.tool, &a.input)?;
                let session = match self.session_for_call(caller).await {
                    Ok(s) => s,
                    Err(e) => return Ok(results::session_failure(&e)),
                };
                Ok(match jobs.spawn_as(caller, &session, call).await {
                    Ok(info) => results::ok(&info),
                    Err(e) => job_failure(&e)?,
                })
            }
            JOB_WAIT => {
                let a: WaitArgs = parse(tool, args)?;
                if a.ids.is_empty() {
                    return Err(bad_arguments(
                        tool,
                        "`ids` is empty: give at least one job id",
                    ));
                }
                let mode = match a.mode.as_deref() {
                    None | Some("all") => WaitMode::All,
                    Some("first") => WaitMode::First,
                    Some(other) => {
                        return Err(bad_arguments(
                            tool,
                            format!("`mode`: unknown mode `{other}`: expected all or first"),
                        ));
                    }
                };
                let timeout = a.timeout_ms.map(Duration::from_millis);
                Ok(match jobs.wait_as(caller, &a.ids, mode, timeout).await {
                    Ok(outcome) => results::ok(&outcome),
                    Err(e) => job_failure(&e)?,
                })
            }
            JOB_STATUS => {
                let a: IdArg = parse(tool, args)?;
                Ok(match jobs.status_as(caller, &a.id).await {
                    Ok(info) => results::ok(&info),
                    Err(e) => job_failure(&e)?,
                })
            }
            JOB_CANCEL => {
                let a: IdArg = parse(tool, args)?;
                Ok(match jobs.cancel_as(caller, &a.id).await {
                    Ok(info) => results::ok(&info),
                    Err(e) => job_failure(&e)?,
                })
            }
            JOB_LIST => {
                let a: ListArgs = parse(tool, args)?;
                let status = match a.status.as_deref() {
                    None => None,
                    Some(s) => Some(parse_enum::<JobStatus>(tool, "status", s)?),
                };
                let session = match a.session {
                    Some(key) => {
                        if let Some(refused) = self.family_guard(caller, &key).await {
                            return Ok(refused);
                        }
                        Some(key)
                    }
                    None => self.bound().await,
                };
                Ok(
                    match jobs.list_as(caller, session.as_deref(), status).await {
                        Ok(jobs) => results::ok_value(json!({"jobs": jobs})),
                        Err(e) => job_failure(&e)?,
                    },
                )
            }
            SESSION_NOTE => {
                let a: NoteArgs = parse(tool, args)?;
                text_arg(tool, "text", &a.text)?;
                let session = match self.session_for_call(caller).await {
                    Ok(s) => s,
                    Err(e) => return Ok(results::session_failure(&e)),
                };
                Ok(match gateway.note_as(caller, &session, &a.text).await {
                    Ok(event) => results::ok(&event),
                    Err(e) => results::session_failure(&e),
                })
            }
            SESSION_USAGE => {
                let a: UsageArgs = parse(tool, args)?;
                let usage = UsageReport {
                    tokens_in: a.tokens_in,
                    tokens_out: a.tokens_out,
                    cost: a.cost,
                    model: a.model,
                };
                let session = match self.session_for_call(caller).await {
                    Ok(s) => s,
                    Err(e) => return Ok(results::session_failure(&e)),
                };
                Ok(
                    match gateway.report_usage_as(caller, &session, usage).await {
                        Ok(events) => results::ok_value(json!({"events": events})),
                        Err(e) => results::session_failure(&e),
                    },
                )
            }
            SESSION_PAUSE => {
                let a: PauseArgs = parse(tool, args)?;
                text_arg(tool, "reason", &a.reason)?;
                let key = match self.target(caller, tool, a.session).await {
                    Ok(key) => key,
                    Err(answer) => return Ok(answer),
                };
                Ok(
                    match gateway.pause_session_as(caller, &key, &a.reason).await {
                        Ok(state) => results::ok(&state),
                        Err(e) => results::session_failure(&e),
                    },
                )
            }
            SESSION_LIST => {
                let a: SessionListArgs = parse(tool, args)?;
                if a.children {
                    let key = match self.target(caller, tool, a.session).await {
                        Ok(key) => key,
                        Err(answer) => return Ok(answer),
                    };
                    return Ok(match gateway.children_as(caller, &key).await {
                        Ok(children) => results::ok_value(json!({"children": children})),
                        Err(e) => results::session_failure(&e),
                    });
                }
                if a.session.is_some() {
                    return Err(bad_arguments(
                        tool,
                        "`session` names the parent whose children to list: give it with `children: true`",
                    ));
                }
                let filter = SessionFilter {
                    status: match a.status.as_deref() {
                        None => None,
                        Some(s) => Some(parse_enum::<SessionStatus>(tool, "status", s)?),
                    },
                    tags: a.tags,
                    ..Default::default()
                };
                Ok(match gateway.list_sessions_as(caller, filter).await {
                    Ok(sessions) => results::ok_value(json!({"sessions": sessions})),
                    Err(e) => results::session_failure(&e),
                })
            }
            SESSION_LOG => {
                let a: LogArgs = parse(tool, args)?;
                let limit = a.limit.unwrap_or(100);
                if limit == 0 || limit > LOG_PAGE_MAX {
                    return Err(bad_arguments(
                        tool,
                        format!(
                            "`limit` is {limit}: give 1 to {LOG_PAGE_MAX} and page on with `from_seq`"
                        ),
                    ));
                }
                let from = a.from_seq.unwrap_or(1).max(1);
                let key = match self.target(caller, tool, a.session).await {
                    Ok(key) => key,
                    Err(answer) => return Ok(answer),
                };
                Ok(match gateway.events_as(caller, &key, from, limit).await {
                    Ok(events) => {
                        let next = (events.len() == limit)
                            .then(|| events.last().map(|e| e.seq + 1))
                            .flatten();
                        results::ok_value(json!({"events": events, "next_seq": next}))
                    }
                    Err(e) => results::session_failure(&e),
                })
            }
            SESSION_RERUN => {
                let a: RerunArgs = parse(tool, args)?;
                let key = match self.target(caller, tool, a.session).await {
                    Ok(key) => key,
                    Err(answer) => return Ok(answer),
                };
                Ok(
                    match gateway.rerun_interrupted_as(caller, &key, &a.call_id).await {
                        Ok(report) => results::report(report),
                        Err(e) => results::session_failure(&e),
                    },
                )
            }
            SESSION_SPAWN => {
                let a: SessionSpawnArgs = parse(tool, args)?;
                let role = parse_enum::<Role>(tool, "role", &a.role)?;
                let (expected_duration, budget) =
                    start_extras(tool, a.expected_duration.as_deref(), &a.budget)?;
                let parent = match self.target(caller, tool, a.session).await {
                    Ok(key) => key,
                    Err(answer) => return Ok(answer),
                };
                // Kind, roles and target are the spawn's to set.
                let mut task = Handoff::new(HandoffKind::Task, role, a.objective);
                task.success_criteria = a.success_criteria;
                task.requirements = a.requirements;
                task.files = a.files;
                task.next_steps = a.next_steps;
                task.current_phase = a.current_phase;
                let completion = a.completion.unwrap_or_default();
                if let Err(e) = gateway.check_completion(&completion) {
                    return Ok(results::session_failure(&e));
                }
                let spawn = SpawnChild {
                    role,
                    name: a.name,
                    tags: a.tags,
                    expected_duration,
                    budget,
                    task,
                    completion,
                };
                Ok(
                    match gateway.spawn_session_as(caller, &parent, spawn).await {
                        Ok(spawned) => results::ok(&spawned),
                        Err(e) => results::session_failure(&e),
                    },
                )
            }
            SESSION_VERDICT => {
                let a: VerdictArgs = parse(tool, args)?;
                let pass = match a.verdict.as_str() {
                    "pass" => true,
                    "fail" => false,
                    other => {
                        return Err(bad_arguments(
                            tool,
                            format!("`verdict`: `{other}` is not a verdict: expected pass or fail"),
                        ));
                    }
                };
                let Some(judge) = self.bound().await else {
                    return Ok(not_bound(tool));
                };
                let input = VerdictInput {
                    pass,
                    reasons: a.reasons,
                    handoff_seq: a.handoff_seq,
                };
                Ok(
                    match gateway.verdict_as(caller, &judge, &a.session, input).await {
                        Ok(judged) => results::ok(&judged),
                        Err(e) => results::session_failure(&e),
                    },
                )
            }
            SESSION_WAIT => {
                let a: SessionWaitArgs = parse(tool, args)?;
                let parent = match self.target(caller, tool, a.session).await {
                    Ok(key) => key,
                    Err(answer) => return Ok(answer),
                };
                let timeout = a.timeout_ms.map(Duration::from_millis);
                Ok(
                    match gateway.wait_children_as(caller, &parent, timeout).await {
                        Ok(waited) => results::ok(&waited),
                        Err(e) => results::session_failure(&e),
                    },
                )
            }
            APPROVAL_STATUS => {
                let a: IdArg = parse(tool, args)?;
                Ok(match gateway.approval_as(caller, &a.id).await {
                    Ok(Some(approval)) => results::ok(&approval),
                    Ok(None) => results::failure(
                        "approval_not_found",
                        format!(
                            "no approval `{}`: its id is in the `awaiting_approval` result of the call that waits for it",
                            a.id
                        ),
                    ),
                    Err(e) => results::session_failure(&e),
                })
            }
            CONTEXT_SEARCH => {
                let a: ContextSearchArgs = parse(tool, args)?;
                Ok(
                    match gateway
                        .context_search_as(caller, &a.query, a.project.as_deref())
                        .await
                    {
                        Ok(entries) => results::ok(&serde_json::json!({ "entries": entries })),
                        Err(e) => results::session_failure(&e),
                    },
                )
            }
            MEMORY_PROPOSE => {
                let a: MemoryProposeArgs = parse(tool, args)?;
                let Some(id) = self.bound().await else {
                    return Ok(not_bound(tool));
                };
                Ok(
                    match gateway
                        .memory_propose_as(caller, &id, &a.scope, &a.text)
                        .await
                    {
                        Ok((entry, event)) => {
                            results::ok_value(json!({"entry": entry, "seq": event.seq}))
                        }
                        Err(e) => memory_failure(&e),
                    },
                )
            }
            MEMORY_SEARCH => {
                let a: MemorySearchArgs = parse(tool, args)?;
                let Some(id) = self.bound().await else {
                    return Ok(not_bound(tool));
                };
                let limit = a.limit.unwrap_or(10);
                Ok(
                    match gateway.memory_search_as(caller, &id, &a.query, limit).await {
                        Ok((found, event)) => {
                            results::ok_value(json!({"entries": found, "seq": event.seq}))
                        }
                        Err(e) => memory_failure(&e),
                    },
                )
            }
            other => Err(ErrorData::invalid_params(
                format!("unknown built-in tool `{other}`"),
                None,
            )),
        }
    }
}
