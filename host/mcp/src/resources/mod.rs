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
use rmcp::model::{ListResourcesResult, ReadResourceResult, Resource, ResourceContents};
use serde_json::{Value, json};

use crate::connection::Connection;
use uri::{BYTES, JSON, Named, TEXT, parse};

mod uri;

use glovebox::Principal;
use glovebox::operations::{self, ErrorClass, OperationError};
pub(crate) use uri::{Watched, log_uri, templates, watched};

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
        let named = parse(uri).map_err(|why| ErrorData::invalid_params(why.to_string(), None))?;
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
