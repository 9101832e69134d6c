//! How outcomes become MCP answers.
//!
//! A call that ran (or was judged) is a `CallToolResult`: success carries the
//! output as text and as structured content; a denial, a pending approval or
//! a failure is a tool error (`isError`) whose structured content says which.
//! A request that is not a call at all (unknown tool, input refused before
//! anything is logged) is a JSON-RPC error instead.

use rmcp::ErrorData;
use rmcp::model::{CallToolResult, ContentBlock, Resource};
use serde::Serialize;
use serde_json::{Value, json};

use glovebox::CallError;
use glovebox::CallReport;
use glovebox::operations::{ErrorClass, OperationError};
use glovebox::session::SessionError;

/// A successful result: `value` as JSON text, and as structured content when
/// it is an object (MCP's structured content is an object). A result kept
/// whole because it passed its tool's output limit (`glovebox::stored`)
/// links to where the whole is read.
pub fn ok_value(value: Value) -> CallToolResult {
    let text = value.to_string();
    let mut content = vec![ContentBlock::text(text)];
    content.extend(kept_link(&value));
    let mut result = CallToolResult::success(content);
    if value.is_object() {
        result.structured_content = Some(value);
    }
    result
}

/// The resource link of a kept result's description, if `value` is one.
fn kept_link(value: &Value) -> Option<ContentBlock> {
    let object = value.as_object().filter(|o| o.len() == 1)?;
    let kept = object.get(glovebox::stored::KEY)?;
    let uri = kept["uri"]
        .as_str()
        .filter(|u| u.starts_with("glovebox://sessions/"))?;
    let mut link = Resource::new(uri, "the whole result")
        .with_description("The call's whole result, kept because it passed its tool's output limit; read it a chunk at a time.")
        .with_mime_type("application/json");
    if let Some(size) = kept["size"].as_u64() {
        link = link.with_size(size);
    }
    Some(ContentBlock::resource_link(link))
}

/// A successful result of anything serializable.
pub fn ok<T: Serialize>(value: &T) -> CallToolResult {
    match serde_json::to_value(value) {
        Ok(v) => ok_value(v),
        Err(e) => failure("internal", format!("cannot encode the result: {e}")),
    }
}

/// A tool error: `text` for people, `structured` for programs.
pub fn tool_error(text: String, structured: Value) -> CallToolResult {
    let mut result = CallToolResult::error(vec![ContentBlock::text(text)]);
    result.structured_content = Some(structured);
    result
}

/// A failed operation: `{"error": {"kind", "message"}}`.
pub fn failure(kind: &str, message: String) -> CallToolResult {
    tool_error(
        message.clone(),
        json!({"error": {"kind": kind, "message": message}}),
    )
}

/// What a session operation gave: its result ([`ok`]), or why the store or
/// the lifecycle refused it ([`session_failure`]).
pub fn session<T: Serialize>(result: Result<T, SessionError>) -> CallToolResult {
    match result {
        Ok(value) => ok(&value),
        Err(e) => session_failure(&e),
    }
}

/// A session operation the store or the lifecycle refused.
pub fn session_failure(e: &SessionError) -> CallToolResult {
    failure(e.kind(), e.to_string())
}

/// The answer to a plugin tool call that went through the pipeline.
/// A `[[verify]]` check that failed after the call comes with its result,
/// one text block each, so the agent's next step fixes what it reports.
/// The HTTP requests the host refused the call, with why (a plugin sees
/// only that they were denied), come as a text block too, and in a failed
/// call's structured content as `http_denials`.
pub fn report(mut report: CallReport) -> CallToolResult {
    let failed = report.failed_checks();
    let denials = std::mem::take(&mut report.http_denials);
    let mut result = match report.outcome {
        Ok(output) => {
            let mut result = ok_value(output);
            result
                .content
                .extend(failed.into_iter().map(ContentBlock::text));
            result
        }
        Err(e) => call_error(&e),
    };
    if !denials.is_empty() {
        result.content.push(ContentBlock::text(format!(
            "the host refused HTTP requests of this call: {}",
            denials.join("; ")
        )));
        if result.is_error == Some(true)
            && let Some(Value::Object(structured)) = &mut result.structured_content
        {
            structured.insert("http_denials".into(), json!(denials));
        }
    }
    result
}

/// A call that did not produce an output, as a tool error: the error's own
/// words (`CallError` is the one place that words a refusal), and for a
/// denial or an approval wait, its parts as structured content.
pub fn call_error(e: &CallError) -> CallToolResult {
    match e {
        CallError::Denied {
            hook,
            pattern,
            reason,
            alternatives,
            ..
        } => tool_error(
            e.to_string(),
            json!({"denied": {
                "hook": hook,
                "pattern": pattern,
                "reason": reason,
                "alternatives": alternatives,
            }}),
        ),
        CallError::AwaitingApproval {
            approval_id,
            hook,
            reason,
            ..
        } => tool_error(
            format!("{e}; the session is paused until then"),
            json!({"awaiting_approval": {
                "approval_id": approval_id,
                "hook": hook,
                "reason": reason,
            }}),
        ),
        other => failure(other.kind(), other.to_string()),
    }
}

/// An operation of the registry that failed: bad arguments are refused as
/// a request ([`bad_arguments`]' kind), anything else is the tool's error
/// with the operation's kind and words.
pub fn operation_failure(e: OperationError) -> Result<CallToolResult, ErrorData> {
    match (e.class, e.kind.as_str()) {
        (ErrorClass::Invalid, "invalid_arguments") => Err(ErrorData::invalid_params(
            glovebox::session::bounded_error(e.message),
            Some(json!({"kind": "invalid_input"})),
        )),
        _ => Ok(failure(&e.kind, e.message)),
    }
}

/// A request refused before anything ran or was logged (unknown or
/// ambiguous tool, input too large, not JSON, or not fitting the schema).
pub fn bad_request(e: &CallError) -> ErrorData {
    ErrorData::invalid_params(e.to_string(), Some(json!({"kind": e.kind()})))
}

/// Arguments of a built-in tool that do not fit its schema. The reason may
/// quote what the agent sent: it is cut at the log's error length.
pub fn bad_arguments(tool: &str, reason: impl std::fmt::Display) -> ErrorData {
    let reason = glovebox::session::bounded_error(reason.to_string());
    ErrorData::invalid_params(
        format!("invalid arguments for `{tool}`: {reason}"),
        Some(json!({"kind": "invalid_input"})),
    )
}

/// An approval an operator settled before this call's wait began: the call
/// ran for them, and its outcome is in the session's log.
pub fn approved_elsewhere(approval: &glovebox::approvals::Approval) -> CallToolResult {
    let by = match &approval.status {
        glovebox::approvals::ApprovalStatus::Approved { by, .. } => by.as_deref(),
        _ => None,
    };
    ok_value(json!({
        "approved": {
            "approval_id": approval.id,
            "call_id": approval.call_id,
            "by": by,
            "note": "the call ran when it was approved; its outcome is in the session's log (`session_log`)",
        }
    }))
}
