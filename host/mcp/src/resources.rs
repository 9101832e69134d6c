//! MCP resources: what a caller reads by URI instead of through a tool
//! call. A session's log and a background job are resources by nature: a
//! client lists them, reads them a page at a time, and can hold on to the
//! URI.
//!
//! - `glovebox://sessions/{session}/log` (`?from_seq=N&limit=M`): a page of
//!   the session's log, as `sessions.log` gives it (JSON: `events`, and
//!   `next_seq`, the `from_seq` of the next page, null at the end);
//! - `glovebox://jobs/{id}`: a job's status and, once it ended, its result,
//!   as `jobs.show` gives it;
//! - `glovebox://sessions/{session}/files/{path}`: what the session's calls
//!   left in its scratch directory: a directory's listing (JSON, as
//!   `files.list` gives it, `?cursor=` for the next page), or a file's
//!   bytes (text when they are UTF-8, else a blob; up to 1 MiB, `?offset=`
//!   for the next chunk, which the contents' `_meta` names), as `files.read`
//!   reads them;
//! - `glovebox://sessions/{session}/outputs/{call}`: the whole result of a
//!   call that passed its tool's `limits.output` and was kept (the call
//!   answered its head and this URI), a chunk at a time as for a file, as
//!   `calls.output` reads it.
//!
//! `resources/list` lists the logs of the caller's own sessions, newest
//! first, a page at a time; the templates say how to write the others.
//!
//! Why through the registry: a read runs the operation (`sessions.log`,
//! `jobs.show`, `sessions.list`) as the caller, acting from the bound
//! session, so who may read what is decided where it always is, in the
//! caller's scope: another principal's session or job is not found
//! (-32002, as the spec says for a resource that does not exist), and from
//! a child session only its family is reached.

use rmcp::ErrorData;
use rmcp::model::{
    ListResourceTemplatesResult, ListResourcesResult, ReadResourceResult, Resource,
    ResourceContents, ResourceTemplate,
};
use serde_json::{Value, json};

use crate::connection::Connection;
use glovebox::Principal;
use glovebox::operations::{self, ErrorClass, OperationError};

/// The scheme of every resource URI.
const SCHEME: &str = "glovebox";
const JSON: &str = "application/json";
/// A scratch file's chunk that is UTF-8, and one that is not.
const TEXT: &str = "text/plain; charset=utf-8";
const BYTES: &str = "application/octet-stream";

/// What a resource URI names.
#[derive(Debug, PartialEq, Eq)]
enum Named {
    /// A page of a session's log.
    Log {
        session: String,
        from_seq: Option<u64>,
        limit: Option<u64>,
    },
    /// A background job.
    Job { id: String },
    /// The whole result of a call, kept.
    Output {
        session: String,
        call_id: String,
        offset: Option<u64>,
    },
    /// A directory or file of a session's scratch directory.
    Files {
        session: String,
        path: String,
        offset: Option<u64>,
        cursor: Option<String>,
    },
}

/// The URI of `session`'s log.
pub(crate) fn log_uri(session: &str) -> String {
    format!("{SCHEME}://sessions/{session}/log")
}

/// What a subscription to `uri` watches: a session's log (by id or name)
/// or a job; `None` for a URI that names neither.
pub(crate) fn watched(uri: &str) -> Option<Watched> {
    match parse(uri).ok()? {
        Named::Log { session, .. } => Some(Watched::Log(session)),
        Named::Job { id } => Some(Watched::Job(id)),
        Named::Files { .. } | Named::Output { .. } => None,
    }
}

/// What a resource subscription watches (`listen.rs`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Watched {
    /// A session's log: it changes with every event appended.
    Log(String),
    /// A job: it changes with its status.
    Job(String),
}

