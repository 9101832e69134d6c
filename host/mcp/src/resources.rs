//! MCP resources: what a caller reads by URI instead of through a tool
//! call. A session's log and a background job are resources by nature: a
//! client lists them, reads them a page at a time, and can hold on to the
//! URI.
//!
//! - `glovebox://sessions/{session}/log` (`?from_seq=N&limit=M`): a page of
//!   the session's log, as `sessions.log` gives it (JSON: `events`, and
//!   `next_seq`, the `from_seq` of the next page, null at the end);
//! - `glovebox://jobs/{id}`: a job's status and, once it ended, its result,
//!   as `jobs.show` gives it.
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
                let number = || {
                    value.parse::<u64>().map_err(|_| {
                        format!("`{key}` in `{uri}` is `{value}`: give a whole number")
                    })
                };
                match key.as_ref() {
                    "from_seq" => from_seq = Some(number()?),
                    "limit" => limit = Some(number()?),
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
        _ => Err(format!(
            "`{uri}` names no resource: write `{SCHEME}://sessions/{{session}}/log` or `{SCHEME}://jobs/{{id}}` (resources/templates/list)"
        )),
    }
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
        }
        .map_err(refused)?;
        let text = serde_json::to_string_pretty(&output)
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
}

/// An operation's refusal as a resource request's error: not found is
/// -32002 (the spec's "resource not found"), bad arguments -32602, the
/// rest an internal error with the operation's words.
fn refused(e: OperationError) -> ErrorData {
    let data = Some(json!({ "kind": e.kind }));
    match e.class {
        ErrorClass::NotFound => ErrorData::resource_not_found(e.message, data),
        ErrorClass::Invalid => ErrorData::invalid_params(e.message, data),
        _ => ErrorData::internal_error(e.message, data),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_name_a_log_page_or_a_job_and_anything_else_is_refused() {
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
        for (uri, says) in [
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
