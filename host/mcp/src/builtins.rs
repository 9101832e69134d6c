//! The built-in tools: sessions, background jobs, the context index and
//! the memory bank. Each parses its arguments into its struct in
//! `tools.rs`, the one whose schema `tools/list` gives for it.

use std::time::Duration;

use rmcp::ErrorData;
use rmcp::model::{CallToolResult, JsonObject};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::Connection;
use super::results::{self, bad_arguments};
use super::tools::*;
use glovebox::Principal;
use glovebox::budget::{BudgetCaps, UsageReport};
use glovebox::jobs::{JobError, WaitMode};
use glovebox::memory::MemoryError;
use glovebox::page::PageRequest;
use glovebox::session::{
    Handoff, HandoffKind, SessionFilter, SpawnChild, StartSession, VerdictInput,
};

/// `tool`'s arguments as its argument struct (`tools.rs`); the error names
/// the tool and the field at fault (`budget.cost`) when it is in one.
///
/// The fields of a group flattened into the struct (`NewSessionArgs`,
/// `HandoffNotes`) are out of the path's sight: for an error serde places
/// at the top, the tool's schema says which field is at fault, and an
/// unknown field's error lists the fields there are.
///
/// Every built-in's arguments come through here, so the limits its schema
/// declares are checked here first, for all of them (`limits.rs`).
fn parse<T: DeserializeOwned>(tool: &str, args: JsonObject) -> Result<T, ErrorData> {
    let args = Value::Object(args);
    super::limits::check(tool, &args).map_err(|said| bad_arguments(tool, said))?;
    serde_path_to_error::deserialize(&args).map_err(|e| {
        let field = e.path().to_string();
        let e = e.into_inner().to_string();
        if field != "." {
            return bad_arguments(tool, format!("`{field}`: {e}"));
        }
        if e.starts_with("unknown field")
            && !e.contains("expected")
            && let Some(fields) = fields_of(tool)
        {
            return bad_arguments(tool, format!("{e}, expected one of {fields}"));
        }
        bad_arguments(tool, locate(tool, &args).unwrap_or(e))
    })
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
            .scope(caller)
            .check_addressable(&bound, key)
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
        let scope = gateway.scope(caller);
        let jobs = self.shared().jobs.scope(caller);
        match tool {
            SESSION_START => {
                let a: StartArgs = parse(tool, args)?;
                let (expected_duration, budget) =
                    start_extras(tool, a.new.expected_duration.as_deref(), &a.budget)?;
                let completion = a.completion;
                if let Err(e) = gateway.check_completion(&completion) {
                    return Ok(results::session_failure(&e));
                }
                let start = StartSession {
                    role: a.role,
                    project: a.project,
                    name: a.new.name,
                    tags: a.new.tags,
                    expected_duration,
                    budget,
                    completion,
                };
                Ok(match scope.start_session(start).await {
                    Ok(state) => {
                        self.bind(Some(state.header.id.clone())).await;
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
                Ok(match scope.resume_session(&a.session).await {
                    Ok(resumed) => {
                        self.bind(Some(resumed.state.header.id.clone())).await;
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
                Ok(match scope.session(&key).await {
                    Ok(state) => {
                        let mut v = serde_json::to_value(&state).unwrap_or(Value::Null);
                        if let Value::Object(o) = &mut v {
                            o.insert(
                                "bound".into(),
                                json!(bound.as_deref() == Some(state.header.id.as_str())),
                            );
                        }
                        results::ok_value(v)
                    }
                    Err(e) => results::session_failure(&e),
                })
            }
            SESSION_HANDOFF => {
                let a: HandoffArgs = parse(tool, args)?;
                let Some(id) = self.bound().await else {
                    return Ok(not_bound(tool));
                };
                let result = match scope.session(&id).await {
                    Ok(state) => {
                        let mut h = Handoff::new(a.kind, state.header.role, a.objective);
                        h.notes = a.notes;
                        h.target_session = a.to;
                        scope.handoff(&state.header.id, h).await
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
                let Some(id) = self.bound().await else {
                    return Ok(not_bound(tool));
                };
                let cancelled = if a.cancel_children {
                    match scope.cancel_children(&id).await {
                        Ok(ids) => ids,
                        Err(e) => return Ok(results::session_failure(&e)),
                    }
                } else {
                    Vec::new()
                };
                Ok(match scope.end_checked(&id, a.outcome).await {
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
                Ok(match jobs.spawn(&session, call).await {
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
                let mode = match a.mode {
                    WaitFor::All => WaitMode::All,
                    WaitFor::First => WaitMode::First,
                };
                let timeout = a.timeout_ms.map(Duration::from_millis);
                Ok(match jobs.wait(&a.ids, mode, timeout).await {
                    Ok(outcome) => results::ok(&outcome),
                    Err(e) => job_failure(&e)?,
                })
            }
            JOB_STATUS => {
                let a: JobArg = parse(tool, args)?;
                Ok(match jobs.status(&a.id).await {
                    Ok(info) => results::ok(&info),
                    Err(e) => job_failure(&e)?,
                })
            }
            JOB_CANCEL => {
                let a: JobArg = parse(tool, args)?;
                Ok(match jobs.cancel(&a.id).await {
                    Ok(info) => results::ok(&info),
                    Err(e) => job_failure(&e)?,
                })
            }
            JOB_LIST => {
                let a: ListArgs = parse(tool, args)?;
                let session = match a.session {
                    Some(key) => {
                        if let Some(refused) = self.family_guard(caller, &key).await {
                            return Ok(refused);
                        }
                        Some(key)
                    }
                    None => self.bound().await,
                };
                let page = PageRequest {
                    limit: a.limit,
                    cursor: a.cursor,
                };
                Ok(match jobs.list(session.as_deref(), a.status, &page).await {
                    Ok(page) => {
                        let mut value = json!({"jobs": page.items});
                        if let Some(next) = page.next_cursor {
                            value["next_cursor"] = json!(next);
                        }
                        results::ok_value(value)
                    }
                    Err(e) => job_failure(&e)?,
                })
            }
            SESSION_NOTE => {
                let a: NoteArgs = parse(tool, args)?;
                text_arg(tool, "text", &a.text)?;
                let session = match self.session_for_call(caller).await {
                    Ok(s) => s,
                    Err(e) => return Ok(results::session_failure(&e)),
                };
                Ok(match scope.note(&session, &a.text).await {
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
                Ok(match scope.report_usage(&session, usage).await {
                    Ok(events) => results::ok_value(json!({"events": events})),
                    Err(e) => results::session_failure(&e),
                })
            }
            SESSION_PAUSE => {
                let a: PauseArgs = parse(tool, args)?;
                text_arg(tool, "reason", &a.reason)?;
                let key = match self.target(caller, tool, a.session).await {
                    Ok(key) => key,
                    Err(answer) => return Ok(answer),
                };
                Ok(match scope.pause_session(&key, &a.reason).await {
                    Ok(state) => results::ok(&state),
                    Err(e) => results::session_failure(&e),
                })
            }
            SESSION_LIST => {
                let a: SessionListArgs = parse(tool, args)?;
                let page = page_request(a.limit, a.cursor).map_err(|e| bad_arguments(tool, e))?;
                if a.children {
                    let key = match self.target(caller, tool, a.session).await {
                        Ok(key) => key,
                        Err(answer) => return Ok(answer),
                    };
                    return Ok(match scope.children(&key, page).await {
                        Ok(page) => results::ok_value(
                            json!({"children": page.items, "next_cursor": page.next_cursor}),
                        ),
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
                    status: a.status,
                    tags: a.tags,
                    ..Default::default()
                };
                Ok(match scope.list_sessions(filter, page).await {
                    Ok(page) => results::ok_value(
                        json!({"sessions": page.items, "next_cursor": page.next_cursor}),
                    ),
                    Err(e) => results::session_failure(&e),
                })
            }
            SESSION_LOG => {
                let a: LogArgs = parse(tool, args)?;
                let limit = a.limit;
                if limit == 0 || limit > LOG_PAGE_MAX {
                    return Err(bad_arguments(
                        tool,
                        format!(
                            "`limit` is {limit}: give 1 to {LOG_PAGE_MAX} and page on with `from_seq`"
                        ),
                    ));
                }
                let from = a.from_seq.max(1);
                let key = match self.target(caller, tool, a.session).await {
                    Ok(key) => key,
                    Err(answer) => return Ok(answer),
                };
                Ok(match scope.events(&key, from, limit).await {
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
                Ok(match scope.rerun_interrupted(&key, &a.call_id).await {
                    Ok(report) => results::report(report),
                    Err(e) => results::session_failure(&e),
                })
            }
            SESSION_SPAWN => {
                let a: SessionSpawnArgs = parse(tool, args)?;
                let role = a.role;
                let (expected_duration, budget) =
                    start_extras(tool, a.new.expected_duration.as_deref(), &a.budget)?;
                let parent = match self.target(caller, tool, a.session).await {
                    Ok(key) => key,
                    Err(answer) => return Ok(answer),
                };
                // Kind, roles and target are the spawn's to set.
                let mut task = Handoff::new(HandoffKind::Task, role, a.objective);
                task.notes = a.notes;
                let completion = a.completion;
                if let Err(e) = gateway.check_completion(&completion) {
                    return Ok(results::session_failure(&e));
                }
                let spawn = SpawnChild {
                    role,
                    name: a.new.name,
                    tags: a.new.tags,
                    expected_duration,
                    budget,
                    task,
                    completion,
                };
                Ok(match scope.spawn_session(&parent, spawn).await {
                    Ok(spawned) => results::ok(&spawned),
                    Err(e) => results::session_failure(&e),
                })
            }
            SESSION_VERDICT => {
                let a: VerdictArgs = parse(tool, args)?;
                let pass = a.verdict == Verdict::Pass;
                let Some(judge) = self.bound().await else {
                    return Ok(not_bound(tool));
                };
                let input = VerdictInput {
                    pass,
                    reasons: a.reasons,
                    handoff_seq: a.handoff_seq,
                };
                let judged = scope.verdict(&judge, &a.session, input).await;
                Ok(match judged {
                    Ok(judged) => results::ok(&judged),
                    Err(e) => results::session_failure(&e),
                })
            }
            SESSION_WAIT => {
                let a: SessionWaitArgs = parse(tool, args)?;
                let parent = match self.target(caller, tool, a.session).await {
                    Ok(key) => key,
                    Err(answer) => return Ok(answer),
                };
                let timeout = a.timeout_ms.map(Duration::from_millis);
                Ok(match scope.wait_children(&parent, timeout).await {
                    Ok(waited) => results::ok(&waited),
                    Err(e) => results::session_failure(&e),
                })
            }
            APPROVAL_STATUS => {
                let a: ApprovalArg = parse(tool, args)?;
                Ok(match scope.approval(&a.id).await {
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
                let page = PageRequest {
                    limit: a.limit,
                    cursor: a.cursor,
                };
                Ok(
                    match scope
                        .context_search(&a.query, a.project.as_deref(), &page)
                        .await
                    {
                        Ok(found) => results::ok(&serde_json::json!({
                            "entries": found.items,
                            "next_cursor": found.next_cursor,
                        })),
                        Err(e) => results::session_failure(&e),
                    },
                )
            }
            MEMORY_PROPOSE => {
                let a: MemoryProposeArgs = parse(tool, args)?;
                let Some(id) = self.bound().await else {
                    return Ok(not_bound(tool));
                };
                Ok(match scope.memory_propose(&id, &a.scope, &a.text).await {
                    Ok((entry, event)) => {
                        results::ok_value(json!({"entry": entry, "seq": event.seq}))
                    }
                    Err(e) => memory_failure(&e),
                })
            }
            MEMORY_SEARCH => {
                let a: MemorySearchArgs = parse(tool, args)?;
                let Some(id) = self.bound().await else {
                    return Ok(not_bound(tool));
                };
                let page = PageRequest {
                    limit: Some(a.limit),
                    cursor: a.cursor,
                };
                Ok(match scope.memory_search(&id, &a.query, &page).await {
                    Ok((found, event)) => results::ok_value(json!({
                        "entries": found.items,
                        "seq": event.seq,
                        "next_cursor": found.next_cursor,
                    })),
                    Err(e) => memory_failure(&e),
                })
            }
            other => Err(ErrorData::invalid_params(
                format!("unknown built-in tool `{other}`"),
                None,
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refusal<T: DeserializeOwned>(tool: &str, args: Value) -> String {
        match parse::<T>(tool, args.as_object().unwrap().clone()) {
            Ok(_) => panic!("`{tool}` took {args}"),
            Err(e) => e.message.to_string(),
        }
    }

    fn parsed<T: DeserializeOwned>(tool: &str, args: Value) -> T {
        parse(tool, args.as_object().unwrap().clone())
            .unwrap_or_else(|e| panic!("`{tool}` refused {args}: {}", e.message))
    }

    #[test]
    fn bad_arguments_name_the_tool_and_the_field() {
        for (message, want) in [
            (
                refusal::<StartArgs>(SESSION_START, json!({"role": "boss", "project": "p"})),
                "invalid arguments for `session_start`: `role`: unknown role `boss`: expected one of orchestrator, supervisor, workagent, judge",
            ),
            (
                refusal::<StartArgs>(SESSION_START, json!({"role": "judge"})),
                "invalid arguments for `session_start`: missing field `project`",
            ),
            (
                refusal::<StartArgs>(
                    SESSION_START,
                    json!({"role": "judge", "project": "p", "budget": {"cost": "lots"}}),
                ),
                "invalid arguments for `session_start`: `budget.cost`: invalid type: string \"lots\"",
            ),
            (
                refusal::<StartArgs>(
                    SESSION_START,
                    json!({"role": "judge", "project": "p", "completion": {"gates": [{"tool": "a.b", "expected": {}}]}}),
                ),
                "invalid arguments for `session_start`: `completion.gates[0].expected`: unknown field `expected`, expected one of `tool`, `input`, `expect`",
            ),
            (
                refusal::<HandoffArgs>(SESSION_HANDOFF, json!({"kind": "up", "objective": "o"})),
                "invalid arguments for `session_handoff`: `kind`: unknown handoff kind `up`",
            ),
            // The fields of a flattened group are named by the tool's schema.
            (
                refusal::<StartArgs>(
                    SESSION_START,
                    json!({"role": "judge", "project": "p", "tags": "x"}),
                ),
                "invalid arguments for `session_start`: `tags`: \"x\" is not of type \"array\"",
            ),
            (
                refusal::<HandoffArgs>(
                    SESSION_HANDOFF,
                    json!({"kind": "continuation", "objective": "o", "files": "a.txt"}),
                ),
                "invalid arguments for `session_handoff`: `files`: \"a.txt\" is not of type \"array\"",
            ),
            (
                refusal::<SessionSpawnArgs>(
                    SESSION_SPAWN,
                    json!({"role": "workagent", "objective": "o", "name": null, "blockers": ["a", 1]}),
                ),
                "invalid arguments for `session_spawn`: `blockers[1]`: 1 is not of type \"string\"",
            ),
            (
                refusal::<HandoffArgs>(
                    SESSION_HANDOFF,
                    json!({"kind": "continuation", "objective": "o", "filez": []}),
                ),
                "invalid arguments for `session_handoff`: unknown field `filez`, expected one of `blockers`, `current_phase`, `files`, `kind`, `next_steps`, `objective`, `requirements`, `success_criteria`, `to`, `work_completed`",
            ),
            (
                refusal::<EndArgs>(SESSION_END, json!({"outcome": "done"})),
                "invalid arguments for `session_end`: `outcome`: unknown outcome `done`",
            ),
            (
                refusal::<VerdictArgs>(
                    SESSION_VERDICT,
                    json!({"session": "s", "verdict": "maybe"}),
                ),
                "invalid arguments for `session_verdict`: `verdict`: unknown variant `maybe`, expected `pass` or `fail`",
            ),
            (
                refusal::<WaitArgs>(JOB_WAIT, json!({"ids": ["j"], "mode": "any"})),
                "invalid arguments for `job_wait`: `mode`: unknown variant `any`, expected `all` or `first`",
            ),
            (
                refusal::<ListArgs>(JOB_LIST, json!({"status": "lost"})),
                "invalid arguments for `job_list`: `status`: unknown job status `lost`",
            ),
            (
                refusal::<SessionListArgs>(SESSION_LIST, json!({"status": "lost"})),
                "invalid arguments for `session_list`: `status`: unknown status `lost`",
            ),
            (
                refusal::<JobArg>(JOB_STATUS, json!({"id": "j", "session": "s"})),
                "invalid arguments for `job_status`: `session`: unknown field `session`, expected `id`",
            ),
        ] {
            assert!(message.starts_with(want), "{message}\nwanted: {want}");
        }
    }

    /// An error that quotes what the agent sent is cut, not echoed whole.
    #[test]
    fn a_huge_bad_argument_is_not_echoed_whole() {
        let huge = "x".repeat(100_000);
        for message in [
            refusal::<StartArgs>(
                SESSION_START,
                json!({"role": "judge", "project": "p", "tags": huge}),
            ),
            refusal::<StartArgs>(SESSION_START, json!({"role": huge, "project": "p"})),
        ] {
            assert!(message.len() < 5_000, "{} bytes", message.len());
            assert!(message.ends_with("bytes in all)"), "{}", &message[..200]);
        }
    }

    /// A child's task takes every note a handoff does (docs/operators/children.md says so),
    /// and the new session's name and tags stand beside them.
    #[test]
    fn a_spawn_takes_the_notes_of_a_handoff() {
        let spawn: SessionSpawnArgs = parsed(
            SESSION_SPAWN,
            json!({"role": "workagent", "objective": "o", "name": "kid", "tags": ["t"],
                   "files": ["f"], "work_completed": ["w"], "blockers": ["b"]}),
        );
        assert_eq!(spawn.new.name.as_deref(), Some("kid"));
        assert_eq!(spawn.new.tags, ["t"]);
        assert_eq!(spawn.notes.files, ["f"]);
        assert_eq!(spawn.notes.work_completed, ["w"]);
        assert_eq!(spawn.notes.blockers, ["b"]);
    }

    #[test]
    fn left_out_arguments_take_their_defaults() {
        let end: EndArgs = parsed(SESSION_END, json!({}));
        assert_eq!(end.outcome, glovebox::session::EndOutcome::Completed);
        let end: EndArgs = parsed(SESSION_END, json!({"outcome": "exit"}));
        assert_eq!(end.outcome, glovebox::session::EndOutcome::Exit);
        let wait: WaitArgs = parsed(JOB_WAIT, json!({"ids": ["j"]}));
        assert!(matches!(wait.mode, WaitFor::All));
        let log: LogArgs = parsed(SESSION_LOG, json!({}));
        assert_eq!((log.from_seq, log.limit), (1, 100));
        let search: MemorySearchArgs = parsed(MEMORY_SEARCH, json!({"query": "q"}));
        assert_eq!(search.limit, 10);
        // A word is read as the config reads it (`-` for `_`), and an
        // optional one may be null.
        let handoff: HandoffArgs = parsed(
            SESSION_HANDOFF,
            json!({"kind": "orchestrator-to-supervisor", "objective": "o"}),
        );
        assert_eq!(handoff.kind, HandoffKind::OrchestratorToSupervisor);
        let list: ListArgs = parsed(JOB_LIST, json!({"status": null}));
        assert!(list.status.is_none());
        let list: SessionListArgs = parsed(SESSION_LIST, json!({"status": "paused"}));
        assert_eq!(list.status, Some(glovebox::session::SessionStatus::Paused));
        let start: StartArgs = parsed(SESSION_START, json!({"role": "workagent", "project": "p"}));
        assert!(start.completion.is_empty());
        assert_eq!(start.budget.cost, None);
    }
}