/// What `uri` names, or why it names nothing (in the words of an invalid
/// argument: the client wrote it).
fn parse(uri: &str) -> Result<Named, String> {
    let url = url::Url::parse(uri).map_err(|e| format!("`{uri}` is not a URI: {e}"))?;
    if url.scheme() != SCHEME {
        return Err(format!(
            "`{uri}` is not a Glovebox resource: its URIs start with `{SCHEME}://`"
        ));
    }
    let segments: Vec<String> = url
        .path_segments()
        .into_iter()
        .flatten()
        .map(|s| {
            percent_encoding::percent_decode_str(s)
                .decode_utf8()
                .map(|s| s.into_owned())
                .map_err(|_| format!("`{uri}` has a segment that is not UTF-8"))
        })
        .collect::<Result<_, _>>()?;
    let segments: Vec<&str> = segments.iter().map(String::as_str).collect();
    match (url.host_str(), segments.as_slice()) {
        (Some("sessions"), [session, "log"]) if !session.is_empty() => {
            let mut from_seq = None;
            let mut limit = None;
            for (key, value) in url.query_pairs() {
                match key.as_ref() {
                    "from_seq" => from_seq = Some(whole_number(uri, &key, &value)?),
                    "limit" => limit = Some(whole_number(uri, &key, &value)?),
                    other => {
                        return Err(format!(
                            "`{uri}` asks for `{other}`: a log takes `from_seq` and `limit`"
                        ));
                    }
                }
            }
            Ok(Named::Log {
                session: session.to_string(),
                from_seq,
                limit,
            })
        }
        (Some("jobs"), [id]) if !id.is_empty() && url.query().is_none() => {
            Ok(Named::Job { id: id.to_string() })
        }
        (Some("sessions"), [session, "outputs", call_id])
            if !session.is_empty() && !call_id.is_empty() =>
        {
            let mut offset = None;
            for (key, value) in url.query_pairs() {
                match key.as_ref() {
                    "offset" => offset = Some(whole_number(uri, &key, &value)?),
                    other => {
                        return Err(format!(
                            "`{uri}` asks for `{other}`: a kept result takes `offset`"
                        ));
                    }
                }
            }
            Ok(Named::Output {
                session: session.to_string(),
                call_id: call_id.to_string(),
                offset,
            })
        }
        (Some("sessions"), [session, "files", path @ ..]) if !session.is_empty() => {
            let mut offset = None;
            let mut cursor = None;
            for (key, value) in url.query_pairs() {
                match key.as_ref() {
                    "offset" => offset = Some(whole_number(uri, &key, &value)?),
                    "cursor" => cursor = Some(value.into_owned()),
                    other => {
                        return Err(format!(
                            "`{uri}` asks for `{other}`: a file takes `offset`, a directory `cursor`"
                        ));
                    }
                }
            }
            Ok(Named::Files {
                session: session.to_string(),
                path: path.join("/"),
                offset,
                cursor,
            })
        }
        _ => Err(format!(
            "`{uri}` names no resource: write `{SCHEME}://sessions/{{session}}/log`, `{SCHEME}://sessions/{{session}}/files/{{path}}`, `{SCHEME}://sessions/{{session}}/outputs/{{call}}` or `{SCHEME}://jobs/{{id}}` (resources/templates/list)"
        )),
    }
}

/// The value of query parameter `key` of `uri`, a whole number.
fn whole_number(uri: &str, key: &str, value: &str) -> Result<u64, String> {
    value
        .parse::<u64>()
        .map_err(|_| format!("`{key}` in `{uri}` is `{value}`: give a whole number"))
}

/// The templates of the resources a caller may read.
pub(crate) fn templates() -> ListResourceTemplatesResult {
    ListResourceTemplatesResult::with_all_items(vec![
        ResourceTemplate::new(
            format!("{SCHEME}://sessions/{{session}}/log{{?from_seq,limit}}"),
            "session-log",
        )
        .with_title("A session's log")
        .with_description(
            "A page of a session's log (by id or name): events from `from_seq` (1 when absent), at most `limit` (100 when absent, 500 at most); `next_seq` is where the next page starts, null at the end.",
        )
        .with_mime_type(JSON),
        ResourceTemplate::new(
            format!("{SCHEME}://sessions/{{session}}/files/{{+path}}{{?offset,cursor}}"),
            "session-files",
        )
        .with_title("A session's scratch files")
        .with_description(
            "What the session's calls left in its scratch directory: a directory (its top when `path` is empty) is a JSON listing by name (`next_cursor` is the next page's `cursor`); a file is its bytes from `offset`, up to 1 MiB (text when UTF-8, else a blob), the next chunk's URI in the contents' `_meta`.",
        ),
        ResourceTemplate::new(
            format!("{SCHEME}://sessions/{{session}}/outputs/{{call}}{{?offset}}"),
            "call-output",
        )
        .with_title("A call's whole result, kept")
        .with_description(
            "The whole result of a call that passed its tool's `limits.output` (the call answered its head, size and SHA-256 under `stored_output`): from `offset`, up to 1 MiB (text when UTF-8, else a blob), the next chunk's URI in the contents' `_meta`.",
        ),
        ResourceTemplate::new(format!("{SCHEME}://jobs/{{id}}"), "job")
            .with_title("A background job")
            .with_description(
                "A job's status and, once it ended, its result: output, captured logs, error and metering.",
            )
            .with_mime_type(JSON),
    ])
}

