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

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use anyhow::{Context, Result};
use glovebox::operations::OperationError;
use glovebox::{Gateway, HostConfig, Jobs, Principal};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{UnixListener, UnixStream};

use crate::Command;
use crate::served::{SERVED, Served};

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

/// Whether `command` works on the data dir's store, and so goes to the
/// running server when there is one.
fn needs_store(command: &Command) -> bool {
    match command {
        Command::Call { session, .. } => session.is_some(),
        Command::Policy {
            command: crate::policy::PolicyCommand::Replay { store_config, .. },
        } => store_config.is_none(),
        // An export is checked here, offline: it needs no store.
        Command::Log {
            command: crate::log::LogCommand::Verify { file: Some(_), .. },
        } => false,
        Command::Session { .. }
        | Command::Billing(_)
        | Command::Budget(_)
        | Command::Rescue { .. }
        | Command::Context { .. }
        | Command::Memory { .. }
        | Command::Log { .. }
        | Command::Approvals { .. }
        | Command::Approve { .. }
        | Command::Job { .. }
        | Command::Notify {
            command: crate::notify::NotifyCommand::Status { .. },
        }
        | Command::Schedule { .. }
        | Command::Reload => true,
        _ => false,
    }
}

/// Runs `command` on the server that holds the config's data dir, when one
/// does: `Some(exit code)` once it ran there (its output printed here),
/// `None` when no server answers and the command runs here.
pub async fn forward(config: &Path, command: &mut Command) -> Result<Option<ExitCode>> {
    if !needs_store(command) {
        return Ok(None);
    }
    let Some(server) = Server::reach(config).await else {
        return Ok(None);
    };
    inline_local_inputs(command)?;
    let response = server
        .ask(Asked::Command(Box::new(std::mem::replace(
            command,
            Command::Reload,
        ))))
        .await?;
    std::io::stdout()
        .lock()
        .write_all(response.stdout.as_bytes())?;
    std::io::stderr()
        .lock()
        .write_all(response.stderr.as_bytes())?;
    Ok(Some(ExitCode::from(response.exit)))
}

/// Runs operation `name` with `arguments` on the server that holds the
/// config's data dir, when one does: `Some` with its output or its refusal,
/// `None` when no server answers (the caller runs it here).
pub async fn operate(
    config: &Path,
    name: &str,
    arguments: &Value,
) -> Result<Option<Result<Value, OperationError>>> {
    let Some(server) = Server::reach(config).await else {
        return Ok(None);
    };
    let response = server
        .ask(Asked::Operation {
            name: name.to_string(),
            arguments: arguments.clone(),
        })
        .await?;
    match response.operation {
        Some(answer) => Ok(Some(answer)),
        None => anyhow::bail!(
            "{}",
            response.stderr.trim_end().trim_start_matches("error: ")
        ),
    }
}

/// The running server that holds a config's data dir, connected.
struct Server {
    data_dir: PathBuf,
    stream: UnixStream,
}

impl Server {
    /// The server holding `config`'s data dir, if one answers on its socket.
    /// Only the data dir is read: a config broken since the server started
    /// still reaches that server (which reports what is wrong with it on
    /// reload), and a config that names no data dir is the command's to
    /// report.
    async fn reach(config: &Path) -> Option<Server> {
        let data_dir = HostConfig::data_dir_of(config).ok()?;
        // No server (or one that died and left its socket): `None`.
        let stream = UnixStream::connect(socket_path(&data_dir)).await.ok()?;
        Some(Server { data_dir, stream })
    }

    /// Sends what is asked and reads the answer.
    async fn ask(self, asked: Asked) -> Result<Response> {
        let request = Request {
            version: VERSION,
            asked,
        };
        exchange(self.stream, &request).await.with_context(|| {
            format!(
                "the glovebox server holding `{}` did not answer on `{}`",
                self.data_dir.display(),
                socket_path(&self.data_dir).display()
            )
        })
    }
}

