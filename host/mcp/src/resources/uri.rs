//! The resource URIs' grammar: what a `glovebox://` URI names
//! ([`Named`], [`parse`]), the URI of a session's log, what a subscription
//! watches, and the templates `resources/templates/list` shows. Reading what
//! a URI names is the caller's scope's business (`mod.rs`); this file only
//! says what the client wrote, or why it names nothing.

use rmcp::model::{ListResourceTemplatesResult, ResourceTemplate};

/// The scheme of every resource URI.
pub(super) const SCHEME: &str = "glovebox";
pub(super) const JSON: &str = "application/json";
/// A scratch file's chunk that is UTF-8, and one that is not.
pub(super) const TEXT: &str = "text/plain; charset=utf-8";
pub(super) const BYTES: &str = "application/octet-stream";

/// What a resource URI names.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Named {
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
pub(super) fn parse(uri: &str) -> Result<Named, UriError> {
    let url = url::Url::parse(uri).map_err(|e| UriError::NotAUri {
        uri: uri.into(),
        why: e.to_string(),
    })?;
    if url.scheme() != SCHEME {
        return Err(UriError::OtherScheme { uri: uri.into() });
    }
    let segments: Vec<String> = url
        .path_segments()
        .into_iter()
        .flatten()
        .map(|s| {
            percent_encoding::percent_decode_str(s)
                .decode_utf8()
                .map(|s| s.into_owned())
                .map_err(|_| UriError::NotUtf8 { uri: uri.into() })
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
                        return Err(UriError::Parameter {
                            uri: uri.into(),
                            key: other.into(),
                            takes: "a log takes `from_seq` and `limit`",
                        });
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
                        return Err(UriError::Parameter {
                            uri: uri.into(),
                            key: other.into(),
                            takes: "a kept result takes `offset`",
                        });
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
                        return Err(UriError::Parameter {
                            uri: uri.into(),
                            key: other.into(),
                            takes: "a file takes `offset`, a directory `cursor`",
                        });
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
        _ => Err(UriError::NoResource { uri: uri.into() }),
    }
}

/// The value of query parameter `key` of `uri`, a whole number.
fn whole_number(uri: &str, key: &str, value: &str) -> Result<u64, UriError> {
    value.parse::<u64>().map_err(|_| UriError::NotANumber {
        key: key.into(),
        uri: uri.into(),
        value: value.into(),
    })
}

/// Why a URI names no resource, in the words of an invalid argument (the
/// client wrote it): each names the URI and what to write.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub(super) enum UriError {
    #[error("`{uri}` is not a URI: {why}")]
    NotAUri { uri: String, why: String },
    #[error("`{uri}` is not a Glovebox resource: its URIs start with `{scheme}://`", scheme = SCHEME)]
    OtherScheme { uri: String },
    #[error("`{uri}` has a segment that is not UTF-8")]
    NotUtf8 { uri: String },
    #[error("`{key}` in `{uri}` is `{value}`: give a whole number")]
    NotANumber {
        key: String,
        uri: String,
        value: String,
    },
    /// A query parameter the resource does not take; `takes` says which do.
    #[error("`{uri}` asks for `{key}`: {takes}")]
    Parameter {
        uri: String,
        key: String,
        takes: &'static str,
    },
    #[error(
        "`{uri}` names no resource: write `{scheme}://sessions/{{session}}/log`, `{scheme}://sessions/{{session}}/files/{{path}}`, `{scheme}://sessions/{{session}}/outputs/{{call}}` or `{scheme}://jobs/{{id}}` (resources/templates/list)",
        scheme = SCHEME
    )]
    NoResource { uri: String },
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
            let why = parse(uri).unwrap_err().to_string();
            assert!(why.contains(says), "{uri}: {why}");
        }
    }
}
