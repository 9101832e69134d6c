//! The one call pipeline for calls made in a session: every step is an event
//! in the session's log, acknowledged only once durable.
//!
//! requested → started (with its idempotency key) → finished (outcome, output
//! or its digest, metering). A call the log cannot record is not run; a
//! result the log cannot record is not acknowledged, and the session is paused.

use std::sync::Arc;

use anyhow::Context;

use crate::call::{CallContext, CallReport, new_call_id};
use crate::host::Host;
use crate::manifest::{DurabilityMode, HostConfig};
use crate::session::{
    EventKind, Recovery, SessionError, SessionState, Sessions, SessionsConfig, digest,
    inline_if_small,
};
use crate::storage::{Durability, SledStore, Storage};

/// Opens the session store in the config's data dir (refused if another
/// process holds it) and recovers calls that were in flight when the last
/// process died: they are marked `interrupted`.
pub fn open_sessions(config: &HostConfig) -> anyhow::Result<(Arc<Sessions>, Recovery)> {
    let durability = match config.storage.durability {
        DurabilityMode::Flush => Durability::Flush,
        DurabilityMode::Strict => Durability::Strict,
    };
    let dir = config.data_dir.join("store");
    let store = SledStore::open(&dir, durability).with_context(|| {
        format!(
            "cannot open the session store of `{}`",
            config.path.display()
        )
    })?;
    let storage: Arc<dyn Storage> = Arc::new(store);
    let sessions = Sessions::with_config(
        storage,
        SessionsConfig {
            checkpoint_every: config.storage.checkpoint_every,
            ..SessionsConfig::default()
        },
    );
    let recovery = sessions.recover().context("cannot recover the sessions")?;
    for call in &recovery.interrupted {
        tracing::warn!(
            session = %call.session,
            call_id = %call.call_id,
            tool = %call.tool,
            idempotent = call.idempotent,
            "call was in flight when the host stopped: marked interrupted"
        );
    }
    Ok((Arc::new(sessions), recovery))
}

/// Runs a blocking session operation off the async threads.
async fn blocking<T: Send + 'static>(
    sessions: &Arc<Sessions>,
    f: impl FnOnce(&Sessions) -> Result<T, SessionError> + Send + 'static,
) -> Result<T, SessionError> {
    let sessions = sessions.clone();
    match tokio::task::spawn_blocking(move || f(&sessions)).await {
        Ok(r) => r,
        Err(e) => Err(SessionError::Storage(crate::storage::StorageError::Io(
            format!("the session store task failed: {e}"),
        ))),
    }
}

impl Host {
    /// Calls `tool` within `session` (id or name): the call is logged before
    /// it runs and its outcome after; see the module docs.
    ///
    /// `Err` means the session refused the call or the log failed; a call
    /// that ran and failed is `Ok` with the failure in the report.
    pub async fn call_in_session(
        &self,
        sessions: &Arc<Sessions>,
        session: &str,
        tool: &str,
        input: &str,
        job_id: Option<String>,
    ) -> Result<CallReport, SessionError> {
        let key = session.to_string();
        let state = blocking(sessions, move |s| s.show(&key)).await?;
        self.run_logged(sessions, &state, tool, input, job_id, None)
            .await
    }