async fn exchange(stream: UnixStream, request: &Request) -> Result<Response> {
    let (read, mut write) = stream.into_split();
    let mut line = serde_json::to_vec(request)?;
    line.push(b'\n');
    write.write_all(&line).await?;
    write.shutdown().await?;
    let mut answer = String::new();
    BufReader::new(read).read_line(&mut answer).await?;
    if answer.is_empty() {
        anyhow::bail!("it closed the connection (see the server's log)");
    }
    Ok(serde_json::from_str(&answer)?)
}

/// Reads what the command would read here (stdin, input files) into the
/// command, and makes its other paths absolute.
fn inline_local_inputs(command: &mut Command) -> Result<()> {
    let absolute = |p: &mut PathBuf| -> Result<()> {
        if p.is_relative() {
            *p = std::env::current_dir()?.join(&*p);
        }
        Ok(())
    };
    match command {
        Command::Call {
            input, input_file, ..
        }
        | Command::Job {
            command:
                crate::jobs::JobCommand::Spawn {
                    input, input_file, ..
                },
        } => {
            *input = Some(crate::read_input(input.take(), input_file.take())?);
        }
        Command::Session {
            command:
                crate::sessions::SessionCommand::Handoff {
                    from_file: Some(path),
                    ..
                },
        } => absolute(path)?,
        Command::Policy {
            command:
                crate::policy::PolicyCommand::Replay {
                    store_config: Some(path),
                    ..
                },
        } => absolute(path)?,
        _ => {}
    }
    Ok(())
}

/// The control socket of a running server; removed when dropped.
pub struct Listener {
    path: PathBuf,
    /// The commands being answered.
    answering: tokio_util::task::TaskTracker,
    _accepting: glovebox::tasks::Owned<()>,
}

impl Listener {
    /// Waits (up to `within`) for the commands being answered: a server
    /// about to exit lets the operator's answer out first (a `reload` that
    /// removed a stdio server's principal is still answering when that
    /// server stops).
    pub async fn answered(&self, within: std::time::Duration) {
        self.answering.close();
        let _ = tokio::time::timeout(within, self.answering.wait()).await;
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Listens on the data dir's control socket and runs the commands sent
/// there against `gateway` and `jobs`. The server holds the store's lock, so
/// a socket file already there is a dead server's and is replaced.
pub fn listen(gateway: Gateway, jobs: Arc<Jobs>) -> Result<Listener> {
    let path = socket_path(&gateway.host().config().data_dir);
    match std::fs::remove_file(&path) {
        Ok(()) => {
            tracing::info!(socket = %path.display(), "replaced the control socket a stopped server left")
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => {
            return Err(e).with_context(|| format!("cannot remove `{}`", path.display()));
        }
    }
    let listener = UnixListener::bind(&path).with_context(|| {
        format!(
            "cannot listen on the control socket `{}` (the operator's commands reach the server there); a data dir path shorter than about 100 bytes is needed for it",
            path.display()
        )
    })?;
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))
            .with_context(|| format!("cannot make `{}` owner-only", path.display()))?;
    }
    let own_uid = rustix::process::geteuid().as_raw();
    let answering = tokio_util::task::TaskTracker::new();
    let tracker = answering.clone();
    let accepting = glovebox::tasks::owned(async move {
        loop {
            let stream = match listener.accept().await {
                Ok((stream, _)) => stream,
                Err(e) => {
                    tracing::warn!(error = %e, "control socket: accept failed");
                    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                    continue;
                }
            };
            let (gateway, jobs) = (gateway.clone(), jobs.clone());
            glovebox::tasks::detached(answering.track_future(async move {
                if let Err(e) = serve_one(stream, own_uid, gateway, jobs).await {
                    tracing::warn!(error = %format!("{e:#}"), "control socket: a request failed");
                }
            }));
        }
    });
    tracing::info!(socket = %path.display(), "the operator's commands reach this server on its control socket");
    Ok(Listener {
        path,
        answering: tracker,
        _accepting: accepting,
    })
}

