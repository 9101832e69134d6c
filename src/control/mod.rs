//! The operator plane while serving: the command line talks to the running
//! server instead of opening the data dir it holds.
//!
//! One process holds a data dir (its store is locked). `glovebox serve`
//! therefore listens on a control socket in the data dir (`control.sock`, a
//! Unix domain socket, mode 0600 in the 0700 data dir, and every peer's uid
//! checked against the server's own), and every command that opens the
//! store first tries that socket: when a server answers, the command is sent
//! there, run inside the server against its gateway, and its output and exit
//! code come back as if it had run here; when none answers, it opens the
//! store itself as before. Either way the same code runs: the handlers ask
//! `reach.rs` for the gateway and print with `out!`/`err!` (`output.rs`),
//! which write into the request's buffers inside the server (`served.rs`).
//!
//! An operation of the registry (`glovebox operation`, and the commands
//! made of one, `src/operate.rs`) travels as `{operation: {name,
//! arguments}}` instead, and its output (or its `OperationError`) comes back
//! as JSON for this side to print: the server runs the operation, and none
//! of the command line's code.
//!
//! What the command needs from this machine (its input on stdin or in a
//! file, paths relative to its directory) is resolved before it is sent, so
//! the server never reads the client's stdin or guesses its directory. The
//! person at the socket is the operator `cli:<uid>` (the peer's uid), and
//! that is who approvals and denials are recorded as.
//!
//! One concept per file: the wire (here), the command line's side
//! (`client.rs`: which commands go, reaching the server, asking it), and
//! the server's side (`server.rs`: the listener, and running what is asked).

mod client;
mod server;

use std::path::{Path, PathBuf};

use glovebox::operations::OperationError;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::Command;

pub use client::{forward, operate};
pub use server::listen;

/// The socket's file name in the data dir.
const SOCKET: &str = "control.sock";
/// The largest request accepted (a call's input travels inline).
const MAX_REQUEST_BYTES: u64 = 64 << 20;
/// The wire format's version: a client and server that disagree refuse.
const VERSION: u32 = 2;

/// What is sent to the running server.
#[derive(Serialize, Deserialize)]
struct Request {
    version: u32,
    #[serde(flatten)]
    asked: Asked,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Asked {
    /// A command, run inside the server as it would run here.
    Command(Box<Command>),
    /// An operation of the registry, by name, its arguments a JSON object.
    Operation { name: String, arguments: Value },
}

/// What the command printed and how it ended.
#[derive(Serialize, Deserialize)]
struct Response {
    stdout: String,
    stderr: String,
    exit: u8,
    /// An operation's output, or why it failed (nothing is printed then).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    operation: Option<Result<Value, OperationError>>,
}

impl Response {
    /// A refusal of the request itself, in words for the operator.
    fn refused(stderr: String) -> Response {
        Response {
            stdout: String::new(),
            stderr,
            exit: 2,
            operation: None,
        }
    }
}

/// The control socket of a data dir.
pub fn socket_path(data_dir: &Path) -> PathBuf {
    data_dir.join(SOCKET)
}