impl Connection {
    /// Runs the registry's operation `name` with `args` as `caller`.
    async fn run_named(
        &self,
        caller: &Principal,
        name: &str,
        args: Value,
    ) -> Result<Value, OperationError> {
        let entry = operations::named(name).unwrap_or_else(|| {
            panic!("the registry has no `{name}`: resources.rs names its operations")
        });
        self.run_operation(caller, name, entry, args).await
    }

    /// `resources/list`: the logs of the caller's sessions, newest first,
    /// a page at a time (`cursor` is the sessions' own).
    pub(crate) async fn list_session_logs(
        &self,
        caller: &Principal,
        cursor: Option<String>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let mut args = json!({});
        if let Some(cursor) = cursor {
            args["cursor"] = cursor.into();
        }
        // An operator sees every session; as resources, its own are what
        // it can use, as for an agent.
        args["owner"] = caller.name.clone().into();
        let page = self
            .run_named(caller, "sessions.list", args)
            .await
            .map_err(refused)?;
        let resources = page["items"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|info| {
                // A session's header, flattened into its listing entry.
                let id = info["id"].as_str()?;
                let name = info["name"].as_str().unwrap_or(id);
                let status = info["status"].as_str().unwrap_or_default();
                let role = info["role"].as_str().unwrap_or_default();
                Some(
                    Resource::new(log_uri(id), format!("{name} log"))
                        .with_description(format!(
                            "The log of session `{name}` ({role}, {status})."
                        ))
                        .with_mime_type(JSON),
                )
            })
            .collect();
        let mut result = ListResourcesResult::with_all_items(resources);
        result.next_cursor = page["next_cursor"].as_str().map(Into::into);
        Ok(result)
    }

    /// `resources/read` of `uri` as `caller`.
    pub(crate) async fn read(
        &self,
        caller: &Principal,
        uri: &str,
    ) -> Result<ReadResourceResult, ErrorData> {
        let named = parse(uri).map_err(|why| ErrorData::invalid_params(why, None))?;
        let output = match named {
            Named::Log {
                session,
                from_seq,
                limit,
            } => {
                let mut args = json!({ "session": session });
                if let Some(from_seq) = from_seq {
                    args["from_seq"] = from_seq.into();
                }
                if let Some(limit) = limit {
                    args["limit"] = limit.into();
                }
                self.run_named(caller, "sessions.log", args).await
            }
            Named::Job { id } => {
                self.run_named(caller, "jobs.show", json!({ "id": id }))
                    .await
            }
            Named::Output {
                session,
                call_id,
                offset,
            } => {
                let args = json!({ "session": session, "call_id": call_id, "offset": offset.unwrap_or(0) });
                let chunk = self
                    .run_named(caller, "calls.output", args)
                    .await
                    .map_err(refused)?;
                return chunk_contents(uri, &chunk);
            }
            Named::Files {
                session,
                path,
                offset,
                cursor,
            } => {
                return self
                    .read_files(caller, uri, session, path, offset, cursor)
                    .await;
            }
        }
        .map_err(refused)?;
        json_contents(uri, &output)
    }

    /// A directory of a session's scratch directory (its listing) or a
    /// file of it (a chunk of its bytes): a path that does not end in `/`
    /// is read as a file, and listed when it is a directory.
    async fn read_files(
        &self,
        caller: &Principal,
        uri: &str,
        session: String,
        path: String,
        offset: Option<u64>,
        cursor: Option<String>,
    ) -> Result<ReadResourceResult, ErrorData> {
        let list = |path: String| {
            let mut args = json!({ "session": session, "path": path });
            if let Some(cursor) = &cursor {
                args["cursor"] = cursor.clone().into();
            }
            args
        };
        if path.is_empty() || path.ends_with('/') {
            let page = self
                .run_named(caller, "files.list", list(path))
                .await
                .map_err(refused)?;
            return json_contents(uri, &page);
        }
        let args = json!({ "session": session, "path": path, "offset": offset.unwrap_or(0) });
        let chunk = match self.run_named(caller, "files.read", args).await {
            Ok(chunk) => chunk,
            Err(e) if e.kind == "bad_path" && e.message.contains("is a directory") => {
                let page = self
                    .run_named(caller, "files.list", list(path))
                    .await
                    .map_err(refused)?;
                return json_contents(uri, &page);
            }
            Err(e) => return Err(refused(e)),
        };
        chunk_contents(uri, &chunk)
    }
}

