//! Connecting a store: the client's options and credentials, the check that
//! the server (or the account) has JetStream, and the log stream opened, each
//! failure worded with what to fix in `[storage]` or on the server.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use async_nats::jetstream;
use async_nats::{Client, ConnectOptions};
use bytes::Bytes;
use glovebox_store::StorageError;

use crate::inner::{Inner, io};
use crate::logs::open_log_stream;
use crate::{Auth, NatsConfig};

pub(crate) async fn connect(config: NatsConfig) -> Result<Inner, StorageError> {
    let url = config.url.clone();
    let mut options = ConnectOptions::new()
        .name("glovebox")
        .connection_timeout(config.timeout)
        .request_timeout(Some(config.timeout));
    match &config.auth {
        Auth::None => {}
        Auth::CredsFile(path) => {
            options = options.credentials_file(path).await.map_err(|e| {
                StorageError::Io(format!(
                    "cannot read the NATS credentials file `{}`: {e}: fix `creds` in `[storage]`",
                    path.display()
                ))
            })?;
        }
        Auth::UserPassword { user, password } => {
            options = options.user_and_password(user.clone(), password.clone());
        }
    }
    // The client takes several servers as a list, not as one comma-separated string.
    let servers: Vec<&str> = url.split(',').map(str::trim).collect();
    let client = options.connect(servers).await.map_err(|e| {
        StorageError::Io(format!(
            "cannot reach the NATS server at `{url}`: {e}: start it, or fix `url` (and the credentials) in `[storage]`"
        ))
    })?;
    let js = jetstream::ContextBuilder::new()
        .timeout(config.timeout)
        .build(client.clone());
    check_jetstream(&client, &url, config.timeout).await?;
    let log = open_log_stream(&js, &url, &config.prefix, config.replicas).await?;
    let max_payload = client.server_info().max_payload;
    Ok(Inner {
        url,
        prefix: config.prefix,
        replicas: config.replicas,
        timeout: config.timeout,
        client,
        js,
        log,
        max_payload,
        buckets: Mutex::new(HashMap::new()),
    })
}

/// Asks the server for this account's JetStream info (`$JS.API.INFO`): no
/// answer at all, or an error, is a server (or an account) without JetStream.
async fn check_jetstream(
    client: &Client,
    url: &str,
    timeout: Duration,
) -> Result<(), StorageError> {
    let no_jetstream = |why: String| {
        StorageError::Io(format!(
            "the NATS server at `{url}` has no JetStream ({why}): enable it (`nats-server -js`, or a `jetstream {{ store_dir: ... }}` block in its config; for an account, `jetstream: enabled`)"
        ))
    };
    let answer = match tokio::time::timeout(timeout, client.request("$JS.API.INFO", Bytes::new()))
        .await
    {
        Err(_) => {
            return Err(StorageError::Io(format!(
                "the NATS server at `{url}` did not answer within {timeout:?}: is it overloaded, or a cluster without a JetStream leader?"
            )));
        }
        Ok(Err(e)) if e.kind() == async_nats::RequestErrorKind::NoResponders => {
            return Err(no_jetstream(
                "nothing answers JetStream requests".to_string(),
            ));
        }
        Ok(Err(e)) => {
            return Err(io(
                format!("cannot ask the NATS server at `{url}` for JetStream"),
                e,
            ));
        }
        Ok(Ok(answer)) => answer,
    };
    let info: serde_json::Value = serde_json::from_slice(&answer.payload).map_err(|e| {
        io(
            format!("the NATS server at `{url}` answered JetStream info with no JSON"),
            e,
        )
    })?;
    match info.get("error") {
        Some(error) => Err(no_jetstream(
            error
                .get("description")
                .and_then(|d| d.as_str())
                .unwrap_or("it answered with an error")
                .to_string(),
        )),
        None => Ok(()),
    }
}
