//! A result too large to answer whole, kept instead of refused: when a
//! tool's result passes its `limits.output` in a session (and is at most
//! its `limits.stored_output`), the whole is stored with the session's
//! scratch files (`glovebox_runtime::scratch`, under the session's quota)
//! and the call's output is a small description of it: its size, its
//! SHA-256, its first bytes and the URI it is read at.
//!
//! Why the description is the output: it is what the caller gets and what
//! the session's log records (the log holds the digest of the whole, so a
//! stored output can be checked against the log), and every surface
//! answers it as any other result. The MCP adapter adds a resource link to
//! the URI; the whole is read as a resource or through the API
//! (`calls.output`), by whoever may see the session.
//!
//! What stays refused: a result past `limits.stored_output` (the guest
//! never hands it over, see `Hands::new`), one that is not JSON, a call
//! outside a session (nowhere to keep it), and one the session's quota has
//! no room for (a `quota` error naming the quota).

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::call::RunLimits;
use crate::error::CallError;
use crate::scratch::{ScratchDirs, StoreError};

/// The most of a kept result's first bytes its description carries.
pub const HEAD_MAX: u64 = 16 * 1024;

/// The key of a kept result's description (the output's only key).
pub const KEY: &str = "stored_output";

/// Where a session's call's result is kept.
pub(crate) struct Keep<'a> {
    pub scratch: &'a ScratchDirs,
    pub session: String,
    pub call_id: String,
}

/// The URI a kept result of `call_id` of session `session` is read at.
pub fn uri(session: &str, call_id: &str) -> String {
    format!("glovebox://sessions/{session}/outputs/{call_id}")
}

/// Keeps `output`, the whole result of tool `tool`, and answers its
/// description (with the whole's size, for the call's metering).
pub(crate) async fn keep(
    tool: &str,
    output: String,
    limits: &RunLimits,
    keep: Keep<'_>,
) -> (Result<Value, CallError>, u64) {
    let size = output.len() as u64;
    if let Err(e) = serde_json::from_str::<serde::de::IgnoredAny>(&output) {
        return (
            Err(CallError::ToolFailed {
                tool: tool.to_string(),
                reason: format!("the tool returned invalid JSON: {e}"),
            }),
            0,
        );
    }
    let sha256 = hex::encode(Sha256::digest(output.as_bytes()));
    let head = head_of(&output, HEAD_MAX.min(limits.output)).to_string();
    let Keep {
        scratch,
        session,
        call_id,
    } = keep;
    let dirs = scratch.clone();
    let (at_session, at_call) = (session.clone(), call_id.clone());
    let stored = tokio::task::spawn_blocking(move || {
        dirs.store_output(&at_session, &at_call, output.as_bytes())
    })
    .await;
    let refused = |e: StoreError| match e {
        StoreError::NoRoom { .. } => CallError::Quota {
            tool: tool.to_string(),
            reason: format!(
                "its result of {size} bytes passes `limits.output` ({}) and could not be kept whole: {e}",
                limits.output
            ),
        },
        StoreError::Io { .. } => CallError::Internal {
            tool: tool.to_string(),
            message: format!("its result of {size} bytes could not be kept whole: {e}"),
        },
    };
    match stored {
        Ok(Ok(())) => {}
        Ok(Err(e)) => return (Err(refused(e)), 0),
        Err(e) => {
            return (
                Err(CallError::Internal {
                    tool: tool.to_string(),
                    message: format!("keeping its result failed: {e}"),
                }),
                0,
            );
        }
    }
    let description = json!({ KEY: {
        "size": size,
        "sha256": sha256,
        "head": head,
        "uri": uri(&session, &call_id),
        "note": format!(
            "the result is {size} bytes, more than the tool's `limits.output` of {}: `head` is its first {} bytes, and the whole is kept at `uri` (MCP resources/read, 1 MiB a chunk; operators: GET /api/v1/sessions/{session}/outputs/{call_id})",
            limits.output,
            head.len()
        ),
    }});
    (Ok(description), size)
}

/// The first bytes of `text`, at most `max`, cut at a character boundary.
fn head_of(text: &str, max: u64) -> &str {
    let mut end = usize::try_from(max).unwrap_or(usize::MAX).min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_head_is_cut_at_a_character_boundary() {
        assert_eq!(head_of("héllo", 2), "h");
        assert_eq!(head_of("héllo", 3), "hé");
        assert_eq!(head_of("abc", 10), "abc");
        assert_eq!(head_of("abc", 0), "");
    }
}