/// A chunk of bytes (`files.read`'s or `calls.output`'s answer) read at
/// `uri`: text when it is UTF-8, else a blob; the whole's size, and the
/// next chunk's URI when there is more, in its `_meta`.
fn chunk_contents(uri: &str, chunk: &Value) -> Result<ReadResourceResult, ErrorData> {
    let data = chunk["data"].as_str().unwrap_or_default().to_string();
    let contents = if chunk["encoding"] == "utf8" {
        ResourceContents::text(data, uri).with_mime_type(TEXT)
    } else {
        ResourceContents::blob(data, uri).with_mime_type(BYTES)
    };
    let mut meta = rmcp::model::JsonObject::new();
    meta.insert("io.glovebox/size".into(), chunk["size"].clone());
    if let Some(next) = chunk["next_offset"].as_u64() {
        let mut url =
            url::Url::parse(uri).map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        let kept: Vec<(String, String)> = url
            .query_pairs()
            .filter(|(k, _)| k != "offset")
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect();
        url.query_pairs_mut()
            .clear()
            .extend_pairs(kept)
            .append_pair("offset", &next.to_string());
        meta.insert("io.glovebox/next".into(), url.to_string().into());
    }
    Ok(ReadResourceResult::new(vec![
        contents.with_meta(rmcp::model::MetaObject(meta)),
    ]))
}

/// `output` as a resource's JSON contents.
fn json_contents(uri: &str, output: &Value) -> Result<ReadResourceResult, ErrorData> {
    let text = serde_json::to_string_pretty(output)
        .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
    Ok(ReadResourceResult::new(vec![
        ResourceContents::TextResourceContents {
            uri: uri.to_string(),
            mime_type: Some(JSON.into()),
            text,
            meta: None,
        },
    ]))
}

/// An operation's refusal as a resource request's error: not found is
/// -32002 (the spec's "resource not found"), bad arguments and what the
/// caller may not read (a path out of a scratch directory) -32602, the
/// rest an internal error with the operation's words; `data.kind` is the
/// operation's word for it.
fn refused(e: OperationError) -> ErrorData {
    let data = Some(json!({ "kind": e.kind }));
    match e.class {
        ErrorClass::NotFound => ErrorData::resource_not_found(e.message, data),
        ErrorClass::Invalid | ErrorClass::NotAllowed => ErrorData::invalid_params(e.message, data),
        _ => ErrorData::internal_error(e.message, data),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_name_a_log_page_a_job_or_scratch_files_and_anything_else_is_refused() {
        assert_eq!(
            parse("glovebox://sessions/s-1/log"),
            Ok(Named::Log {
                session: "s-1".into(),
                from_seq: None,
                limit: None
            })
        );
        assert_eq!(
            parse("glovebox://sessions/my%20work/log?from_seq=3&limit=10"),
            Ok(Named::Log {
                session: "my work".into(),
                from_seq: Some(3),
                limit: Some(10)
            })
        );
        assert_eq!(
            parse("glovebox://jobs/job-0123456789ab"),
            Ok(Named::Job {
                id: "job-0123456789ab".into()
            })
        );
        assert_eq!(
            parse(&log_uri("s-2")),
            Ok(Named::Log {
                session: "s-2".into(),
                from_seq: None,
                limit: None
            })
        );
        assert_eq!(
            parse("glovebox://sessions/s-1/files/notes/a%20b.txt?offset=7"),
            Ok(Named::Files {
                session: "s-1".into(),
                path: "notes/a b.txt".into(),
                offset: Some(7),
                cursor: None
            })
        );
        for top in [
            "glovebox://sessions/s-1/files",
            "glovebox://sessions/s-1/files/",
        ] {
            assert_eq!(
                parse(top),
                Ok(Named::Files {
                    session: "s-1".into(),
                    path: String::new(),
                    offset: None,
                    cursor: None
                }),
                "{top}"
            );
        }
        assert_eq!(
            parse("glovebox://sessions/s-1/files/notes/?cursor=b.txt"),
            Ok(Named::Files {
                session: "s-1".into(),
                path: "notes/".into(),
                offset: None,
                cursor: Some("b.txt".into())
            })
        );
        assert_eq!(watched("glovebox://sessions/s-1/files/a"), None);
        for (uri, says) in [
            (
                "glovebox://sessions/s/files/a?offset=x",
                "give a whole number",
            ),
            (
                "glovebox://sessions/s/files/a?limit=1",
                "a file takes `offset`",
            ),
            ("file:///etc/passwd", "not a Glovebox resource"),
            ("glovebox://sessions/s-1", "names no resource"),
            ("glovebox://sessions//log", "names no resource"),
            ("glovebox://jobs/j/output", "names no resource"),
            (
                "glovebox://sessions/s/log?from_seq=x",
                "give a whole number",
            ),
            (
                "glovebox://sessions/s/log?offset=1",
                "takes `from_seq` and `limit`",
            ),
            ("not a uri", "is not a URI"),
        ] {
            let why = parse(uri).unwrap_err();
            assert!(why.contains(says), "{uri}: {why}");
        }
    }
}