async fn serve_one(
    stream: UnixStream,
    own_uid: u32,
    gateway: Gateway,
    jobs: Arc<Jobs>,
) -> Result<()> {
    let peer = stream
        .peer_cred()
        .context("cannot read the peer's credentials")?;
    if peer.uid() != own_uid {
        // The socket is 0600 in a 0700 dir: only root gets here.
        anyhow::bail!(
            "refused a connection from uid {}: the control socket serves its owner (uid {own_uid}) only",
            peer.uid()
        );
    }
    let (read, mut write) = stream.into_split();
    let mut line = String::new();
    BufReader::new(read.take(MAX_REQUEST_BYTES))
        .read_line(&mut line)
        .await?;
    let operator = Principal::operator(format!("cli:{}", peer.uid()));
    let response = match serde_json::from_str::<Request>(&line) {
        Ok(Request {
            version: VERSION,
            asked: Asked::Operation { name, arguments },
        }) => operation(&gateway, &operator, &name, arguments).await,
        Ok(Request {
            version: VERSION,
            asked: Asked::Command(command),
        }) => {
            let served = Arc::new(Served {
                gateway,
                jobs,
                operator,
                stdout: Mutex::default(),
                stderr: Mutex::default(),
            });
            let config = served.gateway.host().config().path.clone();
            // Off the async workers: an operator's command may read a whole
            // log or bill every session with the ledger's blocking calls,
            // and the agents' requests must not wait behind it.
            let runtime = tokio::runtime::Handle::current();
            let scope = served.clone();
            let by = served.operator.name.clone();
            let code = glovebox::tasks::blocking(
                move || {
                    // What the command writes to a log is this operator's doing.
                    let command = crate::dispatch(&config, *command);
                    runtime.block_on(SERVED.scope(scope, glovebox::tasks::acting(by, command)))
                },
                |why| anyhow::anyhow!("the command failed inside the server: {why}"),
            )
            .await;
            let take = |b: &Mutex<Vec<u8>>| {
                String::from_utf8_lossy(
                    &b.lock().unwrap_or_else(std::sync::PoisonError::into_inner),
                )
                .into_owned()
            };
            let mut stderr = take(&served.stderr);
            let exit = match code {
                Ok(code) => exit_number(code),
                Err(e) => {
                    stderr.push_str(&format!("error: {e:#}\n"));
                    2
                }
            };
            Response {
                stdout: take(&served.stdout),
                stderr,
                exit,
                operation: None,
            }
        }
        Ok(request) => Response::refused(format!(
            "error: this glovebox speaks version {} of the control socket and the running server version {VERSION}: use the same glovebox binary as the server\n",
            request.version
        )),
        Err(e) => Response::refused(format!(
            "error: the running server cannot read this command ({e}): use the same glovebox binary as the server\n"
        )),
    };
    let mut answer = serde_json::to_vec(&response)?;
    answer.push(b'\n');
    write.write_all(&answer).await?;
    write.shutdown().await?;
    Ok(())
}

/// Runs operation `name` for the operator at the socket: its output or its
/// refusal goes back as JSON, for the command line to print.
async fn operation(
    gateway: &Gateway,
    operator: &Principal,
    name: &str,
    arguments: Value,
) -> Response {
    let Some(entry) = glovebox::operations::named(name) else {
        return Response::refused(format!(
            "error: the running server has no operation `{name}`: use the same glovebox binary as the server\n"
        ));
    };
    // What it writes to a log is this operator's doing.
    let ran = glovebox::tasks::acting(
        operator.name.clone(),
        entry.call(gateway.scope(operator), arguments),
    )
    .await;
    Response {
        stdout: String::new(),
        stderr: String::new(),
        exit: 0,
        operation: Some(ran),
    }
}

/// An exit code as its number (`ExitCode` keeps it opaque).
fn exit_number(code: ExitCode) -> u8 {
    (0..=u8::MAX)
        .find(|n| ExitCode::from(*n) == code)
        .unwrap_or(1)
}