    /// Re-runs an interrupted call of an idempotent tool with its original
    /// idempotency key. Calls of other tools are refused: they are the
    /// caller's to decide.
    pub async fn rerun_interrupted(
        &self,
        sessions: &Arc<Sessions>,
        session: &str,
        call_id: &str,
    ) -> Result<CallReport, SessionError> {
        let key = session.to_string();
        let resumed = blocking(sessions, move |s| s.resume(&key)).await?;
        let state = resumed.state;
        let Some(call) = resumed
            .interrupted_calls
            .iter()
            .find(|c| c.call_id == call_id)
            .cloned()
        else {
            return Err(SessionError::InvalidInput(format!(
                "session `{}` has no interrupted call `{call_id}`: `glovebox session resume {}` lists them",
                state.label(),
                session
            )));
        };
        let (Some(idempotency_key), true) = (call.idempotency_key.clone(), call.idempotent) else {
            return Err(SessionError::InvalidInput(format!(
                "call `{call_id}` of `{}` is not idempotent (or never started): it is not re-run automatically; decide and call the tool again",
                call.tool
            )));
        };
        // The original input is in the log, inline when small.
        let (id, wanted) = (state.id.clone(), call_id.to_string());
        let input = blocking(sessions, move |s| {
            let events = s.events(&id, 1, usize::MAX)?;
            Ok(events.into_iter().find_map(|e| match e.kind {
                EventKind::CallRequested { call_id, input, .. } if call_id == wanted => input,
                _ => None,
            }))
        })
        .await?
        .ok_or_else(|| {
            SessionError::InvalidInput(format!(
                "the input of call `{call_id}` was too large to keep in the log: call the tool again"
            ))
        })?;
        self.run_logged(
            sessions,
            &state,
            &call.tool,
            &input,
            None,
            Some(idempotency_key),
        )
        .await
    }

    async fn run_logged(
        &self,
        sessions: &Arc<Sessions>,
        state: &SessionState,
        tool: &str,
        input: &str,
        job_id: Option<String>,
        idempotency_key: Option<String>,
    ) -> Result<CallReport, SessionError> {
        // An unknown tool is a bad request, not a call: nothing is logged.
        let info = match self.resolve(tool) {
            Ok(info) => info.clone(),
            Err(e) => return Ok(CallReport::refused(tool, e)),
        };
        let digest_of_tool = self
            .plugins()
            .iter()
            .find(|p| p.manifest.name == info.plugin)
            .map(|p| p.digest.clone())
            .unwrap_or_default();
        let call_id = new_call_id();
        let ctx = CallContext {
            session_id: state.id.clone(),
            session_name: state.name.clone(),
            role: state.role.to_string(),
            call_id: call_id.clone(),
            job_id: job_id.clone(),
        };
        let id = state.id.clone();
        let requested = EventKind::CallRequested {
            call_id: call_id.clone(),
            tool: info.name.clone(),
            input_digest: digest(input.as_bytes()),
            input: inline_if_small(input),
            job_id,
        };
        let started = EventKind::CallStarted {
            call_id: call_id.clone(),
            tool: info.name.clone(),
            idempotency_key: idempotency_key.unwrap_or_else(|| format!("{id}/{call_id}")),
            idempotent: info.idempotent,
            tool_digest: digest_of_tool,
        };
        // Requested and started are logged before the tool runs: a call the
        // log cannot record does not run.
        let sid = id.clone();
        blocking(sessions, move |s| {
            s.append(&sid, requested)?;
            s.append(&sid, started)
        })
        .await?;

        let report = self.call(&info.name, input, ctx).await;

        let (outcome, error, output, output_digest) = match &report.outcome {
            Ok(value) => {
                let text = value.to_string();
                (
                    "ok".to_string(),
                    None,
                    inline_if_small(&text),
                    digest(text.as_bytes()),
                )
            }
            Err(e) => (
                e.kind().to_string(),
                Some(e.to_string()),
                None,
                String::new(),
            ),
        };
        let finished = EventKind::CallFinished {
            call_id,
            outcome,
            error,
            output,
            output_digest,
            metering: (&report.metering).into(),
        };
        let sid = id.clone();
        if let Err(e) = blocking(sessions, move |s| s.append(&sid, finished)).await {
            // Not acknowledged: say so, and stop the session until an
            // operator looks (best effort: the store may be failing).
            let reason = format!("the outcome of a call could not be logged: {e}");
            let _ = blocking(sessions, move |s| s.pause(&id, &reason)).await;
            return Err(e);
        }
        Ok(report)
    }
}
