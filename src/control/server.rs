//! The server's side of the control socket: the listener in the data dir,
//! its peer check, and running what is asked (a command, inside the server;
//! an operation, as the operator at the socket).

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use anyhow::{Context, Result};
use glovebox::{Gateway, Jobs, Principal};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{UnixListener, UnixStream};

use super::{Asked, MAX_REQUEST_BYTES, Request, Response, VERSION, socket_path};
use crate::served::{SERVED, Served};

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
        }) => operation(&gateway, &jobs, &operator, &name, arguments).await,
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
    jobs: &Arc<Jobs>,
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
        entry.call(gateway.scope(operator).with_jobs(jobs), arguments),
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
