//! The MCP server: agents use Glovebox over the Model Context Protocol.
//!
//! This crate is an adapter and stays thin: it translates MCP requests into
//! the gateway's calls (the `glovebox` crate) and their results back. It never
//! imports the engine, the sandbox, a storage engine or the ledger directly:
//! whatever it serves goes through the gateway's one pipeline, so MCP gets
//! exactly the checks, hooks and log of every other way in
//! (`tests/all/architecture.rs` holds the rule).
//!
//! `tools/list` offers every configured plugin tool (`plugin.tool`, with its
//! input schema) and the built-in tools ([`BUILTINS`]) for sessions, their
//! notes, usage, pauses, logs and re-runs, approvals and background jobs,
//! each within what the caller owns (the caller's `Gateway::scope`).
//!
//! Each request chooses its protocol revision (every one up to 2026-07-28).
//! A 2026-07-28 request stands alone: it names its Glovebox session in its
//! `_meta` ([`SESSION_META`]) or runs in its principal's default session
//! ([`DEFAULT_NAME`]), see `stateless.rs`. Under the earlier revisions each
//! connection (one stdio peer, or one MCP session over HTTP) has its own
//! [`Connection`] handler and so its own bound session: `session_start` and
//! `session_resume` bind it, `session_end` unbinds it. A plugin tool call or a
//! `job_spawn` with nothing bound runs in a default session of the connection
//! (role workagent, project `mcp`, name `mcp-<short id>`), started on first use
//! and then bound; when the connection goes away (stdin closed; over HTTP, its
//! handler dropped as rmcp ends the MCP session) it is paused, if still
//! active, with the reason in its log. Every plugin call takes the host's one pipeline
//! (`Scope::call`): hooks, sandbox, log.
//!
//! A denied call is a tool error (`isError`) with the hook, pattern, reason and
//! alternatives, as text and as structured content (`{"denied": ...}`). A
//! call a hook wants a human to approve is put to the client's user when its
//! principal settles its own approvals and the client declared elicitation
//! (2025-11-25: an elicitation request mid-call; 2026-07-28: an
//! `input_required` answer and a second round, `rounds.rs`): accept runs it,
//! decline denies it. Otherwise, or if the user cancels, the result says it
//! awaits approval and gives the approval id (`{"awaiting_approval": ...}`).
//!
//! A client that declared the tasks extension gets a long plugin call as a
//! task: its id is the id of the background job that runs it (`tasks.rs`).
//!
//! A bad request (unknown tool, input that is too large, not JSON or not
//! fitting the tool's schema) is checked before anything is logged and gets a
//! JSON-RPC `invalid params` error that says what is wrong. A panic while
//! serving a call ends that call with an internal error, not the server.

#![forbid(unsafe_code)]

mod answers;
mod builtins;
mod calls;
mod connection;
mod handler;
mod http;
mod limits;
mod listen;
mod logging;
mod notices;
mod offered;
mod progress;
mod resources;
mod results;
mod rounds;
mod server;
mod stateless;
mod stdio;
mod tasks;
mod tools;
mod traced;

pub use connection::Connection;
pub use http::{DEFAULT_GRACE, DEFAULT_MAX_CONNECTIONS, HttpOptions, HttpServer};
pub use logging::connection_log;
pub use server::McpServer;
pub use stateless::{DEFAULT_NAME, SESSION_META};
pub use tools::{BUILTINS, builtins_tables};
