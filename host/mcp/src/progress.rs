//! Progress notifications for a request that takes long.

use std::sync::Arc;

use rmcp::RoleServer;
use rmcp::model::ProgressNotificationParam;

/// What a request that takes long is doing, for its progress notifications
/// (the approval wait says what it waits for).
#[derive(Clone)]
pub(crate) struct Progress(Arc<std::sync::Mutex<String>>);

impl Progress {
    pub(crate) fn new(message: String) -> Progress {
        Progress(Arc::new(std::sync::Mutex::new(message)))
    }

    pub(crate) fn set(&self, message: String) {
        *self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = message;
    }

    pub(crate) fn get(&self) -> String {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }
}

/// Runs `request`; when it takes more than a second, the client that gave
/// a progress token hears every second how long it has run and what it does.
pub(crate) async fn with_progress<F: Future>(
    request: F,
    token: rmcp::model::ProgressToken,
    peer: rmcp::Peer<RoleServer>,
    status: Progress,
) -> F::Output {
    const EVERY: std::time::Duration = std::time::Duration::from_secs(1);
    let started = tokio::time::Instant::now();
    let mut ticks = tokio::time::interval_at(started + EVERY, EVERY);
    tokio::pin!(request);
    loop {
        tokio::select! {
            done = &mut request => break done,
            _ = ticks.tick() => {
                let progress = ProgressNotificationParam::new(
                    token.clone(),
                    started.elapsed().as_secs_f64(),
                )
                .with_message(status.get());
                if let Err(e) = peer.notify_progress(progress).await {
                    tracing::debug!(error = %e, "a progress notification was not sent");
                }
            }
        }
    }
}
