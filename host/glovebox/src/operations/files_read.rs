//! `files.read`: the bytes of a file a session's calls left in its scratch
//! directory, a chunk at a time.

use base64::Engine;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::sizes::SESSION_REF_MAX;
use super::{Audience, Operation, OperationError, Route};
use crate::scope::Scope;
use crate::scratch::{CHUNK_MAX, Chunk};

/// The longest path an argument may give, in bytes.
pub const PATH_MAX: usize = 4096;

pub struct ReadFile;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadFileArgs {
    /// The session's id or name.
    #[schemars(length(max = SESSION_REF_MAX))]
    pub session: String,
    /// The file, relative to the scratch directory (`notes/a.txt`).
    #[schemars(length(min = 1, max = PATH_MAX))]
    pub path: String,
    /// Where to start, in bytes (0 when absent).
    #[serde(default)]
    pub offset: u64,
    /// Bytes to read: 1 MiB when absent, and at most.
    #[serde(default)]
    #[schemars(range(min = 1, max = CHUNK_MAX))]
    pub length: Option<u64>,
}

/// Bytes of a file from `offset`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct FileChunk {
    /// The session's id.
    pub session: String,
    /// The file, as asked (for a kept result, the call's id).
    pub path: String,
    /// The file's whole length, in bytes.
    pub size: u64,
    pub offset: u64,
    /// Bytes in `data`.
    pub length: u64,
    /// How `data` is written: the bytes as text when they are UTF-8, else
    /// in base64.
    pub encoding: Encoding,
    pub data: String,
    /// Where the next chunk starts (its `offset`); null at the end.
    pub next_offset: Option<u64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Encoding {
    Utf8,
    Base64,
}

impl Operation for ReadFile {
    const NAME: &'static str = "files.read";
    const SUMMARY: &'static str = "A file of a session's scratch directory (the files its calls left), up to 1 MiB at a time.";
    const DESCRIPTION: &'static str = "Text when the chunk is UTF-8 (cut back to a whole character), else base64; `next_offset` is where the next chunk starts. Another principal's session is not found (an operator sees every session); a path is relative to the scratch directory, without `..`, and a link out of the directory is refused.";
    const AUDIENCE: Audience = Audience::Anyone;
    const HTTP: Option<Route> = Some(Route::get("/sessions/{session}/file"));
    type Args = ReadFileArgs;
    type Output = FileChunk;

    async fn run(scope: Scope<'_>, args: ReadFileArgs) -> Result<FileChunk, OperationError> {
        read_chunk(args.path, args.length, |path, length| {
            scope.read_file(&args.session, path, args.offset, length)
        })
        .await
    }
}

/// The chunk of `path` (a file, or a kept result's call id) that `read`
/// gives for a length of `length` but at most [`CHUNK_MAX`] bytes (all of
/// them when absent), as the operations answer it.
pub(super) async fn read_chunk<F>(
    path: String,
    length: Option<u64>,
    read: impl FnOnce(String, u64) -> F,
) -> Result<FileChunk, OperationError>
where
    F: Future<Output = Result<(String, Chunk), OperationError>>,
{
    let length = length.unwrap_or(CHUNK_MAX).min(CHUNK_MAX);
    let (session, chunk) = read(path.clone(), length).await?;
    Ok(chunk_output(session, path, chunk))
}

/// `chunk` of `path` of `session`, as the operations answer it.
fn chunk_output(session: String, path: String, chunk: Chunk) -> FileChunk {
    let (encoding, data, taken) = encoded(chunk.bytes);
    let end = chunk.offset + taken;
    FileChunk {
        session,
        path,
        size: chunk.size,
        offset: chunk.offset,
        length: taken,
        encoding,
        data,
        next_offset: (end < chunk.size).then_some(end),
    }
}

/// `bytes` as text when they are UTF-8 but for a character the chunk cut
/// (that character is left to the next chunk), else in base64; with how
/// many bytes it holds.
pub fn encoded(mut bytes: Vec<u8>) -> (Encoding, String, u64) {
    let whole = match std::str::from_utf8(&bytes) {
        Ok(_) => Some(bytes.len()),
        // Only the last character is cut: at most 3 bytes of it.
        Err(e) if e.error_len().is_none() && bytes.len() - e.valid_up_to() < 4 => {
            Some(e.valid_up_to()).filter(|n| *n > 0)
        }
        Err(_) => None,
    };
    match whole {
        Some(n) => {
            bytes.truncate(n);
            let taken = n as u64;
            match String::from_utf8(bytes) {
                Ok(text) => (Encoding::Utf8, text, taken),
                Err(e) => base64_of(e.into_bytes()),
            }
        }
        None => base64_of(bytes),
    }
}

fn base64_of(bytes: Vec<u8>) -> (Encoding, String, u64) {
    let taken = bytes.len() as u64;
    (
        Encoding::Base64,
        base64::engine::general_purpose::STANDARD.encode(bytes),
        taken,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chunk_is_text_when_it_can_be_and_base64_otherwise() {
        assert_eq!(
            encoded(b"hello".to_vec()),
            (Encoding::Utf8, "hello".into(), 5)
        );
        // "é" is two bytes: a chunk that cuts it keeps it for the next one.
        let mut cut = b"caf".to_vec();
        cut.push(0xC3);
        assert_eq!(encoded(cut), (Encoding::Utf8, "caf".into(), 3));
        assert_eq!(
            encoded(vec![0, 159, 146, 150]),
            (Encoding::Base64, "AJ+Slg==".into(), 4)
        );
        // A lone cut character is not text at all.
        assert_eq!(encoded(vec![0xC3]), (Encoding::Base64, "ww==".into(), 1));
        assert_eq!(encoded(Vec::new()), (Encoding::Utf8, String::new(), 0));
    }
}
