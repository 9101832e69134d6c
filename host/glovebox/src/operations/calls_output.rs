//! `calls.output`: the whole result of a call that was kept because it
//! passed its tool's `limits.output` (`crate::stored`), a chunk at a time.

use schemars::JsonSchema;
use serde::Deserialize;

use super::files_read::{FileChunk, read_chunk};
use super::sizes::{ID_MAX, SESSION_REF_MAX};
use super::{Audience, Operation, OperationError, Route};
use crate::scope::Scope;
use crate::scratch::CHUNK_MAX;

pub struct CallOutput;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CallOutputArgs {
    /// The session's id or name.
    #[schemars(length(max = SESSION_REF_MAX))]
    pub session: String,
    /// The call's id (its result's `stored_output.uri` ends with it).
    #[schemars(length(min = 1, max = ID_MAX))]
    pub call_id: String,
    /// Where to start, in bytes (0 when absent).
    #[serde(default)]
    pub offset: u64,
    /// Bytes to read: 1 MiB when absent, and at most.
    #[serde(default)]
    #[schemars(range(min = 1, max = CHUNK_MAX))]
    pub length: Option<u64>,
}

impl Operation for CallOutput {
    const NAME: &'static str = "calls.output";
    const SUMMARY: &'static str = "The whole result of a call whose result passed its tool's `limits.output` and was kept, up to 1 MiB at a time.";
    const DESCRIPTION: &'static str = "The call answered its first bytes and this result's size and SHA-256 (its `stored_output`, which the session's log records). Text when the chunk is UTF-8 (cut back to a whole character), else base64; `next_offset` is where the next chunk starts. Another principal's session is not found (an operator sees every session).";
    const AUDIENCE: Audience = Audience::Anyone;
    const HTTP: Option<Route> = Some(Route::get("/sessions/{session}/outputs/{call_id}"));
    type Args = CallOutputArgs;
    type Output = FileChunk;

    async fn run(scope: Scope<'_>, args: CallOutputArgs) -> Result<FileChunk, OperationError> {
        read_chunk(args.call_id, args.length, |call_id, length| {
            scope.read_output(&args.session, call_id, args.offset, length)
        })
        .await
    }
}
