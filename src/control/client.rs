//! The command line's side of the control socket: which commands go to a
//! running server, reaching it, and asking it.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use glovebox::HostConfig;
use glovebox::operations::OperationError;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixStream;

use super::{Asked, Request, Response, VERSION, socket_path};
use crate::Command;

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
        Command::Session { command } => {
            if let crate::sessions::SessionCommand::Handoff {
                from_file: Some(path),
                ..
            } = command.as_mut()
            {
                absolute(path)?;
            }
        }
        Command::Policy {
            command:
                crate::policy::PolicyCommand::Replay {
                    store_config: Some(path),
                    ..
                },
        } => absolute(path)?,
        // The operator's files are read here, where the operator is.
        Command::Rescue {
            command: crate::rescue::RescueCommand::Inject { files, read, .. },
        } => *read = Some(crate::rescue::read_files(files)?),
        _ => {}
    }
    Ok(())
}
